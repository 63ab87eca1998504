"""LLVM spelling of wgkern dtypes: register types, memory types and exact constant literals.

u1 is `i1` in registers and one byte (`i8`) in memory, matching numpy's bool storage. Float constants are
written in LLVM's hexadecimal form so every value round-trips bit-exactly."""
from __future__ import annotations

import struct

from wgkern.dtypes import DataType

_FLOAT_TYPES = {16: "half", 32: "float", 64: "double"}


def llvm_type(dtype: DataType) -> str:
    """Register type: half/float/double, iN, i1 for u1."""
    if dtype.is_float:
        return _FLOAT_TYPES[dtype.bits]
    return f"i{dtype.bits}"


def memory_type(dtype: DataType) -> str:
    """Type of one element in global memory (u1 is a byte)."""
    return "i8" if dtype.is_bool else llvm_type(dtype)


def type_suffix(dtype: DataType) -> str:
    """Intrinsic overload suffix: f16/f32/f64/iN."""
    return f"f{dtype.bits}" if dtype.is_float else f"i{dtype.bits}"


def float_literal(value: float, dtype: DataType) -> str:
    """Bit-exact LLVM float constant (double-hex for float/double, 0xH for half)."""
    if dtype.bits == 16:
        bits = struct.unpack("<H", struct.pack("<e", value))[0]
        return f"0xH{bits:04X}"
    if dtype.bits == 32:
        # LLVM requires a float constant's double spelling to be exactly representable as a float.
        value = struct.unpack("<f", struct.pack("<f", value))[0]
    bits = struct.unpack("<Q", struct.pack("<d", value))[0]
    return f"0x{bits:016X}"


def const_literal(value: int | float | bool, dtype: DataType) -> str:
    """Constant of `dtype` as an LLVM operand."""
    if dtype.is_float:
        return float_literal(float(value), dtype)
    if dtype.is_bool:
        return "true" if value else "false"
    value = int(value)
    if dtype.is_unsigned and value >= 1 << (dtype.bits - 1):
        value -= 1 << dtype.bits
    return str(value)


def zero_literal(dtype: DataType) -> str:
    return const_literal(0, dtype)
