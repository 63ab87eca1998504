"""Scalar data types: what a dtype *is* (kind, width, numpy spelling), the literal defaults, and Taichi's
promotion and integer-range rules.

The bottom of the package: it imports nothing of wgkern, so the IR, the passes, the backends and the runtime all
build on it. Vector, matrix and argument types, which the user-facing language adds, live in lang/types.py. How a
backend spells a dtype lives in that backend's types module."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np


@dataclass(frozen=True, slots=True)
class DataType:
    """A scalar type. kind: 'f' float, 'i' signed int, 'u' unsigned int, 'b' bool (u1). `low` and `high` are
    the smallest and largest value of an integer or bool type (None for floats), computed once here so that
    checking a kernel argument is two comparisons."""
    name: str
    kind: str
    bits: int
    low: int | None = field(init=False, compare=False, repr=False)
    high: int | None = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        low, high = {"f": (None, None), "b": (0, 1), "u": (0, (1 << self.bits) - 1),
                     "i": (-(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1)}[self.kind]
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        """Signed or unsigned integer (not bool)."""
        return self.kind in ("i", "u")

    @property
    def is_signed(self) -> bool:
        return self.kind == "i"

    @property
    def is_unsigned(self) -> bool:
        return self.kind == "u"

    @property
    def is_bool(self) -> bool:
        return self.kind == "b"

    @property
    def nbytes(self) -> int:
        return 1 if self.kind == "b" else self.bits // 8

    @property
    def np_dtype(self) -> np.dtype:
        return _NUMPY_OF[self.name]

    def __repr__(self) -> str:
        return f"wk.{self.name}"

    def __str__(self) -> str:
        """`print(wk.f32)` shows `f32`, as Taichi's (repr, used in messages, names the API: `wk.f32`)."""
        return self.name

    def to_string(self) -> str:
        """The type's name, `f32` (Taichi's DataType.to_string(), the same text as str())."""
        return self.name

    def __call__(self, value: Any) -> Any:
        """`wk.f32(x)` inside a kernel is a cast (the frontend handles it); in Python it converts."""
        return self.np_dtype.type(value).item()


f16 = DataType("f16", "f", 16)
f32 = DataType("f32", "f", 32)
f64 = DataType("f64", "f", 64)
i8 = DataType("i8", "i", 8)
i16 = DataType("i16", "i", 16)
i32 = DataType("i32", "i", 32)
i64 = DataType("i64", "i", 64)
u8 = DataType("u8", "u", 8)
u16 = DataType("u16", "u", 16)
u32 = DataType("u32", "u", 32)
u64 = DataType("u64", "u", 64)
u1 = DataType("u1", "b", 1)

ALL_SCALARS: tuple[DataType, ...] = (f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, u1)
FLOAT_TYPES = (f16, f32, f64)
INT_TYPES = (i8, i16, i32, i64, u8, u16, u32, u64)

_NUMPY_OF = {
    "f16": np.dtype(np.float16), "f32": np.dtype(np.float32), "f64": np.dtype(np.float64),
    "i8": np.dtype(np.int8), "i16": np.dtype(np.int16), "i32": np.dtype(np.int32), "i64": np.dtype(np.int64),
    "u8": np.dtype(np.uint8), "u16": np.dtype(np.uint16), "u32": np.dtype(np.uint32),
    "u64": np.dtype(np.uint64), "u1": np.dtype(np.bool_),
}
_FROM_NUMPY = {v: k for k, v in _NUMPY_OF.items()}
BY_NAME = {t.name: t for t in ALL_SCALARS}

# Python literal defaults (Taichi's default_ip / default_fp).
DEFAULT_INT = i32
DEFAULT_FLOAT = f32
# Called after each change of the defaults: names defined from them (wk.math.vec3 & co., lang/matrix.py) follow.
DEFAULT_TYPE_LISTENERS: list[Callable[[], None]] = []


def set_default_types(default_fp: Any = None, default_ip: Any = None) -> None:
    """The dtypes of float and int literals, `float` and `int` (Taichi's `default_fp`/`default_ip`): set by each
    `wk.init`, f32/i32 unless given."""
    global DEFAULT_FLOAT, DEFAULT_INT  # noqa: PLW0603 - per-Program defaults, read at compile time
    fp = f32 if default_fp is None else to_dtype(default_fp)
    ip = i32 if default_ip is None else to_dtype(default_ip)
    if not fp.is_float or fp not in (f16, f32, f64):
        raise ValueError(f"default_fp must be a float dtype (wk.f32 or wk.f64), not {default_fp!r}")
    if fp == f16:
        raise ValueError("default_fp=f16 is not supported: use wk.f32 or wk.f64")
    if ip.is_float or ip.is_bool or ip.bits < 32:
        raise ValueError(f"default_ip must be wk.i32 or wk.i64 (or an unsigned 32/64-bit type), not {default_ip!r}")
    DEFAULT_FLOAT, DEFAULT_INT = fp, ip
    for listener in DEFAULT_TYPE_LISTENERS:
        listener()


def from_numpy_dtype(dt: Any) -> DataType:
    """numpy dtype (or anything np.dtype accepts) -> DataType; raises TypeError for unsupported ones."""
    dt = np.dtype(dt)
    name = _FROM_NUMPY.get(dt)
    if name is None:
        raise TypeError(f"numpy dtype {dt} has no wgkern equivalent")
    return BY_NAME[name]


def to_dtype(obj: Any) -> DataType:
    """Accept a DataType, a numpy dtype/type, or Python float/int/bool and return the DataType."""
    if isinstance(obj, DataType):
        return obj
    if obj is float:
        return DEFAULT_FLOAT
    if obj is int:
        return DEFAULT_INT
    if obj is bool:
        return u1
    return from_numpy_dtype(obj)


def promote(a: DataType, b: DataType) -> DataType:
    """Binary-op result type, as in Taichi: float beats int (wider float wins); for ints the wider wins,
    and at equal width unsigned wins; bool behaves as i32 against anything but bool."""
    if a == b:
        return a
    if a.is_bool:
        a = i32
    if b.is_bool:
        b = i32
    if a == b:
        return a
    if a.is_float and b.is_float:
        return a if a.bits >= b.bits else b
    if a.is_float:
        return a
    if b.is_float:
        return b
    if a.bits != b.bits:
        return a if a.bits > b.bits else b
    return a if a.is_unsigned else b


def value_fits(value: int, dtype: DataType) -> bool:
    """Whether a Python int is representable in an integer dtype."""
    if dtype.is_bool:
        return value in (0, 1)
    if dtype.is_signed:
        return -(1 << (dtype.bits - 1)) <= value < (1 << (dtype.bits - 1))
    return 0 <= value < (1 << dtype.bits)


def out_of_range(values: Any, dtype: DataType) -> int | None:
    """The first of `values` (a Python int, or an array of integers of any numpy integer or object dtype) that
    the integer dtype cannot hold, or None if all fit."""
    array = np.asarray(values)
    if array.size == 0:
        return None
    outside = (array < dtype.low) | (array > dtype.high)
    if not outside.any():
        return None
    return int(array.reshape(-1)[np.argmax(outside.reshape(-1))])


def range_text(dtype: DataType) -> str:
    """`wk.i8 holds -128..127`: for messages about a value an integer dtype cannot hold."""
    return f"{dtype!r} holds {dtype.low}..{dtype.high}"


def wrap_int(value: int, dtype: DataType) -> int:
    """Two's-complement wrap of a Python int into an integer dtype (constant folding uses this)."""
    if dtype.is_bool:
        return 1 if value else 0
    mask = (1 << dtype.bits) - 1
    value &= mask
    if dtype.is_signed and value >= (1 << (dtype.bits - 1)):
        value -= 1 << dtype.bits
    return value
