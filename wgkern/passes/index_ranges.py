"""Which global accesses are inside their container by construction, so backends emit no range check there.

Every backend drops an out-of-range write or atomic and reads 0 out of range (docs/internals.md, "Out-of-range
accesses"); this module owns the proof that lets them skip the check. A forward pass over a task's statements
gives each i32 value an interval [lo, hi): `lo` an int, `hi` a product of a constant and extents of ndarray
axes (symbolic, so `for i, j in a` over an ndarray proves `a[i, j]` without knowing its shape). The sources of
ranges are constants, loop indices (a `RangeFor` runs its index over [begin, end)), `%`/`//` by a divisor that
divides the range (the decomposition of an `ndrange` or of a struct-for over several axes), `min`/`max`
clamps and additions of constants. An access is in range when every index lies in [0, extent) of its axis,
which implies that its flat offset lies inside the container. Everything else is checked.

An access proven on its trailing axes only (a vector or matrix component `a[j][c]` with `c` a constant, `j`
unknown) needs its check on the leading axes alone: with the trailing indices' part of the flat offset
`r` in [0, T) (T the product of the trailing extents) the offset is `P * T + r`, with P the row-major offset
over the leading axes, and the element count is `C * T` with C the product of the leading extents, so the
offset lies in [0, C * T) exactly when P lies in [0, C). Every component read at one index then has the same
check, which a backend computes once (trailing_in_range).

Soundness notes: a divisor equal to 0 only proves anything when it divides the dividend's range, whose bound is
then 0 too (no index exists); an ndarray's gradient has the primal's shape, so extents are keyed by argument."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from wgkern.ir import nodes as ir
from wgkern.ir.ops import BinaryOpKind as B
from wgkern.ir.visitor import walk


@dataclass(frozen=True, slots=True)
class Product:
    """The value `const * prod(extents)`, every factor >= 0; `extents` are sorted (arg_index, axis) pairs."""
    const: int
    extents: tuple[tuple[int, int], ...] = ()

    def times(self, other: "Product") -> "Product":
        return Product(self.const * other.const, tuple(sorted(self.extents + other.extents)))

    def over(self, divisor: "Product") -> "Product | None":
        """An upper bound of x // divisor for 0 <= x < self, where divisor's extents are among self's (so a
        divisor of 0 makes self 0); None when it is not."""
        if divisor.const <= 0:
            return None
        rest = list(self.extents)
        for factor in divisor.extents:
            if factor not in rest:
                return None
            rest.remove(factor)
        return Product(-(-self.const // divisor.const), tuple(rest))

    def at_most(self, other: "Product") -> bool:
        """self <= other for every value of the extents."""
        if not self.extents:
            return self.const <= 0 or not other.extents and self.const <= other.const
        return self.extents == other.extents and 0 <= self.const <= other.const


@dataclass(frozen=True, slots=True)
class Interval:
    """lo <= value < hi; None: unbounded on that side."""
    lo: int | None
    hi: Product | None


UNKNOWN = Interval(None, None)
I32_MIN, I32_END = -(1 << 31), 1 << 31


class _Ranges:
    def __init__(self) -> None:
        self.values: dict[ir.Stmt, Product] = {}       # stmts whose value is exactly a Product (>= 0)
        self.intervals: dict[ir.Stmt, Interval] = {}

    def interval(self, stmt: ir.Stmt) -> Interval:
        found = self.intervals.get(stmt, UNKNOWN)
        # i32 arithmetic wraps: a range reaching past i32 says nothing about the values
        if found.lo is not None and found.lo < I32_MIN or found.hi is not None and found.hi.const > I32_END:
            return UNKNOWN
        return found

    def visit(self, stmt: ir.Stmt) -> None:
        if isinstance(stmt, ir.Const):
            if stmt.dtype.is_int and not isinstance(stmt.value, bool):
                value = int(stmt.value)
                self.intervals[stmt] = Interval(value, Product(value + 1))
                if value >= 0:
                    self.values[stmt] = Product(value)
        elif isinstance(stmt, ir.ShapeOf):
            extent = axis_extent(stmt.container, stmt.axis)
            if extent is not None:
                self.values[stmt] = extent
                self.intervals[stmt] = Interval(0, None)
        elif isinstance(stmt, ir.LoopIndex):
            loop = stmt.loop
            end = self.values.get(loop.end)
            if end is None:         # index < end < hi
                end = self.interval(loop.end).hi
            self.intervals[stmt] = Interval(self.interval(loop.begin).lo, end)
        elif isinstance(stmt, ir.BinaryOp) and stmt.dtype.is_int and stmt.dtype.bits == 32:
            self.binary(stmt)
        elif isinstance(stmt, ir.TernarySelect) and stmt.dtype.is_int:
            a, b = self.interval(stmt.true_value), self.interval(stmt.false_value)
            self.intervals[stmt] = Interval(_min_lo(a.lo, b.lo), _max_hi(a.hi, b.hi))

    def binary(self, stmt: ir.BinaryOp) -> None:
        a, b = self.interval(stmt.lhs), self.interval(stmt.rhs)
        va, vb = self.values.get(stmt.lhs), self.values.get(stmt.rhs)
        op = stmt.op
        if op is B.MUL and va is not None and vb is not None:
            self.values[stmt] = va.times(vb)
        if op is B.MAX:
            if va is not None and vb is not None and not vb.extents and vb.const == 0:
                self.values[stmt] = va          # max(extent, 0): the extent itself
            lo = None if a.lo is None and b.lo is None else max(x for x in (a.lo, b.lo) if x is not None)
            self.intervals[stmt] = Interval(lo, _max_hi(a.hi, b.hi))
        elif op is B.MIN:
            hi = a.hi if b.hi is None else b.hi if a.hi is None else _min_hi(a.hi, b.hi)
            self.intervals[stmt] = Interval(_min_lo(a.lo, b.lo), hi)
        elif op is B.MOD and vb is not None:
            # Python's %: a positive constant divisor bounds any dividend; an extent only one it divides
            if not vb.extents and vb.const > 0 or a.lo is not None and a.lo >= 0 and a.hi is not None \
                    and a.hi.over(vb) is not None:
                self.intervals[stmt] = Interval(0, vb)
        elif op is B.FLOORDIV and a.lo is not None and a.lo >= 0 and a.hi is not None and vb is not None:
            quotient = a.hi.over(vb)
            if quotient is not None:
                self.intervals[stmt] = Interval(0, quotient)
        elif op is B.ADD and isinstance(stmt.lhs, ir.Const):
            self.shifted(stmt, b, int(stmt.lhs.value))
        elif op in (B.ADD, B.SUB) and isinstance(stmt.rhs, ir.Const):
            self.shifted(stmt, a, int(stmt.rhs.value) if op is B.ADD else -int(stmt.rhs.value))

    def shifted(self, stmt: ir.Stmt, a: Interval, shift: int) -> None:
        """`stmt` = a + shift (a constant)."""
        lo = None if a.lo is None else a.lo + shift
        if a.hi is not None and not a.hi.extents:
            self.intervals[stmt] = Interval(lo, Product(a.hi.const + shift))
        elif a.hi is not None and shift <= 0:
            self.intervals[stmt] = Interval(lo, a.hi)
        else:
            self.intervals[stmt] = Interval(lo, None)

    def nonnegative(self, stmt: ir.Stmt) -> bool:
        """nonnegative_values: whether `stmt`'s value is >= 0 by construction."""
        found = self.interval(stmt)
        return found.lo is not None and found.lo >= 0 and (
            found.hi is not None or isinstance(stmt, (ir.LoopIndex, ir.ShapeOf))
            or isinstance(stmt, ir.BinaryOp) and stmt.op is B.MAX)

    def in_range(self, ptr: ir.GlobalPtr) -> bool:
        return self.trailing(ptr) == len(ptr.indices)

    def trailing(self, ptr: ir.GlobalPtr) -> int:
        """How many of ptr's last axes have their index inside [0, extent) by construction."""
        count = 0
        for axis in range(len(ptr.indices) - 1, -1, -1):
            found = self.interval(ptr.indices[axis])
            extent = axis_extent(ptr.container, axis)
            if found.lo is None or found.lo < 0 or found.hi is None or extent is None \
                    or not found.hi.at_most(extent):
                break
            count += 1
        return count


def _min_lo(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else min(a, b)


def _max_hi(a: Product | None, b: Product | None) -> Product | None:
    if a is None or b is None:
        return None
    return b if a.at_most(b) else a if b.at_most(a) else None


def _min_hi(a: Product, b: Product) -> Product:
    return a if a.at_most(b) else b


def axis_extent(slot: ir.ContainerSlot, axis: int) -> Product | None:
    """The extent of `axis` of `slot`: a constant for static shapes and an ndarray's element axes, a symbol for
    an ndarray's own axis."""
    if slot.shape is not None:
        return Product(int(slot.shape[axis]))
    own = slot.ndim - len(slot.element_shape)
    if axis >= own:
        return Product(int(slot.element_shape[axis - own]))
    if slot.kind == "ndarray" and slot.arg_index is not None:
        return Product(1, ((slot.arg_index, axis),))
    return None


def trailing_in_range(blocks: Iterable[ir.Block]) -> dict[ir.GlobalPtr, int]:
    """For each GlobalPtr in `blocks` (in execution order: a task's bounds, then its body) with any (or with no
    axes), the number of its last axes whose index is inside the axis by construction (all of them: the access
    is in range)."""
    return index_facts(blocks)[0]


def index_facts(blocks: Iterable[ir.Block]) -> tuple[dict[ir.GlobalPtr, int], set[ir.Stmt]]:
    """`trailing_in_range(blocks)` and `nonnegative_values(blocks)` from one walk of `blocks`."""
    ranges = _Ranges()
    proven: dict[ir.GlobalPtr, int] = {}
    nonnegative: set[ir.Stmt] = set()
    for block in blocks:
        for stmt in walk(block):
            ranges.visit(stmt)
            if isinstance(stmt, ir.GlobalPtr):
                count = ranges.trailing(stmt)
                if count or not stmt.indices:
                    proven[stmt] = count
            elif ranges.nonnegative(stmt):
                nonnegative.add(stmt)
    return proven, nonnegative


def in_range_ptrs(blocks: Iterable[ir.Block]) -> set[ir.GlobalPtr]:
    """The GlobalPtrs in `blocks` (in execution order: a task's bounds, then its body) whose every index is
    inside its axis by construction."""
    return {ptr for ptr, count in trailing_in_range(blocks).items() if count == len(ptr.indices)}


def nonnegative_values(blocks: Iterable[ir.Block]) -> set[ir.Stmt]:
    """The integer statements in `blocks` (in execution order) whose value is >= 0 by construction: constants,
    extents, loop indices from 0 or more, `max(x, 0)`, and `%` / `//` and additions whose interval says so (an
    interval without an upper bound says nothing after an addition, which may wrap)."""
    return index_facts(blocks)[1]
