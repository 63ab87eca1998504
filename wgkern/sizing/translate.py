"""Integer IR values -> SizeExprs: the translation of loop bounds (and what they read) that sizing/build.py
turns into capacities. Values outside the grammar raise OutOfGrammar."""
from __future__ import annotations

from typing import Callable

from wgkern.ir import nodes as ir
from wgkern.ir.ops import BinaryOpKind, UnaryOpKind
from wgkern.sizing import expr as E
from wgkern.sizing.local_values import ZERO, Reaching


class OutOfGrammar(Exception):
    """A loop bound the SizeExpr grammar cannot express."""


_BINARY: dict[BinaryOpKind, Callable[[E.SizeExpr, E.SizeExpr], E.SizeExpr]] = {
    BinaryOpKind.ADD: E.Add, BinaryOpKind.SUB: E.Sub, BinaryOpKind.MUL: E.Mul, BinaryOpKind.MAX: E.Max,
    BinaryOpKind.MIN: E.minimum, BinaryOpKind.FLOORDIV: E.floordiv, BinaryOpKind.MOD: E.modulo,
}
_READ_KINDS: dict[str, type] = {"field": E.FieldLoad, "ndarray": E.NdarrayRead}


def _where(loc: object) -> str:
    lineno = getattr(loc, "lineno", 0)
    return f"{loc} ({loc.text().strip()})" if lineno else ""


class Translator:
    """Translates integer IR values of one unit into SizeExprs. `env` maps its RangeFor loops to their
    BoundVars (`parallel`: the unit's own index, bound by the caller), `reaching` gives what each local's load
    may return (local_values.py).

    A value the grammar has no exact form for may still have a sound range: it becomes a fresh BoundVar
    `t<k>` with that range (`ranges`), which `close` later maximises over like a loop index. Such values are
    an index a read cannot be translated at (any index inside the container's axis: a max over the axis),
    a local that more than one store may have set, or one set inside a loop that has ended (its range over
    all of them), and `select` (either operand)."""

    def __init__(self, env: dict[ir.RangeFor, E.BoundVar], reaching: dict[int, Reaching] | None = None,
                 parallel: E.BoundVar | None = None):
        self.env = env
        self.loops = {var: loop for loop, var in env.items()}
        self.reaching = reaching or {}
        self.parallel = parallel
        self.memo: dict[int, E.SizeExpr] = {}
        self.ranges: dict[E.BoundVar, tuple[E.SizeExpr, E.SizeExpr, str]] = {}
        self.active: set[int] = set()

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

    # ---- ranges of bound variables and closing over them ----------------------------------------------------

    def fresh(self, begin: E.SizeExpr, end: E.SizeExpr, where: str) -> E.BoundVar:
        var = E.BoundVar(f"t{len(self.ranges)}")
        self.ranges[var] = (begin, end, where)
        return var

    def range_of(self, var: E.BoundVar) -> tuple[E.SizeExpr, E.SizeExpr, str]:
        """[begin, end) of a loop index (translated on first use) or of a fresh variable."""
        found = self.ranges.get(var)
        if found is None:
            loop = self.loops.get(var)
            if loop is None or var == self.parallel:
                raise OutOfGrammar("a variable without a range")
            found = self.ranges[var] = (self(loop.begin), self(loop.end), _where(loop.loc))
        return found

    def depends(self, var: E.BoundVar, seen: set[E.BoundVar] | None = None) -> set[E.BoundVar]:
        """Every variable the range of `var` mentions, transitively."""
        seen = set() if seen is None else seen
        begin, end, _ = self.range_of(var)
        for other in E.free_vars(begin) | E.free_vars(end):
            if other not in seen:
                seen.add(other)
                if other != self.parallel:
                    self.depends(other, seen)
        return seen

    def close(self, expr: E.SizeExpr, keep: set[E.BoundVar]) -> E.SizeExpr:
        """`expr` maximised over every free variable not in `keep` (each over its range, a variable before
        those its range uses): sound wherever those variables take values inside their ranges."""
        while True:
            free = [v for v in E.free_vars(expr) if v not in keep]
            if not free:
                return expr
            needed = {v: self.depends(v) for v in free}
            var = next(v for v in sorted(free, key=lambda v: v.name)
                       if not any(v in needed[u] for u in free if u != v))
            begin, end, where = self.range_of(var)
            expr = E.max_over_range(var, begin, end, expr, where)

    def close_below(self, expr: E.SizeExpr, keep: set[E.BoundVar]) -> E.SizeExpr:
        """A lower bound of `expr` over the variables not in `keep`: min(0, the minimum), as -max(-expr)."""
        if E.free_vars(expr) <= keep:
            return expr
        return E.sub(E.Const(0), self.close(E.sub(E.Const(0), expr), keep))

    def in_scope(self, expr: E.SizeExpr, keep: set[E.BoundVar]) -> bool:
        """Does `expr` use, directly or through fresh variables' ranges, only the loop indices in `keep`?"""
        for var in E.free_vars(expr) - keep:
            if var in self.loops or any(u in self.loops and u not in keep for u in self.depends(var)):
                return False
        return True

    def one_of(self, exprs: list[E.SizeExpr], keep: set[E.BoundVar], where: str) -> E.SizeExpr:
        """A value equal to one of `exprs` (each may use variables not in `keep`): itself when there is one
        and it is in scope, else a fresh variable over [min, max + 1) of them all."""
        exprs = sorted(set(exprs), key=E.format_expr)
        if len(exprs) == 1 and self.in_scope(exprs[0], keep):
            return exprs[0]
        highs = [self.close(e, keep) for e in exprs]
        lows = [self.close_below(e, keep) for e in exprs]
        high, low = highs[0], lows[0]
        for other in highs[1:]:
            high = E.maximum(high, other)
        for other in lows[1:]:
            low = E.minimum(low, other)
        return self.fresh(low, E.add(high, E.Const(1)), where)

    def scope_at(self, loops: tuple[ir.Stmt, ...]) -> set[E.BoundVar]:
        keep = {self.env[loop] for loop in loops if loop in self.env}
        if self.parallel is not None:
            keep.add(self.parallel)
        return keep

    # ---- the IR values ----------------------------------------------------------------------------------------

    def t_Const(self, s: ir.Const) -> E.SizeExpr:
        return E.Const(int(s.value))

    def t_ArgLoad(self, s: ir.ArgLoad) -> E.SizeExpr:
        return E.ScalarArg(s.arg_index)

    def t_ShapeOf(self, s: ir.ShapeOf) -> E.SizeExpr:
        return _extent(s.container, s.axis)

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
        index = []
        for axis, value in enumerate(s.ptr.indices):
            try:
                index.append(self(value))
            except OutOfGrammar:        # an in-bounds read: any index of the axis bounds it
                index.append(self.fresh(E.Const(0), _extent(slot, axis), _where(s.loc)))
        return kind(slot, tuple(index), slot.dtype)

    def t_LocalLoad(self, s: ir.LocalLoad) -> E.SizeExpr:
        found = self.reaching.get(id(s))
        if found is None or id(s) in self.active:
            raise OutOfGrammar("a local whose value depends on itself")
        self.active.add(id(s))
        try:
            exprs = [E.Const(0) if v == ZERO else self(v) for v in found.values]
        finally:
            self.active.discard(id(s))
        return self.one_of(exprs, self.scope_at(found.loops), _where(s.loc))

    def t_TernarySelect(self, s: ir.TernarySelect) -> E.SizeExpr:
        exprs = [self(s.true_value), self(s.false_value)]
        keep = set().union(*(E.free_vars(e) for e in exprs))
        return self.one_of(exprs, keep, _where(s.loc))

    def t_UnaryOp(self, s: ir.UnaryOp) -> E.SizeExpr:
        if s.op == UnaryOpKind.NEG:
            return E.sub(E.Const(0), self(s.operand))
        if s.op == UnaryOpKind.ABS:
            value = self(s.operand)
            return E.maximum(value, E.sub(E.Const(0), value))
        raise OutOfGrammar(s.op.value)

    def t_BinaryOp(self, s: ir.BinaryOp) -> E.SizeExpr:
        make = _BINARY.get(s.op)
        if make is None:
            raise OutOfGrammar(s.op.value)
        return make(self(s.lhs), self(s.rhs))

    def t_Cast(self, s: ir.Cast) -> E.SizeExpr:
        if s.bitcast or not _preserves_values(s.operand.dtype, s.dtype):
            raise OutOfGrammar("narrowing or sign-changing cast")
        return self(s.operand)


def _extent(slot: ir.ContainerSlot, axis: int) -> E.SizeExpr:
    if slot.kind != "ndarray" and slot.shape is not None:
        return E.Const(int(slot.shape[axis]))
    return E.ShapeOf(slot, axis)


def _preserves_values(source, target) -> bool:
    """Every value of int dtype `source` is representable in int dtype `target`."""
    if not source.is_int:
        return False
    if source.is_signed == target.is_signed:
        return target.bits >= source.bits
    return source.is_unsigned and target.bits > source.bits
