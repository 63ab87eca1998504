"""Read-only facts about kernels that several passes and the runtime need.

Owns: which container slots a kernel may read or write (the runtime bumps generations from `written_slots`),
which statements are pure values and which have effects (simplify's DCE/CSE and offload agree through these)."""
from __future__ import annotations

from typing import Iterator, Mapping

from wgkern.ir import nodes as ir
from wgkern.ir.visitor import walk

# Values computed from their operands alone: safe to fold, clone, merge (CSE) or drop when unused.
PURE_VALUE_CLASSES = (ir.Const, ir.ArgLoad, ir.ShapeOf, ir.UnaryOp, ir.BinaryOp, ir.TernarySelect, ir.Cast,
                      ir.GlobalPtr, ir.LoopIndex)
# Reads of memory: droppable when unused, but a value may change between two of them.
READ_CLASSES = (ir.GlobalLoad, ir.LocalLoad)
# Statements that change memory or the random stream. Any class not known here counts as having effects.
WRITE_CLASSES = (ir.GlobalStore, ir.AtomicOp, ir.LocalStore)
_NO_EFFECT_CLASSES = PURE_VALUE_CLASSES + READ_CLASSES + (ir.Alloca,)


def kernel_blocks(kernel: ir.KernelIR | ir.OffloadedKernel) -> Iterator[ir.Block]:
    """The top-level blocks of a kernel: its body, or each task's bounds and body."""
    if isinstance(kernel, ir.OffloadedKernel):
        for task in kernel.tasks:
            yield task.bounds
            yield task.body
    else:
        yield kernel.body


def kernel_stmts(kernel: ir.KernelIR | ir.OffloadedKernel) -> Iterator[ir.Stmt]:
    for block in kernel_blocks(kernel):
        yield from walk(block)


def written_slots(kernel: ir.KernelIR | ir.OffloadedKernel) -> set[ir.ContainerSlot]:
    """Containers a launch may write (global stores and atomics; temps included, a block's shared arrays not)."""
    return {stmt.ptr.container for stmt in kernel_stmts(kernel) if isinstance(stmt, (ir.GlobalStore, ir.AtomicOp))
            and stmt.ptr.container.kind != "shared"}


def read_slots(kernel: ir.KernelIR | ir.OffloadedKernel) -> set[ir.ContainerSlot]:
    """Containers whose data a launch may read (global loads and atomics; shapes are not data; a block's shared
    arrays are not containers of the launch)."""
    return {stmt.ptr.container for stmt in kernel_stmts(kernel) if isinstance(stmt, (ir.GlobalLoad, ir.AtomicOp))
            and stmt.ptr.container.kind != "shared"}


def shared_slots(block: ir.Block) -> list[ir.ContainerSlot]:
    """The block's shared arrays (wk.simt.block.SharedArray), in order of first use."""
    found: dict[int, ir.ContainerSlot] = {}
    for stmt in walk(block):
        if isinstance(stmt, ir.GlobalPtr) and stmt.container.kind == "shared":
            found.setdefault(id(stmt.container), stmt.container)
    return list(found.values())


# SimtOps every arch has (Taichi's top-level ti.global_thread_idx()): they need no blocks of threads.
PORTABLE_SIMT_OPS = frozenset({"thread.global_thread_idx"})
# Memory fences: they wait for no other thread, so serial code may have them too (Quadrants runs them there).
FENCE_OPS = frozenset({"block.mem_sync", "block.mem_fence", "grid.memfence", "grid.mem_fence"})


def first_simt_use(block: ir.Block, ignored: frozenset[str] = PORTABLE_SIMT_OPS) -> ir.Stmt | None:
    """The first statement of `block` that needs a GPU's threads: a wk.simt call (but the `ignored` ops) or a
    shared-array access."""
    for stmt in walk(block):
        if isinstance(stmt, ir.SimtOp) and stmt.op not in ignored:
            return stmt
        if isinstance(stmt, ir.GlobalPtr) and stmt.container.kind == "shared":
            return stmt
    return None


def describe_simt_use(stmt: ir.Stmt) -> str:
    """How the user wrote it: 'wk.simt.block.sync()', 'wk.global_thread_idx()', 'wk.simt.Tile16x16' (a tile's
    subgroup-size check) or 'wk.simt.block.SharedArray'."""
    if isinstance(stmt, ir.SimtOp) and stmt.op == ir.TILE_SUBGROUP_CHECK:
        size = stmt.args[0].value
        return f"wk.simt.Tile{size}x{size}"
    if isinstance(stmt, ir.SimtOp):
        return f"wk.{stmt.op.split('.')[1]}()" if stmt.op in PORTABLE_SIMT_OPS else f"wk.simt.{stmt.op}()"
    return "wk.simt.block.SharedArray"


def is_pure_value(stmt: ir.Stmt) -> bool:
    return type(stmt) in PURE_VALUE_CLASSES


def has_effects(stmt: ir.Stmt) -> bool:
    """Whether executing `stmt` (with its blocks) can be observed beyond the values it defines: global
    writes, local writes, random draws, control transfers (break/continue/return), unknown statements."""
    if type(stmt) in _NO_EFFECT_CLASSES:
        return False
    if isinstance(stmt, (ir.RangeFor, ir.If)):
        return any(has_effects(child) for block in stmt.blocks() for child in block.stmts)
    return True


def block_has_effects(block: ir.Block) -> bool:
    return any(has_effects(stmt) for stmt in block.stmts)


def has_global_effects(block: ir.Block) -> bool:
    """Whether running `block` may write global memory or do something unknown (local stores, loop control
    and random draws inside it do not count)."""
    for stmt in walk(block):
        if type(stmt) in _NO_EFFECT_CLASSES or isinstance(stmt, _LOCAL_ONLY_CLASSES):
            continue
        return True
    return False


_LOCAL_ONLY_CLASSES = (ir.LocalStore, ir.RandomValue, ir.RangeFor, ir.If, ir.While, ir.Break, ir.Continue)


def stored_allocas(block: ir.Block) -> set[ir.Stmt]:
    """Locals stored anywhere inside `block` (nested blocks included)."""
    return {stmt.alloca for stmt in walk(block) if isinstance(stmt, ir.LocalStore)}


def block_writes(block: ir.Block, known: Mapping[ir.Block, tuple[set[ir.Stmt], bool]]) -> tuple[set[ir.Stmt], bool]:
    """(stored_allocas(block), has_global_effects(block)) in one pass over `block`'s own statements, taking each
    nested block's pair from `known` where it is there (a caller that summarises blocks inner first then reads
    every statement once, where the two functions read a statement once per enclosing block)."""
    stored: set[ir.Stmt] = set()
    effects = False
    for stmt in block.stmts:
        if isinstance(stmt, ir.LocalStore):
            stored.add(stmt.alloca)
        elif type(stmt) not in _NO_EFFECT_CLASSES and not isinstance(stmt, _LOCAL_ONLY_CLASSES):
            effects = True
        for child in stmt.blocks():
            inner = known.get(child)
            if inner is None:
                inner = block_writes(child, known)
            stored |= inner[0]
            effects = effects or inner[1]
    return stored, effects


def has_loop(block: ir.Block) -> bool:
    """Whether `block` holds a loop (RangeFor or While), at any depth."""
    return any(isinstance(stmt, (ir.RangeFor, ir.While)) for stmt in walk(block))


def leaves_loop_body(stmts: list[ir.Stmt]) -> bool:
    """Whether a loop whose body is `stmts` can be left early by a Break, Continue or Return of its own
    (inner loops' ones do not count)."""
    for stmt in stmts:
        if isinstance(stmt, (ir.Break, ir.Continue, ir.Return)):
            return True
        if isinstance(stmt, ir.If) and (leaves_loop_body(stmt.then_block.stmts)
                                        or leaves_loop_body(stmt.else_block.stmts)):
            return True
    return False
