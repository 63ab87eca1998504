"""wk.math's GLSL-style helpers (lang/glsl.py) inside kernels on every arch, against numpy formulas."""
from __future__ import annotations

import numpy as np

import wgkern as wk
from tests.error_bounds import assert_within, f32_bound


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
    got, vgot = out.to_numpy().astype(np.float64), vout.to_numpy().astype(np.float64)
    v = xs.astype(np.float64)
    t = np.clip((v + 1.0) / 3.0, 0.0, 1.0)
    assert np.abs(v / 1.25 - np.round(v / 1.25)).min() > f32_bound(2, 3.0)     # mod's floor cannot flip
    expected = np.stack([1.0 * (1 - v) + 3.0 * v, (v >= 0.5), t * t * (3 - 2 * t), v - np.floor(v),
                         v - 1.25 * np.floor(v / 1.25), v, np.hypot(v, 2.0), (v < 0), np.ones(n)], axis=1)
    # per column: the f32 operations behind it and the largest magnitude on the way (tests/error_bounds.py)
    bounds = np.stack([f32_bound(3, 1 + 3 * np.abs(v)),           # mix: 1 - v, 3 v, the sum
                       np.zeros(n),                                 # step: a comparison, exact
                       f32_bound(7, np.full(n, 3.0)),               # smoothstep: (v + 1) / 3, clamp, t t (3 - 2 t)
                       f32_bound(1, np.abs(v)),                     # fract: v - floor(v)
                       f32_bound(4, np.abs(v)),                     # mod: v / 1.25 (floor exact), v - 1.25 k
                       f32_bound(4, np.abs(v)),                     # degrees(radians(v)): two rounded constants
                       f32_bound(4, np.hypot(v, 2.0)),              # distance: 2 squares, a sum, sqrt
                       np.zeros(n), np.zeros(n)], axis=1)           # isnan, isinf: exact
    assert_within(got, expected, bounds, "GLSL scalar helpers")
    d = np.stack([v, -np.ones(n)], axis=1) / np.hypot(v, 1.0)[:, None]
    normal = np.array([0.0, 1.0])
    unit = 5          # normalize: a dot product (3), sqrt and a division: |d - exact| <= f32_bound(5, 1)
    # reflect: d - 2 (d . n) n, 3 more operations on values up to 2
    assert_within(vgot[:, 0], d - 2 * (d @ normal)[:, None] * normal, f32_bound(unit + 3, 2.0), "reflect")

    def refract(eta: float) -> tuple[np.ndarray, np.ndarray]:
        cos_in = d @ normal
        k_ = 1 - eta * eta * (1 - cos_in ** 2)
        out_ = eta * d - (eta * cos_in + np.sqrt(np.maximum(k_, 0)))[:, None] * normal
        # k: d's error and 4 operations on values up to eta^2; sqrt(k) scales that by 1 / (2 sqrt k) and adds
        # its own rounding; then eta d - (eta cos + sqrt k) n, 3 operations on values up to eta + 1
        k_error = f32_bound(unit + 4, eta * eta)
        assert np.abs(k_).min() > k_error            # the k < 0 test (total internal reflection) cannot flip
        root = np.sqrt(np.maximum(k_, 1e-30))
        bound = k_error / (2 * root) + f32_bound(1, root) + f32_bound(unit + 3, eta + 1)
        return np.where((k_ >= 0)[:, None], out_, 0.0), np.where((k_ >= 0)[:, None], bound[:, None], 0.0)
    for column, eta in ((1, 0.75), (2, 3.0)):
        want, bound = refract(eta)
        assert_within(vgot[:, column], want, bound, f"refract(eta={eta})")
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
    # at most 8 f32 operations behind each value (cdiv: a complex product, |w|^2 and a division; inverse: the
    # determinant, a division, a 2-term product) on values up to 5; cos(pi / 2) is f32 pi's, within 1 ulp of 1
    assert_within(out.to_numpy(), [5.0, 1.0, 0.0, 0.0, 1.0, 5.0, 5.0, 1.0, 2.0, -2.0], f32_bound(8, 5.0),
                  "mat2 inverse, rotation and complex helpers")


def _rx(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def _ry(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def _rz(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def _homogeneous(r):
    out = np.eye(4)
    out[:3, :3] = r
    return out


def test_transform_complex_and_bit_helpers(arch):
    mats = wk.Matrix.field(4, 4, wk.f32, shape=5)
    cplx = wk.Vector.field(2, wk.f32, shape=6)
    bits = wk.field(wk.i32, shape=5)
    solved = wk.Vector.field(3, wk.f32, shape=1)

    @wk.kernel
    def k():
        mats[0] = wk.math.translate(1.0, 2.0, 3.0)
        mats[1] = wk.math.scale(2.0, 3.0, 4.0)
        mats[2] = wk.math.rot_by_axis(wk.math.vec3(1.0, 2.0, -0.5), 0.8)
        mats[3] = wk.math.rot_yaw_pitch_roll(0.3, -0.7, 1.1)
        mats[4] = wk.math.rotation3d(0.52, -0.785, 1.046)
        z = wk.math.vec2(0.3, -1.2)
        cplx[0] = wk.math.cexp(z)
        cplx[1] = wk.math.clog(z)
        cplx[2] = wk.math.cpow(z, 2.5)
        cplx[3] = wk.math.csqrt(z)
        cplx[4] = wk.math.cinv(z)
        cplx[5] = wk.math.vdir(0.4)
        bits[0] = wk.math.popcnt(0x00F0F0F1)
        bits[1] = wk.math.popcnt(-1)
        bits[2] = wk.math.clz(1)
        bits[3] = wk.math.clz(0)
        bits[4] = wk.math.clz(12345)
        a = wk.Matrix([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]])
        solved[0] = wk.solve(a, wk.math.vec3(1.0, 2.0, 3.0)) + wk.math.eye(3)[1, :]

    k()
    axis = np.array([1.0, 2.0, -0.5]) / np.linalg.norm([1.0, 2.0, -0.5])
    cross = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    rodrigues = np.cos(0.8) * np.eye(3) + np.sin(0.8) * cross + (1 - np.cos(0.8)) * np.outer(axis, axis)
    translate = np.eye(4)
    translate[:3, 3] = [1, 2, 3]
    want = [translate, np.diag([2.0, 3.0, 4.0, 1.0]), _homogeneous(rodrigues.T),
            _homogeneous((_ry(0.3) @ _rx(-0.7) @ _rz(1.1)).T),
            _homogeneous((_ry(1.046) @ _rx(0.52) @ _rz(-0.785)).T)]        # yaw = z, pitch = x, roll = y
    np.testing.assert_allclose(mats.to_numpy(), want, atol=2e-6)
    z = complex(0.3, -1.2)
    want_c = [np.exp(z), np.log(z), z ** 2.5, np.sqrt(z), 1 / z, np.exp(0.4j)]
    np.testing.assert_allclose(cplx.to_numpy(), [[w.real, w.imag] for w in want_c], rtol=2e-5, atol=1e-6)
    assert bits.to_numpy().tolist() == [13, 32, 31, 32, 32 - (12345).bit_length()]
    np.testing.assert_allclose(solved.to_numpy()[0], np.linalg.solve(
        [[2, 1, 0], [1, 3, 1], [0, 1, 4]], [1, 2, 3]) + [0, 1, 0], rtol=1e-6)


def test_matrix_helpers_slices_and_c_division(arch):
    out = wk.field(wk.f32, shape=8)
    iout = wk.field(wk.i32, shape=8)

    @wk.kernel
    def k():
        m = wk.Matrix([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
        out[0] = wk.Matrix([[1.0, 2.0], [3.0, 4.0]]).norm()              # Frobenius
        out[1] = wk.Matrix.diag(3, 2.5)[1, 1] + wk.Matrix.diag(dim=3, val=2.5)[0, 1]
        out[2] = wk.Matrix.outer_product(wk.math.vec2(1.0, 2.0), wk.math.vec2(3.0, 4.0))[1, 0]
        out[3] = m[1, :].sum() + m[:, 2].sum() * 10.0                     # a row and a column
        out[4] = m[0:2, 1:3].sum() + m[2, ::2].sum() * 100.0              # a block; a strided row
        out[5] = wk.raw_div(-7.0, 2.0) + wk.raw_mod(-7.5, 2.0) * 10.0
        out[6] = wk.zero(m).sum() + wk.one(m)[2, 2] + wk.one(2.5)
        a, b = -7, 2
        iout[0] = wk.raw_div(a, b)
        iout[1] = wk.raw_mod(a, b)
        iout[2] = wk.raw_div(7, -2)
        iout[3] = wk.raw_mod(7, -2)
        iout[4] = wk.raw_div(-8, 2)
        iout[5] = wk.raw_mod(-6, -4)

    k()
    np.testing.assert_allclose(out.to_numpy()[:7], [np.sqrt(30), 2.5, 6.0, 15 + 180, 16 + 1600, -3.5 - 15, 2.0],
                               rtol=1e-6)
    assert iout.to_numpy()[:6].tolist() == [-3, -1, -3, 1, -4, -2]
    assert wk.raw_div(-7, 2) == -3 and wk.raw_mod(-7, 2) == -1 and wk.raw_mod(-7.5, 2.0) == -1.5
    assert wk.Matrix.diag(2, 3.0).tolist() == [[3.0, 0.0], [0.0, 3.0]]


def test_stop_grad_no_grad_and_field_kinds(arch):
    x = wk.field(wk.f32, shape=3, needs_grad=True)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def energy():
        for i in x:
            loss[None] += x[i] * wk.stop_grad(x[i]) + x[i]         # d/dx = x + 1, not 2x + 1

    @wk.ad.no_grad
    @wk.kernel
    def bookkeeping():
        for i in x:
            loss[None] += x[i] * 10.0

    x.from_numpy(np.array([1.0, 2.0, 3.0], np.float32))
    with wk.ad.Tape(loss=loss):
        energy()
        bookkeeping()
    np.testing.assert_allclose(x.grad.to_numpy(), [2.0, 3.0, 4.0])
    assert loss[None] == 14.0 + 60.0 + 6.0
    v = wk.Vector.field(2, wk.f32, shape=3)
    assert isinstance(x, wk.ScalarField) and not isinstance(x, wk.MatrixField)
    assert isinstance(v, wk.MatrixField) and isinstance(v, wk.Field) and not isinstance(v, wk.ScalarField)
    assert isinstance(wk.ndarray(wk.f32, 3), wk.Ndarray) and isinstance(wk.template(), wk.Template)


def test_popcnt_and_clz_count_every_bit_of_the_dtype(arch):
    # 64-bit operands count all 64 bits (a 32-bit view of -1 has 32 set bits and of 2**32 32 leading zeros);
    # 32-bit operands keep their 32-bit answers. Closed forms from Python's int.bit_count / bit_length.
    rng = np.random.default_rng(3)
    values64 = [0, 1, -1, 1 << 31, 1 << 32, (1 << 32) | 0xFF, (1 << 62), -(1 << 63)]
    values64 += [int(v) for v in rng.integers(-(1 << 63), (1 << 63) - 1, 24, dtype=np.int64)]
    values32 = [0, 1, -1, 12345, 1 << 31 - 1] + [int(v) for v in rng.integers(-(1 << 31), (1 << 31) - 1, 8)]
    a64 = wk.ndarray(wk.i64, shape=len(values64))
    a64.from_numpy(np.array(values64, np.int64))
    u64 = wk.ndarray(wk.u64, shape=len(values64))
    u64.from_numpy(np.array(values64, np.int64).view(np.uint64))
    a32 = wk.ndarray(wk.i32, shape=len(values32))
    a32.from_numpy(np.array(values32, np.int32))
    out = wk.ndarray(wk.i64, shape=(5, len(values64)))

    @wk.kernel
    def count(a64: wk.types.ndarray(wk.i64, 1), u64: wk.types.ndarray(wk.u64, 1),
              a32: wk.types.ndarray(wk.i32, 1), out: wk.types.ndarray(wk.i64, 2)):
        for i in a64:
            out[0, i] = wk.math.popcnt(a64[i]) + wk.i64(0)      # composes with 64-bit arithmetic
            out[1, i] = wk.math.clz(a64[i])
            out[2, i] = wk.math.clz(u64[i])
        for i in a32:
            out[3, i] = wk.math.popcnt(a32[i])
            out[4, i] = wk.math.clz(a32[i])

    count(a64, u64, a32, out)
    got = out.to_numpy()
    unsigned64 = [v & ((1 << 64) - 1) for v in values64]
    unsigned32 = [v & ((1 << 32) - 1) for v in values32]
    assert got[0].tolist() == [bin(v).count("1") for v in unsigned64]
    assert got[1].tolist() == [64 - v.bit_length() for v in unsigned64]
    assert got[2].tolist() == [64 - v.bit_length() for v in unsigned64]
    assert got[3, :len(values32)].tolist() == [bin(v).count("1") for v in unsigned32]
    assert got[4, :len(values32)].tolist() == [32 - v.bit_length() for v in unsigned32]
