"""Forward mode (passes/autodiff/forward_mode.py, wk.ad.FwdMode): tangents through every derivative rule,
dynamic loops, branches, locals, vectors and several tasks, against finite differences in f64 and closed forms;
seeds, clearing, and the errors for what cannot be differentiated exactly."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from tests.error_bounds import U, f32_bound


def _wide(arch) -> bool:
    features = getattr(wk.runtime.program.current().backend, "features", None)
    return features is None or "shader-f64" in features


def test_dynamic_loops_and_branches_match_finite_differences(arch):
    dtype = wk.f64 if _wide(arch) else wk.f32
    n_items = 8
    x = wk.field(dtype, shape=n_items, needs_dual=True)
    n = wk.field(wk.i32, shape=n_items)
    y = wk.field(dtype, shape=n_items, needs_dual=True)
    loss = wk.field(dtype, shape=(), needs_dual=True)

    @wk.kernel
    def f():
        for i in x:
            v = x[i]
            for _ in range(n[i]):
                v = wk.sin(v) * 1.1 + v * v * 0.1 - wk.atan2(v, 2.0) * 0.05
            k = 0
            while v < 1.5 and k < 3:
                v = wk.sqrt(v * v + 0.5) + wk.tanh(v) * 0.1
                k += 1
            y[i] = v if v > 0.3 else wk.exp(v) / (1.0 + wk.log(1.0 + v * v))
            loss[None] += y[i] ** 2 + wk.max(v, 0.9) * wk.cos(v)

    def reference(xs):
        total = 0.0
        for i, v in enumerate(xs):
            for _ in range(i):
                v = np.sin(v) * 1.1 + v * v * 0.1 - np.arctan2(v, 2.0) * 0.05
            k = 0
            while v < 1.5 and k < 3:
                v = np.sqrt(v * v + 0.5) + np.tanh(v) * 0.1
                k += 1
            yi = v if v > 0.3 else np.exp(v) / (1.0 + np.log(1.0 + v * v))
            total += yi ** 2 + max(v, 0.9) * np.cos(v)
        return total

    x0 = np.linspace(0.1, 0.8, n_items).astype(dtype.np_dtype)
    x.from_numpy(x0)
    n.from_numpy(np.arange(n_items, dtype=np.int32))
    direction = np.random.default_rng(0).normal(size=n_items)
    with wk.ad.FwdMode(loss=loss, param=x, seed=direction.tolist()):
        f()
    h = 1e-6
    x64 = x0.astype(np.float64)
    numeric = (reference(x64 + h * direction) - reference(x64 - h * direction)) / (2 * h)
    np.testing.assert_allclose(loss.dual[None], numeric, rtol=1e-6 if dtype == wk.f64 else 2e-3)
    np.testing.assert_allclose(loss[None], reference(x64), rtol=1e-9 if dtype == wk.f64 else 1e-5)


def test_vectors_matrices_and_several_tasks(arch):
    p = wk.Vector.field(3, wk.f32, shape=4, needs_dual=True)
    total = wk.field(wk.f32, shape=(), needs_dual=True)
    energy = wk.field(wk.f32, shape=4, needs_dual=True)

    @wk.kernel
    def f():
        for i in p:
            m = wk.Matrix([[2.0, 0.0, 0.0], [0.0, 1.0, 1.0], [0.0, 0.0, 3.0]])
            q = m @ p[i]
            energy[i] = q.dot(q) * 0.5
        for i in energy:
            total[None] += energy[i]

    p.from_numpy(np.arange(12, dtype=np.float32).reshape(4, 3) / 10)
    seed = np.zeros(12)
    seed[4] = 1.0                       # d/d p[1].y
    with wk.ad.FwdMode(loss=total, param=p, seed=seed.tolist()):
        f()
    m = np.array([[2.0, 0, 0], [0, 1, 1], [0, 0, 3]])
    closed_form = (m.T @ m @ (np.arange(3, 6) / 10))[1]      # d(0.5 |m p|^2)/dp = m^T m p
    # q = m p and its tangent m dp (5 f32 operations each), q . dq (5 more), on values up to |m| |p| <= 3, plus p's
    # rounding to f32 (U |p| <= U) seen through m^T m (entries up to 10); the other energies' duals are exactly 0
    bound = f32_bound(15, 3.0) + 10 * U
    assert total.dual[None] == pytest.approx(closed_form, abs=bound)
    assert energy.dual.to_numpy()[1] == pytest.approx(closed_form, abs=bound)
    assert energy.dual.to_numpy()[[0, 2, 3]].tolist() == [0.0, 0.0, 0.0]


def test_seeds_clearing_and_stores(arch):
    a = wk.field(wk.f32, shape=(), needs_dual=True)
    b = wk.field(wk.f32, shape=(), needs_dual=True)
    out = wk.field(wk.f32, shape=2, needs_dual=True)

    @wk.kernel
    def f():
        out[0] = a[None] * a[None] * 3.0     # d/da = 6a
        out[1] = 5.0                          # overwritten by a constant: its tangent is 0
        b[None] = out[0] + wk.floor(a[None]) + wk.cast(a[None], wk.i32)   # floor and int casts stop it

    a[None] = 2.0
    out.dual.fill(7.0)
    with wk.ad.FwdMode(loss=b, param=a):
        f()
        assert a.dual[None] == 1.0
    assert b.dual[None] == 12.0 and out.dual.to_numpy().tolist() == [12.0, 0.0]
    assert a.dual[None] == 0.0                 # the seed is taken back on exit (Taichi's FwdMode)
    with wk.ad.FwdMode(loss=b, param=a, clear_gradients=False):
        pass
    assert b.dual[None] == 12.0                # kept without clear_gradients
    with wk.ad.FwdMode(loss=b, param=a, seed=[0.5]):
        f()
    assert b.dual[None] == 6.0
    f()                                        # outside the block: the plain forward kernel, duals untouched
    assert b.dual[None] == 6.0 and b[None] == 12.0 + 2.0 + 2.0
    with wk.ad.FwdMode(loss=[out, b], param=a):          # several outputs, as Taichi allows
        f()
    assert b.dual[None] == 12.0 and out.dual.to_numpy().tolist() == [12.0, 0.0]


def test_what_forward_mode_refuses(arch):
    x = wk.field(wk.f32, shape=4, needs_dual=True)
    m = wk.field(wk.f32, shape=(), needs_dual=True)
    plain = wk.field(wk.f32, shape=4)
    with pytest.raises(wk.WkError, match="has 4 elements; pass seed"):
        wk.ad.FwdMode(loss=m, param=x)
    with pytest.raises(wk.WkError, match="seed has 2 values, param 'x' has 4 elements"):
        wk.ad.FwdMode(loss=m, param=x, seed=[1.0, 0.0])
    with pytest.raises(wk.WkError, match="loss=...\\): 'plain' has no .dual"):
        wk.ad.FwdMode(loss=plain, param=x, seed=[1, 0, 0, 0])
    with pytest.raises(wk.WkError, match="loss=...\\): 'plain' has no .dual"):
        wk.ad.FwdMode(loss=[m, plain], param=x, seed=[1, 0, 0, 0])

    @wk.kernel
    def biggest():
        for i in x:
            wk.atomic_max(m[None], x[i])

    with wk.ad.FwdMode(loss=m, param=x, seed=[1, 0, 0, 0]):
        with pytest.raises(wk.AutodiffError, match="atomic max on 'm'.*only \\+= and -= carry tangents"):
            biggest()
    @wk.kernel
    def product():
        for i in x:
            wk.atomic_mul(m[None], x[i])

    @wk.kernel
    def swap():
        for i in x:
            wk.atomic_exchange(m[None], x[i])

    for kernel, op in ((product, "mul"), (swap, "exchange")):
        with wk.ad.FwdMode(loss=m, param=x, seed=[1, 0, 0, 0]):
            with pytest.raises(wk.AutodiffError, match=f"atomic {op} on 'm'.*only \\+= and -= carry tangents"):
                kernel()
    with wk.ad.FwdMode(loss=m, param=x, seed=[1, 0, 0, 0]):
        with pytest.raises(wk.WkError, match="cannot be nested"):
            with wk.ad.FwdMode(loss=m, param=x, seed=[1, 0, 0, 0]):
                pass
