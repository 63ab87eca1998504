"""BackupSSA: which primal values the reverse pass may recompute, and which must be saved on their own stack.

The reverse pass recomputes a needed value where it is used. That is exact unless the recomputation reads a
stack top that a push has changed between the forward read and the reverse point (the reverse point of an
`If` or loop is after its body; a loop around the use but not around the read repeats its pushes). Such a
value gets a value stack: pushed right after it is computed (after the exit check for a value computed in a
While's head), read from the top in reverse, popped at its own reverse position."""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from wgkern.ir import nodes as ir

_LEAVES = (ir.Const, ir.ArgLoad, ir.ShapeOf, ir.LoopIndex, ir.Alloca, ir.AdStackAlloca, ir.RangeFor)


@dataclass
class Positions:
    """Pre-order position of every statement, the last position inside each control statement, and the
    loops enclosing each statement (outermost first)."""
    start: dict[ir.Stmt, int] = field(default_factory=dict)
    end: dict[ir.Stmt, int] = field(default_factory=dict)
    loops: dict[ir.Stmt, tuple[ir.Stmt, ...]] = field(default_factory=dict)
    pushes: dict[ir.AdStackAlloca, list[int]] = field(default_factory=dict)

    @classmethod
    def of(cls, body: ir.Block) -> Positions:
        positions = cls()
        counter = [0]

        def visit(block: ir.Block, loops: tuple[ir.Stmt, ...]) -> None:
            for stmt in block.stmts:
                positions.start[stmt] = counter[0]
                positions.loops[stmt] = loops
                counter[0] += 1
                if isinstance(stmt, ir.AdStackPush):
                    positions.pushes.setdefault(stmt.stack, []).append(positions.start[stmt])
                inner = loops + (stmt,) if isinstance(stmt, (ir.RangeFor, ir.While)) else loops
                for child in stmt.blocks():
                    visit(child, inner)
                positions.end[stmt] = counter[0] - 1

        visit(body, ())
        return positions


def use_position(user: ir.Stmt, positions: Positions) -> int:
    """Forward position whose stack state the reverse pass sees when it reads primals for `user`."""
    if isinstance(user, (ir.If, ir.RangeFor, ir.While)):
        return positions.end[user]
    return positions.start[user]


def _pushed_between(stack: ir.AdStackAlloca, low: int, high: int, positions: Positions) -> bool:
    """Any push to `stack` at a position p with low < p <= high."""
    sites = positions.pushes.get(stack, [])
    index = bisect.bisect_right(sites, low)
    return index < len(sites) and sites[index] <= high


def is_stale(value: ir.Stmt, user: ir.Stmt, top_level: set[ir.Stmt], positions: Positions,
             backed_up: set[ir.Stmt]) -> bool:
    """Whether recomputing `value` at the reverse point of `user` could read a changed stack top."""
    upos = use_position(user, positions)
    user_loops = positions.loops.get(user, ())
    seen: set[ir.Stmt] = set()
    work = [value]
    while work:
        stmt = work.pop()
        if stmt in seen or stmt in top_level or isinstance(stmt, _LEAVES):
            continue
        seen.add(stmt)
        if stmt in backed_up and stmt is not value:
            continue
        if isinstance(stmt, ir.RandomValue):
            return True   # drawing again would give the next number, not this one
        if isinstance(stmt, ir.AdStackLoadTop):
            read = positions.start[stmt]
            read_loops = positions.loops.get(stmt, ())
            horizon = upos
            for loop in user_loops:
                if loop not in read_loops:
                    horizon = max(horizon, positions.end[loop])
                    break
            if _pushed_between(stmt.stack, read, horizon, positions):
                return True
            continue
        work.extend(stmt.operands())
    return False


def insert_value_stacks(body: ir.Block, values: set[ir.Stmt], first_id: int,
                        exit_checks: dict[ir.While, ir.If]) -> dict[ir.Stmt, ir.AdStackAlloca]:
    """Give each value its own stack, pushed right after the value is computed, or, for a value computed in a
    While's head (before its exit check, loop_control.py), right after the exit check: the head runs once more
    than the counted iterations the reverse pass replays (and pops in), so a push there would leave one entry
    per loop execution behind and shift every later read of the stack top."""
    stacks: dict[ir.Stmt, ir.AdStackAlloca] = {}
    number = first_id

    def push_of(stmt: ir.Stmt) -> ir.AdStackPush:
        nonlocal number
        stack = ir.AdStackAlloca(dtype=stmt.dtype, name="saved", stack_id=number, loc=stmt.loc)
        number += 1
        stacks[stmt] = stack
        return ir.AdStackPush(stack=stack, value=stmt, loc=stmt.loc)

    def visit(block: ir.Block, exit_check: ir.If | None) -> None:
        out: list[ir.Stmt] = []
        deferred: list[ir.AdStackPush] = []    # pushes of head values, waiting for the exit check
        in_head = exit_check is not None and exit_check in block.stmts
        for stmt in block.stmts:
            for child in stmt.blocks():
                visit(child, exit_checks.get(stmt) if isinstance(stmt, ir.While) else None)
            out.append(stmt)
            if stmt is exit_check:
                out.extend(deferred)
                in_head = False
            elif stmt in values:
                (deferred if in_head else out).append(push_of(stmt))
        block.stmts = out

    visit(body, None)
    body.stmts[0:0] = list(stacks.values())
    return stacks
