"""The kernel language's functions: math, casts, `select`, `static`, `ndrange`, `loop_config`, `random`, atomics.

Each is a plain Python function that also works on Python/numpy values outside a kernel; inside a kernel the
frontend recognises it by identity (frontend/intrinsics.py maps each one to its IR op). `wk.math` (lang/math.py)
is the namespace users see: these, the GLSL-style helpers built on them and the vector types."""
from __future__ import annotations

import contextlib
import itertools
from typing import Any, Iterator

import numpy as np

from wgkern.errors import WkError
from wgkern.lang import types as T

pi = float(np.pi)
e = float(np.e)
inf = float("inf")
nan = float("nan")


def sin(x: Any) -> Any:
    return np.sin(x)


def cos(x: Any) -> Any:
    return np.cos(x)


def tan(x: Any) -> Any:
    return np.tan(x)


def asin(x: Any) -> Any:
    return np.arcsin(x)


def acos(x: Any) -> Any:
    return np.arccos(x)


def atan(x: Any) -> Any:
    return np.arctan(x)


def atan2(y: Any, x: Any) -> Any:
    return np.arctan2(y, x)


def sinh(x: Any) -> Any:
    return np.sinh(x)


def cosh(x: Any) -> Any:
    return np.cosh(x)


def tanh(x: Any) -> Any:
    return np.tanh(x)


def exp(x: Any) -> Any:
    return np.exp(x)


def log(x: Any) -> Any:
    return np.log(x)


def log2(x: Any) -> Any:
    return np.log2(x)


def sqrt(x: Any) -> Any:
    return np.sqrt(x)


def rsqrt(x: Any) -> Any:
    return 1.0 / np.sqrt(x)


def abs(x: Any) -> Any:  # noqa: A001 - kernel-language name
    return np.abs(x)


def floor(x: Any, dtype: Any = None) -> Any:
    out = np.floor(x)
    return cast(out, dtype) if dtype is not None else out


def ceil(x: Any, dtype: Any = None) -> Any:
    out = np.ceil(x)
    return cast(out, dtype) if dtype is not None else out


def round(x: Any, dtype: Any = None) -> Any:  # noqa: A001 - kernel-language name
    """Half away from zero, as in kernels (Taichi's round); a vector or matrix stays one."""
    from wgkern.ir.host_eval import round_half_away
    out = round_half_away(np.asarray(x))
    if isinstance(x, np.ndarray) and type(x) is not np.ndarray:
        out = np.asarray(out).view(type(x))
    return cast(out, dtype) if dtype is not None else out


def pow(x: Any, y: Any) -> Any:  # noqa: A001 - kernel-language name
    return np.power(x, y)


def min(*args: Any) -> Any:  # noqa: A001 - kernel-language name
    out = args[0]
    for value in args[1:]:
        out = np.minimum(out, value)
    return out


def max(*args: Any) -> Any:  # noqa: A001 - kernel-language name
    out = args[0]
    for value in args[1:]:
        out = np.maximum(out, value)
    return out


def clamp(x: Any, lo: Any, hi: Any) -> Any:
    return np.minimum(np.maximum(x, lo), hi)


def sign(x: Any) -> Any:
    return np.sign(x)


def cast(x: Any, dtype: Any) -> Any:
    """`wk.cast(v, dtype)`: value conversion (float -> int truncates toward zero)."""
    target = dtype.dtype if isinstance(dtype, T.VectorType) else T.to_dtype(dtype)
    if isinstance(x, np.ndarray):
        return x.astype(target.np_dtype)
    return target.np_dtype.type(x)


def bit_cast(x: Any, dtype: Any) -> Any:
    """`wk.bit_cast(v, dtype)`: the bits of `v` read as `dtype`, of the same width (f32 <-> i32/u32, f64 <-> i64/u64)."""
    target = T.to_dtype(dtype)
    value = np.asarray(x)
    width = target.np_dtype.itemsize
    if value.dtype.itemsize != width and value.dtype.kind in "fiub" and not isinstance(x, np.generic):
        # a Python literal takes the width of the target, as in a kernel (float -> f32/f64, int -> i32/i64)
        kind = "f" if value.dtype.kind == "f" else "i"
        value = value.astype(np.dtype(f"{kind}{width}"))
    if value.dtype.itemsize != width:
        raise WkError(f"bit_cast from {value.dtype} to {target.name} changes the width")
    return value.view(target.np_dtype)[()]


def raw_div(a: Any, b: Any) -> Any:
    """C division: integers truncate toward zero (Python's // floors), floats divide."""
    if _is_int(a) and _is_int(b):
        return np.trunc(np.divide(a, b)).astype(np.result_type(a, b))[()] if np.ndim(a) or np.ndim(b) \
            else int(a / b) if b else 0
    return np.divide(a, b)


def raw_mod(a: Any, b: Any) -> Any:
    """C remainder: the sign of the dividend (Python's % takes the divisor's); fmod for floats."""
    if _is_int(a) and _is_int(b):
        return a - raw_div(a, b) * b
    return np.fmod(a, b)


def _is_int(x: Any) -> bool:
    return np.issubdtype(np.asarray(x).dtype, np.integer)


def bit_shr(x: Any, n: Any) -> Any:
    """Logical shift right (zeros shifted in, also for signed integers), as Taichi's ti.bit_shr; i32 outside
    kernels."""
    return (int(x) & 0xFFFFFFFF) >> int(n)


def stop_grad(x: Any) -> Any:
    """Inside kernels: x, through which no gradient flows (reverse or forward mode)."""
    return x


def zero(x: Any) -> Any:
    """A zero of x's dtype and shape (Taichi's ti.zero)."""
    return np.zeros_like(x)[()]


def one(x: Any) -> Any:
    """A one of x's dtype and shape (Taichi's ti.one)."""
    return np.ones_like(x)[()]


def select(cond: Any, a: Any, b: Any) -> Any:
    return np.where(cond, a, b)


def random(dtype: Any = T.f32) -> Any:
    """Uniform in [0, 1) for floats, random bits for ints. Outside kernels: numpy's generator."""
    dt = T.to_dtype(dtype)
    if dt.is_float:
        return dt.np_dtype.type(np.random.random())
    info = np.iinfo(dt.np_dtype) if not dt.is_bool else None
    if info is None:
        return bool(np.random.randint(0, 2))
    return dt.np_dtype.type(np.random.randint(info.min, info.max, dtype=dt.np_dtype))


def randn(dtype: Any = T.f32) -> Any:
    """A standard normal sample (Box-Muller from two wk.random() draws). Outside kernels: numpy's generator."""
    dt = T.to_dtype(dtype)
    if not dt.is_float:
        raise WkError(f"wk.randn() gives floats, not {dt.name}")
    return dt.np_dtype.type(np.random.standard_normal())


def _kernel_only(name: str) -> Any:
    def function(*args: Any, **kwargs: Any) -> Any:
        raise WkError(f"wk.{name}() can only be used inside a @wk.kernel or @wk.func (use numpy.linalg on the "
                      "host)")
    function.__name__ = name
    function.__qualname__ = name
    return function


# R, S = wk.polar_decompose(A); U, sigma, V = wk.svd(A): 2x2 and 3x3, inside kernels (frontend/linalg.py)
polar_decompose = _kernel_only("polar_decompose")
svd = _kernel_only("svd")
eig = _kernel_only("eig")                # Taichi's 2x2 eigen-decomposition, complex parts as extra axes
sym_eig = _kernel_only("sym_eig")        # eigenvalues (decreasing), eigenvectors (columns) of a symmetric A


def static(x: Any, *more: Any) -> Any:
    """`wk.static(expr)`: evaluate at compile time (unrolls loops, picks `if` branches)."""
    return (x, *more) if more else x


def static_print(*args: Any, **kwargs: Any) -> None:
    """`wk.static_print(...)` in a kernel: print when the kernel is compiled (its arguments are evaluated then)."""
    print(*args, **kwargs)


def static_assert(condition: Any, message: str = "static assertion failed") -> None:
    """`wk.static_assert(cond, msg)` in a kernel: a compile-time check; fails the compile with `msg`."""
    if not condition:
        raise WkError(message)


def ndrange(*dims: Any, axes: Any = None) -> Iterator[Any]:
    """`for i, j in wk.ndrange(n, (lo, hi))`: one parallel loop over the product of the ranges. Outside kernels
    (and in wk.static(...)): the index tuples, one-element ones included, as Taichi's.

    `axes` (Quadrants' `ndrange(..., axes=perm)`): a permutation of range(len(dims)) giving the nesting order,
    outermost first (`axes=(1, 0)`: the first axis varies fastest), e.g. to step through memory laid out with
    `wk.tensor(..., layout=perm)` in order. The loop variables stay the axes' own indices; only the order in
    which index tuples are visited (and which ones neighbouring threads get) changes. None: (0, 1, ...)."""
    order = ndrange_axes(axes, len(dims))
    ranges = [range(*_ndrange_bounds(d)) for d in dims]
    if order == tuple(range(len(dims))):
        return itertools.product(*ranges)
    inverse = [order.index(axis) for axis in range(len(dims))]
    return (tuple(physical[k] for k in inverse) for physical in itertools.product(*(ranges[a] for a in order)))


def _ndrange_bounds(dim: Any) -> tuple[int, int]:
    """(begin, end) of one `wk.ndrange` argument in Python scope: n or (begin, end) of integers (numpy's
    included), checked with Quadrants' messages."""
    pair = tuple(dim) if isinstance(dim, (tuple, list)) else (0, dim)
    if len(pair) != 2:
        raise TypeError(f"wk.ndrange() dimensions are n or (begin, end), got {dim!r} (Every argument of ndrange "
                        "should be a scalar or a tuple/list like (begin, end))")
    for bound in pair:
        if isinstance(bound, (bool, np.bool_)) or not isinstance(bound, (int, np.integer)):
            raise TypeError(f"wk.ndrange() bounds must be integers, got {bound!r} (Every argument of ndrange "
                            "should be an integer scalar or a tuple/list of (int, int))")
    return int(pair[0]), int(pair[1])


def ndrange_axes(axes: Any, count: int) -> tuple[int, ...]:
    """The nesting order `wk.ndrange(..., axes=axes)` of `count` dimensions asks for, checked as Quadrants
    checks it (TypeError / ValueError naming the argument)."""
    if axes is None:
        return tuple(range(count))
    try:
        order = tuple(axes)
    except TypeError:
        raise TypeError(f"wk.ndrange(axes={axes!r}) takes a tuple of axis numbers") from None
    if len(order) != count:
        raise ValueError(f"wk.ndrange(axes={order!r}) has {len(order)} entries but ndrange was called with {count} "
                         "dimension argument(s); they must match")
    for entry in order:
        if isinstance(entry, (bool, np.bool_)) or not isinstance(entry, (int, np.integer)):
            raise TypeError(f"wk.ndrange(axes={order!r}) entries must be Python ints; got "
                            f"{type(entry).__name__} ({entry!r})")
    if sorted(int(e) for e in order) != list(range(count)):
        raise ValueError(f"wk.ndrange(axes={order!r}) is not a permutation of range({count})")
    return tuple(int(e) for e in order)


def grouped(iterable: Any) -> Iterator[tuple[int, ...]]:
    """`for I in wk.grouped(x)` (a field, an ndarray or a wk.ndrange): one parallel loop whose index `I` is
    an integer vector (`x[I]`, `I[0]`, `I + 1`). Outside kernels (and in `wk.static(wk.grouped(...))`): the
    indices in order, as integer vectors (Taichi's `ti.Vector`s: `I.cast(float)`, `base + I`)."""
    from wgkern.lang.host_matrix import host_matrix
    shape = getattr(iterable, "shape", None)
    if shape is not None and not isinstance(iterable, (range, tuple, list)):
        iterable = itertools.product(*(range(int(n)) for n in shape))
    return (host_matrix(np.array(item if isinstance(item, tuple) else (item,), dtype=np.int32))
            for item in iterable)


def loop_config(*, serialize: bool = False, block_dim: int | None = None, parallelize: int | None = None,
                block_dim_adaptive: bool = True, bit_vectorize: bool = False, name: str | None = None) -> None:
    """`wk.loop_config(serialize=True)` before a loop: run that loop serially (so does Taichi's `parallelize=1`;
    other thread counts, `block_dim_adaptive`, `bit_vectorize` and Quadrants' `name` (a label for profilers) are
    accepted and change nothing); `block_dim=N`:
    run the next parallel loop in blocks of N threads (wk.simt.block's unit; docs/simt.md). A no-op outside
    kernels."""
    return None


def block_dim(threads: int) -> None:
    """Taichi's older `ti.block_dim(n)` in a kernel (now `loop_config(block_dim=n)`): the threads per block of the
    next parallel loop, as `loop_config(block_dim=n)`."""
    return None


def block_local(*fields: Any) -> None:
    """Taichi's `ti.block_local(f, ...)`: a hint to stage fields in a workgroup's shared memory. wgkern reads
    global memory directly, which gives the same results, so inside a kernel the hint is checked (its arguments
    must be fields) and has no further effect."""
    raise WkError("wk.block_local can only be used inside a @wk.kernel")


def cache_read_only(*fields: Any) -> None:
    """Taichi's `ti.cache_read_only(f, ...)`: a hint that fields are only read; checked, then no effect (see
    block_local)."""
    raise WkError("wk.cache_read_only can only be used inside a @wk.kernel")


def _atomic(name: str) -> Any:
    def atomic(dst: Any, value: Any) -> Any:
        raise WkError(f"wk.atomic_{name} can only be used inside a @wk.kernel or @wk.func")
    atomic.__name__ = f"atomic_{name}"
    atomic.__qualname__ = f"atomic_{name}"
    atomic.__doc__ = (f"`wk.atomic_{name}(dst, value)`: atomic read-modify-write of global `dst`; "
                      "returns the old value.")
    return atomic


atomic_add = _atomic("add")
atomic_sub = _atomic("sub")
atomic_min = _atomic("min")
atomic_max = _atomic("max")
atomic_and = _atomic("and")
atomic_or = _atomic("or")
atomic_xor = _atomic("xor")
atomic_mul = _atomic("mul")
atomic_exchange = _atomic("exchange")
atomic_exchange.__doc__ = ("`wk.atomic_exchange(dst, value)`: atomically store `value` in global `dst`; returns the "
                           "old value.")


def atomic_cas(dst: Any, expected: Any, desired: Any) -> Any:
    """`wk.atomic_cas(dst, expected, desired)`: atomic compare-and-swap on an integer `dst` (as Quadrants'
    qd.atomic_cas): where `dst` holds `expected`, store `desired`. Returns the old value either way, so
    `wk.atomic_cas(dst, e, d) == e` says whether the swap happened."""
    raise WkError("wk.atomic_cas can only be used inside a @wk.kernel or @wk.func")


# ---- vector helpers (ti.math.*); inside kernels the frontend lowers them to the vector methods ----------
def dot(a: Any, b: Any) -> Any:
    return np.dot(a, b)


def cross(a: Any, b: Any) -> Any:
    return np.cross(a, b)


def length(a: Any) -> Any:
    return np.linalg.norm(a)


def normalize(a: Any) -> Any:
    return np.asarray(a) / np.linalg.norm(a)


def isnan(x: Any) -> Any:
    """Inside kernels: tested on the bits (a GPU compiler may assume `x != x` is false)."""
    return np.isnan(x)


def isinf(x: Any) -> Any:
    return np.isinf(x)


def frexp(x: Any) -> tuple[Any, Any]:
    """(m, e) with x = m * 2**e and 0.5 <= |m| < 1 (numpy.frexp; 0, inf and NaN give (x, 0)). In kernels the
    exponent is an i32 (frontend/arith.py)."""
    return np.frexp(x)


def make_spd(a: Any, dt: Any = None) -> Any:
    """Quadrants' `make_spd(A)`: the symmetric matrix A with its negative eigenvalues clamped to 0 (the nearest
    positive semi-definite matrix), through `sym_eig` in kernels."""
    values, vectors = np.linalg.eigh(np.asarray(a, dtype=np.float64))
    return (vectors * np.maximum(values, 0.0)) @ vectors.T


def assume_in_range(val: Any, base: Any, low: int, high: int) -> Any:
    """Quadrants' and Taichi's hint that base + low <= val < base + high: returns val (wgkern needs no hint)."""
    return val


def loop_unique(val: Any, covers: Any = None) -> Any:
    """Taichi's hint that `val` differs between the iterations of the loop around it (so accesses indexed by it
    need no atomics; `covers` names the fields it indexes): returns val (wgkern needs no hint)."""
    return val


def no_activate(*fields: Any) -> None:
    """Taichi's hint that a kernel's writes need not activate sparse cells: accepted, changes nothing (writes
    into already-active cells activate nothing new)."""
    return None


def bit_width(value: Any) -> int:
    """`wk.bit_width(x)` in kernel code: the number of bits of x's scalar dtype, a compile-time int (32 for an
    i32, 64 for an f64), so a func can choose a code path per width (popcnt / clz of 64-bit integers)."""
    if hasattr(value, "dtype") and hasattr(value.dtype, "itemsize"):
        return value.dtype.itemsize * 8                   # numpy scalars and arrays in Python scope
    raise WkError("wk.bit_width(x) takes a scalar value of kernel code or a numpy value")


def volatile_load(value: Any) -> Any:
    """Quadrants' `volatile_load(x)`: x's current value. Every global read in wgkern is a fresh load (nothing
    is cached across a spin loop's iterations), so it is a plain read."""
    return value


def graph_do_while(condition: Any) -> bool:
    """Quadrants' `while wk.graph_do_while(c): body` (a loop of a `@wk.kernel(graph=True)` kernel): the body
    runs, then runs again while the 0-d integer ndarray or field `c` holds a non-zero value. Only kernel code
    uses it (frontend/statements.py)."""
    raise WkError("wk.graph_do_while(c) is the test of a 'while' loop inside a @wk.kernel")


@contextlib.contextmanager
def stream_parallel() -> Iterator[None]:
    """Quadrants' `with stream_parallel():` around top-level loops (separate CUDA streams): the loops run as
    usual (one after another, each in parallel)."""
    yield
