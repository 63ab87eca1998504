"""LLVM op tables: how each UnaryOpKind/BinaryOpKind/AtomicOpKind is spelled, keyed by dtype kind.

Kinds are 'f' (float), 'i' (signed), 'u' (unsigned), 'b' (u1), so signedness lives in the tables, not in
`if`s (tinygrad's llvmir.py). An entry is a plain instruction, an intrinsic, a math-library function (the
Target picks its name) or a named lowering implemented by codegen.Lowerings."""
from __future__ import annotations

from dataclasses import dataclass

from wgkern.ir.ops import AtomicOpKind, BinaryOpKind, UnaryOpKind


@dataclass(frozen=True, slots=True)
class Inst:
    """One instruction: `%r = <opcode> <ty> a, b` (unary: `%r = <opcode> <ty> a`)."""
    opcode: str


@dataclass(frozen=True, slots=True)
class Intrinsic:
    """`call <ty> @<name>.<suffix>(...)`, e.g. llvm.smin.i32."""
    name: str


@dataclass(frozen=True, slots=True)
class Math:
    """A math-library function (sin, atan2...); the Target maps it to libm, libdevice or an intrinsic."""
    name: str


@dataclass(frozen=True, slots=True)
class Lowering:
    """Several instructions, emitted by the codegen method `lower_<name>`."""
    name: str


OpSpelling = Inst | Intrinsic | Math | Lowering

B = BinaryOpKind
U = UnaryOpKind
A = AtomicOpKind

_INT_BINARY: dict[BinaryOpKind, OpSpelling] = {
    B.ADD: Inst("add"), B.SUB: Inst("sub"), B.MUL: Inst("mul"),
    B.BIT_AND: Inst("and"), B.BIT_OR: Inst("or"), B.BIT_XOR: Inst("xor"),
    B.SHL: Lowering("shl"), B.POW: Lowering("ipow"),
    B.CMP_EQ: Inst("icmp eq"), B.CMP_NE: Inst("icmp ne"),
}
SIGNED_BINARY: dict[BinaryOpKind, OpSpelling] = {
    **_INT_BINARY,
    B.FLOORDIV: Lowering("floordiv_signed"), B.MOD: Lowering("mod_signed"),
    B.MIN: Intrinsic("llvm.smin"), B.MAX: Intrinsic("llvm.smax"), B.SHR: Lowering("ashr"),
    B.CMP_LT: Inst("icmp slt"), B.CMP_LE: Inst("icmp sle"), B.CMP_GT: Inst("icmp sgt"), B.CMP_GE: Inst("icmp sge"),
}
UNSIGNED_BINARY: dict[BinaryOpKind, OpSpelling] = {
    **_INT_BINARY,
    B.FLOORDIV: Lowering("floordiv_unsigned"), B.MOD: Lowering("mod_unsigned"),
    B.MIN: Intrinsic("llvm.umin"), B.MAX: Intrinsic("llvm.umax"), B.SHR: Lowering("lshr"),
    B.CMP_LT: Inst("icmp ult"), B.CMP_LE: Inst("icmp ule"), B.CMP_GT: Inst("icmp ugt"), B.CMP_GE: Inst("icmp uge"),
}
BOOL_BINARY: dict[BinaryOpKind, OpSpelling] = {
    B.BIT_AND: Inst("and"), B.BIT_OR: Inst("or"), B.BIT_XOR: Inst("xor"),
    B.MIN: Inst("and"), B.MAX: Inst("or"),
    B.CMP_EQ: Inst("icmp eq"), B.CMP_NE: Inst("icmp ne"),
    B.CMP_LT: Inst("icmp ult"), B.CMP_LE: Inst("icmp ule"), B.CMP_GT: Inst("icmp ugt"), B.CMP_GE: Inst("icmp uge"),
}
FLOAT_BINARY: dict[BinaryOpKind, OpSpelling] = {
    B.ADD: Inst("fadd"), B.SUB: Inst("fsub"), B.MUL: Inst("fmul"), B.DIV: Inst("fdiv"),
    B.FLOORDIV: Lowering("floordiv_float"), B.MOD: Lowering("mod_float"),
    B.POW: Math("pow"), B.ATAN2: Math("atan2"),
    B.MIN: Lowering("min_float"), B.MAX: Lowering("max_float"),            # a NaN operand is ignored
    B.CMP_LT: Inst("fcmp olt"), B.CMP_LE: Inst("fcmp ole"), B.CMP_GT: Inst("fcmp ogt"), B.CMP_GE: Inst("fcmp oge"),
    B.CMP_EQ: Inst("fcmp oeq"), B.CMP_NE: Inst("fcmp une"),
}
BINARY: dict[str, dict[BinaryOpKind, OpSpelling]] = {
    "f": FLOAT_BINARY, "i": SIGNED_BINARY, "u": UNSIGNED_BINARY, "b": BOOL_BINARY,
}

FLOAT_UNARY: dict[UnaryOpKind, OpSpelling] = {
    U.NEG: Inst("fneg"), U.ABS: Intrinsic("llvm.fabs"), U.SIGN: Lowering("sign_float"),
    U.SQRT: Intrinsic("llvm.sqrt"), U.RSQRT: Lowering("rsqrt"),
    U.EXP: Math("exp"), U.LOG: Math("log"), U.LOG2: Math("log2"),
    U.SIN: Math("sin"), U.COS: Math("cos"), U.TAN: Math("tan"),
    U.ASIN: Math("asin"), U.ACOS: Math("acos"), U.ATAN: Math("atan"),
    U.SINH: Math("sinh"), U.COSH: Math("cosh"), U.TANH: Math("tanh"),
    U.FLOOR: Intrinsic("llvm.floor"), U.CEIL: Intrinsic("llvm.ceil"), U.ROUND: Intrinsic("llvm.round"),
}
SIGNED_UNARY: dict[UnaryOpKind, OpSpelling] = {
    U.NEG: Lowering("neg_int"), U.BIT_NOT: Lowering("bit_not"), U.ABS: Lowering("abs_signed"),
    U.SIGN: Lowering("sign_signed"),
}
UNSIGNED_UNARY: dict[UnaryOpKind, OpSpelling] = {
    U.NEG: Lowering("neg_int"), U.BIT_NOT: Lowering("bit_not"), U.ABS: Lowering("identity"),
    U.SIGN: Lowering("sign_unsigned"),
}
BOOL_UNARY: dict[UnaryOpKind, OpSpelling] = {
    U.LOGICAL_NOT: Lowering("bit_not"), U.BIT_NOT: Lowering("bit_not"), U.ABS: Lowering("identity"),
    U.SIGN: Lowering("identity"),
}
UNARY: dict[str, dict[UnaryOpKind, OpSpelling]] = {
    "f": FLOAT_UNARY, "i": SIGNED_UNARY, "u": UNSIGNED_UNARY, "b": BOOL_UNARY,
}

# atomicrmw operations. Float min/max use fmin/fmax (a NaN operand ignored, like BinaryOp MIN/MAX). An op
# missing here for a kind is ATOMIC_CMPXCHG_LOOP's, or CAS (one `cmpxchg`).
ATOMIC: dict[str, dict[AtomicOpKind, str]] = {
    "f": {A.ADD: "fadd", A.SUB: "fsub", A.MIN: "fmin", A.MAX: "fmax", A.EXCHANGE: "xchg"},
    "i": {A.ADD: "add", A.SUB: "sub", A.MIN: "min", A.MAX: "max", A.AND: "and", A.OR: "or", A.XOR: "xor",
          A.EXCHANGE: "xchg"},
    "u": {A.ADD: "add", A.SUB: "sub", A.MIN: "umin", A.MAX: "umax", A.AND: "and", A.OR: "or", A.XOR: "xor",
          A.EXCHANGE: "xchg"},
    # u1 lives in a byte holding 0/1: add/max/or all mean "set if either is set", mul means "both set".
    "b": {A.ADD: "or", A.SUB: "xor", A.MIN: "and", A.MAX: "or", A.AND: "and", A.OR: "or", A.XOR: "xor",
          A.MUL: "and", A.EXCHANGE: "xchg"},
}
# Atomics LLVM has no atomicrmw for: a cmpxchg loop on the element's bits stores BINARY[kind][op](old, value).
ATOMIC_CMPXCHG_LOOP: dict[AtomicOpKind, BinaryOpKind] = {A.MUL: B.MUL}
