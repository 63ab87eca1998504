"""IR verifier: structural, scoping, dtype and offload-contract checks, run by passes/pipeline.py after every pass.

Owns what "well-formed IR" means: every operand is defined earlier in the same or an enclosing block
(dominance in the tree IR), each statement appears once, LoopIndex/Break/Continue sit inside the right loop,
dtypes agree (docs/internals.md "IR"), and offloaded tasks follow the offload contract. A violation is a
compiler bug: InternalCompilerError naming the statement and its source location."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from wgkern.errors import InternalCompilerError
from wgkern.ir import nodes as ir
from wgkern.ir.ops import (BOOL_ONLY_UNARY, COMPARISONS, FLOAT_ONLY_BINARY, FLOAT_ONLY_UNARY, INT_ONLY_ATOMIC,
                           INT_ONLY_BINARY, INT_ONLY_UNARY, AtomicOpKind, BinaryOpKind)
from wgkern.ir.printer import describe
from wgkern import dtypes as T

BOUNDS_CLASSES = (ir.Const, ir.ArgLoad, ir.ShapeOf, ir.UnaryOp, ir.BinaryOp, ir.Cast, ir.TernarySelect,
                  ir.GlobalPtr, ir.GlobalLoad)
_SHIFTS = (BinaryOpKind.SHL, BinaryOpKind.SHR)
# Binary ops defined on u1 operands (logical and/or/xor, min/max, comparisons); others need a cast to i32.
BOOL_BINARY = frozenset({BinaryOpKind.BIT_AND, BinaryOpKind.BIT_OR, BinaryOpKind.BIT_XOR, BinaryOpKind.MIN,
                         BinaryOpKind.MAX}) | COMPARISONS


@dataclass
class _Context:
    kernel: ir.KernelIR | ir.OffloadedKernel
    check_types: bool
    where: str
    seen: set[int] = field(default_factory=set)
    containers: set[int] = field(default_factory=set)


class _Scope:
    """Visible definitions (shared; each block removes its own when it ends) and the enclosing loops."""

    def __init__(self, defined: set[int], loops: list[ir.Stmt]):
        self.defined = defined
        self.loops = loops

    def inside(self, loop: ir.Stmt) -> _Scope:
        return _Scope(self.defined, self.loops + [loop])


def _fail(ctx: _Context, stmt: ir.Stmt, message: str) -> None:
    raise InternalCompilerError(f"{ctx.where}: `{describe(stmt)}`: {message}", stmt.loc)


def _want(ctx: _Context, stmt: ir.Stmt, ok: bool, message: str) -> None:
    if not ok:
        _fail(ctx, stmt, message)


# ---- per-class dtype rules ------------------------------------------------------------------------------------

def _check_const(ctx: _Context, s: ir.Const) -> None:
    _want(ctx, s, s.dtype is not None, "constant without dtype")
    if s.dtype.is_int:
        _want(ctx, s, isinstance(s.value, int) and not isinstance(s.value, bool) and T.value_fits(s.value, s.dtype),
              f"value {s.value!r} is not a {s.dtype.name}")
    elif s.dtype.is_bool:
        _want(ctx, s, isinstance(s.value, bool), f"u1 constant holds {s.value!r}")
    else:
        _want(ctx, s, isinstance(s.value, float), f"float constant holds {s.value!r}")


def _check_unary(ctx: _Context, s: ir.UnaryOp) -> None:
    t = s.operand.dtype
    _want(ctx, s, s.dtype == t, "result dtype differs from the operand's")
    if s.op in FLOAT_ONLY_UNARY and not t.is_float:
        _fail(ctx, s, f"{s.op.value} needs a float operand")
    if s.op in INT_ONLY_UNARY and not t.is_int:
        _fail(ctx, s, f"{s.op.value} needs an integer operand")
    if (s.op in BOOL_ONLY_UNARY) != t.is_bool:
        _fail(ctx, s, f"{s.op.value} on {t.name}: only `not` takes u1")


def _check_binary(ctx: _Context, s: ir.BinaryOp) -> None:
    lhs, rhs = s.lhs.dtype, s.rhs.dtype
    if s.op in _SHIFTS:
        _want(ctx, s, lhs.is_int and rhs.is_int, "shift operands must be integers")
    elif lhs != rhs:
        _fail(ctx, s, f"operand dtypes differ ({lhs.name} vs {rhs.name})")
    expected = T.u1 if s.op in COMPARISONS else lhs
    if s.dtype != expected:
        _fail(ctx, s, f"result dtype should be {expected.name}")
    if s.op in FLOAT_ONLY_BINARY and not lhs.is_float:
        _fail(ctx, s, f"{s.op.value} needs float operands")
    if s.op in INT_ONLY_BINARY and lhs.is_float:
        _fail(ctx, s, f"{s.op.value} needs integer operands")
    if lhs.is_bool and s.op not in BOOL_BINARY:
        _fail(ctx, s, f"{s.op.value} does not take u1 operands")


def _check_select(ctx: _Context, s: ir.TernarySelect) -> None:
    _want(ctx, s, s.cond.dtype == T.u1, "condition must be u1")
    _want(ctx, s, s.true_value.dtype == s.false_value.dtype == s.dtype, "branch dtypes differ from the result")


def _check_cast(ctx: _Context, s: ir.Cast) -> None:
    _want(ctx, s, s.dtype is not None, "cast without a target dtype")
    _want(ctx, s, not s.bitcast or s.dtype.bits == s.operand.dtype.bits, "bitcast between different widths")


def _check_local(ctx: _Context, s: ir.LocalLoad | ir.LocalStore) -> None:
    _want(ctx, s, isinstance(s.alloca, ir.Alloca), "local access through a non-Alloca")
    if isinstance(s, ir.LocalLoad):
        _want(ctx, s, s.dtype == s.alloca.dtype, "load dtype differs from the local's")
    else:
        _want(ctx, s, s.value.dtype == s.alloca.dtype, "stored value's dtype differs from the local's")


def _check_ptr(ctx: _Context, s: ir.GlobalPtr) -> None:
    if id(s.container) not in ctx.containers and s.container.kind != "shared":
        _fail(ctx, s, f"container {s.container.name} is not in the kernel")
    if len(s.indices) != s.container.ndim:
        _fail(ctx, s, f"{len(s.indices)} indices for {s.container.name} of ndim {s.container.ndim}")
    _want(ctx, s, all(i.dtype == T.i32 for i in s.indices), "indices must be i32")
    _want(ctx, s, s.dtype == s.container.dtype, "pointer dtype differs from the container's")


def _check_memory(ctx: _Context, s: ir.GlobalLoad | ir.GlobalStore | ir.AtomicOp) -> None:
    _want(ctx, s, isinstance(s.ptr, ir.GlobalPtr), "global access through a non-GlobalPtr")
    if isinstance(s, ir.GlobalLoad):
        _want(ctx, s, s.dtype == s.ptr.dtype, "load dtype differs from the pointer's")
        return
    _want(ctx, s, s.value.dtype == s.ptr.dtype, "value dtype differs from the pointer's")
    if isinstance(s, ir.AtomicOp):
        _want(ctx, s, s.dtype == s.ptr.dtype, "atomic result dtype differs from the pointer's")
        if s.op in INT_ONLY_ATOMIC and s.ptr.dtype.is_float:
            _fail(ctx, s, f"atomic {s.op.value} on floats")
        _want(ctx, s, (s.expected is not None) == (s.op is AtomicOpKind.CAS),
              "an atomic has an expected value if and only if it is a compare-and-swap")
        _want(ctx, s, s.expected is None or s.expected.dtype == s.ptr.dtype,
              "expected value's dtype differs from the pointer's")


def _check_shape(ctx: _Context, s: ir.ShapeOf) -> None:
    _want(ctx, s, id(s.container) in ctx.containers, f"container {s.container.name} is not in the kernel")
    _want(ctx, s, s.dtype == T.i32, "ShapeOf must be i32")
    _want(ctx, s, 0 <= s.axis < max(s.container.ndim, 1), f"axis {s.axis} out of range")


def _check_arg(ctx: _Context, s: ir.ArgLoad) -> None:
    args = ctx.kernel.args
    _want(ctx, s, 0 <= s.arg_index < len(args), f"argument {s.arg_index} does not exist")
    spec = args[s.arg_index]
    _want(ctx, s, spec.kind == "scalar", f"argument {spec.name} is not a scalar")
    _want(ctx, s, spec.dtype is None or spec.dtype == s.dtype, f"argument {spec.name} is {spec.dtype}")


_TYPE_RULES: dict[type, Callable[[_Context, ir.Stmt], None]] = {
    ir.Const: _check_const,
    ir.UnaryOp: _check_unary,
    ir.BinaryOp: _check_binary,
    ir.TernarySelect: _check_select,
    ir.Cast: _check_cast,
    ir.LocalLoad: _check_local,
    ir.LocalStore: _check_local,
    ir.GlobalLoad: _check_memory,
    ir.GlobalStore: _check_memory,
    ir.AtomicOp: _check_memory,
    ir.ShapeOf: _check_shape,
    ir.ArgLoad: _check_arg,
    ir.RangeFor: lambda ctx, s: _want(ctx, s, s.begin.dtype == s.end.dtype == T.i32, "loop bounds must be i32"),
    ir.LoopIndex: lambda ctx, s: _want(ctx, s, s.dtype == T.i32, "loop index must be i32"),
    ir.If: lambda ctx, s: _want(ctx, s, s.cond.dtype == T.u1, "if condition must be u1"),
}
# Containers are checked even when dtype checks are off (they are structure, not types).
_STRUCTURE_RULES: dict[type, Callable[[_Context, ir.Stmt], None]] = {
    ir.GlobalPtr: _check_ptr,
}

_LOOPS = (ir.RangeFor, ir.While)


# ---- the walk -----------------------------------------------------------------------------------------------

def _check_operand(ctx: _Context, stmt: ir.Stmt, operand: ir.Stmt | None, name: str, scope: _Scope) -> None:
    if operand is None:
        _fail(ctx, stmt, f"operand {name} is missing")
    if id(operand) not in scope.defined:
        _fail(ctx, stmt, f"operand {name} ({type(operand).__name__}) is not defined before it in an enclosing block")
    if ctx.check_types and operand.dtype is None and not isinstance(operand, ir.RangeFor):
        _fail(ctx, stmt, f"operand {name} ({type(operand).__name__}) has no value")


def _check_stmt(ctx: _Context, stmt: ir.Stmt, scope: _Scope) -> None:
    if id(stmt) in ctx.seen:
        _fail(ctx, stmt, "statement appears twice in the IR")
    ctx.seen.add(id(stmt))
    for name in stmt.OPERANDS:
        operand = getattr(stmt, name)
        if isinstance(stmt, ir.LoopIndex) and name == "loop":
            _want(ctx, stmt, any(loop is operand for loop in scope.loops), "loop index outside its loop")
            continue
        if operand is None and name in stmt.OPTIONAL:
            continue
        _check_operand(ctx, stmt, operand, name, scope)
    for name in stmt.OPERAND_LISTS:
        for operand in getattr(stmt, name):
            _check_operand(ctx, stmt, operand, name, scope)
    if isinstance(stmt, (ir.Break, ir.Continue)):
        _want(ctx, stmt, any(isinstance(loop, _LOOPS) for loop in scope.loops), "outside any loop")
    rule = _STRUCTURE_RULES.get(type(stmt))
    if rule is not None:
        rule(ctx, stmt)
    if ctx.check_types:
        rule = _TYPE_RULES.get(type(stmt))
        if rule is not None:
            rule(ctx, stmt)
    if stmt.BLOCKS:
        inner = scope.inside(stmt) if isinstance(stmt, _LOOPS) else scope
        for child in stmt.blocks():
            _check_block(ctx, child, inner)


def _check_block(ctx: _Context, block: ir.Block, scope: _Scope) -> None:
    """Statements of `block` are visible to later statements and their blocks, and nowhere else."""
    defined_here: list[int] = []
    for stmt in block.stmts:
        _check_stmt(ctx, stmt, scope)
        scope.defined.add(id(stmt))
        defined_here.append(id(stmt))
    scope.defined.difference_update(defined_here)


def _check_task(ctx: _Context, task: ir.Task) -> None:
    where = f"{ctx.where}: task {task.name}"
    if task.kind == "serial":
        if task.loop is not None or task.bounds.stmts:
            raise InternalCompilerError(f"{where}: a serial task has no loop and no bounds", task.loc)
        _check_block(ctx, task.body, _Scope(set(), []))
        return
    if task.kind != "range":
        raise InternalCompilerError(f"{where}: unknown task kind {task.kind!r}", task.loc)
    loop = task.loop
    if not isinstance(loop, ir.RangeFor) or not loop.parallel or loop.body is not task.body:
        raise InternalCompilerError(f"{where}: a range task needs a parallel RangeFor whose body is the task body",
                                    task.loc)
    for stmt in task.bounds.stmts:
        _want(ctx, stmt, isinstance(stmt, BOUNDS_CLASSES), "not allowed in a task's bounds")
    _check_block(ctx, task.bounds, _Scope(set(), []))
    in_bounds = {id(stmt) for stmt in task.bounds.stmts}
    for name in ("begin", "end"):
        _want(ctx, loop, id(getattr(loop, name)) in in_bounds, f"loop {name} is not defined in bounds")
    if ctx.check_types:
        _TYPE_RULES[ir.RangeFor](ctx, loop)
    _want(ctx, loop, id(loop) not in ctx.seen, "loop appears twice in the IR")
    ctx.seen.add(id(loop))
    # The body sees nothing from outside itself except the task loop's index.
    _check_block(ctx, task.body, _Scope(set(), [loop]))


def verify(kernel: ir.KernelIR | ir.OffloadedKernel, check_types: bool = True, stage: str = "") -> None:
    """Raise InternalCompilerError at the first violation. `check_types=False` checks structure only (the
    frontend's output before typecheck has repaired dtypes); `stage` names the pass that produced the IR."""
    where = f"verify {kernel.name}" + (f" after {stage}" if stage else "")
    ctx = _Context(kernel, check_types, where, containers={id(slot) for slot in kernel.containers})
    if any(id(slot) not in ctx.containers for slot in kernel.returns):
        raise InternalCompilerError(f"{where}: the returns slot is not among the containers", kernel.loc)
    if isinstance(kernel, ir.OffloadedKernel):
        for task in kernel.tasks:
            _check_task(ctx, task)
    else:
        _check_block(ctx, kernel.body, _Scope(set(), []))
