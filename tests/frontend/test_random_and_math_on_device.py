"""Random numbers and math functions in kernels on every available arch: randn's distribution and its replay
by grad, 64-bit random integers and f64 mantissas, round's ties, sin and cos accuracy for large arguments."""
from __future__ import annotations

import numpy as np

import wgkern as wk


def test_randn_is_standard_normal_and_replayed_by_grad(arch):
    x = wk.field(wk.f32, shape=1 << 16, needs_grad=True)
    y = wk.field(wk.f32, shape=1 << 16, needs_grad=True)

    @wk.kernel
    def k():
        for i in x:
            y[i] = x[i] * wk.randn()

    x.fill(1.0)
    k()
    samples = y.to_numpy()
    assert np.isfinite(samples).all()
    assert abs(samples.mean()) < 0.02 and abs(samples.std() - 1.0) < 0.02
    y.grad.fill(1.0)
    k.grad()                      # d y / d x is the same draw: the grad kernel replays the random stream
    np.testing.assert_array_equal(x.grad.to_numpy(), samples)
    with np.testing.assert_raises(wk.WkError):
        wk.randn(wk.i32)


def test_round_is_half_away_from_zero_for_large_and_tied_values(arch):
    """Taichi's round (C's round()): ties away from zero. WGSL's round() is half to even and lavapipe's f64 one
    keeps 54321987.6: the WGSL backend rounds itself."""
    for dtype in (wk.f32, wk.f64):
        x = wk.field(dtype, shape=13)
        out = wk.field(dtype, shape=13)

        @wk.kernel
        def k():
            for i in x:
                out[i] = wk.round(x[i])

        values = np.array([2.5, 3.5, -2.5, -3.5, 54321987.6, 1e7 + 0.5, 2.0 ** 40 + 0.5, 8388607.5, 0.49999997,
                           -0.0, -0.25, 0.5, -0.5], dtype=dtype.np_dtype)
        x.from_numpy(values)
        k()
        want = np.where(np.abs(values - np.trunc(values)) >= 0.5, np.trunc(values) + np.sign(values), np.trunc(values))
        np.testing.assert_array_equal(out.to_numpy(), want, err_msg=str(dtype))
        assert np.signbit(out.to_numpy()[[9, 10]]).all()          # -0.0 and -0.25 round to -0.0


def test_sin_and_cos_stay_accurate_for_large_arguments(arch):
    """Arguments past |x| ~ 6000 need more of pi/2 than three f32 parts: f32 reduces them in f64 where the
    device has it (the CPU uses libm)."""
    backend = wk.runtime.program.current().backend
    wide = getattr(backend, "features", None) is None or "shader-f64" in backend.features
    xs = np.random.default_rng(3).uniform(1e3, 1e8 if wide else 6e3, 1 << 16)
    for dtype in (wk.f32, wk.f64) if wide else (wk.f32,):
        x = wk.field(dtype, shape=xs.size)
        s = wk.field(dtype, shape=xs.size)
        c = wk.field(dtype, shape=xs.size)

        @wk.kernel
        def k():
            for i in x:
                s[i] = wk.sin(x[i])
                c[i] = wk.cos(x[i])

        arg = xs.astype(dtype.np_dtype)
        x.from_numpy(arg)
        k()
        tolerance = 2e-7 if dtype == wk.f32 else 1e-15
        np.testing.assert_allclose(s.to_numpy(), np.sin(arg.astype(np.float64)), rtol=0, atol=tolerance)
        np.testing.assert_allclose(c.to_numpy(), np.cos(arg.astype(np.float64)), rtol=0, atol=tolerance)


def test_sin_and_cos_next_to_multiples_of_half_pi(arch):
    """The worst case of argument reduction: results near zero, where only a long enough pi/2 keeps the
    relative error small (a few ulps of f32 here)."""
    k = np.arange(1, 4000, dtype=np.float64)
    args = (k * np.pi / 2).astype(np.float32)
    x = wk.field(wk.f32, shape=args.size)
    s = wk.field(wk.f32, shape=args.size)
    c = wk.field(wk.f32, shape=args.size)

    @wk.kernel
    def trig():
        for i in x:
            s[i] = wk.sin(x[i])
            c[i] = wk.cos(x[i])

    x.from_numpy(args)
    trig()
    for got, want in ((s.to_numpy(), np.sin(args.astype(np.float64))), (c.to_numpy(), np.cos(args.astype(np.float64)))):
        ulps = np.abs(got - want) / np.spacing(np.abs(want).astype(np.float32))
        assert ulps.max() <= 4, f"{ulps.max():.1f} ulp at x = {args[np.argmax(ulps)]}"


def test_random_64_bit_integers_cover_their_whole_range(arch):
    # Taichi's test_random test_random_int: ti.random(ti.i64) is uniform over all of i64 (it gave 32-bit draws)
    n = 4096
    a = wk.field(wk.i64, shape=n)
    b = wk.field(wk.u64, shape=n)

    @wk.kernel
    def fill():
        for i in range(n):
            a[i] = wk.random(wk.i64)
            b[i] = wk.random(wk.u64)

    fill()
    x = (a.to_numpy().astype(np.float64) + 2.0 ** 63) / 2.0 ** 64
    y = b.to_numpy().astype(np.float64) / 2.0 ** 64
    for v in (x, y):
        assert abs(v.mean() - 0.5) < 0.03 and abs((v ** 2).mean() - 1 / 3) < 0.03 and v.max() > 0.99
    assert 0.45 < (a.to_numpy() < 0).mean() < 0.55


def test_random_f64_fills_the_whole_mantissa(arch):
    # Quadrants' test_random_f64: wk.random(wk.f64) has 53 random bits (it had 24: every value times 2^24 was whole)
    n = 1 << 14
    x = wk.field(wk.f64, shape=n)

    @wk.kernel
    def fill():
        for i in x:
            x[i] = wk.random(wk.f64)

    fill()
    values = x.to_numpy()
    assert values.min() >= 0.0 and values.max() < 1.0
    assert abs(values.mean() - 0.5) < 0.02 and abs((values ** 2).mean() - 1 / 3) < 0.02
    below_2_32, _ = np.modf(values * 2.0 ** 32)
    assert (below_2_32 > 0).mean() > 0.99
    assert len(np.unique(values)) == n
