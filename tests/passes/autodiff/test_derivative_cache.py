"""Saving transcendental derivatives in the replay instead of recomputing them in the sweep
(passes/autodiff/derivative_cache.py): when the choice is made, what is saved, exact capacities, and the
gradients (against closed forms and f64 finite differences on the reference interpreter)."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern.lang.math as wm
from wgkern.ir import nodes as ir
from wgkern.ir.visitor import walk
from wgkern.lang import types as T
from wgkern.lang.kernel import func
from wgkern.passes.autodiff import make_grad_kernel

from .helpers import FakeField, compile_forward, forward_and_grad, launch

TRIPS = np.array([0, 1, 3, 10], np.int32)
X0 = [0.2, -0.5, 1.0, 0.7]


def stacks_of(kernel: ir.OffloadedKernel) -> list[ir.AdStackAlloca]:
    return [s for t in kernel.tasks for s in t.body.stmts if isinstance(s, ir.AdStackAlloca)]


def ops_of(kernel: ir.OffloadedKernel, op: str) -> int:
    return sum(isinstance(s, ir.UnaryOp) and s.op.value == op for t in kernel.tasks for s in walk(t.body))


def _fields(dtype):
    x = FakeField(dtype, 4, True, "x")
    n = FakeField(T.i32, 4, False, "n")
    y = FakeField(dtype, 4, True, "y")
    x.data[:] = X0
    n.data[:] = TRIPS
    y.grad.data[:] = 1
    return x, n, y


@func
def sin_step(v):
    return wm.sin(v) * 0.9


@func
def cos_step(v):
    return wm.cos(v) * 0.9


@func
def exp_step(v):
    return wm.exp(v) * 0.3


@func
def tan_step(v):
    return wm.tan(v) * 0.5


@func
def tanh_step(v):
    return wm.tanh(v) + 0.2


@func
def sinh_step(v):
    return wm.sinh(v) * 0.5


@func
def cosh_step(v):
    return wm.cosh(v) * 0.5


STEPS = {
    "sin": (sin_step, lambda v: np.sin(v) * 0.9),
    "cos": (cos_step, lambda v: np.cos(v) * 0.9),
    "exp": (exp_step, lambda v: np.exp(v) * 0.3),
    "tan": (tan_step, lambda v: np.tan(v) * 0.5),
    "tanh": (tanh_step, lambda v: np.tanh(v) + 0.2),
    "sinh": (sinh_step, lambda v: np.sinh(v) * 0.5),
    "cosh": (cosh_step, lambda v: np.cosh(v) * 0.5),
}


def _chain(step, v, k):
    for _ in range(k):
        v = step(v)
    return v


@pytest.mark.parametrize("op", list(STEPS))
def test_a_carried_transcendental_saves_one_value_per_trip(op):
    step, reference = STEPS[op]
    x, n, y = _fields(T.f64)

    def chain():
        for i in x:
            v = x[i]
            for _ in range(n[i]):
                v = step(v)
            y[i] = v
    _, grad = forward_and_grad(chain)
    (stack,) = stacks_of(grad)
    assert stack.name == "saved"           # the derivative (or the result), not the carried v
    eps = 1e-6
    fd = [(_chain(reference, a + eps, int(k)) - _chain(reference, a - eps, int(k))) / (2 * eps)
          for a, k in zip(X0, TRIPS)]
    np.testing.assert_allclose(x.grad.data, fd, rtol=1e-7, atol=1e-9)


def test_sin_sweep_calls_no_transcendental_and_replay_takes_sin_and_cos():
    x, n, y = _fields(T.f32)

    def chain():
        for i in x:
            v = x[i]
            for _ in range(n[i]):
                v = wm.sin(v) + 0.1
            y[i] = v
    _, grad = forward_and_grad(chain)
    assert ops_of(grad, "sin") == 1 and ops_of(grad, "cos") == 1      # both in the replay, none in the sweep
    expected = []
    for a, k in zip(X0, TRIPS):
        v, d = np.float64(a), 1.0
        for _ in range(k):
            d *= np.cos(v)
            v = np.sin(v) + 0.1
        expected.append(d)
    np.testing.assert_allclose(x.grad.data, expected, rtol=1e-5, atol=1e-6)


def test_not_cached_when_the_operand_is_needed_anyway():
    """v * sin(v) reads v in the sweep regardless: saving cos(v) as well would add a stack."""
    x, n, y = _fields(T.f64)

    def chain():
        for i in x:
            v = x[i]
            for _ in range(n[i]):
                v = v * wm.sin(v)
            y[i] = v
    _, grad = forward_and_grad(chain)
    (stack,) = stacks_of(grad)
    assert stack.name == "v"
    step = lambda v: v * np.sin(v)      # noqa: E731
    eps = 1e-6
    fd = [(_chain(step, a + eps, int(k)) - _chain(step, a - eps, int(k))) / (2 * eps) for a, k in zip(X0, TRIPS)]
    np.testing.assert_allclose(x.grad.data, fd, rtol=1e-7, atol=1e-9)


def test_saved_derivative_stack_has_exact_static_capacity():
    x = FakeField(T.f32, 4, True, "x")
    y = FakeField(T.f32, 4, True, "y")
    x.data[:] = [0.1, 0.2, 0.3, 0.4]
    y.grad.data[:] = 1

    def static_loops():
        for i in x:
            v = x[i]
            for _ in range(5):
                for _ in range(3):
                    v = wm.cos(v)
            y[i] = v
    forward = compile_forward(static_loops)
    grad = make_grad_kernel(forward)
    (stack,) = stacks_of(grad)
    assert stack.capacity == 5 * 3            # one derivative per trip (no loop-entry value)
    launch(forward)
    launch(grad, stack_capacity=lambda s: s.capacity)
    v = x.data.astype(np.float64)
    d = np.ones(4)
    for _ in range(15):
        d *= -np.sin(v)
        v = np.cos(v)
    np.testing.assert_allclose(x.grad.data, d, rtol=1e-5)


def test_saved_values_inside_a_branch_in_a_loop():
    """The saved derivative is pushed and popped only on the trips that take the branch."""
    x, n, y = _fields(T.f64)

    def chain():
        for i in x:
            v = x[i]
            for j in range(n[i]):
                if j % 2 == 0:
                    v = wm.sin(v) + 0.3
                else:
                    v = v * 0.5
            y[i] = v
    _, grad = forward_and_grad(chain)
    assert [s.name for s in stacks_of(grad)] == ["saved"]     # v * 0.5 needs no past v

    def reference(v, k):
        for j in range(k):
            v = np.sin(v) + 0.3 if j % 2 == 0 else v * 0.5
        return v
    eps = 1e-6
    fd = [(reference(a + eps, int(k)) - reference(a - eps, int(k))) / (2 * eps) for a, k in zip(X0, TRIPS)]
    np.testing.assert_allclose(x.grad.data, fd, rtol=1e-7, atol=1e-9)


def test_two_transcendentals_of_one_carried_value_keep_the_value():
    """sin(v) + cos(v): two saved derivatives would take two stacks where v takes one."""
    x, n, y = _fields(T.f64)

    def chain():
        for i in x:
            v = x[i]
            for _ in range(n[i]):
                v = wm.sin(v) * 0.5 + wm.cos(v) * 0.5
            y[i] = v
    _, grad = forward_and_grad(chain)
    assert [s.name for s in stacks_of(grad)] == ["v"]
    step = lambda v: np.sin(v) * 0.5 + np.cos(v) * 0.5      # noqa: E731
    eps = 1e-6
    fd = [(_chain(step, a + eps, int(k)) - _chain(step, a - eps, int(k))) / (2 * eps) for a, k in zip(X0, TRIPS)]
    np.testing.assert_allclose(x.grad.data, fd, rtol=1e-7, atol=1e-9)


def test_a_linear_update_needs_no_stack():
    """v * c and v / c with a constant c read no past v (only the constant)."""
    x, n, y = _fields(T.f64)

    def chain():
        for i in x:
            v = x[i]
            for _ in range(n[i]):
                v = v * 0.9 / 1.1 + 0.2
            y[i] = v
    _, grad = forward_and_grad(chain)
    assert stacks_of(grad) == []
    np.testing.assert_allclose(x.grad.data, (0.9 / 1.1) ** TRIPS.astype(np.float64))
