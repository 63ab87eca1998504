"""IR -> SizeExpr for the adstacks of one task that the structural pre-pass could not size.

Capacity = max over the task's parallel index of the sum over push sites of the product of the trip counts
`max(end - begin, 0)` of the loops between the push and the unit's entry. A trip count that depends on an
enclosing serial loop's index is bounded by MaxOverRange over that loop's range (per-level maxima: sound, loose
on triangular loops). Loop bounds outside the grammar (locals, while loops, floats, temps) give None: the
runtime then uses `default_ad_stack_size`, with overflow detection as the safety net."""
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


def _push_chains(body: ir.Block) -> dict[ir.AdStackAlloca, list[list[ir.Stmt]]]:
    """For each stack, the chain of enclosing loops (outermost first) of each of its push sites."""
    chains: dict[ir.AdStackAlloca, list[list[ir.Stmt]]] = {}

    def visit(block: ir.Block, loops: list[ir.Stmt]) -> None:
        for stmt in block.stmts:
            if isinstance(stmt, ir.AdStackAlloca):
                chains.setdefault(stmt, [])
            elif isinstance(stmt, ir.AdStackPush):
                chains.setdefault(stmt.stack, []).append(list(loops))
            inner = loops + [stmt] if isinstance(stmt, (ir.RangeFor, ir.While)) else loops
            for child in stmt.blocks():
                visit(child, inner)

    visit(body, [])
    return chains


def _close_over(expr: E.SizeExpr, loops: list[ir.RangeFor], bounds: list[tuple[E.SizeExpr, E.SizeExpr]],
                env: dict[ir.RangeFor, E.BoundVar]) -> E.SizeExpr:
    """Wrap `expr` in MaxOverRange over every serial loop variable it (transitively) depends on, innermost
    first, so only the unit's parallel index stays free."""
    for loop, (begin, end) in reversed(list(zip(loops, bounds))):
        var = env[loop]
        if var in E.free_vars(expr):
            expr = E.MaxOverRange(var, begin, end, expr, _where(loop.loc))
    return expr


def push_site_count(chain: list[ir.Stmt], translate: Translator,
                    env: dict[ir.RangeFor, E.BoundVar]) -> E.SizeExpr:
    """Product of per-level maxima of the trip counts of `chain` (raises OutOfGrammar)."""
    total: E.SizeExpr = E.Const(1)
    outer: list[ir.RangeFor] = []
    outer_bounds: list[tuple[E.SizeExpr, E.SizeExpr]] = []
    for loop in chain:
        if not isinstance(loop, ir.RangeFor):
            raise OutOfGrammar("while loop")
        begin, end = translate(loop.begin), translate(loop.end)
        trips = _close_over(E.trip_count(begin, end), outer, outer_bounds, env)
        total = E.mul(total, trips)
        outer.append(loop)
        outer_bounds.append((begin, end))
    return total


def task_size_exprs(task: ir.Task) -> dict[ir.AdStackAlloca, E.SizeExpr | None]:
    """A SizeExpr (or None: out of grammar) for every stack of `task` whose `capacity` is None."""
    chains = _push_chains(task.body)
    env: dict[ir.RangeFor, E.BoundVar] = {}
    parallel: E.BoundVar | None = None
    if task.loop is not None:
        parallel = E.BoundVar("i")
        env[task.loop] = parallel
    for number, loop in enumerate(s for s in _walk_loops(task.body)):
        env[loop] = E.BoundVar(f"j{number}")
    translate = Translator(env)
    out: dict[ir.AdStackAlloca, E.SizeExpr | None] = {}
    for stack, sites in chains.items():
        if stack.capacity is not None:
            continue
        try:
            per_unit: E.SizeExpr = E.Const(0)
            for chain in sites:
                per_unit = E.add(per_unit, push_site_count(chain, translate, env))
            if parallel is not None and parallel in E.free_vars(per_unit):
                begin, end = Translator({})(task.loop.begin), Translator({})(task.loop.end)
                per_unit = E.MaxOverRange(parallel, begin, end, per_unit, _where(task.loop.loc))
            out[stack] = E.maximum(per_unit, E.Const(1))
        except OutOfGrammar:
            out[stack] = None
    return out


def _walk_loops(block: ir.Block):
    for stmt in block.stmts:
        if isinstance(stmt, ir.RangeFor):
            yield stmt
        for child in stmt.blocks():
            yield from _walk_loops(child)
