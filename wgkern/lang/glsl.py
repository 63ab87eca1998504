"""GLSL-style helpers of `wk.math` (the names Taichi's ti.math offers): kernel-language functions, inlined
where a kernel calls them, on scalars and (elementwise) on vectors where that makes sense."""
from __future__ import annotations

import math as _pymath

from wgkern.lang.kernel import func
from wgkern.lang import kernel_functions as _wm
from wgkern.lang.types import i32 as _i32
from wgkern.lang.types import template as _template
from wgkern.lang.types import u32 as _u32
from wgkern.lang.types import u64 as _u64
from wgkern.lang.matrix import Matrix as _Matrix
from wgkern.lang.matrix import Vector as _Vector

_DEGREES_PER_RADIAN = 180.0 / _pymath.pi
_RADIANS_PER_DEGREE = _pymath.pi / 180.0


@func
def mix(x, y, a):
    """x (1 - a) + y a."""
    return x * (1.0 - a) + y * a


@func
def step(edge, x):
    """0 where x < edge, else 1 (scalars)."""
    return _wm.select(x < edge, 0.0, 1.0)


@func
def smoothstep(edge0, edge1, x):
    """Hermite interpolation of x between the edges, clamped to [0, 1]."""
    t = _wm.clamp((x - edge0) / (edge1 - edge0), 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


@func
def fract(x):
    return x - _wm.floor(x)


@func
def mod(x, y):
    """GLSL mod: x - y floor(x / y) (the sign of y)."""
    return x - y * _wm.floor(x / y)


@func
def ffs(x):
    """The 1-based position of the lowest set bit of an i32, u32, i64 or u64 (0 for 0), as an i32; the bit
    pattern counts, so ffs(-1) == 1 (Quadrants' qd.math.ffs, CUDA's __ffs)."""
    low = _wm.cast(x, _u32)                       # int -> int conversions wrap: the low 32 bits
    high = _wm.cast((x >> 16) >> 16, _u32)        # bits 32..63 of a 64-bit x; of a 32-bit x, used only if x == 0
    n = 0
    if low != 0:
        n = popcnt((low & (~low + 1)) - 1) + 1    # the set bits below the lowest one, plus one
    elif high != 0:
        n = popcnt((high & (~high + 1)) - 1) + 33
    return n


@func
def radians(x):
    return x * _RADIANS_PER_DEGREE


@func
def degrees(x):
    return x * _DEGREES_PER_RADIAN


@func
def distance(x, y):
    """|x - y| for vectors."""
    return (x - y).norm()


@func
def reflect(x, n):
    """x mirrored at the plane of unit normal n."""
    return x - 2.0 * x.dot(n) * n


@func
def refract(x, n, eta):
    """The refracted direction of unit x at unit normal n with index ratio eta; zero on total reflection."""
    cos_in = x.dot(n)
    k = 1.0 - eta * eta * (1.0 - cos_in * cos_in)
    out = x * 0.0
    if k >= 0.0:
        out = eta * x - (eta * cos_in + _wm.sqrt(k)) * n
    return out


@func
def determinant(m):
    return m.determinant()


@func
def inverse(m):
    return m.inverse()


@func
def rotation2d(angle):
    """The 2x2 rotation by `angle` radians (counter-clockwise)."""
    c, s = _wm.cos(angle), _wm.sin(angle)
    return _Matrix([[c, -s], [s, c]])


@func
def cmul(a, b):
    """Complex product of 2-vectors (real, imaginary)."""
    return _Vector([a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0]])


@func
def cconj(a):
    return _Vector([a[0], -a[1]])


@func
def cdiv(a, b):
    """Complex quotient of 2-vectors."""
    return cmul(a, cconj(b)) / b.dot(b)


@func
def vdir(angle):
    """The unit 2-vector at `angle` radians from the x axis."""
    return _Vector([_wm.cos(angle), _wm.sin(angle)])


@func
def cinv(a):
    """Complex reciprocal of a 2-vector."""
    return cconj(a) / a.dot(a)


@func
def cexp(a):
    """Complex exponential: e^re (cos im, sin im)."""
    return _wm.exp(a[0]) * _Vector([_wm.cos(a[1]), _wm.sin(a[1])])


@func
def clog(a):
    """Principal complex logarithm: (log |a|, arg a)."""
    return _Vector([_wm.log(a.norm()), _wm.atan2(a[1], a[0])])


@func
def cpow(a, n):
    """a^n for a real exponent n, through the polar form (0^n = 0)."""
    out = a * 0.0
    modulus = a.norm()
    if modulus > 0.0:
        angle = _wm.atan2(a[1], a[0]) * n
        out = _wm.pow(modulus, n) * _Vector([_wm.cos(angle), _wm.sin(angle)])
    return out


@func
def csqrt(a):
    """The square root with positive real part (non-negative imaginary part when that is zero); 0 for 0."""
    out = a * 0.0
    modulus = a.norm()
    if modulus > 0.0:
        half = _wm.atan2(a[1], a[0]) * 0.5
        out = _wm.sqrt(modulus) * _Vector([_wm.cos(half), _wm.sin(half)])
    return out


@func
def translate(dx, dy, dz):
    """The 4x4 homogeneous translation by (dx, dy, dz)."""
    return _Matrix([[1.0, 0.0, 0.0, dx], [0.0, 1.0, 0.0, dy], [0.0, 0.0, 1.0, dz], [0.0, 0.0, 0.0, 1.0]])


@func
def scale(sx, sy, sz):
    """The 4x4 homogeneous scaling by (sx, sy, sz)."""
    return _Matrix([[sx, 0.0, 0.0, 0.0], [0.0, sy, 0.0, 0.0], [0.0, 0.0, sz, 0.0], [0.0, 0.0, 0.0, 1.0]])


@func
def _homogeneous(r):
    """A 3x3 linear map as a 4x4 homogeneous matrix."""
    return _Matrix([[r[0, 0], r[0, 1], r[0, 2], 0.0], [r[1, 0], r[1, 1], r[1, 2], 0.0],
                    [r[2, 0], r[2, 1], r[2, 2], 0.0], [0.0, 0.0, 0.0, 1.0]])


@func
def rot_by_axis(axis, angle):
    """Taichi's 4x4 homogeneous rotation about `axis` by `angle`: the transpose of Rodrigues' matrix
    c I + s [a]x + (1 - c) a a^T (a = axis normalised), i.e. c I - s [a]x + (1 - c) a a^T."""
    a = axis.normalized()
    cross_matrix = _Matrix([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    c = _wm.cos(angle)
    r = c * _Matrix.identity(float, 3) - _wm.sin(angle) * cross_matrix + (1.0 - c) * a.outer_product(a)
    return _homogeneous(r)


@func
def _rotation_x(angle):
    c, s = _wm.cos(angle), _wm.sin(angle)
    return _Matrix([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


@func
def _rotation_y(angle):
    c, s = _wm.cos(angle), _wm.sin(angle)
    return _Matrix([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


@func
def _rotation_z(angle):
    c, s = _wm.cos(angle), _wm.sin(angle)
    return _Matrix([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


@func
def rot_yaw_pitch_roll(yaw, pitch, roll):
    """Taichi's 4x4 homogeneous rotation from Euler angles (yaw about y, pitch about x, roll about z):
    (Ry(yaw) Rx(pitch) Rz(roll))^T = Rz(-roll) Rx(-pitch) Ry(-yaw)."""
    return _homogeneous(_rotation_z(-roll) @ _rotation_x(-pitch) @ _rotation_y(-yaw))


@func
def rotation3d(ang_x, ang_y, ang_z):
    """Taichi's rotation3d: rot_yaw_pitch_roll(ang_z, ang_x, ang_y)."""
    return rot_yaw_pitch_roll(ang_z, ang_x, ang_y)


@func
def eye(n: _template()):
    """The n x n identity (f32 by default), Taichi's ti.math.eye."""
    return _Matrix.identity(float, n)


@func
def solve(a, b):
    """x with a x = b, for a small square matrix a (through its inverse, as Taichi's ti.solve for 2x2/3x3)."""
    return a.inverse() @ b


@func
def _popcnt32(v):
    v = v - ((v >> 1) & 0x55555555)
    v = (v & 0x33333333) + ((v >> 2) & 0x33333333)
    v = (v + (v >> 4)) & 0x0F0F0F0F
    return _wm.cast((v * 0x01010101) >> 24, _i32)


@func
def _clz32(v):
    n = 0
    if v == 0:
        n = 32
    else:
        for shift in _wm.static((16, 8, 4, 2, 1)):
            if v >> (32 - shift) == 0:
                n += shift
                v = v << shift
    return n


@func
def popcnt(x):
    """The number of set bits of an integer (of its 64 bits for a 64-bit dtype, else of its low 32 bits)."""
    n = 0
    if _wm.bit_width(x) == 64:
        v = _wm.cast(x, _u64)
        n = _popcnt32(_wm.cast(v >> 32, _u32)) + _popcnt32(_wm.cast(v & 0xFFFFFFFF, _u32))
    else:
        n = _popcnt32(_wm.cast(x, _u32))
    return n


@func
def clz(x):
    """The number of leading zero bits of an integer: of 64 bits for a 64-bit dtype (64 for 0), else of 32 bits
    (32 for 0)."""
    n = 0
    if _wm.bit_width(x) == 64:
        v = _wm.cast(x, _u64)
        high = _wm.cast(v >> 32, _u32)
        n = _clz32(high) if high != 0 else 32 + _clz32(_wm.cast(v & 0xFFFFFFFF, _u32))
    else:
        n = _clz32(_wm.cast(x, _u32))
    return n
