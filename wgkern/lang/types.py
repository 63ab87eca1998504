"""Scalar, vector and matrix data types, kernel-argument annotations and Taichi's promotion rules.

Owns what a dtype *is* (kind, width, numpy spelling) and how two dtypes combine. How a backend spells a
dtype lives in that backend's types module."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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
    from wgkern.lang.matrix import follow_default_types   # wk.math.vec3 & co. are vector(3, float) & co.
    follow_default_types()


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


@dataclass(frozen=True, slots=True)
class VectorType:
    """A vector (m == 0) or matrix (n rows, m cols) of one scalar dtype. Used as a field element type and
    as a local value type; the frontend scalarises it, so the IR only ever sees scalars."""
    n: int
    m: int
    dtype: DataType

    @property
    def is_matrix(self) -> bool:
        return self.m > 0

    @property
    def element_shape(self) -> tuple[int, ...]:
        return (self.n, self.m) if self.m else (self.n,)

    @property
    def size(self) -> int:
        return self.n * (self.m or 1)

    def element_type(self) -> DataType:
        """Taichi's / Quadrants' `vec_type.element_type()`: the scalar dtype."""
        return self.dtype

    def shape(self) -> list[int]:
        """Taichi's / Quadrants' `vec_type.shape()`: `[n]` for a vector, `[n, m]` for a matrix."""
        return list(self.element_shape)

    def __call__(self, *values: Any) -> Any:
        from wgkern.lang.matrix import make_vector_value
        return make_vector_value(self, values)

    def field(self, shape: Any = (), needs_grad: bool = False, needs_dual: bool = False, **kwargs: Any) -> Any:
        from wgkern.lang.fields import field
        return field(self, shape=shape, needs_grad=needs_grad, needs_dual=needs_dual, **kwargs)

    def __repr__(self) -> str:
        if self.m:
            return f"wk.types.matrix({self.n}, {self.m}, {self.dtype!r})"
        return f"wk.types.vector({self.n}, {self.dtype!r})"


@dataclass(frozen=True, slots=True)
class AnyVectorType:
    """`wk.types.vector()` / `wk.types.matrix()` without a size (Quadrants' ndarray type hints,
    `NDArray[wk.types.matrix(), 1]`): any vector (element_dim 1) or matrix (2) element, its size taken from
    the argument, and its dtype too unless given."""
    element_dim: int
    dtype: Any = None


def vector(n: int | None = None, dtype: Any = None) -> Any:
    if n is None:
        return AnyVectorType(1, None if dtype is None else to_dtype(dtype))
    return VectorType(int(n), 0, to_dtype(f32 if dtype is None else dtype))


def matrix(n: int | None = None, m: int | None = None, dtype: Any = None) -> Any:
    if n is None and m is None:
        return AnyVectorType(2, None if dtype is None else to_dtype(dtype))
    return VectorType(int(n), int(m), to_dtype(f32 if dtype is None else dtype))


@dataclass(frozen=True, slots=True)
class NdarrayType:
    """`wk.types.ndarray(dtype=None, ndim=None)` argument annotation; None means 'take it from the argument'.
    dtype may be a VectorType, in which case the element dims trail the array's ndim."""
    dtype: Any = None
    ndim: int | None = None
    needs_grad: bool | None = None
    boundary: str = "unsafe"      # Taichi's boundary="clamp": indices are clamped into the array's extent
    element_dim: int = 0          # Taichi's element_dim=1 / 2: the argument's last axes are vector / matrix elements

    def __class_getitem__(cls, params: Any) -> NdarrayType:
        """Quadrants' `wk.types.NDArray[dtype, ndim]` annotation (`typing.Any` or `...` leave either open)."""
        params = params if isinstance(params, tuple) else (params,)
        if len(params) > 2:
            raise TypeError(f"NDArray[dtype, ndim] takes at most 2 parameters, got {len(params)}")
        dtype, ndim = (list(params) + [None, None])[:2]
        open_value = (None, Any, Ellipsis)
        return ndarray(None if dtype in open_value else dtype, None if ndim in open_value else int(ndim))


def ndarray(dtype: Any = None, ndim: int | None = None, needs_grad: bool | None = None, boundary: str = "unsafe",
            element_dim: int | None = None, element_shape: tuple[int, ...] | None = None,
            field_dim: int | None = None) -> NdarrayType:
    if field_dim is not None:                   # Taichi's older name for ndim
        if ndim is not None and ndim != field_dim:
            raise ValueError(f"wk.types.ndarray(ndim={ndim}, field_dim={field_dim}): field_dim is the older name of "
                             "ndim; give one")
        ndim = field_dim
    if element_shape is not None:               # Taichi's element_shape=(n,) / (n, m): vector / matrix elements
        element_shape = (element_shape,) if isinstance(element_shape, int) else tuple(element_shape)
        if len(element_shape) not in (1, 2):
            raise ValueError(f"wk.types.ndarray(element_shape={element_shape!r}) names 1 (vector) or 2 (matrix) axes")
        if dtype is None:
            element_dim = len(element_shape)    # the argument's dtype, its last axes the elements
        else:
            dtype = vector(element_shape[0], dtype) if len(element_shape) == 1 else matrix(*element_shape, dtype)
    if isinstance(dtype, AnyVectorType):        # any vector / matrix: the argument's last axes are its elements
        dtype, element_dim = dtype.dtype, dtype.element_dim
    if dtype is not None and not isinstance(dtype, VectorType):
        dtype = to_dtype(dtype)
    if boundary not in ("unsafe", "clamp"):
        raise ValueError(f"wk.types.ndarray(boundary=...) is 'unsafe' or 'clamp', not {boundary!r}")
    if element_dim not in (None, 0, 1, 2):
        raise ValueError(f"wk.types.ndarray(element_dim=...) is 0, 1 (vectors) or 2 (matrices), not {element_dim!r}")
    return NdarrayType(dtype, ndim, needs_grad, boundary, element_dim or 0)


class _NdarrayAnnotation:
    """`wk.types.ndarray`: called (`ndarray(dtype, ndim)`), subscripted as Quadrants writes it
    (`ndarray[wk.i32, 1]`, the same as `NDArray[wk.i32, 1]`) and usable in isinstance checks."""

    def __call__(self, *args: Any, **kwargs: Any) -> NdarrayType:
        return ndarray(*args, **kwargs)

    def __getitem__(self, params: Any) -> NdarrayType:
        return NdarrayType[params]

    def __instancecheck__(self, obj: Any) -> bool:
        return isinstance(obj, NdarrayType)

    def __repr__(self) -> str:
        return "wk.types.ndarray"


@dataclass(frozen=True, slots=True)
class Template:
    """`wk.template()`: the argument is a compile-time constant (field, Python scalar, tuple...)."""


def template() -> Template:
    return Template()


def called_annotation(annotation: Any) -> Any:
    """Quadrants accepts `x: wk.template` and `x: wk.types.ndarray` without the call: the same as called."""
    if annotation is template:
        return Template()
    if isinstance(annotation, _NdarrayAnnotation):
        return NdarrayType()
    return annotation


@dataclass(frozen=True, slots=True)
class Reference(Template):
    """`wk.ref(dtype)` (Taichi's): a func parameter passed by reference; the func's assignments to it change
    the caller's variable, as they do for a wk.template() parameter."""
    dtype: Any = None


def ref(dtype: Any = None) -> Reference:
    return Reference(dtype)


@dataclass(frozen=True, slots=True)
class SparseMatrixBuilderType:
    """`wk.types.sparse_matrix_builder()` argument annotation (Taichi's): the argument is a
    `wk.linalg.SparseMatrixBuilder`, and `K[i, j] += v` in the kernel appends a triplet to it."""


def sparse_matrix_builder() -> SparseMatrixBuilderType:
    return SparseMatrixBuilderType()


class types:  # noqa: N801 - namespace mirroring `ti.types`
    """`wk.types.*` namespace."""
    vector = staticmethod(vector)
    matrix = staticmethod(matrix)
    ndarray = _NdarrayAnnotation()
    template = staticmethod(template)
    ref = staticmethod(ref)
    sparse_matrix_builder = staticmethod(sparse_matrix_builder)

    @staticmethod
    def struct(**members: Any) -> Any:
        from wgkern.lang.structs import struct
        return struct(**members)

    @staticmethod
    def texture(num_dimensions: int = 2) -> Any:
        """`wk.types.texture(num_dimensions=2)`: a sampled texture parameter (lang/texture.py)."""
        from wgkern.lang.texture import TextureType
        return TextureType(num_dimensions)

    @staticmethod
    def rw_texture(num_dimensions: int = 2, num_channels: int | None = None, channel_format: Any = None,
                   lod: int = 0, fmt: Any = None) -> Any:
        """`wk.types.rw_texture(num_dimensions=2, fmt=wk.Format.r32f, lod=0)`: a storage texture parameter."""
        from wgkern.lang.texture import RWTextureType
        return RWTextureType(num_dimensions, num_channels, channel_format, lod, fmt)

    f16, f32, f64 = f16, f32, f64
    i8, i16, i32, i64 = i8, i16, i32, i64
    u8, u16, u32, u64, u1 = u8, u16, u32, u64, u1
    float16, float32, float64 = f16, f32, f64
    int8, int16, int32, int64 = i8, i16, i32, i64
    uint1, uint8, uint16, uint32, uint64 = u1, u8, u16, u32, u64
    NDArray = NdarrayType
    Template = Template

    class primitive_types:  # noqa: N801 - namespace mirroring `ti.types.primitive_types`
        """The scalar dtypes by family, Python's `float` / `int` / `bool` included, as Taichi lists them."""
        f16, f32, f64 = f16, f32, f64
        i8, i16, i32, i64 = i8, i16, i32, i64
        u1, u8, u16, u32, u64 = u1, u8, u16, u32, u64
        float16, float32, float64 = f16, f32, f64
        int8, int16, int32, int64 = i8, i16, i32, i64
        uint1, uint8, uint16, uint32, uint64 = u1, u8, u16, u32, u64
        real_types = [f16, f32, f64, float]
        integer_types = [i8, i16, i32, i64, u1, u8, u16, u32, u64, int, bool]
        all_types = real_types + integer_types

    @staticmethod
    def is_real(dtype: Any) -> bool:
        """Taichi's `ti.types.is_real(dt)`: a float dtype."""
        return to_dtype(dtype).is_float

    @staticmethod
    def is_integral(dtype: Any) -> bool:
        return to_dtype(dtype).is_int or to_dtype(dtype).is_bool

    @staticmethod
    def is_signed(dtype: Any) -> bool:
        dt = to_dtype(dtype)
        return dt.is_float or (dt.is_int and dt.kind == "i")


# `wk.types.quant.int / fixed / float` (lang/quant.py, which needs this module's dtypes, hence imported last)
from wgkern.lang.quant import quant  # noqa: E402
types.quant = quant
