"""Multi-instruction lowerings shared by all LLVM targets: conversions, Python floor division, masked shifts,
sign, integer pow and the float mapping of random bits.

A mixin of FunctionEmitter (codegen.py): every `lower_<name>` is named by a `Lowering` entry of ops.py and
implements docs/internals.md exactly; none of them can trap (no division by zero, no poison shifts)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from wgkern import dtypes as T
from wgkern.dtypes import DataType

from .types import float_literal, llvm_type

if TYPE_CHECKING:
    from .codegen import ModuleEmitter

# Conversion method per (source kind, destination kind); kinds as in ops.py.
_CASTS = {
    ("f", "f"): "float_to_float", ("f", "i"): "float_to_int", ("f", "u"): "float_to_int", ("f", "b"): "to_bool",
    ("i", "f"): "int_to_float", ("u", "f"): "int_to_float", ("b", "f"): "int_to_float",
    ("i", "i"): "int_to_int", ("i", "u"): "int_to_int", ("u", "i"): "int_to_int", ("u", "u"): "int_to_int",
    ("b", "i"): "int_to_int", ("b", "u"): "int_to_int", ("i", "b"): "to_bool", ("u", "b"): "to_bool",
    ("b", "b"): "same",
}

_IPOW_TEMPLATE = """
define internal {ty} @{name}({ty} %base, {ty} %exp) nounwind {{
entry:
  %neg = icmp slt {ty} %exp, 0
  br i1 {negative_check}, label %negative, label %loop
negative:
  %is_one = icmp eq {ty} %base, 1
  %is_minus_one = icmp eq {ty} %base, -1
  %low_bit = and {ty} %exp, 1
  %odd = icmp ne {ty} %low_bit, 0
  %minus_one_result = select i1 %odd, {ty} -1, {ty} 1
  %r1 = select i1 %is_minus_one, {ty} %minus_one_result, {ty} 0
  %r2 = select i1 %is_one, {ty} 1, {ty} %r1
  ret {ty} %r2
loop:
  %acc = phi {ty} [1, %entry], [%acc2, %body]
  %b = phi {ty} [%base, %entry], [%b2, %body]
  %e = phi {ty} [%exp, %entry], [%e2, %body]
  %done = icmp eq {ty} %e, 0
  br i1 %done, label %out, label %body
body:
  %bit = and {ty} %e, 1
  %has_bit = icmp ne {ty} %bit, 0
  %product = mul {ty} %acc, %b
  %acc2 = select i1 %has_bit, {ty} %product, {ty} %acc
  %b2 = mul {ty} %b, %b
  %e2 = lshr {ty} %e, 1
  br label %loop
out:
  ret {ty} %acc
}}
"""


class Lowerings:
    """`lower_*` methods and `convert`; relies on FunctionEmitter's `op`, `call_intrinsic`,
    `call_float_promoted` and `approximation_flags`."""

    module: ModuleEmitter

    # ---- conversions -------------------------------------------------------------------------------------
    def convert(self, value: str, source: DataType, dest: DataType) -> str:
        """Value conversion as Cast defines it (saturating float->int, != 0 to u1, extension by source sign)."""
        if source == dest:
            return value
        return getattr(self, "cast_" + _CASTS[(source.kind, dest.kind)])(value, source, dest)

    def cast_same(self, value: str, source: DataType, dest: DataType) -> str:
        return value

    def cast_float_to_float(self, value: str, source: DataType, dest: DataType) -> str:
        opcode = "fpext" if dest.bits > source.bits else "fptrunc"
        return self.op(f"{opcode} {llvm_type(source)} {value} to {llvm_type(dest)}")

    def cast_float_to_int(self, value: str, source: DataType, dest: DataType) -> str:
        if source.bits == 16:
            value = self.op(f"fpext half {value} to float")
            source = T.f32
        name = "fptosi" if dest.is_signed else "fptoui"
        intrinsic = f"llvm.{name}.sat.i{dest.bits}.f{source.bits}"
        callee = self.module.intrinsic(intrinsic, llvm_type(dest), [llvm_type(source)])
        return self.op(f"call {llvm_type(dest)} {callee}({llvm_type(source)} {value})")

    def cast_int_to_float(self, value: str, source: DataType, dest: DataType) -> str:
        opcode = "sitofp" if source.is_signed else "uitofp"
        return self.op(f"{opcode} {llvm_type(source)} {value} to {llvm_type(dest)}")

    def cast_int_to_int(self, value: str, source: DataType, dest: DataType) -> str:
        if source.bits == dest.bits:
            return value
        if source.bits > dest.bits:
            return self.op(f"trunc {llvm_type(source)} {value} to {llvm_type(dest)}")
        opcode = "sext" if source.is_signed else "zext"
        return self.op(f"{opcode} {llvm_type(source)} {value} to {llvm_type(dest)}")

    def cast_to_bool(self, value: str, source: DataType, dest: DataType) -> str:
        if source.is_float:
            return self.op(f"fcmp une {llvm_type(source)} {value}, {float_literal(0.0, source)}")
        return self.op(f"icmp ne {llvm_type(source)} {value}, 0")

    # ---- integer arithmetic ------------------------------------------------------------------------------
    def masked_shift(self, opcode: str, dtype: DataType, a: str, b: str) -> str:
        ty = llvm_type(dtype)
        amount = self.op(f"and {ty} {b}, {dtype.bits - 1}")
        return self.op(f"{opcode} {ty} {a}, {amount}")

    def lower_shl(self, dtype: DataType, a: str, b: str) -> str:
        return self.masked_shift("shl", dtype, a, b)

    def lower_ashr(self, dtype: DataType, a: str, b: str) -> str:
        return self.masked_shift("ashr", dtype, a, b)

    def lower_lshr(self, dtype: DataType, a: str, b: str) -> str:
        return self.masked_shift("lshr", dtype, a, b)

    def signed_division(self, dtype: DataType, a: str, b: str) -> tuple[str, str, str, str, str, str]:
        """(quotient, remainder, floor adjustment flag, safe divisor, b == 0, b == -1) with a divisor that
        can never trap: 0 and -1 are replaced by 1 and patched afterwards."""
        ty = llvm_type(dtype)
        is_zero = self.op(f"icmp eq {ty} {b}, 0")
        is_minus_one = self.op(f"icmp eq {ty} {b}, -1")
        unsafe = self.op(f"or i1 {is_zero}, {is_minus_one}")
        safe = self.op(f"select i1 {unsafe}, {ty} 1, {ty} {b}")
        quotient = self.op(f"sdiv {ty} {a}, {safe}")
        remainder = self.op(f"srem {ty} {a}, {safe}")
        inexact = self.op(f"icmp ne {ty} {remainder}, 0")
        signs = self.op(f"xor {ty} {remainder}, {safe}")
        differ = self.op(f"icmp slt {ty} {signs}, 0")
        adjust = self.op(f"and i1 {inexact}, {differ}")
        return quotient, remainder, adjust, safe, is_zero, is_minus_one

    def lower_floordiv_signed(self, dtype: DataType, a: str, b: str) -> str:
        ty = llvm_type(dtype)
        quotient, _, adjust, _, is_zero, is_minus_one = self.signed_division(dtype, a, b)
        step = self.op(f"zext i1 {adjust} to {ty}")
        floored = self.op(f"sub {ty} {quotient}, {step}")
        negated = self.op(f"sub {ty} 0, {a}")   # a // -1 == -a, wrapping at INT_MIN
        result = self.op(f"select i1 {is_minus_one}, {ty} {negated}, {ty} {floored}")
        return self.op(f"select i1 {is_zero}, {ty} 0, {ty} {result}")

    def lower_mod_signed(self, dtype: DataType, a: str, b: str) -> str:
        ty = llvm_type(dtype)
        _, remainder, adjust, safe, is_zero, is_minus_one = self.signed_division(dtype, a, b)
        shift = self.op(f"select i1 {adjust}, {ty} {safe}, {ty} 0")
        result = self.op(f"add {ty} {remainder}, {shift}")
        unsafe = self.op(f"or i1 {is_zero}, {is_minus_one}")
        return self.op(f"select i1 {unsafe}, {ty} 0, {ty} {result}")

    def unsigned_division(self, opcode: str, dtype: DataType, a: str, b: str) -> str:
        ty = llvm_type(dtype)
        is_zero = self.op(f"icmp eq {ty} {b}, 0")
        safe = self.op(f"select i1 {is_zero}, {ty} 1, {ty} {b}")
        result = self.op(f"{opcode} {ty} {a}, {safe}")
        return self.op(f"select i1 {is_zero}, {ty} 0, {ty} {result}")

    def lower_floordiv_unsigned(self, dtype: DataType, a: str, b: str) -> str:
        return self.unsigned_division("udiv", dtype, a, b)

    def lower_mod_unsigned(self, dtype: DataType, a: str, b: str) -> str:
        return self.unsigned_division("urem", dtype, a, b)

    def lower_ipow(self, dtype: DataType, a: str, b: str) -> str:
        ty = llvm_type(dtype)
        name = f"wk.ipow.{dtype.kind}{dtype.bits}"
        self.module.helpers[name] = _IPOW_TEMPLATE.format(
            ty=ty, name=name, negative_check="%neg" if dtype.is_signed else "false")
        return self.op(f"call {ty} @{name}({ty} {a}, {ty} {b})")

    def lower_neg_int(self, dtype: DataType, a: str) -> str:
        return self.op(f"sub {llvm_type(dtype)} 0, {a}")

    def lower_bit_not(self, dtype: DataType, a: str) -> str:
        return self.op(f"xor {llvm_type(dtype)} {a}, -1")

    def lower_abs_signed(self, dtype: DataType, a: str) -> str:
        return self.call_intrinsic("llvm.abs", dtype, [a], extra="i1 false")   # false: abs(INT_MIN) wraps

    def lower_identity(self, dtype: DataType, a: str) -> str:
        return a

    def lower_sign_signed(self, dtype: DataType, a: str) -> str:
        ty = llvm_type(dtype)
        positive = self.op(f"zext i1 {self.op(f'icmp sgt {ty} {a}, 0')} to {ty}")
        negative = self.op(f"zext i1 {self.op(f'icmp slt {ty} {a}, 0')} to {ty}")
        return self.op(f"sub {ty} {positive}, {negative}")

    def lower_sign_unsigned(self, dtype: DataType, a: str) -> str:
        ty = llvm_type(dtype)
        return self.op(f"zext i1 {self.op(f'icmp ne {ty} {a}, 0')} to {ty}")

    # ---- float arithmetic --------------------------------------------------------------------------------
    def lower_floordiv_float(self, dtype: DataType, a: str, b: str) -> str:
        quotient = self.op(f"fdiv {llvm_type(dtype)} {a}, {b}")
        return self.call_float_promoted("llvm.floor", dtype, [quotient], intrinsic=True)

    def lower_mod_float(self, dtype: DataType, a: str, b: str) -> str:
        ty = llvm_type(dtype)
        floored = self.lower_floordiv_float(dtype, a, b)
        product = self.op(f"fmul {ty} {b}, {floored}")
        return self.op(f"fsub {ty} {a}, {product}")

    def lower_min_float(self, dtype: DataType, a: str, b: str) -> str:
        return self.float_min_max("llvm.minnum", "olt", dtype, a, b)

    def lower_max_float(self, dtype: DataType, a: str, b: str) -> str:
        return self.float_min_max("llvm.maxnum", "ogt", dtype, a, b)

    def float_min_max(self, intrinsic: str, keeps_a: str, dtype: DataType, a: str, b: str) -> str:
        """minnum/maxnum: a NaN operand is ignored. f16 compares and selects in half instead of calling the
        f32 intrinsic between conversions: LLVM's loop vectorizer aborts the process (its two cost models
        disagree) on a loop that folds values rounded to half through that intrinsic."""
        if dtype.bits != 16:
            return self.call_float_promoted(intrinsic, dtype, [a, b], intrinsic=True)
        ty = llvm_type(dtype)
        a_wins = self.op(f"fcmp {keeps_a} {ty} {a}, {b}")
        b_is_nan = self.op(f"fcmp uno {ty} {b}, {b}")
        keep_a = self.op(f"or i1 {a_wins}, {b_is_nan}")
        return self.op(f"select i1 {keep_a}, {ty} {a}, {ty} {b}")

    def lower_rsqrt(self, dtype: DataType, a: str) -> str:
        root = self.call_float_promoted("llvm.sqrt", dtype, [a], intrinsic=True)
        # with the square root's flags, 1 / sqrt becomes the target's reciprocal square root (rsqrt.approx.f32)
        flags = self.approximation_flags("llvm.sqrt", dtype)
        return self.op(f"fdiv{flags} {llvm_type(dtype)} {float_literal(1.0, dtype)}, {root}")

    def lower_sign_float(self, dtype: DataType, a: str) -> str:
        ty = llvm_type(dtype)
        zero = float_literal(0.0, dtype)
        positive = self.op(f"fcmp ogt {ty} {a}, {zero}")
        negative = self.op(f"fcmp olt {ty} {a}, {zero}")
        # Neither for ±0 and NaN: return the operand itself (0 stays 0, NaN stays NaN).
        low = self.op(f"select i1 {negative}, {ty} {float_literal(-1.0, dtype)}, {ty} {a}")
        return self.op(f"select i1 {positive}, {ty} {float_literal(1.0, dtype)}, {ty} {low}")

    # ---- random numbers ----------------------------------------------------------------------------------
    def lower_random(self, dtype: DataType, bits: str) -> str:
        """u32 hash -> dtype: floats are (h >> 8) * 2^-24 (f16 clamped below 1.0), ints are the cast of h."""
        if not dtype.is_float:
            return self.convert(bits, T.u32, dtype)
        wide = T.f64 if dtype.bits == 64 else T.f32
        top = self.op(f"lshr i32 {bits}, 8")
        as_float = self.op(f"uitofp i32 {top} to {llvm_type(wide)}")
        scaled = self.op(f"fmul {llvm_type(wide)} {as_float}, {float_literal(2.0 ** -24, wide)}")
        if dtype.bits != 16:
            return scaled
        # Rounding to f16 can reach 1.0; clamp to the largest f16 below 1 so the range stays [0, 1).
        narrow = self.op(f"fptrunc float {scaled} to half")
        too_big = self.op(f"fcmp oge half {narrow}, {float_literal(1.0, dtype)}")
        return self.op(f"select i1 {too_big}, half {float_literal(0.99951171875, dtype)}, half {narrow}")
