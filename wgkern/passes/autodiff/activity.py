"""Which values carry a gradient (active), and which primal values the reverse pass must read (needed).

Active: float values that depend on a global load of a container with an adjoint. Needed: primal values the
adjoint code reads at a point the forward value does not dominate (anything defined below the unit's top
level); they are recomputed there, so their operands are needed too, and a needed load of a local variable
makes that variable an adstack (stack_promotion.py)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from wgkern.errors import AutodiffError
from wgkern.ir import nodes as ir
from wgkern.ir.ops import AtomicOpKind
from wgkern.passes.autodiff.rules import binary_reads, unary_reads

_PROPAGATES = (ir.UnaryOp, ir.BinaryOp, ir.Cast, ir.TernarySelect)


def _walk(block: ir.Block):
    for stmt in block.stmts:
        yield stmt
        for child in stmt.blocks():
            yield from _walk(child)


def active_values(body: ir.Block, has_adjoint: Callable[[ir.ContainerSlot], bool]) -> set[ir.Stmt]:
    """Fixed point over the body: float statements (and local variables/stacks) that carry a gradient."""
    active: set[ir.Stmt] = set()
    stmts = list(_walk(body))
    changed = True
    while changed:
        changed = False
        for stmt in stmts:
            if stmt in active:
                continue
            if _is_active(stmt, active, has_adjoint):
                active.add(stmt)
                changed = True
    return active


def _is_active(stmt: ir.Stmt, active: set[ir.Stmt], has_adjoint: Callable[[ir.ContainerSlot], bool]) -> bool:
    if isinstance(stmt, ir.LocalStore):
        if stmt.value in active and stmt.alloca not in active:
            active.add(stmt.alloca)
            return True
        return False
    if isinstance(stmt, ir.AdStackPush):
        if stmt.value in active and stmt.stack not in active:
            active.add(stmt.stack)
            return True
        return False
    if stmt.dtype is None or not stmt.dtype.is_float:
        return False
    if isinstance(stmt, ir.GlobalLoad):
        return has_adjoint(stmt.ptr.container)
    if isinstance(stmt, ir.LocalLoad):
        return stmt.alloca in active
    if isinstance(stmt, ir.AdStackLoadTop):
        return stmt.stack in active
    if isinstance(stmt, ir.TernarySelect):
        return stmt.true_value in active or stmt.false_value in active
    if isinstance(stmt, _PROPAGATES):
        return any(o in active for o in stmt.operands())
    return False


@dataclass
class Needed:
    values: set[ir.Stmt] = field(default_factory=set)
    stacked: set[ir.Alloca] = field(default_factory=set)


def needed_values(body: ir.Block, active: set[ir.Stmt], has_adjoint: Callable[[ir.ContainerSlot], bool],
                  skip_conditions: set[ir.If], always_stacked: set[ir.Alloca] = frozenset(),
                  cached: set[ir.Stmt] = frozenset(), saved: set[ir.Stmt] = frozenset()) -> Needed:
    """Primal values read by the reverse pass below the top level, and the locals that must become stacks.
    Iterates: a loop or branch that pushes onto a stack has reverse work, so its bounds/condition are needed.
    `cached`: ops whose derivative reads a saved value (derivative_cache.py); `saved`: values that will be
    on a value stack, so recomputing them needs none of their operands."""
    stacked = set(always_stacked)
    while True:
        result = _needed_once(body, active, has_adjoint, skip_conditions, stacked, cached, saved)
        if result.stacked <= stacked:
            result.stacked = stacked
            return result
        stacked |= result.stacked


def _needed_once(body: ir.Block, active: set[ir.Stmt], has_adjoint: Callable[[ir.ContainerSlot], bool],
                 skip_conditions: set[ir.If], stacked: set[ir.Alloca], cached: set[ir.Stmt],
                 saved: set[ir.Stmt]) -> Needed:
    top_level = set(body.stmts)
    needed = Needed()
    work: list[ir.Stmt] = []

    def need(stmt: ir.Stmt) -> None:
        if stmt in top_level or stmt in needed.values:
            return
        needed.values.add(stmt)
        work.append(stmt)

    for stmt in _walk(body):
        for root in roots_of(stmt, active, has_adjoint, skip_conditions, stacked, cached):
            need(root)
    while work:
        stmt = work.pop()
        if isinstance(stmt, ir.LocalLoad):
            needed.stacked.add(stmt.alloca)
            continue
        if isinstance(stmt, ir.AtomicOp):
            raise AutodiffError("the value returned by an atomic operation is needed by the gradient; "
                                "it cannot be recomputed", stmt.loc)
        if stmt in saved:
            continue
        if isinstance(stmt, ir.RandomValue):
            continue  # not recomputable (the counter moves): backup.py saves it on a value stack
        for operand in stmt.operands():
            if isinstance(operand, (ir.Alloca, ir.AdStackAlloca, ir.RangeFor)):
                continue
            need(operand)
    return needed


def roots_of(stmt: ir.Stmt, active: set[ir.Stmt], has_adjoint: Callable[[ir.ContainerSlot], bool],
           skip_conditions: set[ir.If], stacked: set[ir.Alloca], cached: set[ir.Stmt] = frozenset()) -> list[ir.Stmt]:
    # A derivative rule may read the operands and the result (rules.py says which): each is a root of its own
    # (each may need its own backup when recomputing it would read a changed stack top). A cached op's rule
    # reads a value the replay saves for it (derivative_cache.py).
    if stmt in cached:
        return []
    if isinstance(stmt, ir.UnaryOp) and stmt in active and stmt.operand in active:
        reads = unary_reads(stmt)
        return [value for name, value in (("x", stmt.operand), ("y", stmt)) if name in reads]
    if isinstance(stmt, ir.BinaryOp) and stmt in active:
        reads = binary_reads(stmt, stmt.lhs in active, stmt.rhs in active)
        return [value for name, value in (("l", stmt.lhs), ("r", stmt.rhs), ("y", stmt)) if name in reads]
    if isinstance(stmt, ir.TernarySelect) and stmt in active:
        return [stmt.cond]
    if isinstance(stmt, ir.If) and stmt not in skip_conditions and has_adjoint_work(stmt, active, has_adjoint,
                                                                                      stacked):
        return [stmt.cond]
    if isinstance(stmt, ir.RangeFor) and has_adjoint_work(stmt, active, has_adjoint, stacked):
        return [stmt.begin, stmt.end]
    if isinstance(stmt, ir.GlobalLoad) and stmt in active:
        return list(stmt.ptr.indices)
    if isinstance(stmt, ir.GlobalStore) and has_adjoint(stmt.ptr.container):
        return list(stmt.ptr.indices)           # its adjoint zeroes the overwritten element's gradient
    if isinstance(stmt, ir.AtomicOp) and stmt.value in active and has_adjoint(stmt.ptr.container):
        if stmt.op in (AtomicOpKind.MIN, AtomicOpKind.MAX):     # compared with the element's final value
            return [*stmt.ptr.indices, stmt.value]
        return list(stmt.ptr.indices)
    return []


def has_adjoint_work(stmt: ir.Stmt, active: set[ir.Stmt], has_adjoint: Callable[[ir.ContainerSlot], bool],
                     stacked: set[ir.Alloca] = frozenset()) -> bool:
    """Whether anything under a control-flow statement propagates a gradient, pushes onto a stack, or
    overwrites something that has an adjoint (a store of a constant still zeroes the overwritten adjoint:
    `if c: t = 0.0` cuts the gradient to t's earlier value where c holds)."""
    for block in stmt.blocks():
        for inner in _walk(block):
            if inner in active:
                return True
            if isinstance(inner, (ir.GlobalStore, ir.AtomicOp, ir.LocalStore, ir.AdStackPush)) \
                    and inner.value in active:
                return True
            if isinstance(inner, ir.LocalStore) and inner.alloca in active:
                return True
            if isinstance(inner, ir.GlobalStore) and has_adjoint(inner.ptr.container):
                return True
            if isinstance(inner, ir.AdStackPush) or (isinstance(inner, ir.LocalStore) and inner.alloca in stacked):
                return True
    return False
