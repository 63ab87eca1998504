"""Which Python callables a kernel may call, keyed by identity: the `wk.*` math functions
(lang/kernel_functions.py), their Python `math`/numpy/builtin spellings, and the pure builtins that fold when
every argument is compile-time.

calls.py dispatches on these tables; anything not listed (and not a @wk.func) is a CompileError at run time."""
from __future__ import annotations

import builtins
import math as pymath
from typing import Any

import numpy as np

from wgkern.ir.ops import AtomicOpKind, BinaryOpKind, UnaryOpKind
from wgkern.lang import kernel as wk_kernel
from wgkern.lang import math as wm
from wgkern.lang.matrix import Matrix, Vector

UNARY_FUNCTIONS: dict[Any, UnaryOpKind] = {
    wm.sin: UnaryOpKind.SIN, wm.cos: UnaryOpKind.COS, wm.tan: UnaryOpKind.TAN,
    wm.asin: UnaryOpKind.ASIN, wm.acos: UnaryOpKind.ACOS, wm.atan: UnaryOpKind.ATAN,
    wm.sinh: UnaryOpKind.SINH, wm.cosh: UnaryOpKind.COSH, wm.tanh: UnaryOpKind.TANH,
    wm.exp: UnaryOpKind.EXP, wm.log: UnaryOpKind.LOG, wm.log2: UnaryOpKind.LOG2,
    wm.sqrt: UnaryOpKind.SQRT, wm.rsqrt: UnaryOpKind.RSQRT, wm.abs: UnaryOpKind.ABS,
    wm.sign: UnaryOpKind.SIGN, wm.floor: UnaryOpKind.FLOOR, wm.ceil: UnaryOpKind.CEIL,
    wm.round: UnaryOpKind.ROUND,
    builtins.abs: UnaryOpKind.ABS, builtins.round: UnaryOpKind.ROUND,
    pymath.sin: UnaryOpKind.SIN, pymath.cos: UnaryOpKind.COS, pymath.tan: UnaryOpKind.TAN,
    pymath.asin: UnaryOpKind.ASIN, pymath.acos: UnaryOpKind.ACOS, pymath.atan: UnaryOpKind.ATAN,
    pymath.sinh: UnaryOpKind.SINH, pymath.cosh: UnaryOpKind.COSH, pymath.tanh: UnaryOpKind.TANH,
    pymath.exp: UnaryOpKind.EXP, pymath.log: UnaryOpKind.LOG, pymath.log2: UnaryOpKind.LOG2,
    pymath.sqrt: UnaryOpKind.SQRT, pymath.fabs: UnaryOpKind.ABS, pymath.floor: UnaryOpKind.FLOOR,
    pymath.ceil: UnaryOpKind.CEIL,
    np.sin: UnaryOpKind.SIN, np.cos: UnaryOpKind.COS, np.tan: UnaryOpKind.TAN,
    np.arcsin: UnaryOpKind.ASIN, np.arccos: UnaryOpKind.ACOS, np.arctan: UnaryOpKind.ATAN,
    np.sinh: UnaryOpKind.SINH, np.cosh: UnaryOpKind.COSH, np.tanh: UnaryOpKind.TANH,
    np.exp: UnaryOpKind.EXP, np.log: UnaryOpKind.LOG, np.log2: UnaryOpKind.LOG2,
    np.sqrt: UnaryOpKind.SQRT, np.abs: UnaryOpKind.ABS, np.sign: UnaryOpKind.SIGN,
    np.floor: UnaryOpKind.FLOOR, np.ceil: UnaryOpKind.CEIL,
}

# Python spellings whose result is an int in Python (`round(x)`, `math.floor(x)`): the op, then a cast to i32.
PYTHON_INT_RESULT = frozenset({builtins.round, pymath.floor, pymath.ceil})

# Unary functions taking an optional result dtype (`wk.floor(x, wk.i32)`).
WITH_RESULT_DTYPE = frozenset({wm.floor, wm.ceil, wm.round})

BINARY_FUNCTIONS: dict[Any, BinaryOpKind] = {
    wm.atan2: BinaryOpKind.ATAN2, pymath.atan2: BinaryOpKind.ATAN2, np.arctan2: BinaryOpKind.ATAN2,
    wm.pow: BinaryOpKind.POW, builtins.pow: BinaryOpKind.POW, np.power: BinaryOpKind.POW,
    pymath.pow: BinaryOpKind.POW,
}

# n-ary min/max (folded pairwise).
REDUCTIONS: dict[Any, BinaryOpKind] = {
    wm.min: BinaryOpKind.MIN, builtins.min: BinaryOpKind.MIN, np.minimum: BinaryOpKind.MIN,
    wm.max: BinaryOpKind.MAX, builtins.max: BinaryOpKind.MAX, np.maximum: BinaryOpKind.MAX,
}

ATOMICS: dict[Any, AtomicOpKind] = {
    wm.atomic_add: AtomicOpKind.ADD, wm.atomic_sub: AtomicOpKind.SUB, wm.atomic_min: AtomicOpKind.MIN,
    wm.atomic_max: AtomicOpKind.MAX, wm.atomic_and: AtomicOpKind.AND, wm.atomic_or: AtomicOpKind.OR,
    wm.atomic_xor: AtomicOpKind.XOR, wm.atomic_mul: AtomicOpKind.MUL, wm.atomic_exchange: AtomicOpKind.EXCHANGE,
    wm.atomic_cas: AtomicOpKind.CAS,
}

# The non-atomic op of each atomic (atomics on local variables, and load-op-store fallbacks); EXCHANGE and CAS
# store a value instead of combining (calls.py atomic_update).
ATOMIC_AS_BINARY: dict[AtomicOpKind, BinaryOpKind] = {
    AtomicOpKind.ADD: BinaryOpKind.ADD, AtomicOpKind.SUB: BinaryOpKind.SUB, AtomicOpKind.MIN: BinaryOpKind.MIN,
    AtomicOpKind.MAX: BinaryOpKind.MAX, AtomicOpKind.AND: BinaryOpKind.BIT_AND,
    AtomicOpKind.OR: BinaryOpKind.BIT_OR, AtomicOpKind.XOR: BinaryOpKind.BIT_XOR, AtomicOpKind.MUL: BinaryOpKind.MUL,
}

# Vector helpers of wk.math (ti.math style) -> vector method name.
VECTOR_FUNCTIONS: dict[Any, str] = {
    wm.dot: "dot", wm.cross: "cross", wm.length: "norm", wm.normalize: "normalized",
}

# Constructors evaluated at compile time (all arguments are compile-time); the numpy result's dtype is kept.
CONSTANT_CONSTRUCTORS = frozenset({Vector.zero, Vector.one, Vector.unit, Matrix.zero, Matrix.one, Matrix.identity})

# Pure Python callables evaluated at compile time when every argument is a compile-time value; the func decorators
# among them, so kernel code may decorate a Python function where it calls it (`wk.func(f)(x)`, as Taichi allows).
FOLDABLE = frozenset({
    wk_kernel.func, wk_kernel.real_func, wk_kernel.pyfunc,
    builtins.range, builtins.len, builtins.min, builtins.max, builtins.abs, builtins.int, builtins.float,
    builtins.bool, builtins.round, builtins.tuple, builtins.list, builtins.enumerate, builtins.zip,
    builtins.reversed, builtins.sum, builtins.isinstance, builtins.getattr, builtins.hasattr, builtins.divmod,
    builtins.pow, builtins.sorted, builtins.any, builtins.all, builtins.type,
    np.array, np.asarray,           # a 0-d array is then a number in kernel code, a 1-d or 2-d one a vector/matrix
    *(getattr(pymath, name) for name in dir(pymath) if callable(getattr(pymath, name))),
})
