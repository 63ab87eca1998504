"""Sound upper bounds of SizeExprs by interval arithmetic, for expressions too costly to evaluate exactly.

Exact evaluation enumerates every point of nested MaxOverRanges; a reducer job whose cross product exceeds
`reducers.MAX_POINTS`, or a host walk past the evaluator's TRIPWIRE, is bounded here instead. Every node gets a
closed interval [lo, hi] that contains each value it can take: a BoundVar lies in [begin, end - 1] of its
MaxOverRange, `+ - * max //` combine intervals (a divisor interval containing 0 bounds |a // b| by |a|), and a
read at an index interval is bounded by the minimum and maximum of the container over that box of indices
(clipped to its shape: reads are assumed in bounds, as the kernel's own are). A MaxOverRange whose range is
known exactly is enumerated value by value while the budget `SPLIT_BUDGET` lasts (outermost loops first), which
keeps the correlation between a loop index and the bounds read at it; past the budget its variable becomes an
interval. The result is >= the exact value, never smaller; it is used only where exact enumeration is too
costly, so every capacity that fits the exact path stays exact."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from wgkern.sizing import expr as E

SPLIT_BUDGET = 1 << 12      # MaxOverRange values enumerated one by one per bound (the rest are intervals)

Interval = tuple[int, int]


class IntervalBounder:
    """Interval of every node, over host data: `shape(slot)` the full shape, `array(slot)` its contents,
    `scalar(arg_index)` a scalar argument (only for expressions whose scalars are not bound yet)."""

    def __init__(self, shape: Callable[[Any], tuple[int, ...]], array: Callable[[Any], np.ndarray],
                 scalar: Callable[[int], int] | None = None, budget: int = SPLIT_BUDGET):
        self.shape = shape
        self.array = array
        self.scalar = scalar
        self.budget = budget
        self.boxes: dict[tuple[int, tuple[Interval, ...]], Interval] = {}

    def upper(self, node: E.SizeExpr, env: dict[E.BoundVar, Interval] | None = None) -> int:
        return self.interval(node, dict(env or {}))[1]

    def interval(self, node: E.SizeExpr, env: dict[E.BoundVar, Interval]) -> Interval:
        if isinstance(node, E.Const):
            return node.value, node.value
        if isinstance(node, E.BoundVar):
            return env[node]
        if isinstance(node, E._Read):
            return self.read(node, env)
        if isinstance(node, E.MaxOverRange):
            return self.max_over_range(node, env)
        if isinstance(node, E.ShapeOf):
            extent = int(self.shape(node.slot)[node.axis])
            return extent, extent
        if isinstance(node, E.ScalarArg):
            value = int(self.scalar(node.arg_index))
            return value, value
        a, b = self.interval(node.lhs, env), self.interval(node.rhs, env)
        return _BINARY[type(node)](a, b)

    def read(self, node: E._Read, env: dict[E.BoundVar, Interval]) -> Interval:
        shape = tuple(self.shape(node.slot))
        if not shape or min(shape) == 0:
            return 0, 0                   # nothing to read: the read is never reached
        box = []
        for index, extent in zip(node.index, shape):
            lo, hi = self.interval(index, env)
            lo, hi = max(lo, 0), min(hi, extent - 1)
            box.append((lo, hi) if lo <= hi else (0, extent - 1))   # never in bounds: any element bounds it
        key = (id(node.slot), tuple(box))
        found = self.boxes.get(key)
        if found is None:
            data = np.asarray(self.array(node.slot)).reshape(-1)[:int(np.prod(shape))].reshape(shape)
            part = data[tuple(slice(lo, hi + 1) for lo, hi in box)]
            found = self.boxes[key] = (int(part.min()), int(part.max()))
        return found

    def max_over_range(self, node: E.MaxOverRange, env: dict[E.BoundVar, Interval]) -> Interval:
        begin, end = self.interval(node.begin, env), self.interval(node.end, env)
        first, last = begin[0], end[1] - 1
        if last < first:
            return 0, 0                   # empty for every value of the enclosing variables
        inner = dict(env)
        if begin[0] == begin[1] and end[0] == end[1] and last - first + 1 <= self.budget:
            self.budget -= last - first + 1
            best = 0
            for value in range(first, last + 1):
                inner[node.var] = (value, value)
                best = max(best, self.interval(node.body, inner)[1])
            return 0, best
        inner[node.var] = (first, last)
        body = self.interval(node.body, inner)
        surely_nonempty = begin[1] < end[0]
        return (max(body[0], 0) if surely_nonempty else 0), max(body[1], 0)


def _mul(a: Interval, b: Interval) -> Interval:
    products = [x * y for x in a for y in b]
    return min(products), max(products)


def _floordiv(a: Interval, b: Interval) -> Interval:
    if b[0] > 0 or b[1] < 0:             # the divisor keeps its sign: floor(x / y) is monotone in each
        quotients = [x // y for x in a for y in b]
        return min(quotients), max(quotients)
    reach = max(abs(a[0]), abs(a[1]))    # |x // y| <= |x| for every nonzero integer y
    return -reach, reach


_BINARY: dict[type, Callable[[Interval, Interval], Interval]] = {
    E.Add: lambda a, b: (a[0] + b[0], a[1] + b[1]),
    E.Sub: lambda a, b: (a[0] - b[1], a[1] - b[0]),
    E.Mul: _mul,
    E.Max: lambda a, b: (max(a[0], b[0]), max(a[1], b[1])),
    E.FloorDiv: _floordiv,
}
