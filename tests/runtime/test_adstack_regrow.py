"""Growable adstacks (runtime/adstack_regrow.py, passes/autodiff/unit_guard.py): loops no size expression
bounds differentiate with default settings at any trip count, re-running only the units that overflowed.

Reference gradients: the step v <- v + c*sin(v) has derivative 1 + c*cos(v), so d v_n / d v_0 is the product of
those factors along the f64 trajectory; c = 1/n keeps the product of order 1 at any trip count n. Tolerance (a
worst-case bound, f32): the factor 1 + c*cos(v) and the product each round once per step (2 * 2^-24 relative),
and the trajectory's rounding (|v| < 4, so < 4 * 2^-24 per step, accumulated over n steps) moves each later
factor by c * |dv| with c * n = 1: in all under 8 * (n + 1) * 2^-24 relative."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk

C = 0.01


def _reference(x0: np.ndarray, trips: np.ndarray, c: float = C) -> np.ndarray:
    out = np.empty(len(x0))
    for k, (v, n) in enumerate(zip(x0.astype(np.float64), trips)):
        v, n = float(v), int(n)
        c32 = float(np.float32(c))
        d = 1.0
        for _ in range(n):
            d *= 1.0 + c32 * np.cos(v)
            v = v + c32 * np.sin(v)
        out[k] = d
    return out


def _rtol(trips: np.ndarray) -> float:
    return 8 * (int(trips.max()) + 1) * 2.0 ** -24


def _while_kernel(n_units: int):
    x = wk.field(wk.f32, shape=n_units, needs_grad=True)
    n = wk.field(wk.i32, shape=n_units)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def walk(c: wk.f32):
        for i in x:
            v = x[i]
            j = 0
            while j < n[i]:
                v = v + c * wk.sin(v)
                j += 1
            loss[None] += v
    return x, n, loss, walk


def _trip_table(arch) -> list[int]:
    # lavapipe stops an invocation's loops after 65535 iterations (docs/backends.md): 10^4 trips is its largest case
    return [1, 33, 10 ** 4] + ([10 ** 6] if arch == wk.cpu else [])


def test_while_loop_gradients_at_any_trip_count_need_no_option(arch):
    for trips in _trip_table(arch):
        x, n, loss, walk = _while_kernel(4)
        counts = np.array([trips, trips // 2, 0, 1], np.int32)
        xs = np.array([0.3, -0.7, 1.1, 2.0], np.float32)
        x.from_numpy(xs)
        n.from_numpy(counts)
        with wk.ad.Tape(loss=loss):
            walk(1.0 / trips)
        np.testing.assert_allclose(x.grad.to_numpy(), _reference(xs, counts, 1.0 / trips), rtol=_rtol(counts))


def test_per_unit_trip_counts_from_zero_up(arch):
    top = 10 ** 5 if arch == wk.cpu else 10 ** 4
    units = 300
    rng = np.random.default_rng(7)
    counts = rng.integers(0, top + 1, units).astype(np.int32)
    counts[:3] = (0, top, 1)
    xs = rng.uniform(-2, 2, units).astype(np.float32)
    x, n, loss, walk = _while_kernel(units)
    x.from_numpy(xs)
    n.from_numpy(counts)
    with wk.ad.Tape(loss=loss):
        walk(1.0 / top)
    expected = _reference(xs, counts, 1.0 / top)
    np.testing.assert_allclose(x.grad.to_numpy(), expected, rtol=_rtol(counts))
    assert wk.stats()["adstack_reruns"] >= 1
    # the same launch again: the grown capacity is kept, nothing re-runs, nothing is counted twice
    reruns = wk.stats()["adstack_reruns"]
    with wk.ad.Tape(loss=loss):
        walk(1.0 / top)
    np.testing.assert_allclose(x.grad.to_numpy(), expected, rtol=_rtol(counts))
    assert wk.stats()["adstack_reruns"] == reruns


def test_nested_while_loops(arch):
    x = wk.field(wk.f32, shape=6, needs_grad=True)
    n = wk.field(wk.i32, shape=6)
    y = wk.field(wk.f32, shape=6, needs_grad=True)

    @wk.kernel
    def nest():
        for i in x:
            v = x[i]
            a = 0
            while a < n[i]:
                b = 0
                while b < a:
                    v = v + C * wk.sin(v)
                    b += 1
                a += 1
            y[i] = v

    counts = np.array([0, 1, 5, 12, 40, 90], np.int32)     # inner trips a = 0..n-1: n(n-1)/2 steps in all
    xs = np.linspace(-1.5, 1.5, 6).astype(np.float32)
    x.from_numpy(xs)
    n.from_numpy(counts)
    nest()
    y.grad.fill(1.0)
    nest.grad()
    steps = counts * (counts - 1) // 2
    np.testing.assert_allclose(x.grad.to_numpy(), _reference(xs, steps), rtol=_rtol(steps))


def test_later_task_sees_the_complete_gradient_of_a_growing_one(arch):
    """Two tasks: the grad of the second (run first) grows; the first's grad reads what it accumulated."""
    x = wk.field(wk.f32, shape=8, needs_grad=True)
    h = wk.field(wk.f32, shape=8, needs_grad=True)
    n = wk.field(wk.i32, shape=8)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def two_tasks():
        for i in x:
            h[i] = 2.0 * x[i]
        for i in h:
            v = h[i]
            j = 0
            while j < n[i]:
                v = v + C * wk.sin(v)
                j += 1
            loss[None] += v

    counts = np.array([0, 3, 50, 200, 7, 1000, 64, 2], np.int32)
    xs = np.linspace(-1, 1, 8).astype(np.float32)
    x.from_numpy(xs)
    n.from_numpy(counts)
    with wk.ad.Tape(loss=loss):
        two_tasks()
    expected = 2.0 * _reference(2.0 * xs.astype(np.float64), counts)
    np.testing.assert_allclose(x.grad.to_numpy(), expected, rtol=_rtol(counts))


def test_parallel_range_read_from_memory_and_offset(arch):
    """The unit count comes from a bound the host reads back; units are numbered from the loop's begin."""
    x = wk.field(wk.f32, shape=16, needs_grad=True)
    n = wk.field(wk.i32, shape=16)
    m = wk.field(wk.i32, shape=())
    y = wk.field(wk.f32, shape=16, needs_grad=True)

    @wk.kernel
    def partial(first: wk.i32):
        for i in range(first, m[None]):
            v = x[i]
            j = 0
            while j < n[i]:
                v = v + C * wk.sin(v)
                j += 1
            y[i] = v

    counts = (np.arange(16, dtype=np.int32) * 37) % 300
    xs = np.linspace(-2, 2, 16).astype(np.float32)
    x.from_numpy(xs)
    n.from_numpy(counts)
    m[None] = 13
    partial(3)
    y.grad.fill(1.0)
    partial.grad(3)
    expected = _reference(xs, counts)
    expected[:3] = 0.0
    expected[13:] = 0.0
    np.testing.assert_allclose(x.grad.to_numpy(), expected, rtol=_rtol(counts))


def test_serial_task_while_loop(arch):
    x = wk.field(wk.f32, shape=(), needs_grad=True)
    n = wk.field(wk.i32, shape=())
    y = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def serial():
        v = x[None]                     # kernel scope: one serial task, one unit
        j = 0
        while j < n[None]:
            v = v + C * wk.sin(v)
            j += 1
        y[None] = v

    x[None] = 0.4
    n[None] = 500
    serial()
    y.grad[None] = 1.0
    serial.grad()
    steps = np.array([500])
    np.testing.assert_allclose(x.grad[None], _reference(np.array([0.4], np.float32), steps)[0], rtol=_rtol(steps))


def test_a_bound_computed_in_the_loop(arch):
    x = wk.field(wk.f32, shape=3, needs_grad=True)
    y = wk.field(wk.f32, shape=3, needs_grad=True)

    @wk.kernel
    def triangle(limit: wk.i32):
        for i in x:
            v = x[i]
            k = 1 + i
            for _ in range(limit):      # the inner bound k grows inside the loop: no size expression holds it
                for _ in range(k):
                    v = v + C * wk.sin(v)
                k += 1
            y[i] = v

    xs = np.array([0.4, -1.0, 2.5], np.float32)
    x.from_numpy(xs)
    triangle(30)
    y.grad.fill(1.0)
    triangle.grad(30)
    steps = np.array([sum(range(1 + i, 31 + i)) for i in range(3)])
    np.testing.assert_allclose(x.grad.to_numpy(), _reference(xs, steps), rtol=_rtol(steps))


def test_ndarray_argument_while_loop(arch):
    @wk.kernel
    def walk(a: wk.types.ndarray(dtype=wk.f32, ndim=1), counts: wk.types.ndarray(dtype=wk.i32, ndim=1),
             out: wk.types.ndarray(dtype=wk.f32, ndim=1)):
        for i in a:
            v = a[i]
            j = 0
            while j < counts[i]:
                v = v + C * wk.sin(v)
                j += 1
            out[i] = v

    xs = np.linspace(-1, 1, 5).astype(np.float32)
    counts = np.array([0, 40, 100, 7, 300], np.int32)
    a = wk.ndarray(wk.f32, 5, needs_grad=True)
    c = wk.ndarray(wk.i32, 5)
    out = wk.ndarray(wk.f32, 5, needs_grad=True)
    a.from_numpy(xs)
    c.from_numpy(counts)
    walk(a, c, out)
    out.grad.fill(1.0)
    walk.grad(a, c, out)
    np.testing.assert_allclose(a.grad.to_numpy(), _reference(xs, counts), rtol=_rtol(counts))


def test_a_capacity_the_user_set_raises_at_the_launch_and_leaves_the_program_usable(arch):
    wk.init(arch=arch, ad_stack_size=8)
    x, n, loss, walk = _while_kernel(4)
    xs = np.array([0.3, -0.7, 1.1, 2.0], np.float32)
    x.from_numpy(xs)
    n.from_numpy(np.array([3, 20, 1, 0], np.int32))
    walk(C)
    loss.grad[None] = 1.0
    with pytest.raises(wk.AdStackOverflowError, match=r"walk.*capacity 8.*ad_stack_size"):
        walk.grad(C)
    wk.sync()                                     # raised once
    counts = np.array([3, 7, 1, 0], np.int32)     # fits the cap: the unit states were left clean
    n.from_numpy(counts)
    x.grad.fill(0.0)
    walk(C)
    walk.grad(C)
    np.testing.assert_allclose(x.grad.to_numpy(), _reference(xs, counts), rtol=_rtol(counts))


def test_a_capped_overflow_with_more_units_than_the_idle_unit_states_hold(arch):
    """With ad_stack_size set, the unit states are never grown to the task's units (nothing re-runs); clearing
    them after an overflow of a 100-unit task must stay within them and still raise AdStackOverflowError."""
    wk.init(arch=arch, ad_stack_size=8)
    x, n, loss, walk = _while_kernel(100)
    xs = np.linspace(-1.0, 1.0, 100).astype(np.float32)
    x.from_numpy(xs)
    n.from_numpy(np.full(100, 20, np.int32))
    walk(C)
    loss.grad[None] = 1.0
    with pytest.raises(wk.AdStackOverflowError, match=r"walk.*capacity 8.*ad_stack_size"):
        walk.grad(C)
    counts = (np.arange(100) % 8).astype(np.int32)     # fits the cap
    n.from_numpy(counts)
    x.grad.fill(0.0)
    walk(C)
    walk.grad(C)
    np.testing.assert_allclose(x.grad.to_numpy(), _reference(xs, counts), rtol=_rtol(counts))


def test_growth_that_does_not_fit_in_memory_is_an_overflow_error_naming_the_loop(arch):
    wk.init(arch=arch, device_memory_limit=1 << 22)     # a 4 MiB budget
    x, n, loss, walk = _while_kernel(2)
    x.from_numpy(np.array([0.5, 0.5], np.float32))
    # one unit's f32 primals need 20 MB on the CPU (three slices); a GPU's heap holds one slice per dispatched
    # invocation (256 here), so 20000 trips already need 20 MB there
    n.from_numpy(np.array([5, 5 * 10 ** 6 if arch == wk.cpu else 20000], np.int32))
    with pytest.raises(wk.AdStackOverflowError, match=r"walk.*needs more than .* slots") as info:
        with wk.ad.Tape(loss=loss):
            walk(C)
    assert "test_adstack_regrow.py" in str(info.value)
    n.from_numpy(np.array([5, 6], np.int32))           # and the program still works
    x.grad.fill(0.0)
    with wk.ad.Tape(loss=loss):
        walk(C)
    np.testing.assert_allclose(x.grad.to_numpy(), _reference(np.array([0.5, 0.5], np.float32), np.array([5, 6])),
                               rtol=_rtol(np.array([6])))
