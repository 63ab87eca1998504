"""Store-to-load forwarding for function-local variables (a light mem2reg on the tree IR).

A load whose reaching store is known (same block, or an enclosing block with no store to the variable in
between, loops and branches invalidating what they store) is replaced by the stored value. Allocas left
with no loads are deleted with their stores. What remains afterwards is truly carried state (a value
merged by a branch or carried round a loop), which is what the adstack promotion looks at."""
from __future__ import annotations

from wgkern.ir import nodes as ir


def _stored_allocas(block: ir.Block, out: set[ir.Alloca]) -> set[ir.Alloca]:
    for stmt in block.stmts:
        if isinstance(stmt, ir.LocalStore):
            out.add(stmt.alloca)
        for child in stmt.blocks():
            _stored_allocas(child, out)
    return out


class _Forwarder:
    def __init__(self) -> None:
        self.replace: dict[ir.Stmt, ir.Stmt] = {}
        self.dead_loads: set[int] = set()

    def block(self, block: ir.Block, known: dict[ir.Alloca, ir.Stmt]) -> None:
        for stmt in block.stmts:
            stmt.replace_operands(self.replace)
            if isinstance(stmt, ir.Alloca):
                known.pop(stmt, None)
            elif isinstance(stmt, ir.LocalStore):
                known[stmt.alloca] = stmt.value
            elif isinstance(stmt, ir.LocalLoad):
                value = known.get(stmt.alloca)
                if value is not None and value.dtype == stmt.dtype:
                    self.replace[stmt] = value
                    self.dead_loads.add(id(stmt))
            elif isinstance(stmt, ir.If):
                stored = set()
                for child in stmt.blocks():
                    self.block(child, dict(known))
                    _stored_allocas(child, stored)
                for alloca in stored:
                    known.pop(alloca, None)
            elif isinstance(stmt, (ir.RangeFor, ir.While)):
                stored = _stored_allocas(stmt.body, set())
                inner = {a: v for a, v in known.items() if a not in stored}
                self.block(stmt.body, inner)
                for alloca in stored:
                    known.pop(alloca, None)


def _remove(block: ir.Block, dead: set[int]) -> None:
    block.stmts = [s for s in block.stmts if id(s) not in dead]
    for stmt in block.stmts:
        for child in stmt.blocks():
            _remove(child, dead)


def _collect(block: ir.Block, loads: dict[ir.Alloca, int], stores: dict[ir.Alloca, list[ir.Stmt]]) -> None:
    for stmt in block.stmts:
        if isinstance(stmt, ir.LocalLoad):
            loads[stmt.alloca] = loads.get(stmt.alloca, 0) + 1
        elif isinstance(stmt, ir.LocalStore):
            stores.setdefault(stmt.alloca, []).append(stmt)
        for child in stmt.blocks():
            _collect(child, loads, stores)


def forward_locals(body: ir.Block) -> None:
    """Forward stores to loads in `body` in place, then delete allocas nobody loads."""
    forwarder = _Forwarder()
    forwarder.block(body, {})
    _remove(body, forwarder.dead_loads)
    loads: dict[ir.Alloca, int] = {}
    stores: dict[ir.Alloca, list[ir.Stmt]] = {}
    _collect(body, loads, stores)
    dead: set[int] = set()
    allocas = [s for s in _walk(body) if isinstance(s, ir.Alloca)]
    for alloca in allocas:
        if loads.get(alloca, 0) == 0:
            dead.add(id(alloca))
            dead.update(id(s) for s in stores.get(alloca, []))
    _remove(body, dead)


def _walk(block: ir.Block):
    for stmt in block.stmts:
        yield stmt
        for child in stmt.blocks():
            yield from _walk(child)
