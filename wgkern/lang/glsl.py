"""GLSL-style helpers of `wk.math` (the names Taichi's ti.math offers): kernel-language functions, inlined
where a kernel calls them, on scalars and (elementwise) on vectors where that makes sense."""
from __future__ import annotations

import math as _pymath

from wgkern.lang.kernel import func
from wgkern.lang import math as _wm
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
