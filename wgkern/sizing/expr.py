"""SizeExpr: the closed grammar of adstack capacities that are known only at launch (DESIGN.md "Adstack sizing").

Nodes are immutable, hashable and compared by structure, so equal expressions share cache entries and reducer
results. Leaves that read containers hold the IR `ContainerSlot` itself (identity-hashed); the launch context maps
it to storage. `FloorDiv` is Python's `//` (floor division; a zero divisor is a SizingError on the host, and device
reducers take only a positive constant divisor). `min(a, b)` needs no node: `minimum` builds `a - max(a - b, 0)`,
and `a % b` is `a - b * (a // b)` (`modulo`). `MaxOverRange(var, begin, end, body)` is max(0, max of body over var
in [begin, end)): 0 on an empty range, never negative, which is what a count needs."""
from __future__ import annotations

from typing import Any, Callable, Iterator

from wgkern.sizing.records import Record


class SizeExpr(Record):
    """Base class; every node is immutable and structurally comparable (records.py)."""
    __slots__ = ()

    def children(self) -> tuple[SizeExpr, ...]:
        return ()

    def __str__(self) -> str:
        return format_expr(self)

    def __repr__(self) -> str:
        return format_expr(self)


class Const(SizeExpr):
    __slots__ = ("value",)
    FIELDS = COMPARED = ("value",)


class ScalarArg(SizeExpr):
    """Scalar kernel argument number `arg_index` (an integer)."""
    __slots__ = ("arg_index",)
    FIELDS = COMPARED = ("arg_index",)


class ShapeOf(SizeExpr):
    """Extent of container `slot` along `axis` (element axes included, as ShapeOf in the IR)."""
    __slots__ = ("slot", "axis")
    FIELDS = COMPARED = ("slot", "axis")


class BoundVar(SizeExpr):
    """A variable bound by an enclosing MaxOverRange."""
    __slots__ = ("name",)
    FIELDS = COMPARED = ("name",)


class _Read(SizeExpr):
    """`dtype` is the slot's element DataType (not compared: the slot's identity fixes it)."""
    __slots__ = ("slot", "index", "dtype")
    FIELDS = ("slot", "index", "dtype")
    COMPARED = ("slot", "index")
    DEFAULTS = {"dtype": None}

    def children(self) -> tuple[SizeExpr, ...]:
        return self.index


class NdarrayRead(_Read):
    """Element of an ndarray argument's container (integer dtype)."""
    __slots__ = ()


class FieldLoad(_Read):
    """Element of a field (integer dtype)."""
    __slots__ = ()


class _Binary(SizeExpr):
    __slots__ = ("lhs", "rhs")
    FIELDS = COMPARED = ("lhs", "rhs")

    def children(self) -> tuple[SizeExpr, ...]:
        return (self.lhs, self.rhs)


class Add(_Binary):
    __slots__ = ()


class Sub(_Binary):
    __slots__ = ()


class Mul(_Binary):
    __slots__ = ()


class Max(_Binary):
    __slots__ = ()


class FloorDiv(_Binary):
    """lhs // rhs, rounding towards negative infinity."""
    __slots__ = ()


class MaxOverRange(SizeExpr):
    """max(0, max over var in [begin, end) of body). `where` names the loop's source line (for errors; not
    compared)."""
    __slots__ = ("var", "begin", "end", "body", "where")
    FIELDS = ("var", "begin", "end", "body", "where")
    COMPARED = ("var", "begin", "end", "body")
    DEFAULTS = {"where": ""}

    def children(self) -> tuple[SizeExpr, ...]:
        return (self.begin, self.end, self.body)


VALUE_LIMIT = 1 << 62       # |intermediate| bound of every size computation (host evaluator and CPU reducer)

BINARY_OPS: dict[type, Callable[[int, int], int]] = {
    Add: lambda a, b: a + b, Sub: lambda a, b: a - b, Mul: lambda a, b: a * b, Max: max,
    FloorDiv: lambda a, b: a // b,
}
_SYMBOLS = {Add: "+", Sub: "-", Mul: "*", FloorDiv: "//"}


# ---- construction helpers (fold constants so printed and cached forms stay small) -----------------------------

def _split_offset(expr: SizeExpr) -> tuple[SizeExpr | None, int]:
    """(base, c) with expr = base + c (base None: a constant)."""
    if isinstance(expr, Const):
        return None, expr.value
    if isinstance(expr, (Add, Sub)) and isinstance(expr.rhs, Const):
        return expr.lhs, expr.rhs.value if isinstance(expr, Add) else -expr.rhs.value
    return expr, 0


def _offset(base: SizeExpr | None, c: int) -> SizeExpr:
    if base is None:
        return Const(c)
    return base if c == 0 else Add(base, Const(c)) if c > 0 else Sub(base, Const(-c))


def add(a: SizeExpr, b: SizeExpr) -> SizeExpr:
    """a + b, folding constants (also into an offset: `(x + 1) + 2` is `x + 3`)."""
    if isinstance(b, Const):
        base, c = _split_offset(a)
        return _offset(base, c + b.value)
    if isinstance(a, Const):
        base, c = _split_offset(b)
        return b if a.value == 0 else Add(a, b) if c == 0 else _offset(base, c + a.value)
    return Add(a, b)


def mul(a: SizeExpr, b: SizeExpr) -> SizeExpr:
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(a.value * b.value)
    if Const(0) in (a, b):
        return Const(0)
    if a == Const(1):
        return b
    return a if b == Const(1) else Mul(a, b)


def maximum(a: SizeExpr, b: SizeExpr) -> SizeExpr:
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(max(a.value, b.value))
    return a if a == b else Max(a, b)


def sub(a: SizeExpr, b: SizeExpr) -> SizeExpr:
    if isinstance(b, Const):
        return add(a, Const(-b.value))
    return Sub(a, b)


def floordiv(a: SizeExpr, b: SizeExpr) -> SizeExpr:
    if isinstance(a, Const) and isinstance(b, Const) and b.value != 0:
        return Const(a.value // b.value)
    return a if b == Const(1) else FloorDiv(a, b)


def minimum(a: SizeExpr, b: SizeExpr) -> SizeExpr:
    """min(a, b) = a - max(a - b, 0): exact, in the grammar's own nodes."""
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(min(a.value, b.value))
    return a if a == b else Sub(a, Max(Sub(a, b), Const(0)))


def modulo(a: SizeExpr, b: SizeExpr) -> SizeExpr:
    """Python's a % b (the sign of the divisor) = a - b * (a // b)."""
    if isinstance(a, Const) and isinstance(b, Const) and b.value != 0:
        return Const(a.value % b.value)
    return sub(a, mul(b, floordiv(a, b)))


def trip_count(begin: SizeExpr, end: SizeExpr) -> SizeExpr:
    """max(end - begin, 0)."""
    if isinstance(begin, Const) and isinstance(end, Const):
        return Const(max(end.value - begin.value, 0))
    return Max(end if begin == Const(0) else Sub(end, begin), Const(0))


# ---- walks ----------------------------------------------------------------------------------------------------

def walk(expr: SizeExpr) -> Iterator[SizeExpr]:
    """Every node, parents before children."""
    yield expr
    for child in expr.children():
        yield from walk(child)


def free_vars(expr: SizeExpr) -> frozenset[BoundVar]:
    if isinstance(expr, BoundVar):
        return frozenset((expr,))
    if isinstance(expr, MaxOverRange):
        inner = free_vars(expr.body) - {expr.var}
        return inner | free_vars(expr.begin) | free_vars(expr.end)
    out: frozenset[BoundVar] = frozenset()
    for child in expr.children():
        out |= free_vars(child)
    return out


def slots_read(expr: SizeExpr) -> list[Any]:
    """Containers whose contents or shape the expression reads, in first-use order, no repeats."""
    seen: dict[int, Any] = {}
    for node in walk(expr):
        if isinstance(node, (_Read, ShapeOf)):
            seen.setdefault(id(node.slot), node.slot)
    return list(seen.values())


def transform(expr: SizeExpr, fn: Callable[[SizeExpr], SizeExpr | None]) -> SizeExpr:
    """Rebuild bottom-up; `fn(node)` may return a replacement (None keeps the node). Top-down first: when
    `fn` replaces a node its children are not visited."""
    replaced = fn(expr)
    if replaced is not None:
        return replaced
    if isinstance(expr, _Read):
        return type(expr)(expr.slot, tuple(transform(i, fn) for i in expr.index), expr.dtype)
    if isinstance(expr, _Binary):
        return type(expr)(transform(expr.lhs, fn), transform(expr.rhs, fn))
    if isinstance(expr, MaxOverRange):
        return MaxOverRange(expr.var, transform(expr.begin, fn), transform(expr.end, fn),
                            transform(expr.body, fn), expr.where)
    return expr


def fold_constants(expr: SizeExpr) -> SizeExpr:
    """Evaluate every operation whose operands are all constants (a division by zero or a value outside the
    checked range stays, for the evaluator to report)."""
    def fold(node: SizeExpr) -> SizeExpr | None:
        if not isinstance(node, _Binary):
            return None
        lhs, rhs = fold_constants(node.lhs), fold_constants(node.rhs)
        if isinstance(lhs, Const) and isinstance(rhs, Const) and not (type(node) is FloorDiv and rhs.value == 0):
            value = BINARY_OPS[type(node)](lhs.value, rhs.value)
            if -VALUE_LIMIT < value < VALUE_LIMIT:          # else left for the evaluator to report
                return Const(value)
        return type(node)(lhs, rhs)
    return transform(expr, fold)


def direction(expr: SizeExpr, var: BoundVar) -> int | None:
    """+1 / -1 when `expr` is non-decreasing / non-increasing in `var`, 0 when it does not use it, None when
    neither is provable."""
    if expr == var:
        return 1
    if var not in free_vars(expr):
        return 0
    if isinstance(expr, (Add, Max)):
        return _same(direction(expr.lhs, var), direction(expr.rhs, var))
    if isinstance(expr, Sub):
        rhs = direction(expr.rhs, var)
        return _same(direction(expr.lhs, var), None if rhs is None else -rhs)
    if isinstance(expr, FloorDiv) and positive_const(expr.rhs):
        return direction(expr.lhs, var)
    if isinstance(expr, Mul):
        for factor, other in ((expr.lhs, expr.rhs), (expr.rhs, expr.lhs)):
            if isinstance(factor, Const) and factor.value >= 0:
                return direction(other, var)
    if isinstance(expr, MaxOverRange) and var not in free_vars(expr.begin) | free_vars(expr.end):
        return direction(expr.body, var)
    return None


def _same(a: int | None, b: int | None) -> int | None:
    if a is None or b is None:
        return None
    if a == 0 or b == 0 or a == b:
        return a or b
    return None


def max_over_range(var: BoundVar, begin: SizeExpr, end: SizeExpr, body: SizeExpr, where: str = "") -> SizeExpr:
    """MaxOverRange(var, begin, end, body), or, when `body` is monotone in `var`, the body at the end of the
    range that maximises it, clamped at 0 (exact for a non-empty range; for an empty one an upper bound of the
    0 MaxOverRange gives, so sound wherever a count is bounded)."""
    sense = direction(body, var)
    if sense == 0:
        return maximum(body, Const(0))
    if sense is None:
        return MaxOverRange(var, begin, end, body, where)
    at = sub(end, Const(1)) if sense > 0 else begin
    return maximum(fold_constants(transform(body, lambda node: at if node == var else None)), Const(0))


def positive_const(node: SizeExpr) -> bool:
    return isinstance(node, Const) and node.value >= 1


def substitute(expr: SizeExpr, values: dict[SizeExpr, int]) -> SizeExpr:
    """Replace every subexpression found in `values` by its Const (also nodes that match only once their
    children were replaced)."""
    if not values:
        return expr

    def replace(node: SizeExpr) -> SizeExpr | None:
        if node in values:
            return Const(values[node])
        if not node.children():
            return node
        rebuilt = transform(node, lambda child: None if child is node else replace(child))
        return Const(values[rebuilt]) if rebuilt in values else rebuilt
    return replace(expr)


# ---- printing ---------------------------------------------------------------------------------------------------

def _slot_name(slot: Any) -> str:
    return getattr(slot, "name", str(slot))


_FORMATTERS: dict[type, Callable[[Any], str]] = {
    Const: lambda e: str(e.value),
    ScalarArg: lambda e: f"arg{e.arg_index}",
    ShapeOf: lambda e: f"shape({_slot_name(e.slot)}, {e.axis})",
    BoundVar: lambda e: e.name,
    NdarrayRead: lambda e: f"{_slot_name(e.slot)}[{', '.join(map(format_expr, e.index))}]",
    FieldLoad: lambda e: f"{_slot_name(e.slot)}[{', '.join(map(format_expr, e.index))}]",
    Max: lambda e: f"max({format_expr(e.lhs)}, {format_expr(e.rhs)})",
    MaxOverRange: lambda e: (f"max_{{{e.var.name} in {format_expr(e.begin)}..{format_expr(e.end)}}} "
                             f"({format_expr(e.body)})"),
}


def format_expr(expr: SizeExpr) -> str:
    """Readable one-line form, e.g. `max(1 + max_{i in 0..shape(n, 0)} (n[i]), 1)`."""
    symbol = _SYMBOLS.get(type(expr))
    if symbol is not None:
        return f"({format_expr(expr.lhs)} {symbol} {format_expr(expr.rhs)})"
    return _FORMATTERS[type(expr)](expr)
