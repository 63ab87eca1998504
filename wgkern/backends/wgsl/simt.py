"""WGSL lowering of `wk.simt` (ir.SimtOp) and of a block's shared arrays: mixed into WgslCodegen.

A task that uses simt runs its range in blocks of `loop.block_dim` invocations (the shader's workgroup size),
thread_idx() being the invocation's index in the workgroup; codegen.py emits its loop over whole blocks so a
barrier is reached the same number of times by every invocation that runs the body. Subgroup operations use
WGSL's subgroup builtins (the device's 'subgroup' feature); scans WGSL has no builtin for are built from
subgroupShuffleUp. A register tile's creation tests the subgroup's size at run time (check_tile_subgroup).
wk.simt.warp (CUDA's warp with its lane masks) is refused: docs/simt.md."""
from __future__ import annotations

from wgkern.errors import CompileError, DeviceFeatureError
from wgkern.ir import nodes as ir
from wgkern.ir.visitor import walk
from wgkern import dtypes as T
from wgkern.passes.analysis import FENCE_OPS
from wgkern.backends.wgsl import printing as wprinting
from wgkern.backends.wgsl import types as wtypes

SUBGROUP_FEATURE = "subgroup"
SUBGROUP_BARRIER_FEATURE = "subgroup-barrier"
VOTE_NAME = "wk_block_vote"      # workgroup counters of sync_*_nonzero: [nonzero threads, threads]

_NATIVE_REDUCE = {"add": "subgroupAdd", "mul": "subgroupMul", "min": "subgroupMin", "max": "subgroupMax",
                  "and": "subgroupAnd", "or": "subgroupOr", "xor": "subgroupXor"}
_NATIVE_SCAN = {("inclusive", "add"): "subgroupInclusiveAdd", ("inclusive", "mul"): "subgroupInclusiveMul",
                ("exclusive", "add"): "subgroupExclusiveAdd", ("exclusive", "mul"): "subgroupExclusiveMul"}
_COMBINE = {"min": "min({a}, {b})", "max": "max({a}, {b})", "and": "({a} & {b})", "or": "({a} | {b})",
            "xor": "({a} ^ {b})", "add": "({a} + {b})", "mul": "({a} * {b})"}
_SHUFFLES = {"shuffle": "subgroupShuffle", "shuffle_xor": "subgroupShuffleXor", "shuffle_up": "subgroupShuffleUp",
             "shuffle_down": "subgroupShuffleDown", "broadcast": "subgroupShuffle"}


def shared_bytes(slot: ir.ContainerSlot) -> int:
    """Bytes of a shared array as the device stores it (small ints and bools widened to 32 bits)."""
    count = 1
    for n in slot.shape:
        count *= n
    return count * wtypes.storage_dtype(slot.dtype).itemsize


def _identity(op: str, dtype: T.DataType) -> str:
    """The identity of a scan's combination, as a WGSL literal of `dtype`."""
    if op in ("or", "xor", "add"):
        return wtypes.literal(0, dtype)
    if op == "mul":
        return wtypes.literal(1, dtype)
    if op == "and":
        return wtypes.literal(-1 if dtype.is_signed else 0xFFFFFFFF, dtype)
    if dtype.is_float:
        return wtypes.f32_from_bits('0x7f800000u' if op == 'min' else '0xff800000u')
    lowest, highest = (-2 ** 31, 2 ** 31 - 1) if dtype.is_signed else (0, 2 ** 32 - 1)
    return wtypes.literal(highest if op == "min" else lowest, dtype)


def barrier_only_simt(body: ir.Block) -> bool:
    """The task body's wk.simt operations can run in masked lanes (codegen.py, _emit_range_main): barriers,
    fences and block votes, which mask their own counting, but no subgroup operation (their results would
    include the masked lanes' values)."""
    ops = {stmt.op for stmt in walk(body) if isinstance(stmt, ir.SimtOp)}
    return not any(op.startswith("subgroup.") and op.split(".")[1] not in ("memory_barrier", "mem_fence")
                   for op in ops)


class SimtLowering:
    """Needs from the codegen: emit, let, value, fresh, task, lines, helpers, features, adapter, kernel,
    tile_sites, and `block_size` (the task's workgroup size); sets `uses_subgroup_ids` for the entry point's
    parameters."""

    def visit_SimtOp(self, stmt: ir.SimtOp) -> None:
        group, name = stmt.op.split(".")
        if group == "thread":           # wk.global_thread_idx(): 0 in serial code, as the one thread there
            self.let(stmt, "bitcast<i32>(wk_group * {}u + wk_local_index)".format(self.block_size)
                     if self.task.kind == "range" else "0i")
            return
        if stmt.op == ir.TILE_SUBGROUP_CHECK:
            return self.check_tile_subgroup(stmt)
        if self.task.kind != "range" and stmt.op not in FENCE_OPS:
            raise CompileError(f"wk.simt.{stmt.op}() works on the threads of a parallel loop", stmt.loc)
        if group == "warp":
            raise CompileError(f"wk.simt.{stmt.op}() is CUDA's warp intrinsic, which the WGSL backend does not "
                               f"have (adapter '{self.adapter}'); use wk.simt.subgroup (its subgroup is the warp "
                               "on NVIDIA) or run on wk.cuda", stmt.loc)
        if group == "subgroup":
            return self.lower_subgroup(stmt, name)
        return self.lower_block(stmt, name)

    # ---- block and grid ---------------------------------------------------------------------------------
    def lower_block(self, stmt: ir.SimtOp, name: str) -> None:
        if name == "sync":
            self.emit("workgroupBarrier();")
        elif stmt.op in ("block.mem_sync", "block.mem_fence"):
            # a fence that may sit in divergent code (Quadrants' mem_fence); WGSL has none without a barrier, and
            # its memory model orders other invocations' plain accesses only at barriers (docs/simt.md)
            self.emit("// wk.simt.block.mem_fence(): no WGSL instruction; block.sync() orders shared memory")
        elif stmt.op in ("grid.memfence", "grid.mem_fence"):
            if self.task.kind != "range":
                # one invocation runs a serial task: nothing to order, and a barrier after the other lanes'
                # early return would sit in non-uniform control flow, which WGSL rejects
                self.emit("// wk.simt.grid.mem_fence() in a serial task: one invocation, nothing to order")
            else:
                # WGSL's one ordering point for storage memory; it is a workgroup barrier too (docs/simt.md)
                self.emit("storageBarrier();")
        elif name == "thread_idx":
            self.let(stmt, "bitcast<i32>(wk_local_index)")
        elif name == "global_thread_idx":
            self.let(stmt, f"bitcast<i32>(wk_group * {self.block_size}u + wk_local_index)")
        elif name in ("sync_all_nonzero", "sync_any_nonzero", "sync_count_nonzero"):
            self.lower_block_vote(stmt, name)
        else:
            raise CompileError(f"wk.simt.{stmt.op}() is not lowered by the WGSL backend", stmt.loc)

    def lower_block_vote(self, stmt: ir.SimtOp, name: str) -> None:
        """A barrier that counts the block's nonzero predicates in workgroup counters: reset by invocation 0
        between two barriers (earlier votes have been read), counted, then read after a third."""
        self.helpers[VOTE_NAME] = f"var<workgroup> {VOTE_NAME}: array<atomic<u32>, 2>;\n"
        predicate = self.value(stmt.args[0])
        self.emit("workgroupBarrier();")
        self.emit(f"if (wk_local_index == 0u) {{ atomicStore(&{VOTE_NAME}[0], 0u); "
                  f"atomicStore(&{VOTE_NAME}[1], 0u); }}")
        self.emit("workgroupBarrier();")
        counted = self.masked(f"{predicate} != 0i")
        self.emit(f"if ({counted}) {{ atomicAdd(&{VOTE_NAME}[0], 1u); }}")
        self.emit(f"atomicAdd(&{VOTE_NAME}[1], 1u);" if self.lane_mask is None else
                  f"if ({self.lane_mask}) {{ atomicAdd(&{VOTE_NAME}[1], 1u); }}")
        self.emit("workgroupBarrier();")
        nonzero, threads = f"atomicLoad(&{VOTE_NAME}[0])", f"atomicLoad(&{VOTE_NAME}[1])"
        expr = {"sync_count_nonzero": f"bitcast<i32>({nonzero})",
                "sync_any_nonzero": f"select(0i, 1i, {nonzero} != 0u)",
                "sync_all_nonzero": f"select(0i, 1i, {nonzero} == {threads})"}[name]
        self.let(stmt, expr)

    def check_tile_subgroup(self, stmt: ir.SimtOp) -> None:
        """A register tile's creation (ir.TILE_SUBGROUP_CHECK): invocation i holds row i, so the subgroup needs
        the tile's N invocations. Its size is the driver's choice (per pipeline on some GPUs; lavapipe: 8) and
        the adapter's reported range says nothing, so it is tested here, at run time, and a subgroup too small
        records the site for the runtime's SubgroupSizeError (printing.record_subgroup_site)."""
        size = stmt.args[0].value
        if self.task.kind != "range":
            raise CompileError(f"wk.simt.Tile{size}x{size} lives in the subgroups of a parallel loop; make the tile "
                               "inside one (with loop_config(block_dim=N))", stmt.loc)
        if SUBGROUP_FEATURE not in self.features:
            raise DeviceFeatureError(f"wk.simt.Tile{size}x{size} lives in a subgroup's registers and needs the "
                                     f"device feature '{SUBGROUP_FEATURE}', which adapter '{self.adapter}' lacks",
                                     stmt.loc, (SUBGROUP_FEATURE,))
        self.uses_subgroup_ids = True
        self.tile_sites.append((self.kernel.name, stmt.loc, size))
        self.emit(f"if (wk_subgroup_size < {size}u) {{   // wk.simt.Tile{size}x{size}: one row per invocation")
        self.emit(f"  {wprinting.record_subgroup_site(len(self.tile_sites))}")
        self.emit("}")

    # ---- subgroup ---------------------------------------------------------------------------------------
    def lower_subgroup(self, stmt: ir.SimtOp, name: str) -> None:
        if name in ("memory_barrier", "mem_fence"):     # a fence: none in WGSL, as block.mem_fence()
            self.emit(f"// wk.simt.subgroup.{name}(): no WGSL instruction; subgroup.sync() orders the subgroup")
            return
        if SUBGROUP_FEATURE not in self.features:
            raise DeviceFeatureError(f"wk.simt.subgroup.{name}() needs the device feature '{SUBGROUP_FEATURE}', "
                                     f"which adapter '{self.adapter}' lacks", stmt.loc, (SUBGROUP_FEATURE,))
        args = [self.value(a) for a in stmt.args]
        self.uses_subgroup_ids = True
        if name in ("barrier", "sync"):
            if SUBGROUP_BARRIER_FEATURE not in self.features:
                raise DeviceFeatureError(f"wk.simt.subgroup.{name}() needs the device feature "
                                         f"'{SUBGROUP_BARRIER_FEATURE}', which adapter '{self.adapter}' lacks",
                                         stmt.loc, (SUBGROUP_BARRIER_FEATURE,))
            self.emit("subgroupBarrier();")
            return
        if name == "group_size":
            self.let(stmt, "bitcast<i32>(wk_subgroup_size)")
        elif name == "invocation_id":
            self.let(stmt, "bitcast<i32>(wk_subgroup_id)")
        elif name == "elect":
            self.let(stmt, "select(0i, 1i, subgroupBroadcastFirst(wk_subgroup_id) == wk_subgroup_id)")
        elif name in ("all_true", "any_true"):
            builtin = "subgroupAll" if name == "all_true" else "subgroupAny"
            self.let(stmt, f"select(0i, 1i, {builtin}({args[0]} != 0i))")
        elif name == "all_equal":
            self.let(stmt, f"select(0i, 1i, subgroupAll({args[0]} == subgroupBroadcastFirst({args[0]})))")
        elif name == "ballot":           # lanes 0..31 in .x, 32..63 in .y
            mask = self.fresh("ballot")
            self.emit(f"let {mask} = subgroupBallot({args[0]} != 0i);")
            self.let(stmt, f"((u64({mask}.y) << 32u) | u64({mask}.x))")
        elif name == "broadcast_first":
            self.let(stmt, f"subgroupBroadcastFirst({args[0]})")
        elif name in _SHUFFLES:
            self.let(stmt, f"{_SHUFFLES[name]}({args[0]}, bitcast<u32>({args[1]}))")
        else:
            kind, op = name.split("_")
            if kind == "reduce":
                self.let(stmt, f"{_NATIVE_REDUCE[op]}({args[0]})")
            elif (kind, op) in _NATIVE_SCAN:
                self.let(stmt, f"{_NATIVE_SCAN[kind, op]}({args[0]})")
            else:
                self.lower_shuffle_scan(stmt, kind, op, args[0])

    def lower_shuffle_scan(self, stmt: ir.SimtOp, kind: str, op: str, value: str) -> None:
        """An inclusive scan in log2(subgroup size) steps of subgroupShuffleUp (Hillis-Steele); the exclusive
        one shifts it up by one invocation, the identity entering at invocation 0."""
        dtype = stmt.dtype
        scan, step = self.fresh("scan"), self.fresh("d")
        self.emit(f"var {scan}: {wtypes.register_type(dtype)} = {value};")
        self.emit(f"for (var {step} = 1u; {step} < wk_subgroup_size; {step} = {step} << 1u) {{")
        other = self.fresh("up")
        self.emit(f"  let {other} = subgroupShuffleUp({scan}, {step});")
        combined = _COMBINE[op].format(a=scan, b=other)
        self.emit(f"  {scan} = select({scan}, {combined}, wk_subgroup_id >= {step});")
        self.emit("}")
        if kind == "inclusive":
            self.let(stmt, scan)
        else:
            shifted = f"subgroupShuffleUp({scan}, 1u)"
            self.let(stmt, f"select({_identity(op, dtype)}, {shifted}, wk_subgroup_id > 0u)")

    # ---- shared arrays --------------------------------------------------------------------------------------
    def check_shared_bytes(self, slots: list[ir.ContainerSlot], limit: int) -> None:
        """A task's shared arrays must fit the adapter's workgroup memory."""
        total = sum(shared_bytes(slot) for slot in slots) + (8 if VOTE_NAME in self.helpers else 0)
        if total > limit:
            lines = ", ".join(str(slot.loc.lineno) for slot in slots if slot.loc is not None)
            raise CompileError(f"the shared arrays of one block (SharedArray at line(s) {lines}) take {total} bytes, "
                               f"more than the {limit} bytes of workgroup memory adapter '{self.adapter}' has",
                               slots[0].loc)

    def shared_declaration(self, name: str, slot: ir.ContainerSlot, element: str) -> str:
        count = 1
        for n in slot.shape:
            count *= n
        return f"var<workgroup> {name}: array<{element}, {count}>;  // SharedArray, line {slot.loc.lineno if slot.loc else '?'}\n"
