"""Integer IR values -> SizeExprs: the translation of loop bounds (and what they read) that sizing/build.py
turns into capacities. Exact where the grammar has a form (`//`, `%` and `min` included: n-D loop indices,
step ranges, clamps); otherwise a fresh variable over a sound range (Translator); values with neither raise
OutOfGrammar."""
from __future__ import annotations

from typing import Callable

from wgkern.ir import nodes as ir
from wgkern.ir.ops import BinaryOpKind, UnaryOpKind
from wgkern.sizing import expr as E
from wgkern.sizing.local_values import ANY, ZERO, LocalValues


class OutOfGrammar(Exception):
    """A loop bound the SizeExpr grammar cannot express."""


_BINARY: dict[BinaryOpKind, Callable[[E.SizeExpr, E.SizeExpr], E.SizeExpr]] = {
    BinaryOpKind.ADD: E.Add, BinaryOpKind.SUB: E.Sub, BinaryOpKind.MUL: E.Mul, BinaryOpKind.MAX: E.Max,
    BinaryOpKind.MIN: E.minimum, BinaryOpKind.FLOORDIV: E.floordiv, BinaryOpKind.MOD: E.modulo,
}
_READ_KINDS: dict[str, type] = {"field": E.FieldLoad, "ndarray": E.NdarrayRead}


def where_of(loc: object) -> str:
    lineno = getattr(loc, "lineno", 0)
    return f"{loc} ({loc.text().strip()})" if lineno else ""


class Translator:
    """Translates integer IR values of one unit into SizeExprs. `env` maps its RangeFor loops to their
    BoundVars (`parallel`: the unit's own index, bound by the caller), `values` gives what each load of a local
    or stack top may return (local_values.py).

    A value the grammar has no exact form for may still have a sound range: it becomes a fresh BoundVar
    `t<k>` with that range (`ranges`), which `close` later maximises over like a loop index. Such values are
    an index a read cannot be translated at (any index inside the container's axis: a max over the axis),
    a local that more than one store may have set, or one set inside a loop that has ended (its range over
    all of them), a local accumulated by `m += c` / `m -= c` (its other stores, plus or minus every
    increment times the number of times its store can run), and `select` (either operand)."""

    def __init__(self, env: dict[ir.RangeFor, E.BoundVar], values: LocalValues | None = None,
                 parallel: E.BoundVar | None = None):
        self.env = env
        self.loops = {var: loop for loop, var in env.items()}
        self.values = values or LocalValues({}, {})
        self.parallel = parallel
        self.memo: dict[int, E.SizeExpr] = {}
        self.ranges: dict[E.BoundVar, tuple[E.SizeExpr, E.SizeExpr, str]] = {}
        self.active: set[int] = set()
        self.unbounded: set[int] = set()       # locals and stacks `accumulated` could not bound
        self.cell_ranges: dict[int, E.BoundVar] = {}     # ... and those it did

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
            found = self.ranges[var] = (self(loop.begin), self(loop.end), where_of(loop.loc))
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

    def one_of(self, candidates: list[tuple[E.SizeExpr, set[E.BoundVar]]], where: str) -> E.SizeExpr:
        """A value equal to one of the candidates (expr, the loop indices it shares with the place of use, the
        parallel index included): the expression itself when there is one and it is in scope, else a fresh
        variable over [min, max + 1) of them all, each closed over the variables it does not share."""
        def order(candidate: tuple[E.SizeExpr, frozenset]) -> tuple[str, list[str]]:
            return E.format_expr(candidate[0]), sorted(v.name for v in candidate[1])
        unique = sorted({(e, frozenset(k)) for e, k in candidates}, key=order)
        if len(unique) == 1 and self.in_scope(unique[0][0], set(unique[0][1])):
            return unique[0][0]
        high = low = None
        for expr, shared in unique:
            top, bottom = self.close(expr, set(shared)), self.close_below(expr, set(shared))
            high = top if high is None else E.maximum(high, top)
            low = bottom if low is None else E.minimum(low, bottom)
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
                index.append(self.fresh(E.Const(0), _extent(slot, axis), where_of(s.loc)))
        return kind(slot, tuple(index), slot.dtype)

    def t_LocalLoad(self, s: ir.LocalLoad) -> E.SizeExpr:
        return self.cell_value(s, s.alloca, True)

    def t_AdStackLoadTop(self, s: ir.AdStackLoadTop) -> E.SizeExpr:
        return self.cell_value(s, s.stack, False)

    def cell_value(self, load: ir.Stmt, cell: ir.Stmt, starts_at_zero: bool) -> E.SizeExpr:
        """A load of a local or a value stack's top (a local a loop carries, after autodiff): one of the values
        that reach it (local_values.py), each closed over the loops whose back edge it crossed. A value that
        depends on the load itself (a loop-carried `m += c`) makes it an accumulation; once a cell has been
        bounded as one, a load whose values go through that bound takes the bound itself (they are values the
        cell holds, so inside it: adding their increments again would count them twice)."""
        found = self.values.loads.get(id(load))
        if found is None or id(load) in self.active:
            raise OutOfGrammar("a local whose value depends on itself")
        keep = self.scope_at(found.loops)
        stores = self.values.stores.get(cell, [])
        order = {id(store.value): k for k, store in enumerate(stores)}
        reaching: list[tuple[object, set[E.BoundVar]]] = []
        for value, crossed in sorted(found.values, key=lambda c: (-1 if c[0] in (ZERO, ANY) else
                                                                 order.get(id(c[0]), 0), len(c[1]))):
            if value == ANY:                  # after a pop: any push, of any iteration
                reaching += [(store.value, self.scope_at(())) for store in stores]
            else:
                reaching.append((value, keep - {self.env.get(loop) for loop in crossed}))
        if not reaching:
            raise OutOfGrammar("a stack read before any push")
        self.active.add(id(load))
        try:
            try:
                candidates = [(E.Const(0) if v == ZERO else self(v), shared) for v, shared in reaching]
            except OutOfGrammar:
                return self.accumulated(cell, where_of(load.loc), starts_at_zero)
        finally:
            self.active.discard(id(load))
        bound = self.cell_ranges.get(id(cell))
        if bound is not None and any(bound in E.free_vars(e) for e, _ in candidates):
            return bound
        return self.one_of(candidates, where_of(load.loc))

    def accumulated(self, cell: ir.Stmt, where: str, starts_at_zero: bool) -> E.SizeExpr:
        """A local (Alloca, or AdStackAlloca: its pushes) whose stores are `m = <value>` or `m = m +/- c`: it
        lies within [min of the values - every decrement, max of the values + every increment], each increment
        counted as often as its store can run (the product of the trip counts of its loops). Raises
        OutOfGrammar for any other store of itself."""
        if id(cell) in self.cell_ranges:
            return self.cell_ranges[id(cell)]
        if id(cell) in self.unbounded:
            raise OutOfGrammar("a local that is not an accumulation")
        self.unbounded.add(id(cell))           # until it succeeds: re-entry (and every later try) fails fast
        values: list[E.SizeExpr] = [E.Const(0)] if starts_at_zero else []     # an Alloca starts at zero
        up: E.SizeExpr = E.Const(0)
        down: E.SizeExpr = E.Const(0)
        only_unit = {self.parallel} if self.parallel is not None else set()
        stored = {id(store.value) for store in self.values.stores.get(cell, [])}
        for store in self.values.stores.get(cell, []):
            terms = _increment(store.value, cell, stored)
            if not terms:                      # not an increment (or m = m: nothing new)
                if terms is None:
                    values.append(self(store.value))
                continue
            change: E.SizeExpr = E.Const(0)
            for sign, term in terms:
                change = E.add(change, self(term)) if sign > 0 else E.sub(change, self(term))
            runs = self.executions(store.loops, only_unit)
            up = E.add(up, E.mul(self.close(E.maximum(change, E.Const(0)), only_unit), runs))
            down = E.add(down, E.mul(self.close(E.maximum(E.sub(E.Const(0), change), E.Const(0)), only_unit),
                                     runs))
        if not values:
            raise OutOfGrammar("an accumulation without a starting value")
        high = low = None
        for value in sorted(set(values), key=E.format_expr):      # stored in any iteration: keep only the unit
            top, bottom = self.close(value, only_unit), self.close_below(value, only_unit)
            high = top if high is None else E.maximum(high, top)
            low = bottom if low is None else E.minimum(low, bottom)
        self.unbounded.discard(id(cell))
        bound = self.cell_ranges[id(cell)] = self.fresh(E.sub(low, down), E.add(E.add(high, up), E.Const(1)), where)
        return bound

    def executions(self, loops: tuple[ir.Stmt, ...], keep: set[E.BoundVar]) -> E.SizeExpr:
        """How often a statement inside `loops` can run in one unit: the product of per-level maximum trips."""
        total: E.SizeExpr = E.Const(1)
        for loop in loops:
            if not isinstance(loop, ir.RangeFor):
                raise OutOfGrammar("an accumulation inside a while loop")
            total = E.mul(total, self.close(E.trip_count(self(loop.begin), self(loop.end)), keep))
        return total

    def t_TernarySelect(self, s: ir.TernarySelect) -> E.SizeExpr:
        exprs = [self(s.true_value), self(s.false_value)]
        keep = set().union(*(E.free_vars(e) for e in exprs))
        return self.one_of([(e, keep) for e in exprs], where_of(s.loc))

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


def _reads(value: ir.Stmt, cell: ir.Stmt) -> bool:
    """Is `value` a load of the local `cell` (or the top of the stack `cell`)?"""
    return ((isinstance(value, ir.LocalLoad) and value.alloca is cell)
            or (isinstance(value, ir.AdStackLoadTop) and value.stack is cell))


def _increment(value: ir.Stmt, cell: ir.Stmt, stored: set[int], top: bool = True
               ) -> list[tuple[int, ir.Stmt]] | None:
    """The terms (sign, c) of `value` = m + sum of sign * c, where m is a value `cell` holds at some time: a
    load of it, or (below the top) a value stored into it (`ids` in `stored`), once; `m + c`, `c + m`,
    `m - c`, nested: `(m + 2) - 1`. None for any other value."""
    if _reads(value, cell) or (not top and id(value) in stored):
        return []
    if not isinstance(value, ir.BinaryOp) or value.op not in (BinaryOpKind.ADD, BinaryOpKind.SUB):
        return None
    inner = _increment(value.lhs, cell, stored, False)
    if inner is not None:
        return inner + [(1 if value.op == BinaryOpKind.ADD else -1, value.rhs)]
    inner = _increment(value.rhs, cell, stored, False) if value.op == BinaryOpKind.ADD else None
    return None if inner is None else inner + [(1, value.lhs)]


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
