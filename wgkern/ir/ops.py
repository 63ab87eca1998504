"""Op enums of the IR and their facts (arity, which dtypes they take, linearity).

Backends key their spelling tables and autodiff keys its derivative table off these enums; a test per table
asserts it covers the whole enum."""
from __future__ import annotations

import enum


class UnaryOpKind(enum.Enum):
    NEG = "neg"
    LOGICAL_NOT = "not"      # u1 -> u1
    BIT_NOT = "bit_not"      # ints
    ABS = "abs"
    SIGN = "sign"            # -1, 0, 1 in the operand's type
    SQRT = "sqrt"
    RSQRT = "rsqrt"
    EXP = "exp"
    LOG = "log"
    LOG2 = "log2"
    SIN = "sin"
    COS = "cos"
    TAN = "tan"
    ASIN = "asin"
    ACOS = "acos"
    ATAN = "atan"
    SINH = "sinh"
    COSH = "cosh"
    TANH = "tanh"
    FLOOR = "floor"          # float -> same float
    CEIL = "ceil"
    ROUND = "round"          # half away from zero, as Taichi's round and C's round()


class BinaryOpKind(enum.Enum):
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"              # true division; the frontend casts int operands to float first
    FLOORDIV = "floordiv"    # Python `//`: floor division on ints and floats
    MOD = "mod"              # Python `%`: result has the sign of the divisor, ints and floats
    POW = "pow"
    ATAN2 = "atan2"
    MIN = "min"
    MAX = "max"
    BIT_AND = "bit_and"      # also logical `and` on u1
    BIT_OR = "bit_or"        # also logical `or` on u1
    BIT_XOR = "bit_xor"
    SHL = "shl"
    SHR = "shr"              # arithmetic for signed, logical for unsigned
    CMP_LT = "lt"
    CMP_LE = "le"
    CMP_GT = "gt"
    CMP_GE = "ge"
    CMP_EQ = "eq"
    CMP_NE = "ne"


class AtomicOpKind(enum.Enum):
    ADD = "add"
    SUB = "sub"
    MIN = "min"
    MAX = "max"
    AND = "and"
    OR = "or"
    XOR = "xor"
    MUL = "mul"
    EXCHANGE = "exchange"    # store the value; the old contents are the result
    CAS = "cas"              # compare-and-swap: store the value where the contents equal AtomicOp.expected


# Float-only unary ops (transcendentals etc.); the frontend casts int operands to the default float.
FLOAT_ONLY_UNARY = frozenset({
    UnaryOpKind.SQRT, UnaryOpKind.RSQRT, UnaryOpKind.EXP, UnaryOpKind.LOG, UnaryOpKind.LOG2,
    UnaryOpKind.SIN, UnaryOpKind.COS, UnaryOpKind.TAN, UnaryOpKind.ASIN, UnaryOpKind.ACOS,
    UnaryOpKind.ATAN, UnaryOpKind.SINH, UnaryOpKind.COSH, UnaryOpKind.TANH, UnaryOpKind.FLOOR,
    UnaryOpKind.CEIL, UnaryOpKind.ROUND,
})
INT_ONLY_UNARY = frozenset({UnaryOpKind.BIT_NOT})
BOOL_ONLY_UNARY = frozenset({UnaryOpKind.LOGICAL_NOT})

FLOAT_ONLY_BINARY = frozenset({BinaryOpKind.DIV, BinaryOpKind.ATAN2})
INT_ONLY_BINARY = frozenset({
    BinaryOpKind.BIT_AND, BinaryOpKind.BIT_OR, BinaryOpKind.BIT_XOR, BinaryOpKind.SHL, BinaryOpKind.SHR,
})
COMPARISONS = frozenset({
    BinaryOpKind.CMP_LT, BinaryOpKind.CMP_LE, BinaryOpKind.CMP_GT, BinaryOpKind.CMP_GE,
    BinaryOpKind.CMP_EQ, BinaryOpKind.CMP_NE,
})
COMMUTATIVE = frozenset({
    BinaryOpKind.ADD, BinaryOpKind.MUL, BinaryOpKind.MIN, BinaryOpKind.MAX, BinaryOpKind.BIT_AND,
    BinaryOpKind.BIT_OR, BinaryOpKind.BIT_XOR, BinaryOpKind.CMP_EQ, BinaryOpKind.CMP_NE,
})
# Ops whose result is linear in each operand (autodiff: no primal value needed for the adjoint).
LINEAR_BINARY = frozenset({BinaryOpKind.ADD, BinaryOpKind.SUB})
LINEAR_UNARY = frozenset({UnaryOpKind.NEG})

# CAS is integer-only, as Quadrants' atomic_cas (floats are a type error there).
INT_ONLY_ATOMIC = frozenset({AtomicOpKind.AND, AtomicOpKind.OR, AtomicOpKind.XOR, AtomicOpKind.CAS})
