"""Generic traversal of the IR: a visitor keyed by statement class, and a depth-first walk.

Codegen backends and passes subclass IRVisitor (`visit_BinaryOp`, ...); an unhandled class is an internal
error naming the statement's source location."""
from __future__ import annotations

from itertools import chain
from typing import Any, Callable, Iterator

from wgkern.errors import InternalCompilerError
from wgkern.ir.nodes import Block, Stmt


class IRVisitor:
    """Dispatches `visit(stmt)` to `visit_<ClassName>(stmt)`."""

    def visit(self, stmt: Stmt) -> Any:
        method = getattr(self, "visit_" + type(stmt).__name__, None)
        if method is None:
            return self.generic_visit(stmt)
        return method(stmt)

    def visit_block(self, block: Block) -> None:
        for stmt in list(block.stmts):
            self.visit(stmt)

    def generic_visit(self, stmt: Stmt) -> Any:
        raise InternalCompilerError(f"{type(self).__name__} has no rule for {type(stmt).__name__}", stmt.loc)


def walk(block: Block) -> Iterator[Stmt]:
    """Every statement in `block`, depth first, parents before their children. One generator with a stack of the
    blocks being walked: a nested generator per block would pass each statement up through every enclosing one
    (Genesis's kernels nest a dozen deep, and the passes walk them many times)."""
    pending: list[Iterator[Stmt]] = [iter(block.stmts)]
    while pending:
        for stmt in pending[-1]:
            yield stmt
            if stmt.BLOCKS:
                pending.append(chain.from_iterable(child.stmts for child in stmt.blocks()))
                break
        else:
            pending.pop()


def walk_with_parent(block: Block) -> Iterator[tuple[Stmt, Block]]:
    """(statement, block that holds it) pairs, depth first."""
    for stmt in block.stmts:
        yield stmt, block
        for child in stmt.blocks():
            yield from walk_with_parent(child)


def transform_blocks(block: Block, fn: Callable[[Block], None]) -> None:
    """Apply `fn` to every block, innermost first (post-order)."""
    for stmt in block.stmts:
        for child in stmt.blocks():
            transform_blocks(child, fn)
    fn(block)
