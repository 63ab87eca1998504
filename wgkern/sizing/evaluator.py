"""The one host evaluator of SizeExprs: exact Python-int arithmetic, every step checked, with a tripwire.

Leaves come from a `Leaves` object (scalars, shapes, single element reads); `results` maps subexpressions
that reducers (or earlier rounds) already computed to their values; they are substituted before evaluating.
A MaxOverRange not in `results` is walked linearly. A walk longer than TRIPWIRE iterations, or nested walks past
WALK_BUDGET in all, are too costly: the outermost walk in progress is replaced by a sound upper bound
(bounds.py, interval arithmetic over the host's data), never truncated (a truncated maximum would be unsound)."""
from __future__ import annotations

import math
from typing import Any, Mapping, Protocol

from wgkern.errors import SizingError
from wgkern.sizing import expr as E
from wgkern.sizing.bounds import IntervalBounder

TRIPWIRE = 1 << 24          # longest linear host walk of one MaxOverRange
WALK_BUDGET = 1 << 26       # total host-walk iterations of one evaluation (nested walks multiply)
VALUE_LIMIT = E.VALUE_LIMIT


class Leaves(Protocol):
    """What evaluation needs from a launch: scalar arguments, container shapes, container elements."""

    def scalar(self, arg_index: int) -> int: ...

    def shape(self, slot: Any) -> tuple[int, ...]: ...

    def read(self, slot: Any, flat_index: int) -> int: ...

    def host_array(self, slot: Any) -> Any: ...


def checked(value: int, what: str = "size arithmetic") -> int:
    if -VALUE_LIMIT < value < VALUE_LIMIT:
        return value
    raise SizingError(f"adstack sizing: {what} gives {value}, which does not fit the checked 63-bit range; "
                      "the loop bounds are too large to size (pass wk.init(ad_stack_size=N) to bypass the sizer)")


def flat_index(slot: Any, index: list[int], shape: tuple[int, ...]) -> int:
    """Row-major offset of `index` in `shape`; raises SizingError when out of bounds."""
    if len(index) != len(shape) or any(not 0 <= i < n for i, n in zip(index, shape)):
        name = getattr(slot, "name", slot)
        raise SizingError(f"adstack sizing: a loop bound reads {name}{list(index)} outside its shape {shape}")
    offset = 0
    for i, n in zip(index, shape):
        offset = offset * n + i
    return offset


def bind_host_leaves(expr: E.SizeExpr, leaves: Leaves) -> E.SizeExpr:
    """Replace scalar arguments and shapes (known on the host at launch) by constants, and fold what became
    constant (a divisor that is a shape becomes the constant device reducers need)."""
    def fold(node: E.SizeExpr) -> E.SizeExpr | None:
        if isinstance(node, E.ScalarArg):
            return E.Const(int(leaves.scalar(node.arg_index)))
        if isinstance(node, E.ShapeOf):
            return E.Const(int(leaves.shape(node.slot)[node.axis]))
        return None
    return E.fold_constants(E.transform(expr, fold))


class _TooCostly(Exception):
    """A walk past the tripwire or the budget: unwinds to the outermost walk, which is bounded instead."""


class HostEvaluator:
    """Evaluates one expression; `walked` counts linear-walk iterations (the tripwire's budget), `depth` the
    walks in progress."""

    def __init__(self, leaves: Leaves):
        self.leaves = leaves
        self.walked = 0
        self.depth = 0

    def __call__(self, expr: E.SizeExpr, env: dict[E.BoundVar, int] | None = None) -> int:
        return self.eval(expr, env or {})

    def eval(self, node: E.SizeExpr, env: dict[E.BoundVar, int]) -> int:
        return _RULES[type(node)](self, node, env)

    def read(self, node: E._Read, env: dict[E.BoundVar, int]) -> int:
        index = [self.eval(i, env) for i in node.index]
        shape = tuple(self.leaves.shape(node.slot))
        return checked(int(self.leaves.read(node.slot, flat_index(node.slot, index, shape))), "a read")

    def binary(self, node: E._Binary, env: dict[E.BoundVar, int]) -> int:
        op = E.BINARY_OPS[type(node)]
        lhs, rhs = self.eval(node.lhs, env), self.eval(node.rhs, env)
        if isinstance(node, E.FloorDiv) and rhs == 0:
            raise SizingError(f"adstack sizing: a loop bound divides by zero ({E.format_expr(node)})")
        return checked(op(lhs, rhs))

    def max_over_range(self, node: E.MaxOverRange, env: dict[E.BoundVar, int]) -> int:
        if self.depth == 0:
            try:
                return self.walk(node, env)
            except _TooCostly:
                return self.upper_bound(node, env)
        return self.walk(node, env)

    def walk(self, node: E.MaxOverRange, env: dict[E.BoundVar, int]) -> int:
        begin, end = self.eval(node.begin, env), self.eval(node.end, env)
        length = max(end - begin, 0)
        if length > TRIPWIRE or self.walked + length > WALK_BUDGET:
            raise _TooCostly()
        self.walked += length
        best = 0
        inner = dict(env)
        self.depth += 1
        try:
            for value in range(begin, end):
                inner[node.var] = value
                best = max(best, self.eval(node.body, inner))
        finally:
            self.depth -= 1
        return best

    def upper_bound(self, node: E.MaxOverRange, env: dict[E.BoundVar, int]) -> int:
        """A sound upper bound of `node` (>= its exact value) by interval arithmetic (bounds.py)."""
        leaves = self.leaves
        bounder = IntervalBounder(leaves.shape, leaves.host_array, leaves.scalar)
        return checked(bounder.upper(node, {var: (value, value) for var, value in env.items()}),
                       "a bound of a loop's trip count")


def _bound_var(ev: HostEvaluator, node: E.BoundVar, env: dict[E.BoundVar, int]) -> int:
    if node not in env:
        raise SizingError(f"adstack sizing: free variable {node.name} (internal error in a size expression)")
    return env[node]


_RULES: dict[type, Any] = {
    E.Const: lambda ev, node, env: node.value,
    E.ScalarArg: lambda ev, node, env: checked(int(ev.leaves.scalar(node.arg_index)), "a scalar argument"),
    E.ShapeOf: lambda ev, node, env: int(ev.leaves.shape(node.slot)[node.axis]),
    E.BoundVar: _bound_var,
    E.NdarrayRead: HostEvaluator.read,
    E.FieldLoad: HostEvaluator.read,
    E.Add: HostEvaluator.binary,
    E.Sub: HostEvaluator.binary,
    E.Mul: HostEvaluator.binary,
    E.Max: HostEvaluator.binary,
    E.FloorDiv: HostEvaluator.binary,
    E.MaxOverRange: HostEvaluator.max_over_range,
}


def evaluate(expr: E.SizeExpr, leaves: Leaves, results: Mapping[E.SizeExpr, int] | None = None) -> int:
    """Value of the closed expression `expr` (SizingError on overflow, out-of-bounds reads, the tripwire)."""
    return HostEvaluator(leaves)(E.substitute(expr, dict(results or {})))


def shape_size(shape: tuple[int, ...]) -> int:
    return math.prod(shape)
