"""Offload: splits a KernelIR into the tasks a backend launches (docs/internals.md "Offloaded kernels").

Each top-level RangeFor (unless serialize=True) becomes a parallel 'range' task whose begin/end are computed
in its `bounds`; runs of other top-level statements become one-thread 'serial' tasks. A top-level host loop
(`While.host_counter`, Quadrants' graph_do_while) has its body's statements spliced in among the top-level ones,
and the task range they become is recorded in `host_loops` for the launch to repeat. Task bodies are made
self-contained: pure values (constants, arguments, shapes, arithmetic) are cloned into the task that uses
them; top-level locals used by several tasks, and other values crossing tasks, go through 'temp' slots."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wgkern.errors import CompileError, SourceLoc
from wgkern.ir import nodes as ir
from wgkern.ir.clone import clone_block, clone_stmt
from wgkern.ir.host_eval import try_constant
from wgkern.ir.visitor import walk
from wgkern import dtypes as T
from wgkern.passes.analysis import (FENCE_OPS, PORTABLE_SIMT_OPS, describe_simt_use, first_simt_use,
                                    has_global_effects, leaves_loop_body)

NAME = "offload"

MAX_PARALLEL_ITERATIONS = 2 ** 31
# Values recomputed in every task that uses them rather than passed through memory.
_CLONABLE = (ir.Const, ir.ArgLoad, ir.ShapeOf, ir.UnaryOp, ir.BinaryOp, ir.TernarySelect, ir.Cast, ir.GlobalPtr)


@dataclass
class _Segment:
    """Consecutive top-level statements that become one task; `loop` is set for a parallel range."""
    stmts: list[ir.Stmt]
    loop: ir.RangeFor | None = None
    preamble: list[ir.Stmt] = field(default_factory=list)
    bounds: list[ir.Stmt] = field(default_factory=list)


def _is_parallel_loop(stmt: ir.Stmt) -> bool:
    return isinstance(stmt, ir.RangeFor) and not stmt.serialize


def _segments(top: list[ir.Stmt], markers: dict[ir.Stmt, tuple[str, ir.While]] | None = None,
              places: dict[ir.Stmt, int] | None = None) -> list[_Segment]:
    """Tasks-to-be of the top-level statements; a host-loop marker (see _splice_host_loops) ends the segment
    before it and belongs to none (`places[marker]`: how many segments come before it)."""
    segments: list[_Segment] = []
    cut = False
    for stmt in top:
        if markers and stmt in markers:
            cut = True
            if places is not None:
                places[stmt] = len(segments)
            continue
        if _is_parallel_loop(stmt):
            segments.append(_Segment([stmt], stmt))
        elif segments and segments[-1].loop is None and not cut:
            segments[-1].stmts.append(stmt)
        else:
            segments.append(_Segment([stmt]))
        cut = False
    return segments


# ---- host loops (Quadrants' graph_do_while) ---------------------------------------------------------------

def _host_loop_body(stmt: ir.Stmt) -> list[ir.Stmt] | None:
    """The body of a host loop without its closing counter test, or None when `stmt` is not one: a While
    marked with a host counter (frontend graph_do_while) that ends in `if <test>: break` and has no other exit."""
    if not isinstance(stmt, ir.While) or stmt.host_counter is None or not stmt.body.stmts:
        return None
    test = stmt.body.stmts[-1]
    if not (isinstance(test, ir.If) and not test.else_block.stmts and len(test.then_block.stmts) == 1
            and isinstance(test.then_block.stmts[0], ir.Break)):
        return None
    body = stmt.body.stmts[:-1]
    return None if leaves_loop_body(body) else body


def _splice_host_loops(top: list[ir.Stmt]) -> tuple[list[ir.Stmt], dict[ir.Stmt, tuple[str, ir.While]]]:
    """Top-level host loops (and host loops directly in their bodies) spliced into the statement list between
    two markers each (pure constants nothing uses: they survive the rewrites of build() and cut segments)."""
    flat: list[ir.Stmt] = []
    markers: dict[ir.Stmt, tuple[str, ir.While]] = {}

    def splice(stmts: list[ir.Stmt]) -> None:
        for stmt in stmts:
            body = _host_loop_body(stmt)
            if body is None:
                flat.append(stmt)
                continue
            for kind in ("begin", "end"):
                marker = ir.Const(value=0, dtype=T.i32, loc=stmt.loc)
                markers[marker] = (kind, stmt)
                flat.append(marker)
                if kind == "begin":
                    splice(body)

    splice(top)
    return flat, markers


def _host_loops(markers: dict[ir.Stmt, tuple[str, ir.While]], places: dict[ir.Stmt, int],
                tasks_before: list[int]) -> tuple[ir.HostLoop, ...]:
    """HostLoop task ranges from the markers' places among the segments (`tasks_before[k]`: the tasks made from
    segments before segment k; one entry per segment and a last one, the task count)."""
    opened: dict[ir.While, int] = {}
    loops: list[ir.HostLoop] = []
    for marker, (kind, loop) in markers.items():
        if kind == "begin":
            opened[loop] = places[marker]
        else:
            first, stop = tasks_before[opened.pop(loop)], tasks_before[places[marker]]
            if first == stop:
                raise CompileError("this wk.graph_do_while loop's body does nothing to global data, so it would "
                                   "repeat forever or not at all", loop.loc)
            loops.append(ir.HostLoop(first, stop, loop.host_counter, loop.loc))
    return tuple(sorted(loops, key=lambda h: (h.first, -h.stop)))


def _owners(segments: list[_Segment]) -> dict[ir.Stmt, int]:
    """Every statement (nested ones too) -> index of the segment holding its top-level ancestor."""
    owner: dict[ir.Stmt, int] = {}
    for index, segment in enumerate(segments):
        for stmt in segment.stmts:
            owner[stmt] = index
            for child in stmt.blocks():
                for nested in walk(child):
                    owner[nested] = index
    return owner


def _operand_uses(stmt: ir.Stmt) -> list[ir.Stmt]:
    """Operands that are values (a LoopIndex's loop is structure, not a value)."""
    if isinstance(stmt, ir.LoopIndex):
        return []
    return stmt.operands()


def _check_parallel_loop(loop: ir.RangeFor) -> None:
    begin, end = try_constant(loop.begin), try_constant(loop.end)
    if begin is not None and end is not None and end - begin >= MAX_PARALLEL_ITERATIONS:
        raise CompileError(f"a parallel loop of {end - begin} iterations is too long (the limit is 2**31 - 1); "
                           "split it into several loops", loop.loc)

    def breaks_directly(block: ir.Block) -> ir.Stmt | None:
        for stmt in block.stmts:
            if isinstance(stmt, ir.Break):
                return stmt
            if isinstance(stmt, ir.If):
                found = breaks_directly(stmt.then_block) or breaks_directly(stmt.else_block)
                if found is not None:
                    return found
        return None

    found = breaks_directly(loop.body)
    if found is not None:
        raise CompileError("`break` is not allowed in a parallel (outermost) loop; use "
                           "wk.loop_config(serialize=True) before the loop to run it serially", found.loc)


class _Offloader:
    def __init__(self, kernel: ir.KernelIR):
        self.kernel = kernel
        self.containers = list(kernel.containers)
        self.spill_slots: dict[ir.Stmt, ir.ContainerSlot] = {}
        self.spill_stores: dict[ir.Stmt, list[ir.Stmt]] = {}

    def new_temp(self, name: str, dtype: T.DataType) -> ir.ContainerSlot:
        slot = ir.ContainerSlot(name=f"{name}_tmp{len(self.containers)}", kind="temp", dtype=dtype, ndim=1,
                                shape=(1,))
        self.containers.append(slot)
        return slot

    @staticmethod
    def temp_ptr(slot: ir.ContainerSlot, loc: SourceLoc) -> list[ir.Stmt]:
        zero = ir.Const(value=0, dtype=T.i32, loc=loc)
        return [zero, ir.GlobalPtr(container=slot, indices=[zero], dtype=slot.dtype, loc=loc)]

    # ---- top-level locals shared by several tasks -> temps ------------------------------------------------
    def promote_shared_locals(self, body: ir.Block, owner: dict[ir.Stmt, int]) -> None:
        shared: dict[ir.Stmt, ir.ContainerSlot] = {}
        top_level = set(body.stmts)
        for stmt in walk(body):
            if isinstance(stmt, (ir.LocalLoad, ir.LocalStore)) and stmt.alloca not in shared \
                    and stmt.alloca in top_level and owner.get(stmt) != owner.get(stmt.alloca):
                shared[stmt.alloca] = self.new_temp(stmt.alloca.name or "local", stmt.alloca.dtype)
        if not shared:
            return
        replaced: dict[ir.Stmt, ir.Stmt] = {}
        self.rewrite_locals(body, shared, replaced)
        for stmt in walk(body):
            stmt.replace_operands(replaced)

    def rewrite_locals(self, block: ir.Block, shared: dict, replaced: dict[ir.Stmt, ir.Stmt]) -> None:
        out: list[ir.Stmt] = []
        for stmt in block.stmts:
            alloca = stmt if isinstance(stmt, ir.Alloca) else getattr(stmt, "alloca", None)
            slot = shared.get(alloca) if isinstance(stmt, (ir.Alloca, ir.LocalLoad, ir.LocalStore)) else None
            if slot is None:
                out.append(stmt)
                for child in stmt.blocks():
                    self.rewrite_locals(child, shared, replaced)
                continue
            pointer = self.temp_ptr(slot, stmt.loc)
            out += pointer
            if isinstance(stmt, ir.LocalLoad):
                load = ir.GlobalLoad(ptr=pointer[1], dtype=slot.dtype, loc=stmt.loc)
                out.append(load)
                replaced[stmt] = load
                continue
            if isinstance(stmt, ir.LocalStore):
                value = stmt.value
                if _keeps_old_value(stmt):
                    # `v[i] = x` on a local vector stores select(i == k, x, v[k]) into every component k.
                    # Once v lives in memory that the threads of a parallel loop share, that rewrite of the
                    # untouched components races with other threads' stores: store only where selected.
                    store = ir.GlobalStore(ptr=pointer[1], value=value.true_value, loc=stmt.loc)
                    out.append(ir.If(cond=value.cond, then_block=ir.Block([store]), else_block=ir.Block([]),
                                     loc=stmt.loc))
                    continue
            else:   # the Alloca: a local starts at zero in every launch, a temp keeps the last launch's value
                value = ir.Const(value=_zero(slot.dtype), dtype=slot.dtype, loc=stmt.loc)
                out.append(value)
            out.append(ir.GlobalStore(ptr=pointer[1], value=value, loc=stmt.loc))
        block.stmts = out

    # ---- values crossing tasks ------------------------------------------------------------------------------
    def materialize(self, value: ir.Stmt, out: list[ir.Stmt], value_map: dict[ir.Stmt, ir.Stmt],
                    loads_allowed: set[ir.Stmt]) -> ir.Stmt:
        """A copy of `value` (defined in another task) computed in `out`: cloned when pure (or a global load
        known to read the same data), else read back from the temp it is spilled into."""
        if value in value_map:
            return value_map[value]
        if isinstance(value, _CLONABLE) or value in loads_allowed:
            for operand in value.operands():
                self.materialize(operand, out, value_map, loads_allowed)
            copy = clone_stmt(value, value_map)
            out.append(copy)
            return copy
        slot = self.spill(value)
        pointer = self.temp_ptr(slot, value.loc)
        load = ir.GlobalLoad(ptr=pointer[1], dtype=slot.dtype, loc=value.loc)
        out += pointer + [load]
        value_map[value] = load
        return load

    def spill(self, value: ir.Stmt) -> ir.ContainerSlot:
        slot = self.spill_slots.get(value)
        if slot is None:
            slot = self.new_temp("value", value.dtype)
            self.spill_slots[value] = slot
            pointer = self.temp_ptr(slot, value.loc)
            self.spill_stores[value] = pointer + [ir.GlobalStore(ptr=pointer[1], value=value, loc=value.loc)]
        return slot

    def external_uses(self, stmts: list[ir.Stmt], index: int, owner: dict[ir.Stmt, int]) -> list[ir.Stmt]:
        found: dict[ir.Stmt, None] = {}
        for stmt in walk(ir.Block(stmts)):
            for operand in _operand_uses(stmt):
                if owner.get(operand, index) != index:
                    found[operand] = None
        return list(found)

    def import_values(self, segment: _Segment, index: int, owner: dict[ir.Stmt, int]) -> None:
        value_map: dict[ir.Stmt, ir.Stmt] = {}
        if segment.loop is not None:
            loop = segment.loop
            body_stmts = loop.body.stmts
            externals = self.external_uses(body_stmts, index, owner)
        else:
            externals = self.external_uses(segment.stmts, index, owner)
            body_stmts = segment.stmts
        for value in externals:
            self.materialize(value, segment.preamble, value_map, set())
        for stmt in walk(ir.Block(body_stmts)):
            stmt.replace_operands(value_map)

    def import_bounds(self, segment: _Segment, top: list[ir.Stmt], markers: dict[ir.Stmt, Any]) -> None:
        loop = segment.loop
        position = {stmt: i for i, stmt in enumerate(top)}
        loop_at = position[loop]
        # A global load may be re-executed in the bounds only if nothing between it and the loop writes memory,
        # and no host-loop boundary lies between them (a load before a loop runs once, its bounds every trip).
        last_write = max((i for i in range(loop_at) if top[i] in markers or has_global_effects(ir.Block([top[i]]))),
                         default=-1)
        loads_allowed = {s for s in top[last_write + 1:loop_at] if isinstance(s, ir.GlobalLoad)}
        value_map: dict[ir.Stmt, ir.Stmt] = {}
        loop.begin = self.materialize(loop.begin, segment.bounds, value_map, loads_allowed)
        loop.end = self.materialize(loop.end, segment.bounds, value_map, loads_allowed)

    # ---- assembling tasks -----------------------------------------------------------------------------------
    def build(self) -> ir.OffloadedKernel:
        body = clone_block(self.kernel.body, {})
        top, markers = _splice_host_loops(_cut_after_return(body.stmts))
        body.stmts = top
        segments = _segments(top, markers)
        for segment in segments:
            if segment.loop is not None:
                _check_parallel_loop(segment.loop)
        self.promote_shared_locals(body, _owners(segments))
        top = body.stmts
        places: dict[ir.Stmt, int] = {}
        segments = _segments(top, markers, places)
        owner = _owners(segments)
        for index, segment in enumerate(segments):
            if segment.loop is not None:
                self.import_bounds(segment, top, markers)
            self.import_values(segment, index, owner)
        tasks: list[ir.Task] = []
        tasks_before = []
        for segment in segments:
            tasks_before.append(len(tasks))
            task = self.make_task(segment)
            if task is not None:
                tasks.append(task)
        tasks_before.append(len(tasks))
        for number, task in enumerate(tasks):
            task.name = f"{self.kernel.name}_t{number}_{task.kind}"
        return ir.OffloadedKernel(self.kernel.name, list(self.kernel.args), self.containers, tasks,
                                  self.kernel.loc, self.kernel.returns, _host_loops(markers, places, tasks_before))

    def make_task(self, segment: _Segment) -> ir.Task | None:
        if segment.loop is not None:
            loop = segment.loop
            loop.parallel = True
            loop.body.stmts = segment.preamble + loop.body.stmts
            if not has_global_effects(loop.body):
                return None
            return ir.Task("", "range", ir.Block(segment.bounds), loop, loop.body, loop.loc)
        stmts = list(segment.preamble)
        for stmt in segment.stmts:
            stmts.append(stmt)
            stmts += self.spill_stores.get(stmt, [])
        block = ir.Block(stmts)
        found = first_simt_use(block, PORTABLE_SIMT_OPS | FENCE_OPS)
        if found is not None:
            raise CompileError(f"{describe_simt_use(found)} works on the threads of a parallel loop (an outermost "
                               "for loop); here it is in serial code", found.loc)
        if not has_global_effects(block):
            return None
        return ir.Task("", "serial", ir.Block(), None, block, segment.stmts[0].loc)


def _keeps_old_value(store: ir.LocalStore) -> bool:
    """store x <- select(c, y, load x): a store that changes x only where c holds."""
    value = store.value
    return isinstance(value, ir.TernarySelect) and isinstance(value.false_value, ir.LocalLoad) \
        and value.false_value.alloca is store.alloca


def _cut_after_return(top: list[ir.Stmt]) -> list[ir.Stmt]:
    """A top-level return ends the kernel: what follows never runs."""
    for position, stmt in enumerate(top):
        if isinstance(stmt, ir.Return):
            return top[:position + 1]
    return list(top)


def _zero(dtype: T.DataType) -> int | float | bool:
    if dtype.is_bool:
        return False
    return 0.0 if dtype.is_float else 0


def run(kernel: ir.KernelIR | ir.OffloadedKernel) -> ir.OffloadedKernel:
    if isinstance(kernel, ir.OffloadedKernel):
        return kernel
    return _Offloader(kernel).build()
