"""How the WGSL backend spells and stores each wgkern dtype.

Owns the register type (what a value is held in inside a shader), the storage type (what one container element
is in a storage buffer: 8/16-bit ints and u1 widened to 32 bits), literals, narrow-int wrapping, the device
feature a dtype needs, and value casts. Op spellings live in ops.py; statement lowering in codegen.py."""
from __future__ import annotations

import math

import numpy as np

from wgkern import dtypes as T
from wgkern.dtypes import DataType

# What a value of each dtype is held in inside a shader (narrow ints live in 32-bit registers, kept in range).
REGISTER_TYPE: dict[DataType, str] = {
    T.f16: "f16", T.f32: "f32", T.f64: "f64",
    T.i8: "i32", T.i16: "i32", T.i32: "i32", T.i64: "i64",
    T.u8: "u32", T.u16: "u32", T.u32: "u32", T.u64: "u64",
    T.u1: "bool",
}

# Element type of a container in a storage buffer (bool is not host-shareable in WGSL).
STORAGE_TYPE: dict[DataType, str] = {**REGISTER_TYPE, T.u1: "u32"}

STORAGE_NUMPY: dict[DataType, np.dtype] = {
    **{dt: dt.np_dtype for dt in T.ALL_SCALARS},
    T.i8: np.dtype(np.int32), T.i16: np.dtype(np.int32),
    T.u8: np.dtype(np.uint32), T.u16: np.dtype(np.uint32), T.u1: np.dtype(np.uint32),
}

# Device features a dtype needs. f64/i64 have no `enable` directive in naga: the feature alone turns them on.
REQUIRED_FEATURE: dict[DataType, str] = {
    T.f64: "shader-f64", T.i64: "shader-int64", T.u64: "shader-int64", T.f16: "shader-f16",
}

# Expression wrapping a 32-bit register back into a narrow int's range (sign- or zero-extended).
NARROW_WRAP: dict[DataType, str] = {
    T.i8: "(({x} << 24u) >> 24u)", T.i16: "(({x} << 16u) >> 16u)",
    T.u8: "({x} & 0xffu)", T.u16: "({x} & 0xffffu)",
}

# Launch-argument (params struct) member type and struct.pack code per dtype. f16 travels as f32.
PARAM_TYPE: dict[DataType, tuple[str, str]] = {
    T.f16: ("f32", "f"), T.f32: ("f32", "f"), T.f64: ("f64", "d"),
    T.i8: ("i32", "i"), T.i16: ("i32", "i"), T.i32: ("i32", "i"), T.i64: ("i64", "q"),
    T.u8: ("u32", "I"), T.u16: ("u32", "I"), T.u32: ("u32", "I"), T.u64: ("u64", "Q"),
    T.u1: ("u32", "I"),
}

_FLOAT_SUFFIX = {T.f16: "h", T.f32: "f", T.f64: "lf"}
_INT_SUFFIX = {"i32": "i", "u32": "u", "i64": "li", "u64": "lu"}
_INF_NAN_BITS = {"inf": "0x7f800000u", "-inf": "0xff800000u", "nan": "0x7fc00000u"}
# Infinities and NaNs are built at run time by this function, never as `bitcast<f32>(0x7f800000u)`: WGSL's
# constant evaluation must reject a non-finite constant (Tint does; naga lets it through), while a call of a
# function declared in the shader is not a constant expression. Every shader declares it (codegen.py).
F32_BITS_HELPER = "fn wk_f32_bits(bits: u32) -> f32 { return bitcast<f32>(bits); }\n"


def f32_from_bits(bits: str) -> str:
    """An f32 expression with the bit pattern `bits` (a u32 literal) that is never a constant expression."""
    return f"wk_f32_bits({bits})"


def register_type(dtype: DataType) -> str:
    return REGISTER_TYPE[dtype]


def storage_type(dtype: DataType) -> str:
    return STORAGE_TYPE[dtype]


def wrap_narrow(expr: str, dtype: DataType) -> str:
    """Bring a 32-bit register holding an i8/i16/u8/u16 result back into that type's range."""
    template = NARROW_WRAP.get(dtype)
    return template.format(x=expr) if template else expr


def literal(value: int | float | bool, dtype: DataType) -> str:
    """A WGSL expression for a constant of `dtype` (register type), exact for every representable value."""
    if dtype.is_bool:
        return "true" if value else "false"
    if dtype.is_float:
        return _float_literal(float(value), dtype)
    reg = REGISTER_TYPE[dtype]
    value = T.wrap_int(int(value), dtype)
    bits = 64 if reg in ("i64", "u64") else 32
    if dtype.is_signed and value == -(1 << (bits - 1)):
        # `-2147483648i` is unary minus on an out-of-range literal: spell it as MIN+1 - 1.
        return f"({value + 1}{_INT_SUFFIX[reg]} - 1{_INT_SUFFIX[reg]})"
    return f"{value}{_INT_SUFFIX[reg]}"


def _float_literal(value: float, dtype: DataType) -> str:
    if math.isnan(value) or math.isinf(value):
        key = "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
        as_f32 = f32_from_bits(_INF_NAN_BITS[key])
        return as_f32 if dtype == T.f32 else f"{REGISTER_TYPE[dtype]}({as_f32})"
    rounded = float(dtype.np_dtype.type(value))
    if math.isinf(rounded):
        return _float_literal(rounded, dtype)
    text = repr(rounded)
    if "e" not in text and "." not in text:
        text += ".0"
    return text + _FLOAT_SUFFIX[dtype]


def zero(dtype: DataType) -> str:
    return literal(False if dtype.is_bool else 0, dtype)


def one(dtype: DataType) -> str:
    return literal(True if dtype.is_bool else 1, dtype)


def storage_dtype(dtype: DataType) -> np.dtype:
    return STORAGE_NUMPY[dtype]


# ---- casts ------------------------------------------------------------------------------------------------

def _float_to_int(x: str, src: DataType, dst: DataType) -> tuple[str, str]:
    """Saturating, truncating float->int conversion as a helper (name, text); NaN gives 0.
    f16 sources go through f32 (exact), so every f16 value compares against exactly representable bounds."""
    fsrc = T.f32 if src == T.f16 else src
    reg = REGISTER_TYPE[dst]
    name = f"wk_{fsrc.name}_to_{dst.name}"
    if dst.is_signed:
        lo, hi = -(1 << (dst.bits - 1)), (1 << (dst.bits - 1)) - 1
        lo_test = f"x <= {_float_literal(float(lo), fsrc)}"
    else:
        lo, hi = 0, (1 << dst.bits) - 1
        lo_test = f"x <= {_float_literal(0.0, fsrc)}"
    text = (f"fn {name}(x: {fsrc.name}) -> {reg} {{\n"
            f"  if (!(x == x)) {{ return {literal(0, dst)}; }}\n"
            f"  if (x >= {_float_literal(float(hi + 1), fsrc)}) {{ return {literal(hi, dst)}; }}\n"
            f"  if ({lo_test}) {{ return {literal(lo, dst)}; }}\n"
            f"  return {reg}(x);\n}}\n")
    arg = f"f32({x})" if src == T.f16 else x
    return f"{name}({arg})", text


def _int_to_int(x: str, src: DataType, dst: DataType) -> str:
    """Wrap or extend by the *source's* signedness. naga's width conversions extend by the destination's
    signedness, so widen within the source's signedness first, then reinterpret."""
    src_reg, dst_reg = REGISTER_TYPE[src], REGISTER_TYPE[dst]
    if src_reg == dst_reg:
        expr = x
    elif src_reg[1:] == dst_reg[1:]:
        expr = f"bitcast<{dst_reg}>({x})"
    elif dst_reg in ("i64", "u64"):
        wide_src = "i64" if src_reg == "i32" else "u64"
        expr = f"{wide_src}({x})" if wide_src == dst_reg else f"bitcast<{dst_reg}>({wide_src}({x}))"
    else:
        narrow_dst = "i32" if src_reg == "i64" else "u32"
        expr = f"{narrow_dst}({x})" if narrow_dst == dst_reg else f"bitcast<{dst_reg}>({narrow_dst}({x}))"
    return wrap_narrow(expr, dst)


def cast(x: str, src: DataType, dst: DataType) -> tuple[str, tuple[str, str] | None]:
    """Value conversion; returns (expression, helper (name, text) or None)."""
    if src == dst:
        return x, None
    if dst.is_bool:
        return (f"!({x} == {zero(src)})" if src.is_float else f"({x} != {zero(src)})"), None
    if src.is_bool:
        return f"select({zero(dst)}, {one(dst)}, {x})", None
    if dst.is_float:
        return f"{REGISTER_TYPE[dst]}({x})", None
    if src.is_float:
        call, text = _float_to_int(x, src, dst)
        return call, (call.split("(")[0], text)
    return _int_to_int(x, src, dst), None


def bitcast(x: str, src: DataType, dst: DataType) -> str:
    """Same-width reinterpretation. f16 goes through pack2x16float (naga cannot bitcast vec2<f16>)."""
    if src == dst:
        return x
    if src == T.f16:
        bits = f"pack2x16float(vec2<f32>(f32({x}), 0.0f))"
        return wrap_narrow(bits if dst == T.u16 else f"bitcast<i32>({bits})", dst)
    if dst == T.f16:
        return f"f16(unpack2x16float(bitcast<u32>({x}) & 0xffffu).x)"
    if src.bits <= 16 and src.is_int:
        return wrap_narrow(f"bitcast<{REGISTER_TYPE[dst]}>({x})", dst)
    return f"bitcast<{REGISTER_TYPE[dst]}>({x})"

