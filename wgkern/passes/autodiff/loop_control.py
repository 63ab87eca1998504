"""Lowers loop control in a task body so the reverse pass sees loops of known shape.

After this pass: `continue` and mid-body `break` are u1 flags guarding the rest of the iteration; a RangeFor
holding a `break` becomes a While over a counter; every While has the form
`While[If(exit){Break}; rest...]` with its exit check first and no other Break/Continue at its level.
The reverse pass then replays a While as a reversed RangeFor over its recorded trip count."""
from __future__ import annotations

from dataclasses import dataclass, field

from wgkern.errors import AutodiffError
from wgkern.ir import nodes as ir
from wgkern.ir.builder import IRBuilder
from wgkern.ir.ops import BinaryOpKind, UnaryOpKind
from wgkern import dtypes as T


@dataclass
class LoweredLoops:
    """What the lowering made: each While's exit-check If (the reverse pass skips it)."""
    exit_checks: dict[ir.While, ir.If] = field(default_factory=dict)


def _loop_control_at_level(block: ir.Block) -> tuple[bool, bool]:
    """(has Break, has Continue) that act on the loop owning `block` (nested loops excluded)."""
    has_break = has_continue = False
    for stmt in block.stmts:
        if isinstance(stmt, ir.Break):
            has_break = True
        elif isinstance(stmt, ir.Continue):
            has_continue = True
        elif isinstance(stmt, ir.If):
            for child in stmt.blocks():
                b, c = _loop_control_at_level(child)
                has_break |= b
                has_continue |= c
    return has_break, has_continue


def _replace_control(block: ir.Block, b: IRBuilder, break_flag: ir.Alloca | None,
                     continue_flag: ir.Alloca | None) -> bool:
    """Turn Break/Continue of this loop level into flag stores and guard what follows them.
    Returns whether the block may set a flag."""
    out: list[ir.Stmt] = []
    may_set = False
    stmts = list(block.stmts)
    for position, stmt in enumerate(stmts):
        sets_here = False
        if isinstance(stmt, (ir.Break, ir.Continue)):
            flag = break_flag if isinstance(stmt, ir.Break) else continue_flag
            with b.at(ir.Block()) as tmp, b.located(stmt.loc):
                b.store(flag, b.const(True, T.u1))
            out.extend(tmp.stmts)
            may_set = True
            # Statements after an unconditional break/continue never run.
            block.stmts = out
            return may_set
        if isinstance(stmt, ir.If):
            for child in stmt.blocks():
                sets_here |= _replace_control(child, b, break_flag, continue_flag)
        out.append(stmt)
        if sets_here:
            may_set = True
            rest = ir.Block(stmts[position + 1:])
            if rest.stmts:
                _replace_control(rest, b, break_flag, continue_flag)
                with b.at(ir.Block()) as tmp, b.located(stmt.loc):
                    guard = _any_flag_set(b, break_flag, continue_flag)
                    guarded = b.if_(b.unary(UnaryOpKind.LOGICAL_NOT, guard))
                guarded.then_block = rest
                out.extend(tmp.stmts)
            break
    block.stmts = out
    return may_set


def _any_flag_set(b: IRBuilder, break_flag: ir.Alloca | None, continue_flag: ir.Alloca | None) -> ir.Stmt:
    flags = [b.load(f) for f in (break_flag, continue_flag) if f is not None]
    result = flags[0]
    for other in flags[1:]:
        result = b.binary(BinaryOpKind.BIT_OR, result, other)
    return result


class LoopControlLowering:
    def __init__(self) -> None:
        self.result = LoweredLoops()

    def run_body(self, body: ir.Block, unit_loop: ir.RangeFor | None) -> LoweredLoops:
        has_break, has_continue = _loop_control_at_level(body)
        if has_break and unit_loop is not None:
            stmt = next(s for s in _level_stmts(body) if isinstance(s, ir.Break))
            raise AutodiffError("'break' out of the parallel (outermost) loop cannot be differentiated", stmt.loc)
        if has_continue or has_break:
            self._guard_unit_body(body)
        self._lower_block(body)
        return self.result

    def _guard_unit_body(self, body: ir.Block) -> None:
        b = IRBuilder(ir.Block(), body.stmts[0].loc if body.stmts else ir.UNKNOWN_LOC)
        flag = b.alloca(T.u1, "continue_flag")
        b.store(flag, b.const(False, T.u1))
        _replace_control(body, b, flag, flag)
        body.stmts[0:0] = b.block.stmts

    def _lower_block(self, block: ir.Block) -> None:
        index = 0
        while index < len(block.stmts):
            stmt = block.stmts[index]
            for child in stmt.blocks():
                self._lower_block(child)
            if isinstance(stmt, ir.RangeFor):
                replacement = self._lower_range_for(stmt)
            elif isinstance(stmt, ir.While):
                replacement = self._lower_while(stmt)
            else:
                replacement = [stmt]
            block.stmts[index:index + 1] = replacement
            index += len(replacement)

    def _lower_range_for(self, loop: ir.RangeFor) -> list[ir.Stmt]:
        has_break, has_continue = _loop_control_at_level(loop.body)
        if not has_break and not has_continue:
            return [loop]
        b = IRBuilder(ir.Block(), loop.loc)
        if not has_break:
            flag = b.alloca(T.u1, "continue_flag")
            reset = IRBuilder(ir.Block(), loop.loc)
            reset.store(flag, reset.const(False, T.u1))
            _replace_control(loop.body, b, None, flag)
            loop.body.stmts[0:0] = reset.block.stmts
            return b.block.stmts + [loop]
        # A loop that may break: iterate with an explicit counter inside a While.
        counter = b.alloca(T.i32, loop.name or "loop_index")
        step = -1 if loop.reversed else 1
        start = b.sub(loop.end, b.const(1, T.i32)) if loop.reversed else loop.begin
        b.store(counter, start)
        new_body = ir.Block()
        inner = IRBuilder(new_body, loop.loc)
        index_value = inner.load(counter)
        _substitute_loop_index(loop.body, loop, index_value)
        new_body.stmts.extend(loop.body.stmts)
        latch = IRBuilder(ir.Block(), loop.loc)
        latch.store(counter, latch.add(latch.load(counter), latch.const(step, T.i32)))
        # Exit when the counter leaves [begin, end).
        check = IRBuilder(ir.Block(), loop.loc)
        current = check.load(counter)
        if loop.reversed:
            done = check.binary(BinaryOpKind.CMP_LT, current, loop.begin)
        else:
            done = check.binary(BinaryOpKind.CMP_GE, current, loop.end)
        exit_if = check.if_(done)
        exit_if.then_block.stmts.append(ir.Break(loc=loop.loc))
        while_loop = ir.While(body=ir.Block(check.block.stmts + new_body.stmts), loc=loop.loc)
        return b.block.stmts + self._lower_while(while_loop, latch.block.stmts)

    def _lower_while(self, loop: ir.While, latch: list[ir.Stmt] | None = None) -> list[ir.Stmt]:
        """`latch` runs at the end of every iteration, whatever `continue` did (a range loop's counter)."""
        body = loop.body.stmts
        position = _exit_check_position(body)
        if position is None:
            section, exit_if, rest = [], None, ir.Block(body)
        else:
            section, exit_if, rest = body[:position], body[position], ir.Block(body[position + 1:])
        has_break, has_continue = _loop_control_at_level(rest)
        prefix = IRBuilder(ir.Block(), loop.loc)
        reset = IRBuilder(ir.Block(), loop.loc)
        break_flag = continue_flag = None
        if has_break:
            break_flag = prefix.alloca(T.u1, "break_flag")
            prefix.store(break_flag, prefix.const(False, T.u1))
        if has_continue:
            continue_flag = prefix.alloca(T.u1, "continue_flag")
            reset.store(continue_flag, reset.const(False, T.u1))
        if has_break or has_continue:
            _replace_control(rest, prefix, break_flag, continue_flag)
        check = IRBuilder(ir.Block(section), loop.loc)
        conditions = [exit_if.cond] if exit_if is not None else []
        if conditions or break_flag is not None:
            # A replay whose pushes overflowed (and were dropped) must still leave the loop.
            conditions.append(check.insert(ir.AdStackOverflowed(dtype=T.u1)))
        if break_flag is not None:
            conditions.append(check.load(break_flag))
        if not conditions:
            raise AutodiffError("a 'while' loop with no exit cannot be differentiated", loop.loc)
        cond = conditions[0]
        for other in conditions[1:]:
            cond = check.binary(BinaryOpKind.BIT_OR, cond, other)
        new_exit = check.if_(cond)
        new_exit.then_block.stmts.append(ir.Break(loc=loop.loc))
        loop.body = ir.Block(check.block.stmts + reset.block.stmts + rest.stmts + list(latch or []))
        self.result.exit_checks[loop] = new_exit
        return prefix.block.stmts + [loop]


_PURE = (ir.Const, ir.ArgLoad, ir.ShapeOf, ir.UnaryOp, ir.BinaryOp, ir.Cast, ir.TernarySelect, ir.LoopIndex,
         ir.LocalLoad, ir.GlobalPtr, ir.GlobalLoad, ir.AdStackLoadTop)


def _exit_check_position(body: list[ir.Stmt]) -> int | None:
    """Index of a leading `If(c){Break}` preceded only by effect-free statements, else None."""
    for position, stmt in enumerate(body):
        if _is_exit_check(stmt):
            return position
        if not isinstance(stmt, _PURE):
            return None
    return None


def _is_exit_check(stmt: ir.Stmt) -> bool:
    return (isinstance(stmt, ir.If) and len(stmt.then_block.stmts) == 1
            and isinstance(stmt.then_block.stmts[0], ir.Break) and not stmt.else_block.stmts)


def _level_stmts(block: ir.Block):
    for stmt in block.stmts:
        yield stmt
        if isinstance(stmt, ir.If):
            for child in stmt.blocks():
                yield from _level_stmts(child)


def _substitute_loop_index(block: ir.Block, loop: ir.RangeFor, value: ir.Stmt) -> None:
    """Replace uses of LoopIndex(loop) under `block` by `value` (the LoopIndex statements become dead)."""
    mapping: dict[ir.Stmt, ir.Stmt] = {}
    for stmt in _walk(block):
        if isinstance(stmt, ir.LoopIndex) and stmt.loop is loop:
            mapping[stmt] = value
    if mapping:
        for stmt in _walk(block):
            stmt.replace_operands(mapping)
        _drop(block, set(map(id, mapping)))


def _walk(block: ir.Block):
    for stmt in block.stmts:
        yield stmt
        for child in stmt.blocks():
            yield from _walk(child)


def _drop(block: ir.Block, ids: set[int]) -> None:
    block.stmts = [s for s in block.stmts if id(s) not in ids]
    for stmt in block.stmts:
        for child in stmt.blocks():
            _drop(child, ids)
