"""Wide memory access for element-wise parallel loops: each thread of a range task handles WIDTH consecutive
indices with one VectorLoad/VectorStore per container, and a scalar tail where a group is not whole.

Owns the legality test and the rewrite; the backends lower VectorLoad/VectorLane/VectorStore (WGSL: a
`vec4` view of the binding; LLVM: `<4 x T>` loads and stores). It runs on the offloaded kernel a backend
compiles (launch.py), after the pipeline, and copies every task it changes, so the offloaded IR the
reverse and forward-mode pipelines start from stays scalar.

A range task is rewritten when its loop runs forward from a constant non-negative multiple of WIDTH, carries
no wk.loop_config(block_dim=...), and its body
- touches at least one *wide* container: a 1-d field or ndarray of f32/i32/u32 whose every access in the body
  is a load or store at exactly the loop index, at the body's top level, and never atomic;
- writes no other container except at exactly the loop index or only atomically (no cross-iteration dependence
  through memory: a container read at another index is never written in the loop);
- holds no loop (a body that loops is bound by its arithmetic, not its memory, and a quarter of the threads
  would run it), no break/continue/return, and no random numbers, prints, asserts, wk.simt operations or
  adstacks (their per-thread order or state would change).
The rewritten body, for group j of indices base = begin + WIDTH * j:
    if WIDTH <= end - base and WIDTH <= len(c) - base for every wide container c:
        the body's top-level statements in order: each wide load or store once for the WIDTH indices, every
        other statement (nested blocks included) once per index
    else:
        for k in 0 .. WIDTH - 1 (unrolled): if k < end - base: the original body at index base + k
so every index runs its statements in its original order, and out-of-range accesses behave as before."""
from __future__ import annotations

from wgkern.ir import nodes as ir
from wgkern.ir.clone import clone_block, clone_stmt
from wgkern.ir.ops import BinaryOpKind
from wgkern.ir.visitor import walk
from wgkern import dtypes as T

NAME = "vectorize"
WIDTH = 4                        # elements per wide access (16 bytes of 32-bit elements)
WIDE_DTYPES = (T.f32, T.i32, T.u32)
MAX_BODY_STATEMENTS = 400        # the rewrite holds the body 2 * WIDTH times: larger bodies stay scalar

_REFUSED = (ir.RangeFor, ir.While, ir.Break, ir.Continue, ir.Return, ir.RandomValue, ir.Print, ir.AssertFail,
            ir.SimtOp, *ir.AD_STMT_CLASSES)


def run(kernel: ir.OffloadedKernel, width: int = WIDTH) -> ir.OffloadedKernel:
    """`kernel` with its eligible range tasks rewritten (new Task objects); `kernel` itself if none is."""
    tasks = [_vectorize_task(task, width) or task for task in kernel.tasks]
    if all(new is old for new, old in zip(tasks, kernel.tasks)):
        return kernel
    return ir.OffloadedKernel(kernel.name, kernel.args, kernel.containers, tasks, kernel.loc, kernel.returns,
                              kernel.host_loops)


# ---- legality -----------------------------------------------------------------------------------------------

def wide_containers(task: ir.Task, width: int = WIDTH) -> list[ir.ContainerSlot]:
    """The containers the rewrite would access `width` elements at a time; [] when the task stays scalar."""
    loop = task.loop
    if task.kind != "range" or loop is None or loop.reversed or loop.block_dim or loop.serialize:
        return []
    if not isinstance(loop.begin, ir.Const) or int(loop.begin.value) % width or int(loop.begin.value) < 0:
        return []
    body = task.body
    statements = 0
    top_level = set(map(id, body.stmts))
    accesses: dict[int, list[ir.Stmt]] = {}      # container id -> its load/store/atomic statements
    slots: dict[int, ir.ContainerSlot] = {}
    for stmt in walk(body):
        statements += 1
        if isinstance(stmt, _REFUSED):
            return []
        if isinstance(stmt, (ir.GlobalLoad, ir.GlobalStore, ir.AtomicOp)):
            slot = stmt.ptr.container
            if slot.kind == "shared":
                return []
            accesses.setdefault(id(slot), []).append(stmt)
            slots[id(slot)] = slot
    if statements > MAX_BODY_STATEMENTS:
        return []
    wide = []
    for key, stmts in accesses.items():
        slot = slots[key]
        exact = [_at_index(s.ptr, loop) for s in stmts]
        atomic = [isinstance(s, ir.AtomicOp) for s in stmts]
        writes = any(isinstance(s, (ir.GlobalStore, ir.AtomicOp)) for s in stmts)
        if all(atomic):
            continue                     # only atomic updates: any order of indices gives the same result
        if writes and not all(exact):
            return []                    # written here, accessed at another index: a cross-iteration dependence
        if (all(exact) and not any(atomic) and slot.ndim == 1 and slot.dtype in WIDE_DTYPES
                and slot.kind in ("field", "ndarray")
                and all(id(s) in top_level and id(s.ptr) in top_level for s in stmts)):
            wide.append(slot)
    return wide


def _at_index(ptr: ir.GlobalPtr, loop: ir.RangeFor) -> bool:
    return len(ptr.indices) == 1 and isinstance(ptr.indices[0], ir.LoopIndex) and ptr.indices[0].loop is loop


# ---- the rewrite ----------------------------------------------------------------------------------------------

def _vectorize_task(task: ir.Task, width: int) -> ir.Task | None:
    wide = wide_containers(task, width)
    if not wide:
        return None
    loop, loc = task.loop, task.loc
    bounds_map: dict[ir.Stmt, ir.Stmt] = {}
    bounds = clone_block(task.bounds, bounds_map)
    begin, end = bounds_map.get(loop.begin, loop.begin), bounds_map.get(loop.end, loop.end)
    b = _Emitter(bounds, loc)
    # i32 arithmetic that cannot wrap: end - begin only where end > begin >= 0
    count = b.add(ir.TernarySelect(cond=b.binary(BinaryOpKind.CMP_GT, end, begin),
                                   true_value=b.binary(BinaryOpKind.SUB, end, begin), false_value=b.const(0),
                                   dtype=T.i32, loc=loc))
    whole = b.binary(BinaryOpKind.FLOORDIV, count, b.const(width))
    partial = b.binary(BinaryOpKind.CMP_GT, b.binary(BinaryOpKind.MOD, count, b.const(width)), b.const(0))
    groups = b.binary(BinaryOpKind.ADD, whole, b.add(ir.Cast(operand=partial, dtype=T.i32, loc=loc)))
    new_loop = ir.RangeFor(begin=b.const(0), end=groups, body=ir.Block(), parallel=True, name=loop.name, loc=loop.loc)

    body = _single_loop_index(task.body, loop)
    e = _Emitter(new_loop.body, loc)
    # the body may reference nothing outside itself: the bounds are recomputed here (pure; drivers hoist them)
    inner_map: dict[ir.Stmt, ir.Stmt] = {}
    for stmt in task.bounds.stmts:
        e.add(clone_stmt(stmt, inner_map))
    inner_end = inner_map.get(loop.end) or e.const(loop.end.value)
    group = e.add(ir.LoopIndex(loop=new_loop, dtype=T.i32, loc=loc))
    base = e.binary(BinaryOpKind.ADD, e.const(int(loop.begin.value)), e.binary(BinaryOpKind.MUL, group, e.const(width)))
    # counts from base (0 <= base < end), which cannot wrap where base + width could
    left = e.binary(BinaryOpKind.SUB, inner_end, base)
    full = e.binary(BinaryOpKind.CMP_LE, e.const(width), left)
    for slot in wide:
        extent = e.const(slot.shape[0]) if slot.shape is not None else \
            e.add(ir.ShapeOf(container=slot, axis=0, dtype=T.i32, loc=loc))
        room = e.binary(BinaryOpKind.SUB, extent, base)
        full = e.binary(BinaryOpKind.BIT_AND, full, e.binary(BinaryOpKind.CMP_LE, e.const(width), room))
    branch = e.add(ir.If(cond=full, then_block=ir.Block(), else_block=ir.Block(), loc=loc))
    _wide_group(branch.then_block, body, base, wide, width, loc)
    _scalar_tail(branch.else_block, body, base, left, width, loc)
    return ir.Task(task.name, task.kind, bounds, new_loop, new_loop.body, loc)


def _single_loop_index(body: ir.Block, loop: ir.RangeFor) -> ir.Block:
    """A copy of `body` whose first statement is its only LoopIndex of `loop` (every use redirected to it)."""
    copy = clone_block(body, {})
    index = ir.LoopIndex(loop=loop, dtype=T.i32, loc=loop.loc)
    redirect: dict[ir.Stmt, ir.Stmt] = {}
    for stmt in walk(copy):
        if isinstance(stmt, ir.LoopIndex) and stmt.loop is loop:
            redirect[stmt] = index
    blocks = [copy] + [child for stmt in walk(copy) for child in stmt.blocks()]
    for block in blocks:
        block.stmts = [s for s in block.stmts if s not in redirect]
        for stmt in block.stmts:
            stmt.replace_operands(redirect)
    copy.stmts.insert(0, index)
    return copy


def _wide_group(out: ir.Block, body: ir.Block, base: ir.Stmt, wide: list[ir.ContainerSlot], width: int,
                loc) -> None:
    """The group's indices base..base+width-1: wide accesses once, every other statement once per index."""
    e = _Emitter(out, loc)
    index, rest = body.stmts[0], body.stmts[1:]
    lanes: list[dict[ir.Stmt, ir.Stmt]] = []
    for k in range(width):
        lanes.append({index: base if k == 0 else e.binary(BinaryOpKind.ADD, base, e.const(k))})
    wide_ids = set(map(id, wide))
    for stmt in rest:
        if isinstance(stmt, ir.GlobalPtr) and id(stmt.container) in wide_ids:
            continue                     # only wide loads and stores use it
        if isinstance(stmt, ir.GlobalLoad) and id(stmt.ptr.container) in wide_ids:
            vector = e.add(ir.VectorLoad(container=stmt.ptr.container, index=base, width=width,
                                         dtype=stmt.ptr.container.dtype, loc=stmt.loc))
            for k, lane in enumerate(lanes):
                lane[stmt] = e.add(ir.VectorLane(vector=vector, lane=k, dtype=stmt.dtype, loc=stmt.loc))
            continue
        if isinstance(stmt, ir.GlobalStore) and id(stmt.ptr.container) in wide_ids:
            slot = stmt.ptr.container
            values = []
            for lane in lanes:
                value = lane.get(stmt.value, stmt.value)
                if value.dtype != slot.dtype:
                    value = e.add(ir.Cast(operand=value, dtype=slot.dtype, loc=stmt.loc))
                values.append(value)
            e.add(ir.VectorStore(container=slot, index=base, values=values, loc=stmt.loc))
            continue
        for lane in lanes:
            e.add(clone_stmt(stmt, lane))


def _scalar_tail(out: ir.Block, body: ir.Block, base: ir.Stmt, left: ir.Stmt, width: int, loc) -> None:
    """The indices base + k for k < min(width, left) (left = end - base) one at a time through the original
    body, unrolled: the task keeps no loop (a loop would make lavapipe's shaders bind and watch a loop-limit
    buffer)."""
    e = _Emitter(out, loc)
    for k in range(width):
        inside = e.add(ir.If(cond=e.binary(BinaryOpKind.CMP_LT, e.const(k), left), then_block=ir.Block(),
                             else_block=ir.Block(), loc=loc))
        t = _Emitter(inside.then_block, loc)
        index = base if k == 0 else t.binary(BinaryOpKind.ADD, base, t.const(k))
        inside.then_block.stmts.extend(clone_block(ir.Block(body.stmts[1:]), {body.stmts[0]: index}).stmts)


class _Emitter:
    """Appends i32 arithmetic to a block."""

    def __init__(self, block: ir.Block, loc) -> None:
        self.block, self.loc = block, loc

    def add(self, stmt: ir.Stmt) -> ir.Stmt:
        return self.block.append(stmt)

    def const(self, value: int) -> ir.Stmt:
        return self.add(ir.Const(value=int(value), dtype=T.i32, loc=self.loc))

    def binary(self, op: BinaryOpKind, lhs: ir.Stmt, rhs: ir.Stmt) -> ir.Stmt:
        compare = op in (BinaryOpKind.CMP_LT, BinaryOpKind.CMP_LE, BinaryOpKind.CMP_GT)
        dtype = T.u1 if compare else lhs.dtype
        return self.add(ir.BinaryOp(op=op, lhs=lhs, rhs=rhs, dtype=dtype, loc=self.loc))
