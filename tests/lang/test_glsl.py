"""wk.math's GLSL-style helpers (lang/glsl.py) inside kernels on every arch, against numpy formulas."""
from __future__ import annotations

import numpy as np

import wgkern as wk


def test_scalar_and_vector_helpers(arch):
    n = 64
    xs = np.linspace(-3.0, 3.0, n).astype(np.float32)
    x = wk.field(wk.f32, shape=n)
    out = wk.field(wk.f32, shape=(n, 9))
    vout = wk.Vector.field(2, wk.f32, shape=(n, 3))
    x.from_numpy(xs)

    @wk.kernel
    def k():
        for i in x:
            v = x[i]
            out[i, 0] = wk.math.mix(1.0, 3.0, v)
            out[i, 1] = wk.math.step(0.5, v)
            out[i, 2] = wk.math.smoothstep(-1.0, 2.0, v)
            out[i, 3] = wk.math.fract(v)
            out[i, 4] = wk.math.mod(v, 1.25)
            out[i, 5] = wk.math.degrees(wk.math.radians(v))
            out[i, 6] = wk.math.distance(wk.math.vec2(v, 1.0), wk.math.vec2(0.0, -1.0))
            out[i, 7] = wk.cast(wk.math.isnan(wk.sqrt(v)), wk.f32)
            out[i, 8] = wk.cast(wk.math.isinf(1.0 / (v * 0.0)), wk.f32)
            d = wk.math.normalize(wk.math.vec2(v, -1.0))
            vout[i, 0] = wk.math.reflect(d, wk.math.vec2(0.0, 1.0))
            vout[i, 1] = wk.math.refract(d, wk.math.vec2(0.0, 1.0), 0.75)
            vout[i, 2] = wk.math.refract(d, wk.math.vec2(0.0, 1.0), 3.0)

    k()
    got, vgot = out.to_numpy(), vout.to_numpy()
    t = np.clip((xs + 1.0) / 3.0, 0.0, 1.0)
    expected = np.stack([1.0 * (1 - xs) + 3.0 * xs, (xs >= 0.5).astype(np.float32), t * t * (3 - 2 * t),
                         xs - np.floor(xs), xs - 1.25 * np.floor(xs / 1.25), xs, np.hypot(xs, 2.0),
                         (xs < 0).astype(np.float32), np.ones(n, np.float32)], axis=1)
    np.testing.assert_allclose(got, expected, rtol=2e-6, atol=2e-6)
    d = np.stack([xs, -np.ones(n)], axis=1) / np.hypot(xs, 1.0)[:, None]
    normal = np.array([0.0, 1.0])
    np.testing.assert_allclose(vgot[:, 0], d - 2 * (d @ normal)[:, None] * normal, atol=1e-6)

    def refract(eta: float) -> np.ndarray:
        cos_in = d @ normal
        k_ = 1 - eta * eta * (1 - cos_in ** 2)
        out_ = eta * d - (eta * cos_in + np.sqrt(np.maximum(k_, 0)))[:, None] * normal
        return np.where((k_ >= 0)[:, None], out_, 0.0)
    np.testing.assert_allclose(vgot[:, 1], refract(0.75), atol=2e-6)
    np.testing.assert_allclose(vgot[:, 2], refract(3.0), atol=2e-6)
    assert (vgot[:, 2] == 0).any()        # total internal reflection happens in this sweep


def test_isnan_and_isinf_read_the_bits(arch):
    """NaN and infinities in f32 and f64, elementwise on vectors, and never for ints."""
    values = np.array([0.0, -1.5, np.nan, np.inf, -np.inf, 3e38, -np.nan, 1e-45])
    x32 = wk.field(wk.f32, shape=values.size)
    x64 = wk.field(wk.f64, shape=values.size)
    out = wk.field(wk.i32, shape=(values.size, 5))

    @wk.kernel
    def k():
        for i in x32:
            out[i, 0] = wk.cast(wk.math.isnan(x32[i]), wk.i32) + 2 * wk.cast(wk.math.isinf(x32[i]), wk.i32)
            out[i, 1] = wk.cast(wk.math.isnan(x64[i]), wk.i32) + 2 * wk.cast(wk.math.isinf(x64[i]), wk.i32)
            flags = wk.math.isinf(wk.math.vec2(x32[i], 1.0))
            out[i, 2] = wk.cast(flags[0], wk.i32) + 2 * wk.cast(flags[1], wk.i32)
            out[i, 3] = wk.cast(wk.math.isnan(i), wk.i32)
            out[i, 4] = wk.cast(wk.math.isnan(wk.sqrt(x32[i])), wk.i32)

    x32.from_numpy(values.astype(np.float32))
    x64.from_numpy(values)
    k()
    got = out.to_numpy()
    expected = np.isnan(values) + 2 * np.isinf(values)
    assert got[:, 0].tolist() == expected.tolist() and got[:, 1].tolist() == expected.tolist()
    assert got[:, 2].tolist() == np.isinf(values).astype(int).tolist()
    assert got[:, 3].tolist() == [0] * values.size
    with np.errstate(invalid="ignore"):
        assert got[:, 4].tolist() == np.isnan(np.sqrt(values.astype(np.float32))).astype(int).tolist()


def test_matrix_and_complex_helpers(arch):
    out = wk.field(wk.f32, shape=10)

    @wk.kernel
    def k():
        for _ in range(1):
            m = wk.math.mat2(2.0, 1.0, 1.0, 3.0)
            inv = wk.math.inverse(m)
            out[0] = wk.math.determinant(m)
            out[1] = (inv @ m)[0, 0]
            out[2] = (inv @ m)[0, 1]
            r = wk.math.rotation2d(wk.math.pi / 2) @ wk.math.vec2(1.0, 0.0)
            out[3] = r.x
            out[4] = r.y
            z = wk.math.cmul(wk.math.vec2(1.0, 2.0), wk.math.vec2(3.0, -1.0))
            out[5] = z.x
            out[6] = z.y
            q = wk.math.cdiv(z, wk.math.vec2(3.0, -1.0))
            out[7] = q.x
            out[8] = q.y
            out[9] = wk.math.cconj(q).y

    k()
    np.testing.assert_allclose(out.to_numpy(), [5.0, 1.0, 0.0, 0.0, 1.0, 5.0, 5.0, 1.0, 2.0, -2.0], atol=1e-6)
