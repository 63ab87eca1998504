"""Integer IR values -> SizeExprs: the translation of loop bounds (and what they read) that sizing/build.py
turns into capacities. Values outside the grammar raise OutOfGrammar."""
from __future__ import annotations

from typing import Callable

from wgkern.ir import nodes as ir
from wgkern.ir.ops import BinaryOpKind
from wgkern.sizing import expr as E


class OutOfGrammar(Exception):
    """A loop bound the SizeExpr grammar cannot express."""


_BINARY: dict[BinaryOpKind, Callable[[E.SizeExpr, E.SizeExpr], E.SizeExpr]] = {
    BinaryOpKind.ADD: E.Add, BinaryOpKind.SUB: E.Sub, BinaryOpKind.MUL: E.Mul, BinaryOpKind.MAX: E.Max,
}
_READ_KINDS: dict[str, type] = {"field": E.FieldLoad, "ndarray": E.NdarrayRead}


def _where(loc: object) -> str:
    lineno = getattr(loc, "lineno", 0)
    return f"{loc} ({loc.text().strip()})" if lineno else ""


class Translator:
    """Translates integer IR values into SizeExprs; `env` maps RangeFor loops to their BoundVars."""

    def __init__(self, env: dict[ir.RangeFor, E.BoundVar]):
        self.env = env
        self.memo: dict[int, E.SizeExpr] = {}

    def __call__(self, value: ir.Stmt) -> E.SizeExpr:
        key = id(value)
        if key not in self.memo:
            if value.dtype is None or not value.dtype.is_int:
                raise OutOfGrammar(type(value).__name__)
            method = getattr(self, "t_" + type(value).__name__, None)
            if method is None:
                raise OutOfGrammar(type(value).__name__)
            self.memo[key] = method(value)
        return self.memo[key]

    def t_Const(self, s: ir.Const) -> E.SizeExpr:
        return E.Const(int(s.value))

    def t_ArgLoad(self, s: ir.ArgLoad) -> E.SizeExpr:
        return E.ScalarArg(s.arg_index)

    def t_ShapeOf(self, s: ir.ShapeOf) -> E.SizeExpr:
        if s.container.kind != "ndarray" and s.container.shape is not None:
            return E.Const(int(s.container.shape[s.axis]))
        return E.ShapeOf(s.container, s.axis)

    def t_LoopIndex(self, s: ir.LoopIndex) -> E.SizeExpr:
        var = self.env.get(s.loop)
        if var is None:
            raise OutOfGrammar("index of a loop outside the unit")
        return var

    def t_GlobalLoad(self, s: ir.GlobalLoad) -> E.SizeExpr:
        slot = s.ptr.container
        kind = _READ_KINDS.get(slot.kind)
        if kind is None or slot.is_grad:
            raise OutOfGrammar(f"read of a {slot.kind} container")
        return kind(slot, tuple(self(i) for i in s.ptr.indices), slot.dtype)

    def t_BinaryOp(self, s: ir.BinaryOp) -> E.SizeExpr:
        make = _BINARY.get(s.op)
        if make is None:
            raise OutOfGrammar(s.op.value)
        return make(self(s.lhs), self(s.rhs))

    def t_Cast(self, s: ir.Cast) -> E.SizeExpr:
        if s.bitcast or not _preserves_values(s.operand.dtype, s.dtype):
            raise OutOfGrammar("narrowing or sign-changing cast")
        return self(s.operand)


def _preserves_values(source, target) -> bool:
    """Every value of int dtype `source` is representable in int dtype `target`."""
    if not source.is_int:
        return False
    if source.is_signed == target.is_signed:
        return target.bits >= source.bits
    return source.is_unsigned and target.bits > source.bits
