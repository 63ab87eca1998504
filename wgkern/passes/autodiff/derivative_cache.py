"""Save or recompute: derivatives of transcendental ops inside loops (a BackupSSA choice, see backup.py).

By default the reverse pass recomputes what a derivative rule reads from the stacks: for `v = sin(v)` in a
loop, the replay calls sin and pushes v, and the adjoint sweep pops v and calls cos on it again. When that
operand is needed only by such derivatives, saving what the rule reads costs no more stack memory and no
transcendental in the sweep: for a rule that reads the operand, the replay computes the derivative itself
next to the op (sin and cos of one value become one sincos on the CPU) and pushes it on a value stack; for a
rule that reads the result (exp, tan, tanh), the replay pushes the result. The sweep pops the saved value.

The choice is made per adjoint unit: the candidate ops' derivatives are cached when the unit then needs no
more stacks than recomputation does (the carried local whose stack the cache replaces counts as one)."""
from __future__ import annotations

from typing import Callable

from wgkern.ir import nodes as ir
from wgkern.ir.builder import IRBuilder
from wgkern.ir.ops import UnaryOpKind
from wgkern.passes.autodiff import rules
from wgkern.passes.autodiff.activity import Needed, needed_values

# Ops whose rule costs a transcendental call when recomputed in the sweep.
_WORTH_SAVING = frozenset({UnaryOpKind.SIN, UnaryOpKind.COS, UnaryOpKind.SINH, UnaryOpKind.COSH,
                           UnaryOpKind.EXP, UnaryOpKind.TAN, UnaryOpKind.TANH})


def _ops_in_loops(block: ir.Block, in_loop: bool, active: set[ir.Stmt]):
    for stmt in block.stmts:
        if in_loop and isinstance(stmt, ir.UnaryOp) and stmt.op in _WORTH_SAVING \
                and stmt in active and stmt.operand in active:
            yield stmt
        for child in stmt.blocks():
            yield from _ops_in_loops(child, in_loop or isinstance(stmt, (ir.RangeFor, ir.While)), active)


def saved_results(cached: set[ir.UnaryOp]) -> set[ir.Stmt]:
    """The cached ops whose saved value is their own result (leaves for the needed analysis)."""
    return {op for op in cached if op.op in rules.READS_RESULT_ONLY}


def choose_cached(body: ir.Block, active: set[ir.Stmt], has_adjoint: Callable[[ir.ContainerSlot], bool],
                  skip_conditions: set[ir.If], always_stacked: set[ir.Alloca]) -> tuple[Needed, set[ir.UnaryOp]]:
    """The needed analysis of the unit, and the ops whose derivative input is saved rather than recomputed."""
    plain = needed_values(body, active, has_adjoint, skip_conditions, always_stacked)
    candidates = set(_ops_in_loops(body, False, active))
    if not candidates:
        return plain, set()
    cached = needed_values(body, active, has_adjoint, skip_conditions, always_stacked,
                           cached=candidates, saved=saved_results(candidates))
    if len(cached.stacked) + len(candidates) <= len(plain.stacked):
        return cached, candidates
    return plain, set()


def insert_cached_derivatives(body: ir.Block, cached: set[ir.UnaryOp]) -> dict[ir.UnaryOp, ir.Stmt]:
    """Per cached op, the value the replay saves for it: its derivative, computed right after it from the
    same operand (next to the op, so a CPU backend can fuse sin and cos into one sincos), or its result. A
    saved derivative is popped at its op's reverse position (make_adjoint.py), not at its own."""
    saved: dict[ir.UnaryOp, ir.Stmt] = {}

    def visit(block: ir.Block) -> None:
        out: list[ir.Stmt] = []
        for stmt in block.stmts:
            for child in stmt.blocks():
                visit(child)
            out.append(stmt)
            if stmt in cached and stmt.op in rules.READS_OPERAND_ONLY:
                b = IRBuilder(ir.Block(), stmt.loc)
                saved[stmt] = rules.unary_derivative(stmt)(b, stmt.operand, stmt)
                out.extend(b.block.stmts)
            elif stmt in cached:
                saved[stmt] = stmt
        block.stmts = out

    visit(body)
    return saved
