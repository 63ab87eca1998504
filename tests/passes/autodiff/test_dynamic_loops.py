"""Reverse mode through loops whose trip count is known only at run time, on the reference interpreter:
each shape of loop separately, checked against closed forms and f64 finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern.lang.math as wm
from wgkern.errors import AdStackOverflowError, AutodiffError
from wgkern.ir import nodes as ir
from wgkern.ir.interpreter import Interpreter
from wgkern.lang import types as T
from wgkern.passes.autodiff import make_grad_kernel

from .helpers import FakeField, compile_forward, forward_and_grad, launch

TRIPS = np.array([0, 1, 3, 10], np.int32)


def stacks_of(kernel: ir.OffloadedKernel) -> list[ir.AdStackAlloca]:
    return [s for t in kernel.tasks for s in t.body.stmts if isinstance(s, ir.AdStackAlloca)]


def sin_chain(v: float, k: int) -> float:
    for _ in range(k):
        v = np.sin(v) + 0.1
    return v


def sin_chain_derivative(v: float, k: int) -> float:
    d = 1.0
    for _ in range(k):
        d *= np.cos(v)
        v = np.sin(v) + 0.1
    return d


@pytest.mark.parametrize("dtype", [T.f32, T.f64])
def test_sin_loop_matches_closed_form(dtype):
    x = FakeField(dtype, 4, True, "x")
    n = FakeField(T.i32, 4, False, "n")
    y = FakeField(dtype, (), True, "y")
    x.data[:] = [0.2, -0.5, 1.0, 0.7]
    n.data[:] = TRIPS
    y.grad.data[...] = 1

    def compute():
        for i in x:
            v = x[i]
            for _ in range(n[i]):
                v = wm.sin(v) + 0.1
            y[None] += v
    forward, grad = forward_and_grad(compute)
    expected = [sin_chain_derivative(float(a), int(k)) for a, k in zip(x.data, TRIPS)]
    tol = 1e-12 if dtype == T.f64 else 1e-5
    np.testing.assert_allclose(x.grad.data, expected, rtol=tol, atol=tol)
    np.testing.assert_allclose(y.data, sum(sin_chain(float(a), int(k)) for a, k in zip(x.data, TRIPS)), rtol=1e-5)
    assert len(stacks_of(grad)) == 1 and stacks_of(grad)[0].capacity is None


def test_linear_carried_value_needs_no_stack():
    x = FakeField(T.f64, 4, True, "x")
    n = FakeField(T.i32, 4, False, "n")
    y = FakeField(T.f64, 4, True, "y")
    x.data[:] = [1, 2, 3, 4]
    n.data[:] = TRIPS
    y.grad.data[:] = 1

    def accumulate():
        for i in x:
            s = 0.0
            for j in range(n[i]):
                s += x[i] * 2.0
            y[i] = s
    _, grad = forward_and_grad(accumulate)
    assert stacks_of(grad) == []
    np.testing.assert_allclose(x.grad.data, 2.0 * TRIPS)


def test_nested_loops_with_inner_bound_from_outer_index():
    x = FakeField(T.f64, 3, True, "x")
    n = FakeField(T.i32, 3, False, "n")
    y = FakeField(T.f64, 3, True, "y")
    x.data[:] = [0.3, 0.9, 1.4]
    n.data[:] = [0, 2, 4]
    y.grad.data[:] = 1

    def nested():
        for i in x:
            v = x[i]
            for j in range(n[i]):
                for k in range(j):
                    v = v * wm.cos(v) + 0.05
            y[i] = v

    def f(v, m):
        for j in range(m):
            for _ in range(j):
                v = v * np.cos(v) + 0.05
        return v
    forward_and_grad(nested)
    eps = 1e-6
    fd = [(f(a + eps, m) - f(a - eps, m)) / (2 * eps) for a, m in zip(x.data, n.data)]
    np.testing.assert_allclose(x.grad.data, fd, rtol=1e-6)


def test_while_loop_with_break_and_continue():
    x = FakeField(T.f64, 4, True, "x")
    y = FakeField(T.f64, 4, True, "y")
    x.data[:] = [0.5, 1.5, 2.5, 0.05]
    y.grad.data[:] = 1

    def iterate():
        for i in x:
            v = x[i]
            k = 0
            while v < 20.0:
                k += 1
                if k % 3 == 0:
                    continue
                v = v * 1.7 + wm.sin(v)
                if k > 6:
                    break
            y[i] = v

    def f(v):
        k = 0
        while v < 20.0:
            k += 1
            if k % 3 == 0:
                continue
            v = v * 1.7 + np.sin(v)
            if k > 6:
                break
        return v
    forward_and_grad(iterate)
    np.testing.assert_allclose(y.data, [f(a) for a in x.data])
    eps = 1e-7
    fd = [(f(a + eps) - f(a - eps)) / (2 * eps) for a in x.data]
    np.testing.assert_allclose(x.grad.data, fd, rtol=1e-5)


def test_branch_on_carried_value_uses_bool_stack():
    x = FakeField(T.f64, 4, True, "x")
    n = FakeField(T.i32, 4, False, "n")
    y = FakeField(T.f64, 4, True, "y")
    x.data[:] = [0.1, 0.8, -0.3, 2.0]
    n.data[:] = TRIPS
    y.grad.data[:] = 1

    def branchy():
        for i in x:
            v = x[i]
            for _ in range(n[i]):
                if v > 0.5:
                    v = v * v * 0.5
                else:
                    v = wm.exp(v) * 0.6
            y[i] = v

    def f(v, m):
        for _ in range(m):
            v = v * v * 0.5 if v > 0.5 else np.exp(v) * 0.6
        return v
    forward_and_grad(branchy)
    eps = 1e-7
    fd = [(f(a + eps, m) - f(a - eps, m)) / (2 * eps) for a, m in zip(x.data, n.data)]
    np.testing.assert_allclose(x.grad.data, fd, rtol=1e-5)


def test_int_carried_index_is_stacked_and_replayed():
    x = FakeField(T.f64, 8, True, "x")
    n = FakeField(T.i32, 2, False, "n")
    y = FakeField(T.f64, 2, True, "y")
    x.data[:] = np.linspace(0.1, 0.8, 8)
    n.data[:] = [3, 5]
    y.grad.data[:] = 1

    def walk():
        for i in y:
            v = 1.0
            k = i
            for _ in range(n[i]):
                v = v * x[k]
                k = (k * 3 + 1) % 8
            y[i] = v
    forward_and_grad(walk)
    expected = np.zeros(8)
    for i in range(2):
        k, ks = i, []
        for _ in range(n.data[i]):
            ks.append(k)
            k = (k * 3 + 1) % 8
        for pos, kk in enumerate(ks):
            expected[kk] += np.prod([x.data[o] for p, o in enumerate(ks) if p != pos])
    np.testing.assert_allclose(x.grad.data, expected)


def test_static_loops_get_exact_capacity():
    x = FakeField(T.f32, 4, True, "x")
    y = FakeField(T.f32, 4, True, "y")
    x.data[:] = [0.1, 0.2, 0.3, 0.4]
    y.grad.data[:] = 1

    def static_loops():
        for i in x:
            v = x[i]
            for _ in range(5):
                for _ in range(3):
                    v = v * wm.sin(v)     # reads v itself: v's own stack (derivative_cache.py)
            y[i] = v
    forward = compile_forward(static_loops)
    grad = make_grad_kernel(forward)
    (stack,) = stacks_of(grad)
    assert stack.capacity == 1 + 5 * 3
    launch(forward)
    launch(grad, stack_capacity=lambda s: s.capacity)
    v = x.data.astype(np.float64)
    d = np.ones(4)
    for _ in range(15):
        d *= np.sin(v) + v * np.cos(v)
        v = v * np.sin(v)
    np.testing.assert_allclose(x.grad.data, d, rtol=1e-5)


def test_overflow_is_detected_not_written():
    x = FakeField(T.f32, 2, True, "x")
    n = FakeField(T.i32, 2, False, "n")
    y = FakeField(T.f32, 2, True, "y")
    n.data[:] = [2, 50]

    def compute():
        for i in x:
            v = x[i]
            for _ in range(n[i]):
                v = wm.sin(v)
            y[i] = v
    forward = compile_forward(compute)
    grad = make_grad_kernel(forward)
    launch(forward)
    with pytest.raises(AdStackOverflowError):
        launch(grad, stack_capacity=lambda s: 8)


def test_atomic_result_feeding_gradient_is_an_autodiff_error():
    x = FakeField(T.f32, 4, True, "x")
    c = FakeField(T.i32, (), False, "c")
    y = FakeField(T.f32, 8, True, "y")

    def compacting():
        for i in x:
            slot = wm.atomic_add(c[None], 1)
            y[slot] = x[i] * 2.0
    with pytest.raises(AutodiffError, match="atomic"):
        make_grad_kernel(compile_forward(compacting))


def test_range_loop_with_break_and_continue():
    x = FakeField(T.f64, 4, True, "x")
    n = FakeField(T.i32, 4, False, "n")
    y = FakeField(T.f64, 4, True, "y")
    n.data[:] = [2, 7, 0, 4]
    x.data[:] = [0.1, 0.5, 2.0, 1.2]
    y.grad.data[:] = 1

    def skipping():
        for i in x:
            v = x[i]
            for j in range(n[i]):
                if v > 0.9:
                    break
                if j % 2 == 0:
                    continue
                v = wm.sin(v) + 0.3
            y[i] = v

    def f(v, m):
        for j in range(m):
            if v > 0.9:
                break
            if j % 2 == 0:
                continue
            v = np.sin(v) + 0.3
        return v
    forward_and_grad(skipping)
    eps = 1e-7
    np.testing.assert_allclose(y.data, [f(a, m) for a, m in zip(x.data, n.data)])
    np.testing.assert_allclose(x.grad.data, [(f(a + eps, m) - f(a - eps, m)) / (2 * eps)
                                             for a, m in zip(x.data, n.data)], rtol=1e-6)


def _saved_head_value_chain(v: float, m: int) -> float:
    k = 0
    while k < m and v > -10.0:
        k += 1
        if k % 2 == 0:
            v = 0.5 * v
        else:
            v = (v + 0.2) * v
    return v


def test_value_saved_in_a_while_head_is_pushed_once_per_counted_iteration():
    # The head `k < n and v > -10` loads v once per evaluation, one more than the counted iterations, and the
    # odd branch reuses that load after a sibling branch pushed v, so the load gets a value stack of its own
    # (backup.py). Its push must follow the exit check: a push in the head left one entry per loop execution
    # behind, and every reversed iteration read the value of the iteration after its own.
    x = FakeField(T.f64, 4, True, "x")
    n = FakeField(T.i32, 4, False, "n")
    y = FakeField(T.f64, 4, True, "y")
    x.data[:] = [0.3, -0.4, 0.7, 0.5]
    n.data[:] = [1, 2, 5, 0]
    y.grad.data[:] = 1

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
            y[i] = v * v

    _, grad = forward_and_grad(chain)
    assert any(s.name == "saved" for s in stacks_of(grad))     # the case under test: a saved head value
    square = [_saved_head_value_chain(a, m) ** 2 for a, m in zip(x.data, n.data)]
    np.testing.assert_allclose(y.data, square, rtol=1e-15)
    # y is a polynomial in x of degree <= 16 with |y| < 1 and |y'''| < 100 here; f64 central differences at
    # h = 1e-6 err by h^2/6 |y'''| < 2e-11 (truncation) plus 2**-52 |y| / h < 3e-10 (rounding): 1e-8 covers both.
    eps = 1e-6
    fd = [(_saved_head_value_chain(a + eps, m) ** 2 - _saved_head_value_chain(a - eps, m) ** 2) / (2 * eps)
          for a, m in zip(x.data, n.data)]
    np.testing.assert_allclose(x.grad.data, fd, rtol=0, atol=1e-8)
