"""The derivative of every differentiable op, in one table shared by reverse and forward mode.

A unary rule gives dy/dx for y = op(x); a binary rule gives a pair (dy/dlhs, dy/drhs). Each is built with an
IRBuilder `b` from the primal operands and result, and is only called for operands that carry a gradient
(so `pow`'s log(lhs) is never built for a constant exponent). A missing entry is an AutodiffError."""
from __future__ import annotations

import math
from typing import Callable, Mapping

from wgkern.errors import AutodiffError
from wgkern.ir import nodes as ir
from wgkern.ir.builder import IRBuilder
from wgkern.ir.ops import BinaryOpKind, UnaryOpKind

UnaryDerivative = Callable[[IRBuilder, ir.Stmt, ir.Stmt], ir.Stmt]
BinaryPartial = Callable[[IRBuilder, ir.Stmt, ir.Stmt, ir.Stmt], ir.Stmt]


def zero_derivative(b: IRBuilder, x: ir.Stmt, y: ir.Stmt) -> ir.Stmt:
    """Piecewise-constant ops: the derivative is zero almost everywhere."""
    return b.const(0.0, y.dtype)


def _one(b: IRBuilder, dtype: object) -> ir.Stmt:
    return b.const(1.0, dtype)


def _one_minus_square(b: IRBuilder, v: ir.Stmt) -> ir.Stmt:
    return b.sub(_one(b, v.dtype), b.mul(v, v))


UNARY_DERIVATIVES: Mapping[UnaryOpKind, UnaryDerivative] = {
    UnaryOpKind.NEG: lambda b, x, y: b.const(-1.0, y.dtype),
    UnaryOpKind.ABS: lambda b, x, y: b.unary(UnaryOpKind.SIGN, x),
    UnaryOpKind.SIGN: zero_derivative,
    UnaryOpKind.SQRT: lambda b, x, y: b.div(b.const(0.5, y.dtype), y),
    UnaryOpKind.RSQRT: lambda b, x, y: b.mul(b.const(-0.5, y.dtype), b.div(y, x)),
    UnaryOpKind.EXP: lambda b, x, y: y,
    UnaryOpKind.LOG: lambda b, x, y: b.div(_one(b, y.dtype), x),
    UnaryOpKind.LOG2: lambda b, x, y: b.div(_one(b, y.dtype), b.mul(x, b.const(math.log(2.0), y.dtype))),
    UnaryOpKind.SIN: lambda b, x, y: b.cos(x),
    UnaryOpKind.COS: lambda b, x, y: b.neg(b.sin(x)),
    UnaryOpKind.TAN: lambda b, x, y: b.add(_one(b, y.dtype), b.mul(y, y)),
    UnaryOpKind.ASIN: lambda b, x, y: b.unary(UnaryOpKind.RSQRT, _one_minus_square(b, x)),
    UnaryOpKind.ACOS: lambda b, x, y: b.neg(b.unary(UnaryOpKind.RSQRT, _one_minus_square(b, x))),
    UnaryOpKind.ATAN: lambda b, x, y: b.div(_one(b, y.dtype), b.add(_one(b, y.dtype), b.mul(x, x))),
    UnaryOpKind.SINH: lambda b, x, y: b.unary(UnaryOpKind.COSH, x),
    UnaryOpKind.COSH: lambda b, x, y: b.unary(UnaryOpKind.SINH, x),
    UnaryOpKind.TANH: lambda b, x, y: _one_minus_square(b, y),
    UnaryOpKind.FLOOR: zero_derivative,
    UnaryOpKind.CEIL: zero_derivative,
    UnaryOpKind.ROUND: zero_derivative,
}


def _atan2_denominator(b: IRBuilder, lhs: ir.Stmt, rhs: ir.Stmt) -> ir.Stmt:
    return b.add(b.mul(lhs, lhs), b.mul(rhs, rhs))


def _indicator(b: IRBuilder, op: BinaryOpKind, lhs: ir.Stmt, rhs: ir.Stmt, dtype: object, when: bool) -> ir.Stmt:
    """1.0 where (lhs op rhs) == when, else 0.0: which side min/max picked (ties go to the lhs)."""
    cond = b.binary(op, lhs, rhs)
    one, zero = b.const(1.0, dtype), b.const(0.0, dtype)
    return b.select(cond, one, zero) if when else b.select(cond, zero, one)


BINARY_DERIVATIVES: Mapping[BinaryOpKind, tuple[BinaryPartial, BinaryPartial]] = {
    BinaryOpKind.ADD: (lambda b, l, r, y: _one(b, y.dtype), lambda b, l, r, y: _one(b, y.dtype)),
    BinaryOpKind.SUB: (lambda b, l, r, y: _one(b, y.dtype), lambda b, l, r, y: b.const(-1.0, y.dtype)),
    BinaryOpKind.MUL: (lambda b, l, r, y: r, lambda b, l, r, y: l),
    BinaryOpKind.DIV: (lambda b, l, r, y: b.div(_one(b, y.dtype), r), lambda b, l, r, y: b.neg(b.div(y, r))),
    BinaryOpKind.POW: (
        lambda b, l, r, y: b.mul(r, b.binary(BinaryOpKind.POW, l, b.sub(r, _one(b, y.dtype)))),
        lambda b, l, r, y: b.mul(y, b.unary(UnaryOpKind.LOG, l)),
    ),
    BinaryOpKind.ATAN2: (
        lambda b, l, r, y: b.div(r, _atan2_denominator(b, l, r)),
        lambda b, l, r, y: b.neg(b.div(l, _atan2_denominator(b, l, r))),
    ),
    # min/max: the derivative goes to the operand that is the result (the left one on ties; the other one
    # when an operand is NaN, which min/max ignore)
    BinaryOpKind.MIN: (
        lambda b, l, r, y: _indicator(b, BinaryOpKind.CMP_EQ, y, l, y.dtype, True),
        lambda b, l, r, y: _indicator(b, BinaryOpKind.CMP_EQ, y, l, y.dtype, False),
    ),
    BinaryOpKind.MAX: (
        lambda b, l, r, y: _indicator(b, BinaryOpKind.CMP_EQ, y, l, y.dtype, True),
        lambda b, l, r, y: _indicator(b, BinaryOpKind.CMP_EQ, y, l, y.dtype, False),
    ),
    BinaryOpKind.FLOORDIV: (lambda b, l, r, y: b.const(0.0, y.dtype), lambda b, l, r, y: b.const(0.0, y.dtype)),
    BinaryOpKind.MOD: (
        lambda b, l, r, y: _one(b, y.dtype),
        lambda b, l, r, y: b.neg(b.unary(UnaryOpKind.FLOOR, b.div(l, r))),
    ),
}

# Which primal values each rule reads (beyond dtypes): "x" the operand and "y" the result of a unary op; per
# partial of a binary op, "l", "r" and "y". The needed analysis (activity.py) keeps only these, and the reverse
# pass recomputes only these; a rule may be handed the forward statement for a value it does not read.
UNARY_READS: Mapping[UnaryOpKind, str] = {
    UnaryOpKind.NEG: "", UnaryOpKind.SIGN: "", UnaryOpKind.FLOOR: "", UnaryOpKind.CEIL: "", UnaryOpKind.ROUND: "",
    UnaryOpKind.ABS: "x", UnaryOpKind.LOG: "x", UnaryOpKind.LOG2: "x", UnaryOpKind.SIN: "x", UnaryOpKind.COS: "x",
    UnaryOpKind.ASIN: "x", UnaryOpKind.ACOS: "x", UnaryOpKind.ATAN: "x", UnaryOpKind.SINH: "x",
    UnaryOpKind.COSH: "x",
    UnaryOpKind.SQRT: "y", UnaryOpKind.EXP: "y", UnaryOpKind.TAN: "y", UnaryOpKind.TANH: "y",
    UnaryOpKind.RSQRT: "xy",
}
BINARY_READS: Mapping[BinaryOpKind, tuple[str, str]] = {
    BinaryOpKind.ADD: ("", ""), BinaryOpKind.SUB: ("", ""), BinaryOpKind.FLOORDIV: ("", ""),
    BinaryOpKind.MUL: ("r", "l"), BinaryOpKind.DIV: ("r", "yr"), BinaryOpKind.POW: ("lr", "yl"),
    BinaryOpKind.ATAN2: ("lr", "lr"), BinaryOpKind.MIN: ("yl", "yl"), BinaryOpKind.MAX: ("yl", "yl"),
    BinaryOpKind.MOD: ("", "lr"),
}
# Unary rules that read one primal value only: autodiff may save that value (or, from x, the derivative
# itself) in the replay instead of recomputing it in the reverse pass (derivative_cache.py).
READS_OPERAND_ONLY = frozenset(op for op, reads in UNARY_READS.items() if reads == "x")
READS_RESULT_ONLY = frozenset(op for op, reads in UNARY_READS.items() if reads == "y")


def unary_reads(stmt: ir.UnaryOp) -> str:
    return UNARY_READS.get(stmt.op, "xy")


def binary_reads(stmt: ir.BinaryOp, lhs_active: bool, rhs_active: bool) -> str:
    """The primal values the partials of the active operands read."""
    lhs, rhs = BINARY_READS.get(stmt.op, ("lry", "lry"))
    return (lhs if lhs_active else "") + (rhs if rhs_active else "")




def unary_derivative(stmt: ir.UnaryOp) -> UnaryDerivative:
    rule = UNARY_DERIVATIVES.get(stmt.op)
    if rule is None:
        raise AutodiffError(f"'{stmt.op.value}' has no derivative rule", stmt.loc)
    return rule


def binary_derivative(stmt: ir.BinaryOp) -> tuple[BinaryPartial, BinaryPartial]:
    rule = BINARY_DERIVATIVES.get(stmt.op)
    if rule is None:
        raise AutodiffError(f"'{stmt.op.value}' has no derivative rule", stmt.loc)
    return rule
