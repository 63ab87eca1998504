"""Which stored values a local variable's load may return, inside one adjoint unit (for loop bounds read from
locals: `m = n[i] + 2; for _ in range(m)`, a func's parameters after inlining, a local set in an `if`).

A forward walk over the structured IR keeps, per Alloca, the set of IR values of the stores that may have run
last (an Alloca starts as zero, `ZERO`), each with the loops whose back edge it has crossed since its store (a
value stored in an earlier iteration of a loop used that iteration's index, not the current one). Branches join
by union; a loop joins its body's end (and its `continue`s) into its head until nothing changes, and its exit
is the head joined with its `break`s. A load
records the set at its position, with the loops that enclose it (the scope its value may use); every store is
listed per Alloca with the loops that enclose it (how often it may run: for accumulations such as `m += 1`).
After autodiff a local that a loop carries lives on a value stack: a push is a store to it, a read of its top a
load, and a pop leaves `ANY` (any value pushed, in any iteration: the top is then an older push)."""
from __future__ import annotations

from dataclasses import dataclass

from wgkern.ir import nodes as ir

ZERO = "zero"           # the value of an Alloca before any store
ANY = "any"             # any value ever stored to the local (or pushed on the stack)

Value = tuple[object, frozenset]      # (IR value or ZERO, the loops whose back edge it crossed)
State = dict[ir.Alloca, frozenset[Value]]
_INITIAL: frozenset[Value] = frozenset(((ZERO, frozenset()),))
_POPPED: frozenset[Value] = frozenset(((ANY, frozenset()),))


@dataclass(frozen=True, slots=True)
class Reaching:
    """The values a load may return: (IR value or ZERO, the loops whose back edge it crossed since its store),
    and the loops enclosing the load, outermost first."""
    values: frozenset[Value]
    loops: tuple[ir.Stmt, ...]


def _merged(values: frozenset[Value]) -> frozenset[Value]:
    """One entry per stored value, with the union of the loops its entries crossed: sound (a bound closed over
    more loops is no smaller) and what keeps the walk linear, as the sets of crossed loops would otherwise
    multiply through nested loops."""
    crossed_by: dict[object, frozenset] = {}
    for value, crossed in values:
        crossed_by[value] = crossed_by.get(value, frozenset()) | crossed
    if len(crossed_by) == len(values):
        return values
    return frozenset(crossed_by.items())


def _crossed(state: State | None, loop: ir.Stmt) -> State | None:
    """`state` taken around the back edge of `loop`."""
    if state is None:
        return None
    return {alloca: frozenset((v, crossed | {loop}) for v, crossed in values) for alloca, values in state.items()}


def _join(a: State | None, b: State | None) -> State | None:
    if a is None:
        return None if b is None else dict(b)
    if b is None:
        return dict(a)
    out = dict(a)
    for alloca, values in b.items():
        old = out.get(alloca)
        out[alloca] = values if old is None or old == values else _merged(old | values)
    return out


@dataclass(frozen=True, slots=True)
class Store:
    """A value stored to a local (or pushed on a stack) and the loops enclosing the store, outermost first."""
    value: ir.Stmt
    loops: tuple[ir.Stmt, ...]


@dataclass(slots=True)
class LocalValues:
    """`loads`: id(LocalLoad or AdStackLoadTop) -> Reaching; `stores`: Alloca or AdStackAlloca -> its stores or
    pushes, in program order."""
    loads: dict[int, Reaching]
    stores: dict[ir.Stmt, list[Store]]


class _Walk:
    def __init__(self) -> None:
        self.loads: dict[int, Reaching] = {}
        self.stores: dict[ir.Stmt, dict[int, Store]] = {}
        self.loops: list[ir.Stmt] = []
        self.breaks: list[list[State]] = []
        self.continues: list[list[State]] = []

    def block(self, block: ir.Block, state: State | None) -> State | None:
        for stmt in block.stmts:
            if state is None:           # after a break / continue / return: unreachable
                return None
            state = self.stmt(stmt, state)
        return state

    def stmt(self, stmt: ir.Stmt, state: State) -> State | None:
        if isinstance(stmt, (ir.Alloca, ir.AdStackAlloca)):
            state = dict(state)
            state[stmt] = _INITIAL if isinstance(stmt, ir.Alloca) else _POPPED
        elif isinstance(stmt, (ir.LocalStore, ir.AdStackPush)):
            cell = stmt.alloca if isinstance(stmt, ir.LocalStore) else stmt.stack
            self.stores.setdefault(cell, {}).setdefault(id(stmt), Store(stmt.value, tuple(self.loops)))
            state = dict(state)
            state[cell] = frozenset(((stmt.value, frozenset()),))
        elif isinstance(stmt, ir.AdStackPop):
            state = dict(state)
            state[stmt.stack] = _POPPED
        elif isinstance(stmt, (ir.LocalLoad, ir.AdStackLoadTop)):
            cell = stmt.alloca if isinstance(stmt, ir.LocalLoad) else stmt.stack
            previous = self.loads.get(id(stmt))
            values = state.get(cell, _INITIAL if isinstance(stmt, ir.LocalLoad) else _POPPED)
            if previous is not None:
                values = _merged(values | previous.values)
            self.loads[id(stmt)] = Reaching(values, tuple(self.loops))
        elif isinstance(stmt, ir.If):
            return _join(self.block(stmt.then_block, state), self.block(stmt.else_block, state))
        elif isinstance(stmt, (ir.RangeFor, ir.While)):
            return self.loop(stmt, state)
        elif isinstance(stmt, ir.Break):
            self.breaks[-1].append(state)
            return None
        elif isinstance(stmt, ir.Continue):
            self.continues[-1].append(state)
            return None
        elif isinstance(stmt, ir.Return):
            return None
        else:
            for child in stmt.blocks():
                state = _join(state, self.block(child, state))
        return state

    def loop(self, loop: ir.Stmt, state: State) -> State:
        head: State = dict(state)
        self.loops.append(loop)
        while True:
            self.breaks.append([])
            self.continues.append([])
            end = self.block(loop.body, head)
            breaks, continues = self.breaks.pop(), self.continues.pop()
            new_head = head
            for other in [end, *continues]:
                new_head = _join(new_head, _crossed(other, loop))
            if new_head == head:
                break
            head = new_head
        self.loops.pop()
        exit_state = head
        for other in breaks:
            exit_state = _join(exit_state, other)
        return exit_state


def local_values(body: ir.Block) -> LocalValues:
    """What every load of a local (or stack top) in `body` may return, every store to each local and push to
    each stack."""
    walk = _Walk()
    walk.block(body, {})
    return LocalValues(walk.loads, {cell: list(stores.values()) for cell, stores in walk.stores.items()})
