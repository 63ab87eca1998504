"""`wk.math`: the namespace of the kernel language's functions as users see it (`wk.math.sin`, `wk.math.mix`,
`wk.math.vec3`). It gathers, adding no function of its own: the elementary functions, casts, atomics, `static`,
`ndrange` and the rest (lang/kernel_functions.py), the GLSL-style helpers built on them (lang/glsl.py), `fns`
(lang/bit_search.py) and the vector types of lang/matrix.py, which follow the default types at each wk.init."""
from __future__ import annotations

import sys

from wgkern.lang import matrix as _matrix
from wgkern.lang import types as _T
from wgkern.lang.bit_search import fns  # noqa: F401
from wgkern.lang.glsl import (cconj, cdiv, cexp, cinv, clog, clz, cmul, cpow, csqrt, degrees, determinant,  # noqa: F401
                              distance, eye, ffs, fract, inverse, mix, mod, popcnt, radians, reflect, refract,
                              rot_by_axis, rot_yaw_pitch_roll, rotation2d, rotation3d, scale, smoothstep, step,
                              translate, vdir)
from wgkern.lang.kernel_functions import (abs, acos, asin, assume_in_range, atan, atan2, atomic_add,  # noqa: F401
                                          atomic_and, atomic_cas, atomic_exchange, atomic_max, atomic_min, atomic_mul,
                                          atomic_or, atomic_sub, atomic_xor, bit_cast, bit_shr, bit_width, block_dim,
                                          block_local, cache_read_only, cast, ceil, clamp, cos, cosh, cross, dot, e,
                                          eig, exp, floor, frexp, graph_do_while, grouped, inf, isinf, isnan, length,
                                          log, log2, loop_config, loop_unique, make_spd, max, min, nan, ndrange,
                                          ndrange_axes, no_activate, normalize, one, pi, polar_decompose, pow, randn,
                                          random, raw_div, raw_mod, round, rsqrt, select, sign, sin, sinh, sqrt,
                                          static, static_assert, static_print, stop_grad, stream_parallel, svd,
                                          sym_eig, tan, tanh, volatile_load, zero)
from wgkern.lang.matrix import (ivec2, ivec3, ivec4, mat2, mat3, mat4, uvec2, uvec3, uvec4, vec2, vec3,  # noqa: F401
                                vec4)


def _follow_default_types() -> None:
    """wk.init rebuilds lang/matrix.py's vec2 .. mat4 for the new default types (matrix.follow_default_types,
    registered before this); the names here follow them."""
    module = sys.modules[__name__]
    for name in _matrix.VECTOR_ALIASES:
        setattr(module, name, getattr(_matrix, name))


_T.DEFAULT_TYPE_LISTENERS.append(_follow_default_types)
