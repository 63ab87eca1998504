"""Typed scalar arithmetic for kernel code: Taichi's typing rules on top of IRBuilder's promotion.

`/` and float-only math cast integer operands to the default float; bit ops reject floats; arithmetic on two
bools works on i32. Vector arithmetic (vectors.py) applies these per element. Errors raised here carry no
location; the frontend's central visit() attaches the node's."""
from __future__ import annotations

from wgkern.errors import CompileError
from wgkern.ir import nodes as ir
from wgkern.ir.builder import IRBuilder
from wgkern.ir.ops import (BOOL_ONLY_UNARY, COMPARISONS, FLOAT_ONLY_BINARY, FLOAT_ONLY_UNARY, INT_ONLY_BINARY,
                           BinaryOpKind, UnaryOpKind)
from wgkern.lang import types as T

BINARY_SYMBOL = {
    BinaryOpKind.ADD: "+", BinaryOpKind.SUB: "-", BinaryOpKind.MUL: "*", BinaryOpKind.DIV: "/",
    BinaryOpKind.FLOORDIV: "//", BinaryOpKind.MOD: "%", BinaryOpKind.POW: "**", BinaryOpKind.BIT_AND: "&",
    BinaryOpKind.BIT_OR: "|", BinaryOpKind.BIT_XOR: "^", BinaryOpKind.SHL: "<<", BinaryOpKind.SHR: ">>",
    BinaryOpKind.CMP_LT: "<", BinaryOpKind.CMP_LE: "<=", BinaryOpKind.CMP_GT: ">", BinaryOpKind.CMP_GE: ">=",
    BinaryOpKind.CMP_EQ: "==", BinaryOpKind.CMP_NE: "!=", BinaryOpKind.MIN: "min", BinaryOpKind.MAX: "max",
    BinaryOpKind.ATAN2: "atan2",
}
_BOOL_AS_INT = frozenset({
    BinaryOpKind.ADD, BinaryOpKind.SUB, BinaryOpKind.MUL, BinaryOpKind.FLOORDIV, BinaryOpKind.MOD,
    BinaryOpKind.POW, BinaryOpKind.SHL, BinaryOpKind.SHR,
})


def binary(b: IRBuilder, op: BinaryOpKind, lhs: ir.Stmt, rhs: ir.Stmt) -> ir.Stmt:
    """lhs op rhs with Taichi's result type."""
    if op in INT_ONLY_BINARY and (lhs.dtype.is_float or rhs.dtype.is_float):
        raise CompileError(f"operator '{BINARY_SYMBOL[op]}' needs integer operands, got "
                           f"{lhs.dtype.name} and {rhs.dtype.name} (it takes integral inputs only)")
    if op in _BOOL_AS_INT:
        if lhs.dtype.is_bool:
            lhs = b.cast(lhs, T.i32)
        if rhs.dtype.is_bool:
            rhs = b.cast(rhs, T.i32)
    if op in FLOAT_ONLY_BINARY:
        common = T.promote(lhs.dtype, rhs.dtype)
        if not common.is_float:
            common = T.DEFAULT_FLOAT
        lhs = b.cast(lhs, common)
        rhs = b.cast(rhs, common)
    if op in (BinaryOpKind.SHL, BinaryOpKind.SHR):
        if lhs.dtype.is_bool:
            lhs = b.cast(lhs, T.i32)
    return b.binary(op, lhs, rhs)


def unary(b: IRBuilder, op: UnaryOpKind, x: ir.Stmt) -> ir.Stmt:
    if op in BOOL_ONLY_UNARY:
        return b.unary(op, b.cast(x, T.u1))
    if op is UnaryOpKind.BIT_NOT:
        if x.dtype.is_float:
            raise CompileError(f"operator '~' needs an integer operand, got {x.dtype.name} (it takes integral "
                               "inputs only)")
        if x.dtype.is_bool:
            return b.unary(UnaryOpKind.LOGICAL_NOT, x)
        return b.unary(op, x)
    if op in FLOAT_ONLY_UNARY and not x.dtype.is_float:
        x = b.cast(x, T.DEFAULT_FLOAT)
    elif x.dtype.is_bool:
        x = b.cast(x, T.i32)
    return b.unary(op, x)


def logical(b: IRBuilder, op: BinaryOpKind, lhs: ir.Stmt, rhs: ir.Stmt) -> ir.Stmt:
    """Non-short-circuit `and`/`or` on the operands' truth values (u1)."""
    return b.binary(op, b.cast(lhs, T.u1), b.cast(rhs, T.u1))


def is_comparison(op: BinaryOpKind) -> bool:
    return op in COMPARISONS


# (magnitude mask, infinity's bits) of each float width
_FLOAT_BITS = {32: (T.u32, 0x7FFF_FFFF, 0x7F80_0000), 64: (T.u64, 0x7FFF_FFFF_FFFF_FFFF, 0x7FF0_0000_0000_0000)}


# (bits type, exponent shift, exponent mask, bias to [0.5, 1), mantissa-keeping mask, exponent of 0.5, 2^k
# that lifts a subnormal into the normal range, k) of each float width
_FREXP = {32: (T.u32, 23, 0xFF, 126, 0x807F_FFFF, 0x3F00_0000, 33554432.0, 25),
          64: (T.u64, 52, 0x7FF, 1022, 0x800F_FFFF_FFFF_FFFF, 0x3FE0_0000_0000_0000, 18014398509481984.0, 54)}


def frexp(b: IRBuilder, x: ir.Stmt) -> tuple[ir.Stmt, ir.Stmt]:
    """(m, e) with x = m * 2**e and 0.5 <= |m| < 1, as numpy.frexp; 0, infinities and NaN give (x, 0). From
    the bits, subnormals first scaled into the normal range."""
    if not x.dtype.is_float:
        x = b.cast(x, T.DEFAULT_FLOAT)
    if x.dtype.bits == 16:
        x = b.cast(x, T.f32)
    bits_type, shift, exp_mask, bias, keep, half, lift, lift_bits = _FREXP[x.dtype.bits]

    def exponent_field(value: ir.Stmt) -> ir.Stmt:
        bits = b.insert(ir.Cast(operand=value, dtype=bits_type, bitcast=True))
        field = b.binary(BinaryOpKind.SHR, bits, b.const(shift, bits_type))
        return b.binary(BinaryOpKind.BIT_AND, field, b.const(exp_mask, bits_type))

    raw = exponent_field(x)
    subnormal = b.binary(BinaryOpKind.CMP_EQ, raw, b.const(0, bits_type))
    scaled = b.select(subnormal, b.binary(BinaryOpKind.MUL, x, b.const(lift, x.dtype)), x)
    bits = b.insert(ir.Cast(operand=scaled, dtype=bits_type, bitcast=True))
    kept = b.binary(BinaryOpKind.BIT_AND, bits, b.const(keep, bits_type))
    mantissa = b.insert(ir.Cast(operand=b.binary(BinaryOpKind.BIT_OR, kept, b.const(half, bits_type)),
                                dtype=x.dtype, bitcast=True))
    exponent = b.binary(BinaryOpKind.SUB, b.cast(exponent_field(scaled), T.i32), b.const(bias, T.i32))
    exponent = b.binary(BinaryOpKind.SUB, exponent, b.select(subnormal, b.const(lift_bits, T.i32),
                                                             b.const(0, T.i32)))
    special = b.binary(BinaryOpKind.BIT_OR, b.binary(BinaryOpKind.CMP_EQ, x, b.const(0, x.dtype)),
                       b.binary(BinaryOpKind.CMP_EQ, raw, b.const(exp_mask, bits_type)))
    return b.select(special, x, mantissa), b.select(special, b.const(0, T.i32), exponent)


def float_class(b: IRBuilder, x: ir.Stmt, nan: bool) -> ir.Stmt:
    """isnan(x) / isinf(x) from the bits (GPU compilers may fold `x != x` to false); ints are neither."""
    if not x.dtype.is_float:
        return b.const(False, T.u1)
    if x.dtype.bits == 16:
        x = b.cast(x, T.f32)          # the conversion keeps NaN and infinities
    bits_type, magnitude, infinity = _FLOAT_BITS[x.dtype.bits]
    bits = b.insert(ir.Cast(operand=x, dtype=bits_type, bitcast=True))
    masked = b.binary(BinaryOpKind.BIT_AND, bits, b.const(magnitude, bits_type))
    return b.binary(BinaryOpKind.CMP_GT if nan else BinaryOpKind.CMP_EQ, masked, b.const(infinity, bits_type))
