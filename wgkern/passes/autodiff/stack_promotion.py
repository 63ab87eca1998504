"""Turns local variables whose past values the reverse pass needs into adstacks.

Every store becomes a push (the loop-entry value included), every load a load of the top; the stack is
allocated at the top of the unit so it lives for one parallel index. Which locals qualify is decided in
activity.py (needed_values)."""
from __future__ import annotations

from wgkern.ir import nodes as ir


def promote_to_stacks(body: ir.Block, allocas: set[ir.Alloca]) -> dict[ir.Alloca, ir.AdStackAlloca]:
    stacks: dict[ir.Alloca, ir.AdStackAlloca] = {}
    for number, alloca in enumerate(sorted(allocas, key=_position_key(body))):
        stacks[alloca] = ir.AdStackAlloca(dtype=alloca.dtype, name=alloca.name or f"stack{number}",
                                          stack_id=number, loc=alloca.loc)
    replace: dict[ir.Stmt, ir.Stmt] = {}
    _rewrite(body, stacks, replace)
    _remap(body, replace)
    body.stmts[0:0] = list(stacks.values())
    return stacks


def _position_key(body: ir.Block):
    order = {id(s): n for n, s in enumerate(_walk(body))}
    return lambda alloca: order.get(id(alloca), 0)


def _rewrite(block: ir.Block, stacks: dict[ir.Alloca, ir.AdStackAlloca], replace: dict[ir.Stmt, ir.Stmt]) -> None:
    out: list[ir.Stmt] = []
    for stmt in block.stmts:
        if isinstance(stmt, ir.Alloca) and stmt in stacks:
            continue
        if isinstance(stmt, ir.LocalStore) and stmt.alloca in stacks:
            stmt = ir.AdStackPush(stack=stacks[stmt.alloca], value=stmt.value, loc=stmt.loc)
        elif isinstance(stmt, ir.LocalLoad) and stmt.alloca in stacks:
            new = ir.AdStackLoadTop(stack=stacks[stmt.alloca], dtype=stmt.dtype, loc=stmt.loc)
            replace[stmt] = new
            stmt = new
        for child in stmt.blocks():
            _rewrite(child, stacks, replace)
        out.append(stmt)
    block.stmts = out


def _remap(block: ir.Block, replace: dict[ir.Stmt, ir.Stmt]) -> None:
    for stmt in _walk(block):
        stmt.replace_operands(replace)


def _walk(block: ir.Block):
    for stmt in block.stmts:
        yield stmt
        for child in stmt.blocks():
            yield from _walk(child)
