"""Reverse mode for the remaining kernel shapes (sibling loops, funcs, several tasks, mixed stack dtypes,
NaN propagation, the access-rule and loop-bound checks), on the reference interpreter."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern.lang.math as wm
from wgkern.errors import AutodiffError
from wgkern.ir import nodes as ir
from wgkern.lang import types as T
from wgkern.lang.kernel import func
from wgkern.passes.autodiff import make_grad_kernel
from wgkern.passes.autodiff.checks import check_global_access_rule, loop_bound_slots

from .helpers import FakeField, compile_forward, compile_reverse, forward_and_grad


def fd(f, xs, eps=1e-6):
    return np.array([(f(a + eps) - f(a - eps)) / (2 * eps) for a in xs])


def test_sibling_dynamic_loops():
    x = FakeField(T.f64, 3, True, "x")
    n = FakeField(T.i32, 3, False, "n")
    y = FakeField(T.f64, 3, True, "y")
    x.data[:] = [0.2, 0.5, 0.9]
    n.data[:] = [1, 2, 4]
    y.grad.data[:] = 1

    def siblings():
        for i in x:
            v = x[i]
            for _ in range(n[i]):
                v = wm.sin(v) + v * 0.5
            w = v
            for _ in range(n[i] + 1):
                w = w * wm.cos(w)
            y[i] = w + v

    def f(v, m):
        for _ in range(m):
            v = np.sin(v) + v * 0.5
        w = v
        for _ in range(m + 1):
            w = w * np.cos(w)
        return w + v
    forward_and_grad(siblings)
    for k in range(3):
        np.testing.assert_allclose(x.grad.data[k], fd(lambda a: f(a, n.data[k]), [x.data[k]])[0], rtol=1e-6)


@func
def relax(v, steps):
    for _ in range(steps):
        v = v - 0.1 * wm.tanh(v)
    return v


def test_dynamic_loop_inside_func():
    x = FakeField(T.f64, 3, True, "x")
    n = FakeField(T.i32, 3, False, "n")
    y = FakeField(T.f64, 3, True, "y")
    x.data[:] = [-1.0, 0.4, 2.0]
    n.data[:] = [0, 3, 7]
    y.grad.data[:] = 1

    def via_func():
        for i in x:
            y[i] = relax(x[i], n[i]) ** 2

    def f(v, m):
        for _ in range(m):
            v = v - 0.1 * np.tanh(v)
        return v ** 2
    forward_and_grad(via_func)
    for k in range(3):
        np.testing.assert_allclose(x.grad.data[k], fd(lambda a: f(a, n.data[k]), [x.data[k]])[0], rtol=1e-6)


def test_kernel_with_several_tasks_and_serial_code():
    x = FakeField(T.f64, 4, True, "x")
    y = FakeField(T.f64, 4, True, "y")
    loss = FakeField(T.f64, (), True, "loss")
    x.data[:] = [0.1, 0.2, 0.3, 0.4]
    loss.grad.data[...] = 1

    def two_loops():
        for i in x:
            y[i] = wm.exp(x[i])
        for i in y:
            loss[None] += y[i] * y[i]
    forward_and_grad(two_loops)
    np.testing.assert_allclose(x.grad.data, 2 * np.exp(2 * x.data), rtol=1e-12)


def test_mixed_float_int_bool_stacks():
    x = FakeField(T.f32, 4, True, "x")
    n = FakeField(T.i32, 4, False, "n")
    y = FakeField(T.f32, 4, True, "y")
    x.data[:] = [0.3, 0.6, 0.9, 1.2]
    n.data[:] = [0, 2, 5, 9]
    y.grad.data[:] = 1

    def mixed():
        for i in x:
            v = x[i]
            k = 1
            flip = False
            for _ in range(n[i]):
                flip = not flip
                k = k * 2 % 7
                if flip:
                    v = v * wm.cast(k, T.f32) * 0.3
                else:
                    v = wm.sqrt(v + 1.0)
            y[i] = v

    def f(v, m):
        k, flip = 1, False
        for _ in range(m):
            flip = not flip
            k = k * 2 % 7
            v = v * k * 0.3 if flip else np.sqrt(v + 1.0)
        return v
    _, grad = forward_and_grad(mixed)
    dtypes = sorted(s.dtype.name for t in grad.tasks for s in t.body.stmts if isinstance(s, ir.AdStackAlloca))
    assert "f32" in dtypes and "i32" in dtypes and "u1" in dtypes
    for k in range(4):
        expected = fd(lambda a: f(np.float64(a), n.data[k]), [np.float64(x.data[k])], 1e-5)[0]
        np.testing.assert_allclose(x.grad.data[k], expected, rtol=1e-3)


def test_nan_propagates_through_the_adjoint():
    x = FakeField(T.f64, 2, True, "x")
    n = FakeField(T.i32, 2, False, "n")
    y = FakeField(T.f64, 2, True, "y")
    x.data[:] = [-1.0, 4.0]
    n.data[:] = [2, 2]
    y.grad.data[:] = 1

    def roots():
        for i in x:
            v = x[i]
            for _ in range(n[i]):
                v = wm.sqrt(v)
            y[i] = v
    forward_and_grad(roots)
    assert np.isnan(x.grad.data[0])
    np.testing.assert_allclose(x.grad.data[1], 0.25 * 4.0 ** -0.75)


def check_access_rule(fn) -> None:
    """What launch.py does at every reverse compile: the forward IR checked against its reverse kernel."""
    from wgkern.passes.pipeline import FORWARD, REVERSE_FROM_FORWARD, run_pipeline
    forward = compile_forward(fn)
    check_global_access_rule(forward, run_pipeline(REVERSE_FROM_FORWARD, forward, after=len(FORWARD)))


def test_access_rule_violation_is_reported_with_the_line():
    x = FakeField(T.f32, 4, True, "x")

    def in_place():
        for i in x:
            v = x[i]
            x[i] = v * v
    with pytest.raises(AutodiffError, match="global data access rule") as info:
        check_access_rule(in_place)
    assert "x[i] = v * v" in str(info.value) and ":" + str(in_place.__code__.co_firstlineno + 3) in str(info.value)


def test_access_rule_lets_through_reads_the_reverse_pass_does_not_replay():
    # x[i] * 2.0 is linear: its adjoint needs no x[i], so overwriting x[i] afterwards loses nothing
    x = FakeField(T.f32, 4, True, "x")
    n = FakeField(T.i32, 4, False, "n")

    def doubled_in_place():
        for i in x:
            x[i] = x[i] * 2.0
            n[i] = n[i] + 1          # an integer no derivative reads
    check_access_rule(doubled_in_place)


def test_access_rule_lets_through_a_read_and_a_store_in_branches_of_one_if():
    x = FakeField(T.f32, 4, True, "x")
    y = FakeField(T.f32, 4, True, "y")
    c = FakeField(T.i32, 4, False, "c")

    def either():
        for i in x:
            if c[i] > 0:
                y[i] = x[i] * x[i]
            else:
                x[i] = 0.0
    check_access_rule(either)

    def either_in_a_loop():          # a later trip of the loop can take the other branch: a real violation
        for i in x:
            for k in range(2):
                if c[i] > k:
                    y[i] += x[i] * x[i]
                else:
                    x[i] = 0.0
    with pytest.raises(AutodiffError, match="global data access rule"):
        check_access_rule(either_in_a_loop)


def test_access_rule_allows_write_then_read_in_later_task():
    x = FakeField(T.f32, 4, True, "x")
    y = FakeField(T.f32, 4, True, "y")
    z = FakeField(T.f32, (), True, "z")

    def staged():
        for i in x:
            y[i] = x[i] * 2.0
        for i in y:
            z[None] += y[i]
    check_access_rule(staged)


def test_access_rule_flags_accumulating_into_a_float_value_read_before():
    # Taichi's test_ad_global_data_access_rule_checker: `loss = x * b; b += 100` in one launch; the reverse
    # pass would replay the read of b after the increment. So it would for a field without .grad whose value
    # a derivative reads (Taichi lets that one through); a counter whose value no derivative reads is fine.
    x = FakeField(T.f32, 4, True, "x")
    b = FakeField(T.f32, (), True, "b")
    loss = FakeField(T.f32, (), True, "loss")
    count = FakeField(T.i32, (), False, "count")
    n = FakeField(T.i32, 4, False, "n")
    weight = FakeField(T.f32, (), False, "weight")

    def read_then_accumulate():
        loss[None] = x[1] * b[None]
        b[None] += 100.0

    def read_then_bump_counter():
        for i in x:
            n[i] = count[None]
            count[None] += 1
            loss[None] += x[i] * n[i]

    def read_then_bump_weight():
        for i in x:
            loss[None] += x[i] * weight[None]     # x's gradient is weight's value at this read
            weight[None] += 1.0
    with pytest.raises(AutodiffError, match="global data access rule") as info:
        check_access_rule(read_then_accumulate)
    assert "b[None] += 100.0" in str(info.value)
    check_access_rule(read_then_bump_counter)
    with pytest.raises(AutodiffError, match="global data access rule") as info:
        check_access_rule(read_then_bump_weight)
    assert "weight[None] += 1.0" in str(info.value)


def test_loop_bound_slots_follow_locals_and_arithmetic():
    x = FakeField(T.f32, 4, True, "x")
    n = FakeField(T.i32, 4, False, "n")
    m = FakeField(T.i32, (), False, "m")

    def bounded():
        for i in x:
            k = n[i] + 1
            for _ in range(k):
                x[i] += 1.0
            j = 0
            while j < m[None]:
                j += 1
    names = {s.name for s in loop_bound_slots(compile_forward(bounded))}
    assert names == {"n", "m"}


def test_min_max_atomics_give_the_gradient_to_the_value_that_ended_up_in_the_element():
    """diff_sph's atomic_min/atomic_max on fields with gradients: the element's gradient goes to the value equal
    to the element's final value (not to every value, as Taichi does), also from inside a loop of run-time trip
    count; the element keeps its gradient for its value before the launch."""
    x = FakeField(T.f64, 4, True, "x")
    n = FakeField(T.i32, 4, False, "n")
    best = FakeField(T.f64, (), True, "best")
    least = FakeField(T.f64, (), True, "least")
    x.data[:] = [0.5, 2.0, 1.0, 1.5]
    n.data[:] = [1, 3, 0, 2]
    best.data[...] = -1.0
    least.data[...] = 100.0
    best.grad.data[...] = 1.0
    least.grad.data[...] = 2.0

    def extremes():
        for i in x:
            wm.atomic_max(best[None], x[i] * x[i])
            v = x[i]
            for _ in range(n[i]):
                v = wm.sqrt(v)
                wm.atomic_min(least[None], v)

    forward_and_grad(extremes)
    assert best.data[()] == 4.0 and least.data[()] == pytest.approx(0.5 ** 0.5)
    # d best / d x[1] = 2 x[1]; least = sqrt(x[0]) (its only trip): d / d x[0] = 1 / (2 sqrt(x[0]))
    np.testing.assert_allclose(x.grad.data, [2.0 / (2 * 0.5 ** 0.5), 4.0, 0.0, 0.0])
    assert best.grad.data[()] == 1.0 and least.grad.data[()] == 2.0


def test_kernel_scope_accumulator_feeding_a_nonlinear_use():
    x = FakeField(T.f64, 4, True, "x")
    out = FakeField(T.f64, (), True, "out")
    x.data[:] = [0.5, 1.0, 1.5, 2.0]
    out.grad.data[...] = 1

    def square_of_sum():
        s = 0.0
        for i in x:
            s += x[i]
        out[None] = s * s
    forward_and_grad(square_of_sum)
    np.testing.assert_allclose(out.data, x.data.sum() ** 2, rtol=1e-6)   # s is f32 (Taichi's default float)
    np.testing.assert_allclose(x.grad.data, 2 * x.data.sum(), rtol=1e-6)


def test_loop_invariant_adjoint_address_uses_one_atomic_per_thread():
    w = FakeField(T.f64, (), True, "w")
    x = FakeField(T.f64, 3, True, "x")
    n = FakeField(T.i32, 3, False, "n")
    y = FakeField(T.f64, 3, True, "y")
    w.data[...] = 0.7
    x.data[:] = [0.1, 0.2, 0.3]
    n.data[:] = [2, 5, 9]
    y.grad.data[:] = 1

    def scaled():
        for i in x:
            v = x[i]
            for _ in range(n[i]):
                v = v * w[None] + 0.01
            y[i] = v
    _, grad = forward_and_grad(scaled)
    atomics = [s for t in grad.tasks for s in _walk(t.body) if isinstance(s, ir.AtomicOp)]
    assert len(atomics) == 1 and not any(isinstance(p, ir.RangeFor) for p in _parents_of(grad, atomics[0]))

    def f(v, wv, k):
        for _ in range(k):
            v = v * wv + 0.01
        return v
    eps = 1e-7
    expected = sum((f(a, 0.7 + eps, k) - f(a, 0.7 - eps, k)) / (2 * eps) for a, k in zip(x.data, n.data))
    np.testing.assert_allclose(w.grad.data, expected, rtol=1e-6)


def _walk(block):
    for stmt in block.stmts:
        yield stmt
        for child in stmt.blocks():
            yield from _walk(child)


def _parents_of(kernel, target):
    def search(block, chain):
        for stmt in block.stmts:
            if stmt is target:
                return chain
            for child in stmt.blocks():
                found = search(child, chain + [stmt])
                if found is not None:
                    return found
        return None
    for task in kernel.tasks:
        found = search(task.body, [])
        if found is not None:
            return found
    return []


@pytest.mark.parametrize("op", ["mul", "exchange"])
def test_mul_and_exchange_atomics_on_a_field_with_a_gradient_are_refused_naming_the_line(op):
    """No gradient rule: which thread's factor or value came when is not recorded. Also with a constant value
    (the element's own gradient would be wrong) and inside a branch the adjoint otherwise skips."""
    x = FakeField(T.f64, 4, True, "x")
    y = FakeField(T.f64, 4, True, "y")
    atomic = getattr(wm, f"atomic_{op}")

    def from_data():
        for i in x:
            atomic(y[i], x[i])

    def constant_in_branch():
        for i in x:
            if i > 1:
                atomic(y[i], 0.5)

    for fn, line in ((from_data, "atomic(y[i], x[i])"), (constant_in_branch, "atomic(y[i], 0.5)")):
        with pytest.raises(AutodiffError, match=f"wk.atomic_{op} on 'y', which has a gradient, cannot be "
                                                "differentiated") as info:
            compile_reverse(fn)
        assert line in str(info.value) and info.value.lineno is not None


def test_integer_mul_exchange_cas_in_a_differentiated_kernel_carry_no_gradient():
    x = FakeField(T.f64, 4, True, "x")
    loss = FakeField(T.f64, (), True, "loss")
    product = FakeField(T.i32, (), False, "product")
    last = FakeField(T.i32, (), False, "last")
    claimed = FakeField(T.i32, 4, False, "claimed")
    x.data[:] = [0.5, 1.0, 1.5, 2.0]
    product.data[...] = 1
    loss.grad.data[...] = 1.0

    def mixed():
        for i in x:
            wm.atomic_mul(product[None], 2)
            wm.atomic_exchange(last[None], i)
            wm.atomic_cas(claimed[i], 0, 1)
            loss[None] += x[i] * x[i]

    forward_and_grad(mixed)
    assert product.data[()] == 16 and claimed.data.tolist() == [1, 1, 1, 1]
    np.testing.assert_allclose(x.grad.data, 2 * x.data)
