"""`wk.types`: the namespace of Taichi's `ti.types` (vector, matrix, ndarray, template, struct, texture types,
quant, the scalar dtypes under both spellings, primitive_types). It gathers constructors from the modules that
own them (types.py, structs.py, texture.py, quant.py), so it sits above them."""
from __future__ import annotations

from typing import Any

from wgkern.dtypes import f16, f32, f64, i8, i16, i32, i64, to_dtype, u1, u8, u16, u32, u64
from wgkern.lang.quant import quant
from wgkern.lang.structs import struct
from wgkern.lang.texture import RWTextureType, TextureType
from wgkern.lang.types import (NdarrayType, Template, _NdarrayAnnotation, matrix, ref, sparse_matrix_builder, template,
                               vector)


class types:  # noqa: N801 - namespace mirroring `ti.types`
    """`wk.types.*` namespace."""
    vector = staticmethod(vector)
    matrix = staticmethod(matrix)
    ndarray = _NdarrayAnnotation()
    template = staticmethod(template)
    ref = staticmethod(ref)
    sparse_matrix_builder = staticmethod(sparse_matrix_builder)

    struct = staticmethod(struct)

    @staticmethod
    def texture(num_dimensions: int = 2) -> Any:
        """`wk.types.texture(num_dimensions=2)`: a sampled texture parameter (lang/texture.py)."""
        return TextureType(num_dimensions)

    @staticmethod
    def rw_texture(num_dimensions: int = 2, num_channels: int | None = None, channel_format: Any = None,
                   lod: int = 0, fmt: Any = None) -> Any:
        """`wk.types.rw_texture(num_dimensions=2, fmt=wk.Format.r32f, lod=0)`: a storage texture parameter."""
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


types.quant = quant     # `wk.types.quant.int / fixed / float` (lang/quant.py)
