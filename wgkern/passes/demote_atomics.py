"""Atomics that no other thread can race with become a load, the operation and a store (Taichi's demotion).

`x.grad[f, p] += ...` in a parallel loop over `p` is an atomic add, and the reverse-mode transform writes every
gradient accumulation as one. Where each index of the loop owns the elements it updates, the atomic is only
cost: f32 adds are compare-and-swap loops on x86 and in WGSL. This pass, run on the offloaded kernel a backend
compiles (launch.py, before passes/vectorize.py, copying every task it changes so the IR the reverse and
forward-mode pipelines start from keeps its atomics), rewrites an `add`, `sub`, `mul`, `and`, `or` or `xor`
atomic on a field into GlobalLoad, BinaryOp, GlobalStore (its value: the loaded one, as the atomic's was) when
- the task is serial (one thread runs it), or
- the task is a range task and every access to that field in it (loads, stores, atomics) has the loop's index
  on one common axis and constants inside their extent on the axes after it, and either
  - the axes before it hold the same loop-invariant value in every access: index `p` then touches only the
    elements [base + p * stride, base + (p + 1) * stride) of the row-major storage, whatever `p` and `base`
    are (an index outside its axis is checked on the flat offset alone, which stays in that slice), or
  - the loop runs inside the axis (constant bounds within [0, extent)): the flat offset modulo the extent
    times the stride is then p * stride + (the inner axes' part), which only index `p` gives, whatever the
    axes before hold (`F.grad[f + 1, p]` read and `F.grad[f, p]` accumulated in one loop),
  so no two indices share an element.
Fields only: two ndarray arguments may be the same array, and nothing proves a temp unshared. A field touched by
any other statement than an access (a wide access) keeps its atomics, as do elements narrower than 32 bits."""
from __future__ import annotations

from wgkern.ir import nodes as ir
from wgkern.ir.clone import clone_block, clone_stmt
from wgkern.ir.ops import AtomicOpKind as A
from wgkern.ir.ops import BinaryOpKind as B
from wgkern.ir.visitor import walk, walk_with_parent

NAME = "demote_atomics"

_BINARY_OF = {A.ADD: B.ADD, A.SUB: B.SUB, A.MUL: B.MUL, A.AND: B.BIT_AND, A.OR: B.BIT_OR, A.XOR: B.BIT_XOR}
_INVARIANT_OPS = frozenset({B.ADD, B.SUB, B.MUL, B.FLOORDIV, B.MOD, B.MIN, B.MAX})


def run(kernel: ir.OffloadedKernel) -> ir.OffloadedKernel:
    """`kernel` with the atomics of its tasks demoted where that is safe (new Task objects for the tasks that
    change); `kernel` itself if none does."""
    tasks = [_demote_task(task) or task for task in kernel.tasks]
    if all(new is old for new, old in zip(tasks, kernel.tasks)):
        return kernel
    return ir.OffloadedKernel(kernel.name, kernel.args, kernel.containers, tasks, kernel.loc, kernel.returns,
                              kernel.host_loops)


def demotable(task: ir.Task) -> set[ir.ContainerSlot]:
    """The fields whose atomics in `task` no other thread of it can race with."""
    atomic_fields = {s.ptr.container for s in walk(task.body) if _rewritable(s) and s.ptr.container.kind == "field"}
    if not atomic_fields:
        return set()
    if task.kind == "serial":
        return atomic_fields
    loop = task.loop
    if task.kind != "range" or loop is None:
        return set()
    pointers: dict[ir.ContainerSlot, list[ir.GlobalPtr]] = {slot: [] for slot in atomic_fields}
    refused: set[ir.ContainerSlot] = set()
    for stmt in walk(task.body):
        if isinstance(stmt, ir.GlobalPtr):
            if stmt.container in pointers:
                pointers[stmt.container].append(stmt)
        elif not isinstance(stmt, ir.ShapeOf):
            container = getattr(stmt, "container", None)
            if container in pointers:
                refused.add(container)
    return {slot for slot, ptrs in pointers.items() if slot not in refused and _owned_per_index(ptrs, loop)}


def _rewritable(stmt: ir.Stmt) -> bool:
    """An atomic of a demotable op on elements of 32 bits or more (WGSL keeps narrower ones in shared words)."""
    return isinstance(stmt, ir.AtomicOp) and stmt.op in _BINARY_OF and stmt.value.dtype == stmt.dtype and \
        stmt.dtype.nbytes >= 4


def _owned_per_index(ptrs: list[ir.GlobalPtr], loop: ir.RangeFor) -> bool:
    """Every pointer has the loop index on one common axis and in-extent constants after it; before it, the
    same invariant values in every pointer, unless the loop stays inside the axis."""
    first = ptrs[0]
    axes = [k for k, index in enumerate(first.indices) if _is_index_of(index, loop)]
    if len(axes) != 1:
        return False
    axis = axes[0]
    shape = first.container.shape
    inside = shape is not None and isinstance(loop.begin, ir.Const) and isinstance(loop.end, ir.Const) and \
        0 <= int(loop.begin.value) and int(loop.end.value) <= shape[axis]
    for ptr in ptrs:
        if len(ptr.indices) != len(first.indices) or not _is_index_of(ptr.indices[axis], loop):
            return False
        for before, reference in zip(ptr.indices[:axis], first.indices[:axis]):
            if not inside and not (_invariant(before) and _same_value(before, reference)):
                return False
        for k in range(axis + 1, len(ptr.indices)):
            index = ptr.indices[k]
            if not isinstance(index, ir.Const) or shape is None or not 0 <= int(index.value) < shape[k]:
                return False
    return True


def _is_index_of(stmt: ir.Stmt, loop: ir.RangeFor) -> bool:
    return isinstance(stmt, ir.LoopIndex) and stmt.loop is loop


def _invariant(stmt: ir.Stmt, depth: int = 0) -> bool:
    """A value of constants, scalar arguments and shapes alone: the same for every index of the task."""
    if depth > 16:
        return False
    if isinstance(stmt, (ir.Const, ir.ArgLoad, ir.ShapeOf)):
        return True
    if isinstance(stmt, ir.Cast):
        return _invariant(stmt.operand, depth + 1)
    return isinstance(stmt, ir.BinaryOp) and stmt.op in _INVARIANT_OPS and \
        _invariant(stmt.lhs, depth + 1) and _invariant(stmt.rhs, depth + 1)


def _same_value(a: ir.Stmt, b: ir.Stmt) -> bool:
    """Structurally equal invariant expressions (the same statement, or equal trees)."""
    if a is b:
        return True
    if type(a) is not type(b) or a.dtype != b.dtype:
        return False
    if isinstance(a, ir.Const):
        return a.value == b.value and type(a.value) is type(b.value)
    if isinstance(a, ir.ArgLoad):
        return a.arg_index == b.arg_index
    if isinstance(a, ir.ShapeOf):
        return a.container is b.container and a.axis == b.axis
    if isinstance(a, ir.Cast):
        return a.bitcast == b.bitcast and _same_value(a.operand, b.operand)
    return isinstance(a, ir.BinaryOp) and a.op == b.op and _same_value(a.lhs, b.lhs) and \
        _same_value(a.rhs, b.rhs)


def _demote_task(task: ir.Task) -> ir.Task | None:
    fields = demotable(task)
    if not fields:
        return None
    value_map: dict[ir.Stmt, ir.Stmt] = {}
    bounds = clone_block(task.bounds, value_map)
    if task.loop is not None:
        loop = clone_stmt(task.loop, value_map)
        body = loop.body
    else:
        loop, body = None, clone_block(task.body, value_map)
    loaded: dict[ir.Stmt, ir.Stmt] = {}
    for stmt, block in list(walk_with_parent(body)):
        if _rewritable(stmt) and stmt.ptr.container in fields:
            old = ir.GlobalLoad(ptr=stmt.ptr, dtype=stmt.dtype, loc=stmt.loc)
            new = ir.BinaryOp(op=_BINARY_OF[stmt.op], lhs=old, rhs=stmt.value, dtype=stmt.dtype, loc=stmt.loc)
            store = ir.GlobalStore(ptr=stmt.ptr, value=new, loc=stmt.loc)
            at = next(k for k, s in enumerate(block.stmts) if s is stmt)
            block.stmts[at:at + 1] = [old, new, store]
            loaded[stmt] = old
    for stmt in walk(body):
        stmt.replace_operands(loaded)
    return ir.Task(task.name, task.kind, bounds, loop, body, task.loc)
