"""The entry point of each task's shader: a range task's grid-stride loop over its indices (whole blocks, masked
lanes, per-workgroup reduction registers flushed with one atomic), a serial task's single invocation, the
loop-limit probe, the random-number counter."""
from __future__ import annotations

from wgkern.errors import DeviceFeatureError, InternalCompilerError
from wgkern.ir import nodes as ir
from wgkern.ir.visitor import walk
from wgkern.backends.reductions import COMBINE, ChunkReduction, chunk_reductions, identity
from wgkern.backends.wgsl.simt import barrier_only_simt
from wgkern.backends.wgsl.printing import CHUNK_WORD, LOOP_LIMIT_WORD, PRINT_NAME
from wgkern.backends.wgsl import ops as wops
from wgkern.backends.wgsl import types as wtypes
from wgkern.backends.wgsl.shader_common import LLVMPIPE_SERIAL_LANES, LOOP_LIMIT, MASKED_BRANCHES
from wgkern.backends.wgsl.serial_chunks import CHUNK_LOOP, chunked_loops, store_phases

SITE_NAME = "wk_loop_site"     # LOOP_LIMIT: the WGSL constant holding the task's loop-limit site number


def loop_limit_site(kernel_name: str, task: ir.Task) -> tuple:
    """The backend's record of a task whose loops the loop-limit probe watches: (kernel name, the first loop's
    location, the lines of its loops), named by the LoopLimitError of a run cut short."""
    loops = [stmt for stmt in walk(task.body) if isinstance(stmt, (ir.RangeFor, ir.While))]
    lines = sorted({stmt.loc.lineno for stmt in loops if stmt.loc is not None and stmt.loc.lineno})
    return kernel_name, loops[0].loc if loops else task.loc, lines


def site_declaration(number: int) -> str:
    """The line of a shader that declares its loop-limit site, number `number` of the backend's list (1-based):
    a line of its own, so that a shader kept for a later process gets that process's number (shader_records.py)."""
    return f"const {SITE_NAME} = {number}u;   // LOOP_LIMIT: this task's site (_emit_loop_limit_probe)\n"


class TaskMainLowering:
    """WgslCodegen's rules for task entry points."""

    def _block_size(self, task: ir.Task) -> int:
        """The range task's workgroup size: loop_config(block_dim=N), else the device's default
        (default_workgroup_size)."""
        if task.kind != "range" or not task.loop.block_dim:
            return self.workgroup_size
        if task.loop.block_dim > self.max_workgroup_size:
            raise DeviceFeatureError(f"kernel '{self.kernel.name}': block_dim={task.loop.block_dim} is more than "
                                     f"the {self.max_workgroup_size} invocations per workgroup adapter "
                                     f"'{self.adapter}' allows", task.loop.loc,
                                     ("max-compute-invocations-per-workgroup",))
        return task.loop.block_dim

    # ---- task entry functions -------------------------------------------------------------------------------
    def _emit_range_main(self, task: ir.Task) -> None:
        loop = task.loop
        if loop is None:
            raise InternalCompilerError("range task without a loop", task.loc)
        size = self.block_size
        self.lines.append("// true when the dispatch has one invocation per index (set per pipeline by the runtime)")
        self.lines.append("override wk_flat: bool = false;")
        self.lines.append("")
        self.lines.append(f"@compute @workgroup_size({size})")
        self.lines.append("fn main(@builtin(workgroup_id) wk_workgroup_id: vec3<u32>,")
        self.lines.append("        @builtin(num_workgroups) wk_num_workgroups: vec3<u32>,")
        signature_end = len(self.lines)
        self.lines.append("        @builtin(local_invocation_index) wk_local_index: u32) {")
        body_start = len(self.lines)
        self.emit("// bounds")
        self.visit_block(task.bounds)
        self.emit(f"let wk_begin = {self.value(loop.begin)};")
        self.emit(f"let wk_end = {self.value(loop.end)};")
        self.emit("if (wk_end <= wk_begin) { return; }")
        self.emit("// grid-stride loop over the range (the dispatch may be capped or folded into 2-D); one pass if wk_flat")
        self.emit("let wk_count = bitcast<u32>(wk_end) - bitcast<u32>(wk_begin);")
        self.emit(f"let wk_stride = wk_num_workgroups.x * wk_num_workgroups.y * {size}u;")
        self.emit("let wk_group = wk_workgroup_id.y * wk_num_workgroups.x + wk_workgroup_id.x;")
        if self.uses_simt:
            # wk.simt: the loop runs over whole blocks, so every invocation of a workgroup takes the same trips
            # and index i is thread (i - begin) % block_dim; in a partial last block the invocations past the
            # end skip the body (docs/simt.md)
            self.emit(f"var wk_base = wk_group * {size}u;")
        else:
            self.emit(f"var wk_k = wk_group * {size}u + wk_local_index;")
        if self.stacks[self.task_index]:
            self.emit("let wk_slice = wk_k;   // this thread's adstack slice")
        if not self.uses_simt:
            self._declare_reduction_registers(task)
        self.emit("loop {")
        self.indent += 1
        position = "wk_k"
        if self.uses_simt:
            self.emit("if (wk_base >= wk_count) { break; }")
            self.emit("let wk_k = wk_base + wk_local_index;")
            if self._whole_blocks(loop, size):
                # every block is full: no per-invocation bounds test, so barriers and subgroup operations in
                # the body stay in uniform control flow, as WGSL requires
                self.emit("{")
            elif barrier_only_simt(task.body):
                # masked lanes: the invocations past the end of a partial block run the body on the last index
                # with every side effect masked off, so its barriers stay in uniform control flow (WGSL's rule;
                # Tint enforces it) and they take part in them as CUDA's threads would
                self.emit("let wk_active = wk_k < wk_count;   // false: a masked lane past the end of the range")
                self.emit("let wk_kc = select(wk_count - 1u, wk_k, wk_active);")
                self.emit("{")
                self.lane_mask, position = "wk_active", "wk_kc"
            else:
                self.emit("if (wk_k < wk_count) {")
            self.indent += 1
        else:
            self.emit("if (wk_k >= wk_count) { break; }")
        index = self.fresh("i")
        if loop.reversed:
            self.emit(f"let {index} = wk_end - 1i - bitcast<i32>({position});")
        else:
            self.emit(f"let {index} = wk_begin + bitcast<i32>({position});")
        self.loop_vars = {loop: index}
        self.emit(f"let wk_thread = bitcast<u32>({index});")
        self._emit_rng_counter(task.body)
        if self.stacks[self.task_index]:
            self.emit("var wk_overflowed = false;   // a push of this index overflowed (while loops exit on it)")
        self.visit_block(task.body)
        self.lane_mask = None
        if self.uses_simt:
            self.indent -= 1
            self.emit("}")
        step = "wk_base" if self.uses_simt else "wk_k"
        self.emit("continuing {")
        self.indent += 1
        self._emit_loop_limit_probe()
        self.indent -= 1
        self.emit(f"  let wk_left = wk_count - {step};")
        self.emit(f"  {step} = {step} + wk_stride;")
        self.emit("  break if wk_flat || wk_left <= wk_stride;")
        self.emit("}")
        self.indent -= 1
        self.emit("}")
        self._flush_reduction_registers()
        self.lines.append("}")
        self.emit_invariants(body_start)
        if self.uses_subgroup_ids:
            self.lines[signature_end:signature_end] = [
                "        @builtin(subgroup_size) wk_subgroup_size: u32,",
                "        @builtin(subgroup_invocation_id) wk_subgroup_id: u32,"]

    def _whole_blocks(self, loop: ir.RangeFor, size: int) -> bool:
        """The range's bounds are constants whose difference is a multiple of the workgroup size."""
        bounds = [b.value if isinstance(b, ir.Const) else None for b in (loop.begin, loop.end)]
        if None in bounds:
            return False
        count = int(bounds[1]) - int(bounds[0])
        return count > 0 and count % size == 0

    def _declare_reduction_registers(self, task: ir.Task) -> None:
        """Registers for the task's register reductions (backends/reductions.py) of 32- and 64-bit values,
        one per invocation, starting from the op's identity. Not on CPU adapters: lavapipe runs a workgroup
        barrier by switching between coroutines of invocations (a sum over 2^20 f32 took 20x longer), while
        its atomics on one address are cheap."""
        if MASKED_BRANCHES in self.features:
            return
        self.reductions = {atomic: reduction for atomic, reduction in chunk_reductions(task).items()
                           if reduction.dtype.bits >= 32}
        for reduction in dict.fromkeys(self.reductions.values()):
            name = f"wk_red{len(self.reduction_registers)}"
            self.reduction_registers[reduction] = name
            start = wtypes.literal(identity(reduction.op, reduction.dtype), reduction.dtype)
            self.emit(f"var {name}: {wtypes.register_type(reduction.dtype)} = {start};   // register reduction")

    def _combine(self, reduction: ChunkReduction, a: str, b: str) -> str:
        spelling = wops.lookup(wops.WGSL_BINARY[COMBINE[reduction.op]], reduction.dtype)
        return self._spell(spelling, "reduction", reduction.dtype, reduction.dtype, reduction.ptr.loc, a=a, b=b)

    def _flush_reduction_registers(self) -> None:
        """After the invocation's last index: a tree reduction of each register over the workgroup (in
        workgroup memory), then one atomic per workgroup. Every invocation gets here: the bounds are the
        same for the whole dispatch, the grid-stride loop ends in structured control flow, and a `return`
        in the parallel body only ends its index."""
        if not self.reduction_registers:
            return
        names = [(reduction, name, f"wk_wg{k}") for k, (reduction, name) in
                 enumerate(self.reduction_registers.items())]
        for reduction, _, shared in names:
            self.helpers[shared] = (f"var<workgroup> {shared}: array<{wtypes.register_type(reduction.dtype)}, "
                                    f"{self.block_size}>;\n")
        self.emit("// register reductions: combine over the workgroup, then one atomic per workgroup")
        for _, name, shared in names:
            self.emit(f"{shared}[wk_local_index] = {name};")
        self.emit("workgroupBarrier();")
        # a block of any size: halves of the next power of two, each lane's partner inside the block
        size = self.block_size
        top = 1 << (size - 1).bit_length()
        partner = "" if top == size else f" && wk_local_index + wk_half < {size}u"
        self.emit(f"for (var wk_half = {top // 2}u; wk_half > 0u; wk_half = wk_half >> 1u) {{")
        self.emit(f"  if (wk_local_index < wk_half{partner}) {{")
        for reduction, _, shared in names:
            combined = self._combine(reduction, f"{shared}[wk_local_index]", f"{shared}[wk_local_index + wk_half]")
            self.emit(f"    {shared}[wk_local_index] = {combined};")
        self.emit("  }")
        self.emit("  workgroupBarrier();")
        self.emit("}")
        self.emit("if (wk_local_index == 0u) {")
        self.indent += 1
        for reduction, _, shared in names:
            self.visit(reduction.ptr)        # constant indices: the address is valid here
            self.per_window(reduction.ptr, None, lambda: self.guarded_statement(
                reduction.ptr, f"let {self.fresh()} = {self._atomic_expr(reduction.op, reduction.ptr, f'{shared}[0]')};"))
        self.indent -= 1
        self.emit("}")

    def _emit_serial_main(self, task: ir.Task) -> None:
        # num_workgroups: the loop-limit probe's and exact.hide's run-time constants
        builtins = ["@builtin(num_workgroups) wk_num_workgroups: vec3<u32>"]
        if LOOP_LIMIT in self.features:
            # llvmpipe runs a one-invocation workgroup in a SIMD vector whose other lanes are masked off, yet a
            # `while` whose exit reads memory (`if c[None] == 0: break`) kept those lanes looping until the
            # driver's loop budget ran out (65535 trips of masked work, and a false LoopLimitError). Real
            # invocations that return at once leave no such lanes: LLVMPIPE_SERIAL_LANES covers any SIMD width.
            self.lines.append(f"@compute @workgroup_size({LLVMPIPE_SERIAL_LANES})")
            builtins.append("@builtin(local_invocation_index) wk_local_index: u32")
            if not any(self.stacks):           # (a reverse kernel's launch dispatches each task once)
                self.chunked = {loop: number for number, loop in enumerate(chunked_loops(task))}
            if self.chunked:
                self.lines[-1:-1] = [    # before @compute
                    "// the loop whose chunks this pipeline runs (one pipeline per loop: serial_chunks.py)",
                    f"override {CHUNK_LOOP}: u32 = 0u;", ""]
        else:
            self.lines.append("@compute @workgroup_size(1)")
        self.lines.append(f"fn main({', '.join(builtins)}) {{")
        self.declare_local("wk_num_workgroups", "vec3<u32>")
        body_start = len(self.lines)
        if LOOP_LIMIT in self.features:
            self.declare_local("wk_local_index", "u32")
            self.emit("if (wk_local_index != 0u) { return; }   // one invocation runs the task (_emit_serial_main)")
        if self.chunked:
            self.emit(f"// the task's loops run in chunks: a dispatch of the pipeline made with {CHUNK_LOOP} = loop "
                      "runs the next chunk of that loop, the driver drops the other loops' code (serial_chunks.py)")
            self.emit(f"let wk_chunk = atomicLoad(&{PRINT_NAME}[{CHUNK_WORD}]);")
            self.emit("var wk_last_chunk = false;   // this dispatch ran its loop's last chunk")
            self.declare_local("wk_chunk", "u32")
            self.declare_local("wk_last_chunk", "bool", mutable=True)
        self.loop_vars = {}
        self.emit("let wk_thread = 0u;")
        self.declare_local("wk_thread", "u32")
        if self.stacks[self.task_index]:
            self.emit("let wk_slice = 0u;")
            self.emit("var wk_overflowed = false;")
        self._emit_rng_counter(task.body)
        if self.chunked:
            self._emit_chunked_body(task)
        else:
            self.visit_block(task.body)
        if not self._ends_in_return(task.body):
            self._emit_loop_limit_probe()
        self.lines.append("}")
        self.emit_invariants(body_start)

    def _emit_chunked_body(self, task: ir.Task) -> None:
        """A serial task whose loops run in chunks: its top-level stores run in one dispatch each
        (serial_chunks.store_phases), its loops in visit_RangeFor, the rest in every dispatch."""
        phases = store_phases(task)
        for stmt in task.body.stmts:
            phase = phases.get(stmt)
            if phase is None:
                self.visit(stmt)
                continue
            number, before = phase
            self.emit(f"if ({CHUNK_LOOP} == {number}u && {'wk_chunk == 0u' if before else 'wk_last_chunk'}) {{")
            self.indent += 1
            self.visit(stmt)
            self.indent -= 1
            self.emit("}")

    def _emit_loop_limit_probe(self) -> None:
        """LOOP_LIMIT, where an index's work ends (the grid-stride loop's continuing block, a serial task's end
        and its returns): a loop of wk_num_workgroups.z + 1 = 2 iterations. The driver's compiler cannot know
        that bound, so the loop is neither unrolled nor folded and spends llvmpipe's loop budget; ending after
        one iteration means the budget ran out in this invocation, and every loop of it that was still running
        then was cut short. The test is at the top: with it at the bottom (a do-while), lavapipe ran the second
        iteration even with the budget spent. (A task whose loops all end within the budget by construction
        gets no probe.)"""
        if not self.watch_loops:
            return
        if not self.probe_site:
            self.loop_limit_sites.append(loop_limit_site(self.kernel.name, self.task))
            self.probe_site = len(self.loop_limit_sites)
        probe = self.fresh("wk_probe")
        self.emit(f"var {probe} = 0u;   // LOOP_LIMIT: did llvmpipe's loop budget run out? (_emit_loop_limit_probe)")
        self.emit(f"loop {{ if ({probe} > wk_num_workgroups.z) {{ break; }} {probe} = {probe} + 1u; }}")
        # the first task cut short since the last wait names the error (the earliest launch's: the later ones
        # may only have run into it on its truncated results); a compare-exchange from 0, with no retry loop
        # (the budget is spent, so a loop here would end at once) and a store if it failed spuriously
        first, word = self.fresh("wk_first"), f"&{PRINT_NAME}[{LOOP_LIMIT_WORD}]"
        self.emit(f"if ({probe} <= wk_num_workgroups.z) {{")
        self.emit(f"  let {first} = atomicCompareExchangeWeak({word}, 0u, {SITE_NAME});")
        self.emit(f"  if (!{first}.exchanged && {first}.old_value == 0u) {{ atomicStore({word}, {SITE_NAME}); }}")
        self.emit("}")

    @staticmethod
    def _ends_in_return(block: ir.Block) -> bool:
        return bool(block.stmts) and isinstance(block.stmts[-1], ir.Return)

    def _emit_rng_counter(self, body: ir.Block) -> None:
        if any(isinstance(stmt, ir.RandomValue) for stmt in walk(body)):
            self.use_helper("random")
            self.emit("var wk_rng_counter = 0u;")
            self.declare_local("wk_rng_counter", "u32", mutable=True)
