"""Deep copy of IR subtrees with operand remapping (`clone_block(block, value_map)`).

Owns copying statements generically through OPERANDS/OPERAND_LISTS/BLOCKS: operands found in `value_map`
are redirected to their copies, others (values defined outside the copied subtree) are kept. Every copied
statement is recorded old -> new in `value_map`, so callers can redirect their own references afterwards."""
from __future__ import annotations

import dataclasses

from wgkern.ir import nodes as ir


_INIT_FIELDS: dict[type, tuple[str, ...]] = {}     # statement class -> the names of its __init__'s fields


def _init_fields(kind: type) -> tuple[str, ...]:
    names = _INIT_FIELDS.get(kind)
    if names is None:
        names = _INIT_FIELDS[kind] = tuple(f.name for f in dataclasses.fields(kind) if f.init)
    return names


def clone_stmt(stmt: ir.Stmt, value_map: dict[ir.Stmt, ir.Stmt]) -> ir.Stmt:
    """A copy of `stmt` (and, deeply, of its blocks) with operands remapped through `value_map`.

    The copy is recorded in `value_map` before its blocks are copied, so statements inside (LoopIndex of
    this loop) refer to the copy."""
    fields = {name: getattr(stmt, name) for name in _init_fields(type(stmt))}
    for name in stmt.OPERANDS:
        operand = fields[name]
        if operand is not None:
            fields[name] = value_map.get(operand, operand)
    for name in stmt.OPERAND_LISTS:
        fields[name] = [value_map.get(o, o) for o in fields[name]]
    for name in stmt.BLOCKS:
        fields[name] = ir.Block()
    copy = type(stmt)(**fields)
    value_map[stmt] = copy
    for name in stmt.BLOCKS:
        original = getattr(stmt, name)
        if original is None:
            setattr(copy, name, None)
        else:
            setattr(copy, name, clone_block(original, value_map))
    return copy


def clone_block(block: ir.Block, value_map: dict[ir.Stmt, ir.Stmt] | None = None) -> ir.Block:
    """A deep copy of `block`; `value_map` (filled in place) maps every original statement to its copy."""
    if value_map is None:
        value_map = {}
    return ir.Block([clone_stmt(stmt, value_map) for stmt in block.stmts])


def clone_kernel(kernel: ir.KernelIR) -> ir.KernelIR:
    """A KernelIR with a deep-copied body (args and container slots are shared, they are not IR values)."""
    return ir.KernelIR(kernel.name, list(kernel.args), list(kernel.containers), clone_block(kernel.body, {}),
                       kernel.loc, kernel.returns)
