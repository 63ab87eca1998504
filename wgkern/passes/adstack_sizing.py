"""Structural adstack sizing: the exact capacity of every stack whose pushes sit only inside loops with
compile-time trip counts.

A stack's capacity is a sound bound on pushes per adjoint unit: the sum over its push sites of the product of
the trip counts of the loops between the push and the unit's entry (trip counts clamped at 0). When every
such loop has constant bounds the sum is a constant and exact. Otherwise the capacity stays None here and is
decided at launch (docs/internals.md "Adstacks")."""
from __future__ import annotations

from wgkern.ir import nodes as ir

NAME = "adstack_sizing"


def static_trip_count(loop: ir.Stmt) -> int | None:
    if isinstance(loop, ir.RangeFor) and isinstance(loop.begin, ir.Const) and isinstance(loop.end, ir.Const):
        return max(0, int(loop.end.value) - int(loop.begin.value))
    return None


def push_counts(body: ir.Block) -> dict[ir.AdStackAlloca, int | None]:
    """Pushes per unit for each stack in `body`, None where a loop on the way has no constant trip count."""
    counts: dict[ir.AdStackAlloca, int | None] = {}

    def visit(block: ir.Block, multiplier: int | None) -> None:
        for stmt in block.stmts:
            if isinstance(stmt, ir.AdStackAlloca):
                counts.setdefault(stmt, 0)
            elif isinstance(stmt, ir.AdStackPush):
                current = counts.get(stmt.stack, 0)
                counts[stmt.stack] = None if current is None or multiplier is None else current + multiplier
            if isinstance(stmt, (ir.RangeFor, ir.While)):
                trips = static_trip_count(stmt)
                inner = None if multiplier is None or trips is None else multiplier * trips
                visit(stmt.body, inner)
            else:
                for child in stmt.blocks():
                    visit(child, multiplier)

    visit(body, 1)
    return counts


def size_stacks(body: ir.Block) -> None:
    """Set `capacity` on every stack of the unit `body` whose push count is static (at least 1 slot)."""
    for stack, count in push_counts(body).items():
        stack.capacity = None if count is None else max(count, 1)


def size_task_stacks(task: ir.Task) -> None:
    """Static capacities first (size_stacks); then a launch-time SizeExpr (sizing/build.py) on every stack
    still without one; stacks out of the SizeExpr grammar keep `size_expr = None` (default_ad_stack_size)."""
    from wgkern.sizing.build import task_size_exprs

    size_stacks(task.body)
    for stack, size_expr in task_size_exprs(task).items():
        stack.size_expr = size_expr
