"""Reverse mode end to end on every arch: kernels through the runtime, gradients against closed forms (f32)
and central finite differences (f64), adstack capacities, overflow, Tape, the stale-bounds guard."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk

TRIPS = np.array([0, 1, 3, 10], np.int32)

@wk.func
def scaled_exp(v):
    return wk.exp(v * 0.3)


@wk.func
def shifted_log(v):
    return wk.log(v + 2.0)


@wk.func
def shifted_sqrt(v):
    return wk.sqrt(v + 1.0)


@wk.func
def shifted_rsqrt(v):
    return wk.rsqrt(v + 1.5)


@wk.func
def half_asin(v):
    return wk.asin(v * 0.5)


@wk.func
def half_acos(v):
    return wk.acos(v * 0.5)


@wk.func
def abs_pow(v):
    return wk.pow(wk.abs(v) + 0.5, 1.3)


@wk.func
def shifted_abs(v):
    return wk.abs(v - 0.3)


@wk.func
def clamped(v):
    return wk.min(wk.max(v, -0.5), 0.7)


@wk.func
def angle(v):
    return wk.atan2(v, 1.5)


UNARY = {
    "sin": (wk.sin, np.sin, (-1.0, 1.0)), "cos": (wk.cos, np.cos, (-1.0, 1.0)),
    "tan": (wk.tan, np.tan, (-0.4, 0.4)), "exp": (scaled_exp, lambda v: np.exp(v * 0.3), (-1, 1)),
    "log": (shifted_log, lambda v: np.log(v + 2.0), (0.1, 1.0)),
    "sqrt": (shifted_sqrt, lambda v: np.sqrt(v + 1.0), (0.1, 1.0)),
    "rsqrt": (shifted_rsqrt, lambda v: 1 / np.sqrt(v + 1.5), (0.1, 1.0)),
    "tanh": (wk.tanh, np.tanh, (-1.0, 1.0)), "atan": (wk.atan, np.arctan, (-1.0, 1.0)),
    "asin": (half_asin, lambda v: np.arcsin(v * 0.5), (-0.9, 0.9)),
    "acos": (half_acos, lambda v: np.arccos(v * 0.5), (-0.9, 0.9)),
    "pow": (abs_pow, lambda v: np.power(np.abs(v) + 0.5, 1.3), (0.1, 1.0)),
    "abs": (shifted_abs, lambda v: np.abs(v - 0.3), (0.4, 1.0)),
    "min_max": (clamped, lambda v: np.minimum(np.maximum(v, -0.5), 0.7), (-0.4, 0.6)),
    "atan2": (angle, lambda v: np.arctan2(v, 1.5), (-1.0, 1.0)),
}


def chain(np_fn, v, k):
    for _ in range(k):
        v = np_fn(v) * 0.9 + 0.05
    return v


@pytest.mark.parametrize("name", sorted(UNARY))
def test_each_op_inside_a_dynamic_loop_matches_f64_finite_differences(arch, name):
    if arch == "vulkan" and not _has_f64():
        pytest.skip("adapter without shader-f64")
    wk_fn, np_fn, (lo, hi) = UNARY[name]
    x = wk.field(wk.f64, shape=4, needs_grad=True)
    n = wk.field(wk.i32, shape=4)
    y = wk.field(wk.f64, shape=4, needs_grad=True)

    @wk.kernel
    def iterate():
        for i in x:
            v = x[i]
            for _ in range(n[i]):
                v = wk_fn(v) * 0.9 + 0.05
            y[i] = v

    xs = np.linspace(lo, hi, 4)
    x.from_numpy(xs)
    n.from_numpy(TRIPS)
    iterate()
    y.grad.fill(1.0)
    iterate.grad()
    eps = 1e-6
    expected = [(chain(np_fn, a + eps, k) - chain(np_fn, a - eps, k)) / (2 * eps) for a, k in zip(xs, TRIPS)]
    np.testing.assert_allclose(x.grad.to_numpy(), expected, rtol=2e-5, atol=1e-7)
    np.testing.assert_allclose(y.to_numpy(), [chain(np_fn, a, k) for a, k in zip(xs, TRIPS)], rtol=1e-9)


def _has_f64() -> bool:
    backend = wk.runtime.program.current().backend
    return getattr(backend, "supports", lambda dt: True)(wk.f64)


def test_api_example_closed_form_f32(arch):
    x = wk.field(wk.f32, shape=16, needs_grad=True)
    y = wk.field(wk.f32, shape=(), needs_grad=True)
    n = wk.field(wk.i32, shape=16)

    @wk.kernel
    def compute():
        for i in x:
            v = x[i]
            for _ in range(n[i]):
                v = wk.sin(v) + 0.1
            y[None] += v

    xs = np.linspace(0, 1, 16, dtype=np.float32)
    trips = np.resize(TRIPS, 16)
    x.from_numpy(xs)
    n.from_numpy(trips)
    compute()
    y.grad[None] = 1.0
    compute.grad()
    expected = []
    for v, k in zip(xs.astype(np.float64), trips):
        d = 1.0
        for _ in range(k):
            d *= np.cos(v)
            v = np.sin(v) + 0.1
        expected.append(d)
    np.testing.assert_allclose(x.grad.to_numpy(), expected, rtol=1e-5, atol=1e-6)


def test_long_loops_with_several_stacks(arch):
    wk.init(arch=arch, default_ad_stack_size=4097)
    x = wk.field(wk.f32, shape=64, needs_grad=True)
    w = wk.field(wk.f32, shape=64, needs_grad=True)
    n = wk.field(wk.i32, shape=64)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def long_loop():
        for i in x:
            a = x[i]
            b = w[i]
            k = 0
            for _ in range(n[i]):
                a = a + 0.001 * wk.sin(b)
                b = b - 0.001 * wk.cos(a)
                k = (k + 1) % 3
            loss[None] += a * b

    x.from_numpy(np.linspace(0.1, 0.9, 64, dtype=np.float32))
    w.from_numpy(np.linspace(-0.5, 0.5, 64, dtype=np.float32))
    n.fill(4096)
    with wk.ad.Tape(loss=loss):
        long_loop()

    def reference(a, b):
        for _ in range(4096):
            a = a + 0.001 * np.sin(b)
            b = b - 0.001 * np.cos(a)
        return a * b
    xs, ws = x.to_numpy().astype(np.float64), w.to_numpy().astype(np.float64)
    eps = 1e-5
    for k in (0, 31, 63):
        fd = (reference(xs[k] + eps, ws[k]) - reference(xs[k] - eps, ws[k])) / (2 * eps)
        np.testing.assert_allclose(x.grad[k], fd, rtol=2e-3, atol=1e-4)


def test_static_loops_need_no_default(arch):
    wk.init(arch=arch, default_ad_stack_size=1)
    x = wk.field(wk.f32, shape=8, needs_grad=True)
    y = wk.field(wk.f32, shape=8, needs_grad=True)

    @wk.kernel
    def fixed():
        for i in x:
            v = x[i]
            for _ in range(6):
                v = wk.sin(v)
            y[i] = v

    x.from_numpy(np.linspace(0, 1, 8, dtype=np.float32))
    fixed()
    y.grad.fill(1.0)
    fixed.grad()
    v = np.linspace(0, 1, 8)
    d = np.ones(8)
    for _ in range(6):
        d *= np.cos(v)
        v = np.sin(v)
    np.testing.assert_allclose(x.grad.to_numpy(), d, rtol=1e-5)


def _sin_iteration(size: int):
    """Fields x, n, y and the kernel `iterate`: y[i] = sin applied n[i] times to x[i]."""
    x = wk.field(wk.f32, shape=size, needs_grad=True)
    n = wk.field(wk.i32, shape=size)
    y = wk.field(wk.f32, shape=size, needs_grad=True)

    @wk.kernel
    def iterate():
        for i in x:
            v = x[i]
            for _ in range(n[i]):
                v = wk.sin(v)
            y[i] = v

    return x, n, y, iterate


def test_heap_bytes_follow_the_formula(arch):
    wk.init(arch=arch, ad_stack_size=40)
    x, n, y, iterate = _sin_iteration(8)

    n.fill(3)
    iterate()
    y.grad.fill(1.0)
    iterate.grad()
    wk.sync()
    backend = wk.runtime.program.current().backend
    threads = backend.adstack_threads(8)
    assert wk.stats()["adstack_heap_bytes"] == threads * 40 * 4   # f32 primals; adjoints in registers


def test_overflow_raises_resets_and_recovers(arch):
    wk.init(arch=arch, ad_stack_size=4)
    x, n, y, iterate = _sin_iteration(256)

    n.fill(10)
    iterate()
    y.grad.fill(1.0)
    with pytest.raises(wk.AdStackOverflowError, match=r"iterate.*capacity 4") as info:
        iterate.grad()          # a capacity the user set: raised by the launch that overflowed
    assert "ad_stack_size" in str(info.value)
    wk.sync()   # reported once, then the flag is clear
    n.fill(2)
    iterate()
    x.grad.fill(0.0)
    y.grad.fill(1.0)
    iterate.grad()
    xs = x.to_numpy().astype(np.float64)
    np.testing.assert_allclose(x.grad.to_numpy(), np.cos(np.sin(xs)) * np.cos(xs), rtol=1e-5)
    wk.reset()
    wk.init(arch=arch)


def _while_kernel():
    x = wk.field(wk.f32, shape=4, needs_grad=True)
    y = wk.field(wk.f32, shape=4, needs_grad=True)

    @wk.kernel
    def grow(limit: wk.f32):
        for i in x:
            v = x[i]
            while v < limit:
                v = wk.abs(v) * 1.5 + 0.01      # abs reads v: v's stack takes a push a trip
            y[i] = v
    return x, y, grow


def test_while_stack_grows_past_a_tiny_default_and_keeps_the_capacity(arch):
    xs = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    wk.init(arch=arch, default_ad_stack_size=2)     # a while loop starts at the default, then grows
    x, y, grow = _while_kernel()
    x.from_numpy(xs)
    counts = []
    for k, a in enumerate(xs.astype(np.float64)):
        v, count = a, 0
        while v < 50.0:
            v = v * 1.5 + 0.01
            count += 1
        counts.append(count)
    for _ in range(2):
        x.grad.fill(0.0)
        grow(50.0)
        y.grad.fill(1.0)
        grow.grad(50.0)
        # d v_count / d v_0 = 1.5^count exactly in reals; each f32 step adds <= 2^-24 relative error
        np.testing.assert_allclose(x.grad.to_numpy(), 1.5 ** np.array(counts), rtol=4 * max(counts) * 2.0 ** -24)
    reruns = wk.stats()["adstack_reruns"]
    assert reruns >= 1                                  # 2 slots did not hold ~13 trips: it grew
    x.grad.fill(0.0)
    grow.grad(50.0)
    assert wk.stats()["adstack_reruns"] == reruns       # the capacity that sufficed is kept


def test_tape_over_several_kernels(arch):
    x = wk.field(wk.f32, shape=8, needs_grad=True)
    h = wk.field(wk.f32, shape=8, needs_grad=True)
    n = wk.field(wk.i32, shape=8)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def first():
        for i in x:
            v = x[i]
            for _ in range(n[i]):
                v = v * 0.5 + wk.sin(v)
            h[i] = v

    @wk.kernel
    def second():
        for i in h:
            loss[None] += h[i] * h[i]

    xs = np.linspace(-1, 1, 8).astype(np.float32)
    x.from_numpy(xs)
    n.from_numpy(np.arange(8, dtype=np.int32))
    with wk.ad.Tape(loss=loss):
        first()
        second()

    def f(v, k):
        for _ in range(k):
            v = v * 0.5 + np.sin(v)
        return v * v
    eps = 1e-6
    expected = [(f(a + eps, k) - f(a - eps, k)) / (2 * eps) for a, k in zip(xs.astype(np.float64), range(8))]
    np.testing.assert_allclose(x.grad.to_numpy(), expected, rtol=1e-4, atol=1e-5)


def test_grad_after_bounds_changed_is_refused(arch):
    x = wk.field(wk.f32, shape=4, needs_grad=True)
    y = wk.field(wk.f32, shape=4, needs_grad=True)
    n = wk.field(wk.i32, shape=4)

    @wk.kernel
    def iterate():
        for i in x:
            v = x[i]
            for _ in range(n[i]):
                v = wk.sin(v)
            y[i] = v

    @wk.kernel
    def bump():
        for i in n:
            n[i] += 1

    n.fill(2)
    iterate()
    bump()
    with pytest.raises(wk.WkError, match="trip count"):
        iterate.grad()
    iterate()
    iterate.grad()


def test_ndarray_arguments_with_gradients(arch):
    x = wk.ndarray(wk.f32, shape=5, needs_grad=True)
    n = wk.ndarray(wk.i32, shape=5)
    y = wk.ndarray(wk.f32, shape=5, needs_grad=True)

    @wk.kernel
    def iterate(x: wk.types.ndarray(), n: wk.types.ndarray(), y: wk.types.ndarray()):
        for i in x:
            v = x[i]
            for _ in range(n[i]):
                v = v * v * 0.5 + 0.1
            y[i] = v

    xs = np.array([0.1, 0.3, 0.5, 0.7, 0.9], np.float32)
    x.from_numpy(xs)
    n.from_numpy(np.array([0, 1, 2, 3, 4], np.int32))
    iterate(x, n, y)
    y.grad.fill(1.0)
    iterate.grad(x, n, y)

    def f(v, k):
        for _ in range(k):
            v = v * v * 0.5 + 0.1
        return v
    eps = 1e-6
    expected = [(f(a + eps, k) - f(a - eps, k)) / (2 * eps) for a, k in zip(xs.astype(np.float64), range(5))]
    np.testing.assert_allclose(x.grad.to_numpy(), expected, rtol=1e-4)


def test_access_rule_violations_are_reported_without_debug_mode(arch):
    x = wk.field(wk.f32, shape=4, needs_grad=True)

    @wk.kernel
    def in_place():
        for i in x:
            v = x[i]
            x[i] = v * v

    in_place()
    with pytest.raises(wk.AutodiffError, match=r"global data access rule violated: 'x' is overwritten here after "
                                               r"the same launch read it \(at .*test_autodiff.py:\d+") as info:
        in_place.grad()
    assert "x[i] = v * v" in str(info.value)


def test_grad_replays_the_forward_random_numbers(arch):
    x = wk.field(wk.f32, shape=64, needs_grad=True)
    n = wk.field(wk.i32, shape=64)
    y = wk.field(wk.f32, shape=64, needs_grad=True)
    noise = wk.field(wk.f32, shape=64)

    @wk.kernel
    def jitter():
        for i in x:
            v = x[i]
            total = 0.0
            for _ in range(n[i]):
                r = wk.random()
                v = v * (0.5 + r)
                total += r
            noise[i] = total
            y[i] = v

    x.fill(1.0)
    n.from_numpy((np.arange(64) % 5).astype(np.int32))
    jitter()
    y.grad.fill(1.0)
    jitter.grad()
    # y = x * prod(0.5 + r_k): dy/dx = y / x, with the same draws as the forward launch
    np.testing.assert_allclose(x.grad.to_numpy(), y.to_numpy(), rtol=1e-5)


