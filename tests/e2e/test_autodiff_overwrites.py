"""Reverse mode where the forward pass overwrites values: overwrites the reverse pass does not replay, overwrites by
a constant under a condition, rebound loop variables, dataclass arguments with ndarray members, values saved in
a while head; each gradient checked against f64 central differences."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from tests.e2e.test_autodiff import chain

import wgkern as wk


def test_an_overwrite_the_reverse_pass_does_not_replay_keeps_its_gradient(arch):
    x = wk.field(wk.f32, shape=4, needs_grad=True)

    @wk.kernel
    def doubled():
        for i in x:
            x[i] = x[i] * 2.0        # the derivative of * 2.0 reads no x[i]: nothing to replay

    x.fill(3.0)
    doubled()
    x.grad.fill(1.0)
    doubled.grad()
    assert x.to_numpy().tolist() == [6.0] * 4 and x.grad.to_numpy().tolist() == [2.0] * 4   # exact in f32


def _central_difference(kernel, x: "wk.Field", loss: "wk.Field", base: np.ndarray, step: float = 1e-6) -> np.ndarray:
    grads = []
    for k in range(base.size):
        values = []
        for sign in (1.0, -1.0):
            shifted = base.copy()
            shifted.flat[k] += sign * step
            x.from_numpy(shifted)
            loss[None] = 0.0
            kernel()
            values.append(loss[None])
        grads.append((values[0] - values[1]) / (2 * step))
    return np.array(grads).reshape(base.shape)


def test_an_overwrite_by_a_constant_under_a_condition_cuts_the_gradient(arch):
    """`if c: t = 0.0` (a local) or `if c: z[i] = 0.0` (a field with an adjoint) overwrite under a run-time
    condition: where c holds, no gradient reaches the earlier value (it reached it before: a silent wrong
    gradient), also inside a dynamic loop. Checked against f64 central differences."""
    n = 6
    x = wk.field(wk.f64, shape=n, needs_grad=True)
    z = wk.field(wk.f64, shape=n, needs_grad=True)
    flag = wk.field(wk.i32, shape=n)
    trips = wk.field(wk.i32, shape=n)
    loss = wk.field(wk.f64, shape=(), needs_grad=True)

    @wk.kernel
    def local_overwrite():
        for i in x:
            t = x[i] * 2.0
            if flag[i] == 1:
                t = 0.0
            loss[None] += t * t * 3.0

    @wk.kernel
    def field_overwrite():
        for i in x:
            z[i] = x[i] * x[i]
            if flag[i] == 1:
                z[i] = 0.5
            loss[None] += z[i] * 2.0

    @wk.kernel
    def loop_overwrite():
        for i in x:
            v = x[i]
            for j in range(trips[i]):
                v = wk.sin(v) + 0.25 * v
                if j == flag[i]:
                    v = 0.5
            loss[None] += v * v

    base = np.linspace(0.2, 1.4, n)
    flag.from_numpy(np.array([1, 0, 1, 0, 2, 1], np.int32))
    trips.from_numpy(np.array([3, 2, 0, 4, 3, 1], np.int32))
    for kernel in (local_overwrite, field_overwrite, loop_overwrite):
        x.from_numpy(base)
        with wk.ad.Tape(loss=loss):
            kernel()
        got = x.grad.to_numpy()
        np.testing.assert_allclose(got, _central_difference(kernel, x, loss, base), rtol=1e-6, atol=1e-8,
                                   err_msg=kernel.name)
        assert got[0] == 0.0 and (got[1] != 0.0 or kernel is loop_overwrite)


@pytest.mark.parametrize("unrolled", [False, True])
def test_rebound_loop_variable_and_static_choice_of_iterable_under_reverse_mode(arch, unrolled):
    # Quadrants-style kernel: the outer index is rebound with a cast, the inner loop is a run-time range (an
    # adstack) or an unrolled one, picked by `A if wk.static(c) else B`; the gradient matches f64 differences
    x = wk.field(wk.f64, shape=3, needs_grad=True)
    n = wk.field(wk.i32, shape=3)
    y = wk.field(wk.f64, shape=(), needs_grad=True)

    @wk.kernel
    def compute():
        for i in wk.ndrange(3):
            i = wk.cast(i, wk.i32)
            v = x[i]
            for k in wk.static(range(4)) if wk.static(unrolled) else range(n[i]):
                k = wk.cast(k, wk.f64)
                v = wk.sin(v) * (1.0 + 0.1 * k)
            y[None] += v * v

    def loss(values: np.ndarray) -> float:
        x.from_numpy(values)
        y[None] = 0.0
        compute()
        return float(y[None])

    n.from_numpy(np.array([4, 4, 4], dtype=np.int32) if unrolled else np.array([1, 3, 5], dtype=np.int32))
    base = np.array([0.3, -0.7, 1.1])
    loss(base)
    y.grad[None] = 1.0
    x.grad.fill(0.0)
    compute.grad()
    eps = 1e-6
    numeric = [(loss(base + eps * e) - loss(base - eps * e)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(x.grad.to_numpy(), numeric, rtol=1e-6, atol=1e-9)


@dataclasses.dataclass(frozen=True)
class _Trips:
    n: wk.types.NDArray[wk.i32, 1]


@dataclasses.dataclass(frozen=True)
class _State:
    x: wk.types.NDArray[wk.f64, 1]
    trips: _Trips
    weights: object            # a field: a compile-time member, as a template's
    out: wk.types.NDArray[wk.f64, 1]


@wk.func
def _weighted_chain(s: wk.template(), i):
    v = s.x[i]
    for _ in range(s.trips.n[i]):      # a trip count read through a nested dataclass (an adstack)
        v = wk.sin(v) * s.weights[i]
    return v


def test_dataclass_argument_with_ndarray_members_under_reverse_mode(arch):
    # Quadrants' dataclass kernel arguments: the ndarray members are passed as arguments (their .grad too), a
    # func takes the dataclass, and the gradient matches f64 differences
    @wk.kernel
    def compute(s: _State):
        for i in s.x:
            s.out[0] += _weighted_chain(s, i) ** 2

    weights = wk.field(wk.f64, shape=3)
    weights.from_numpy(np.array([0.9, 1.1, 1.3]))
    x = wk.ndarray(wk.f64, shape=3, needs_grad=True)
    out = wk.ndarray(wk.f64, shape=1, needs_grad=True)
    state = _State(x, _Trips(np.array([2, 0, 4], dtype=np.int32)), weights, out)

    def loss(values: np.ndarray) -> float:
        x.from_numpy(values)
        out.fill(0.0)
        compute(state)
        return float(out.to_numpy()[0])

    base = np.array([0.4, -0.2, 0.8])
    loss(base)
    out.grad.fill(1.0)
    x.grad.fill(0.0)
    compute.grad(state)
    eps = 1e-6
    numeric = [(loss(base + eps * e) - loss(base - eps * e)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(x.grad.to_numpy(), numeric, rtol=1e-6, atol=1e-9)


def test_value_saved_in_a_while_head_gets_its_gradient(arch):
    # The head `k < n and v > -10` loads v once more than the loop iterates; the odd branch reuses that load
    # after a sibling branch updated v, so the reverse pass keeps the load on a stack of its own, which must be
    # pushed once per counted iteration (a push per head evaluation shifted every reversed read by one trip).
    x = wk.field(wk.f64, shape=4, needs_grad=True)
    n = wk.field(wk.i32, shape=4)
    loss = wk.field(wk.f64, shape=(), needs_grad=True)

    @wk.kernel
    def chain():
        for i in x:
            v = x[i]
            k = 0
            while k < n[i] and v > -10.0:
                k += 1
                if k % 2 == 0:
                    v = 0.5 * v
                else:
                    v = (v + 0.2) * v
            loss[None] += v * v

    def reference(v: float, m: int) -> float:
        for k in range(1, m + 1):
            v = 0.5 * v if k % 2 == 0 else (v + 0.2) * v
        return v * v

    base = np.array([0.3, -0.4, 0.7, 0.5])
    trips = [1, 2, 5, 0]
    n.from_numpy(np.array(trips, np.int32))
    x.from_numpy(base)
    chain()
    np.testing.assert_allclose(loss[None], sum(reference(a, m) for a, m in zip(base, trips)), rtol=1e-14)
    loss.grad[None] = 1.0
    x.grad.fill(0.0)
    chain.grad()
    # loss is a polynomial of degree <= 16 in each x with |loss| < 1 and third derivatives < 100 here: f64
    # central differences at h = 1e-6 err by < 2e-11 (truncation h^2/6 |f'''|) + 3e-10 (rounding 2**-52/h).
    np.testing.assert_allclose(x.grad.to_numpy(), _central_difference(chain, x, loss, base), rtol=0, atol=1e-8)
