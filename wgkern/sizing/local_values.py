"""Which stored values a local variable's load may return, inside one adjoint unit (for loop bounds read from
locals: `m = n[i] + 2; for _ in range(m)`, a func's parameters after inlining, a local set in an `if`).

A forward walk over the structured IR keeps, per Alloca, the set of IR values of the stores that may have run
last (an Alloca starts as zero, `ZERO`). Branches join by union; a loop joins its body's end (and its
`continue`s) into its head until nothing changes, and its exit is the head joined with its `break`s. A load
records the set at its position, with the loops that enclose it (the scope its value may use)."""
from __future__ import annotations

from dataclasses import dataclass

from wgkern.ir import nodes as ir

ZERO = "zero"           # the value of an Alloca before any store

State = dict[ir.Alloca, frozenset]


@dataclass(frozen=True, slots=True)
class Reaching:
    """The values `load` may return (IR values, or ZERO) and the loops enclosing the load, outermost first."""
    values: frozenset
    loops: tuple[ir.Stmt, ...]


def _join(a: State | None, b: State | None) -> State | None:
    if a is None:
        return None if b is None else dict(b)
    if b is None:
        return dict(a)
    out = dict(a)
    for alloca, values in b.items():
        out[alloca] = out.get(alloca, frozenset()) | values
    return out


class _Walk:
    def __init__(self) -> None:
        self.loads: dict[int, Reaching] = {}
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
        if isinstance(stmt, ir.Alloca):
            state = dict(state)
            state[stmt] = frozenset((ZERO,))
        elif isinstance(stmt, ir.LocalStore):
            state = dict(state)
            state[stmt.alloca] = frozenset((stmt.value,))
        elif isinstance(stmt, ir.LocalLoad):
            previous = self.loads.get(id(stmt))
            values = state.get(stmt.alloca, frozenset((ZERO,)))
            if previous is not None:
                values = values | previous.values
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
                new_head = _join(new_head, other)
            if new_head == head:
                break
            head = new_head
        self.loops.pop()
        exit_state = head
        for other in breaks:
            exit_state = _join(exit_state, other)
        return exit_state


def reaching_values(body: ir.Block) -> dict[int, Reaching]:
    """id(LocalLoad) -> the values it may return, for every load in `body`."""
    walk = _Walk()
    walk.block(body, {})
    return walk.loads
