"""Register reductions: which atomics of a range task accumulate in a register instead of hitting memory.

`loss[None] += v` in a parallel loop is an atomic on one address from every index; with several workers the
cache line bounces between cores on every iteration (measured: 65536 float adds to one address took ~1-2 ms
on two cores), and on a GPU the atomics to one address serialise. When an atomic's address is a compile-time
constant and nothing else in the task touches that container, the backends combine the values in a register
and apply one atomic at the end (Taichi calls this thread-local storage): the CPU per chunk of a
`wk_parallel_for`, CUDA and AMDGPU per thread and then across the warp or wave, WGSL per invocation and then
across the workgroup. Every other atomic stays an atomic. Floating-point sums then associate differently, which atomics
never promised anyway."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wgkern.ir import nodes as ir
from wgkern.ir.ops import AtomicOpKind, BinaryOpKind
from wgkern.ir.visitor import walk
from wgkern.passes.analysis import first_simt_use

# How the register combines two values of one reduction (SUB sums, then subtracts the sum once).
COMBINE: dict[AtomicOpKind, BinaryOpKind] = {
    AtomicOpKind.ADD: BinaryOpKind.ADD, AtomicOpKind.SUB: BinaryOpKind.ADD,
    AtomicOpKind.MIN: BinaryOpKind.MIN, AtomicOpKind.MAX: BinaryOpKind.MAX,
    AtomicOpKind.AND: BinaryOpKind.BIT_AND, AtomicOpKind.OR: BinaryOpKind.BIT_OR,
    AtomicOpKind.XOR: BinaryOpKind.BIT_XOR, AtomicOpKind.MUL: BinaryOpKind.MUL,
}


@dataclass(slots=True, eq=False)
class ChunkReduction:
    """One register: the atomics (same container, same constant index, same op) it replaces."""
    op: AtomicOpKind
    ptr: ir.GlobalPtr           # a representative address (constant indices: valid anywhere in the function)
    dtype: Any


def identity(op: AtomicOpKind, dtype: Any) -> int | float:
    """The value the register starts from: combining it with x gives x."""
    if op in (AtomicOpKind.ADD, AtomicOpKind.SUB, AtomicOpKind.OR, AtomicOpKind.XOR):
        return 0
    if op is AtomicOpKind.MUL:
        return 1
    if op is AtomicOpKind.AND:
        return (1 << dtype.bits) - 1 if dtype.is_unsigned else -1
    if dtype.is_float:
        return float("inf") if op is AtomicOpKind.MIN else float("-inf")
    low, high = (0, (1 << dtype.bits) - 1) if dtype.is_unsigned else (-(1 << (dtype.bits - 1)),
                                                                       (1 << (dtype.bits - 1)) - 1)
    return high if op is AtomicOpKind.MIN else low


def chunk_reductions(task: ir.Task) -> dict[ir.AtomicOp, ChunkReduction]:
    """The atomics of `task`'s body that may accumulate per chunk, each mapped to its register. None in a task
    that uses wk.simt: its atomics may be on a block's shared array, and its blocks are the user's."""
    if first_simt_use(task.body) is not None:
        return {}
    stmts = list(walk(task.body))
    used: set[ir.Stmt] = set()
    for stmt in stmts:
        used.update(stmt.operands())
    candidates: dict[ir.ContainerSlot, list[ir.AtomicOp]] = {}
    disqualified: set[ir.ContainerSlot] = set()
    for stmt in stmts:
        if isinstance(stmt, ir.AtomicOp):
            slot = stmt.ptr.container
            if (stmt not in used and stmt.op in COMBINE and not stmt.ptr.dtype.is_bool
                    and stmt.value.dtype == stmt.ptr.dtype
                    and all(isinstance(index, ir.Const) for index in stmt.ptr.indices)):
                candidates.setdefault(slot, []).append(stmt)
            else:
                disqualified.add(slot)
        elif isinstance(stmt, (ir.GlobalLoad, ir.GlobalStore)):
            disqualified.add(stmt.ptr.container)
    plan: dict[ir.AtomicOp, ChunkReduction] = {}
    for slot, atomics in candidates.items():
        if slot in disqualified:
            continue
        registers: dict[tuple, ChunkReduction] = {}
        for atomic in atomics:
            key = (atomic.op, tuple(index.value for index in atomic.ptr.indices))
            register = registers.get(key)
            if register is None:
                register = registers[key] = ChunkReduction(atomic.op, atomic.ptr, atomic.ptr.dtype)
            plan[atomic] = register
    return plan
