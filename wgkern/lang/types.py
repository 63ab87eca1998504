"""The language's types: vectors and matrices of a scalar dtype, kernel-argument annotations (ndarray,
template, ref, sparse-matrix builder) and the `wk.types` namespace.

The scalar dtypes themselves (DataType, f32 & co., promotion) live in wgkern/dtypes.py, the bottom of the
package; they are re-exported here, where the language's users have always found them."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wgkern import dtypes as _dtypes
from wgkern.dtypes import (ALL_SCALARS, BY_NAME, FLOAT_TYPES, INT_TYPES, DataType, f16, f32, f64,  # noqa: F401
                           from_numpy_dtype, i8, i16, i32, i64, out_of_range, promote, range_text,
                           set_default_types, to_dtype, u1, u8, u16, u32, u64, value_fits, wrap_int)


def __getattr__(name: str):
    """DEFAULT_FLOAT / DEFAULT_INT change with each wk.init: read them where they live."""
    if name in ("DEFAULT_FLOAT", "DEFAULT_INT", "DEFAULT_TYPE_LISTENERS", "_NUMPY_OF", "_FROM_NUMPY"):
        return getattr(_dtypes, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
