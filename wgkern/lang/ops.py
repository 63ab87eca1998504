"""`ti.lang.ops` as Taichi programs spell it (`ti.lang.ops.sqrt(r)`, `ti.lang.ops.add(u, v)`): the math
functions of wgkern.lang.math under their Taichi names, and the operator functions Taichi defines there.

The binary operator names are the operator module's functions, which kernel code applies as the operator they
name (frontend/calls.py); the few without one are wk.pyfunc functions (callable from Python and kernels alike)."""
from __future__ import annotations

import operator

from wgkern.lang.math import (abs, acos, asin, atan2, atomic_add, atomic_and, atomic_cas, atomic_exchange,  # noqa: F401
                              atomic_max, atomic_min, atomic_mul, atomic_or, atomic_sub, atomic_xor, bit_cast,
                              bit_shr, cast, ceil, clz, cos, exp, floor, frexp, log, max, min, popcnt, pow,
                              random, raw_div, raw_mod, round, rsqrt, select, sin, sqrt, tan, tanh,
                              volatile_load)
from wgkern.lang.kernel import pyfunc

add = operator.add
sub = operator.sub
mul = operator.mul
truediv = operator.truediv
floordiv = operator.floordiv
mod = operator.mod
bit_and = operator.and_
bit_or = operator.or_
bit_xor = operator.xor
bit_shl = operator.lshift
bit_sar = operator.rshift


@pyfunc
def neg(x):
    return -x


@pyfunc
def bit_not(x):
    return ~x


@pyfunc
def logical_not(x):
    return x == 0          # element-wise on vectors and matrices, in Python scope as in kernels


@pyfunc
def logical_and(a, b):
    return a and b


@pyfunc
def logical_or(a, b):
    return a or b


@pyfunc
def cmp_eq(a, b):
    return a == b


@pyfunc
def cmp_ne(a, b):
    return a != b


@pyfunc
def cmp_lt(a, b):
    return a < b


@pyfunc
def cmp_le(a, b):
    return a <= b


@pyfunc
def cmp_gt(a, b):
    return a > b


@pyfunc
def cmp_ge(a, b):
    return a >= b


@pyfunc
def ifte(cond, a, b):
    return a if cond else b
