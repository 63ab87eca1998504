"""WgslBackend: wgkern's Backend on wgpu-py (Vulkan, Metal, D3D12) — buffers, pipelines, lazy batched launches.

Launches are encoded into one open compute pass and submitted lazily (sync, download, free of a busy buffer, a
full argument ring or the batch limit). Each launch's arguments (launch_id, seed, scalars, ndarray shapes) are
packed into a host ring that is uploaded once per submit and bound with a dynamic offset. Reverse kernels
with adstacks also bind the shared heap and overflow flag (layout: adstack.py).

Binding limits. A kernel binds one storage buffer per container plus the ring (and heap and flag), unless that
exceeds the device's max_storage_buffers_per_shader_stage (lavapipe: 32). Then it is compiled *packed*
(bindings.BindingPlan): containers with the same dtype and WGSL element type (atomic typing decided over the
whole kernel) share one binding, an arena buffer, read as `arena[base_k + index]` with `base_k` in the ring.
At its first launch each container is moved into an arena once (a GPU copy in order with recorded work,
arena.py); the WgslBuffer keeps its identity, so fields, uploads, downloads and direct kernels (which bind a
window at the container's offset) are unaffected. No copies after that. A container larger than
max_storage_buffer_binding_size (up to max_buffer_size) is bound as several windows (split.py); a kernel
compiles a variant per window count of its containers, chosen at launch while split buffers are live.

Threads. The open pass, the argument ring, the staging buffers and the pending-work bookkeeping are shared by
every thread that launches kernels or moves data, so those entry points hold the backend's `lock` (an RLock:
they call one another); a launch is recorded whole before another thread's launch or flush. That lock is the
process's LAUNCH_LOCK (backends/base.py), which every launch holds from its argument checks on, so a launch
takes one lock once (WgslCompiledKernel.launch runs under it and does not take it again).

`gpu_timer()` measures device time of the launches recorded inside it with begin/end-of-pass timestamp writes
(feature timestamp-query). Codegen lives in codegen.py, adapter choice and the process-wide device cache in
adapters.py."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np

from wgkern.backends.adstack import AdStackHeap, overflow_from_flag
from wgkern.backends.base import LAUNCH_LOCK, Backend, MemoryBudget, raise_pending
from wgkern.backends.wgsl import adapters as wadapters
from wgkern.backends.wgsl.arena import Arenas
from wgkern.backends.wgsl.timing import GpuTime, TimestampRecorder, timestamp_period_ns
from wgkern.backends.wgsl import types as wtypes
from wgkern.backends.wgsl.bindings import BindingPlan
from wgkern.backends.wgsl import split as wsplit
from wgkern.backends.wgsl import waiting as wwaiting
from wgkern.backends.wgsl.codegen import default_workgroup_size
from wgkern.backends.wgsl.shader_common import (GPU_UNROLL, LOOP_LIMIT, LOOP_LIMIT_ITERATIONS, MASKED_BRANCHES,
                                                NATIVE_DIVISION, OPAQUE_BOOL_INTS)
from wgkern.backends.wgsl.encoding import command_recorder
from wgkern.backends.wgsl.exact import STRICT_FLOATS
from wgkern.backends.wgsl.pipelines import PipelineCache
from wgkern.backends.wgsl import printing as wprinting
from wgkern.errors import (BoundsCheckError, DeviceCommandError, InternalCompilerError, KernelAssertionError,
                           LoopLimitError, OutOfMemoryError, SubgroupSizeError, WkError, format_located)
from wgkern.ir import nodes as ir
from wgkern.dtypes import DataType
from wgkern.ir.printing import assertion_message
from wgkern.backends.wgsl.compiled_kernel import WgslCompiledKernel, _groups_for
from wgkern.backends.wgsl.buffers import (BATCH_LIMIT_CPU, BATCH_LIMIT_GPU, NVIDIA_VENDOR_ID, RING_BYTES, WgslBuffer,
                                         _serialized, _whole_vectors)
from wgkern.backends.wgsl.transfers import TransferMixin


# ---- per-task dispatch sizing ------------------------------------------------------------------------------


# ---- the backend ------------------------------------------------------------------------------------------

class WgslBackend(TransferMixin, Backend):
    """One wgpu device (shared process-wide, adapters.py). `adapter`: a wgpu adapter, else `kind` picks one."""
    name = "wgsl"
    wide_memory_access = True
    supports_adstack = True

    def shared_memory_bytes(self) -> int | None:
        return self.max_workgroup_storage         # the adapter's max-compute-workgroup-storage-size

    def __init__(self, adapter: Any = None, kind: str = "webgpu", debug: bool = False,
                 device_memory_limit: int | None = None, fast_math: bool = False, webgpu_profile: str | None = None):
        import wgpu
        self.lock = LAUNCH_LOCK           # see the module docstring, Threads
        self.debug = debug
        self.fast_math = fast_math
        self.budget = MemoryBudget(device_memory_limit)
        self.buffer_sizes: dict[int, int] = {}    # id(wgpu buffer) -> bytes taken from the budget
        self._wgpu = wgpu
        self.adapter = adapter if adapter is not None else wadapters.find_adapter(kind)
        self.webgpu_profile = webgpu_profile
        self.device = wadapters.device_for(self.adapter, webgpu_profile)
        # On a CPU adapter (lavapipe) the "device" is this machine's cores: the sizer reads bounds back and
        # reduces them with numpy (measured ~4 GB/s over 2^24 i32) instead of in the WGSL reducer (~1 GB/s).
        cpu_adapter = self.adapter.info.get("adapter_type") == "CPU"
        self.host_sizing = cpu_adapter
        self.wait_idle = wwaiting.wait_for(self.device, cpu_adapter)    # sync()'s wait (waiting.py)
        self.batch_limit = BATCH_LIMIT_CPU if cpu_adapter else BATCH_LIMIT_GPU
        self.sizing_scratch: dict[int, np.ndarray] = {}     # reused read-back arrays (runtime/sizing_context.py)
        self.queue = self.device.queue
        features = {str(f) for f in self.device.features}
        if fast_math:
            features.add(NATIVE_DIVISION)     # the driver's division, ulps off where the driver is (codegen.py)
        else:
            features.add(STRICT_FLOATS)       # constants hidden from the driver's reassociation (exact.py)
        if "llvmpipe" in str(self.adapter.info.get("device", "")).lower():
            features.add(NATIVE_DIVISION)     # llvmpipe divides with the CPU's correctly rounded instruction
            features.add(LOOP_LIMIT)          # and ends an invocation's loops after 65535 iterations (codegen.py)
        if cpu_adapter:
            features.add(MASKED_BRANCHES)
        else:
            features.add(GPU_UNROLL)          # copies of small innermost loop bodies (control_flow.py)
        if "nvidia" in str(self.adapter.info.get("vendor", "")).lower() or \
                self.adapter.info.get("vendor_id") == NVIDIA_VENDOR_ID:
            features.add(OPAQUE_BOOL_INTS)    # the driver miscompiles sums of converted bools (codegen.py)
        self.features = frozenset(features)
        self.limits = self.device.limits
        self.max_binding = int(self.limits["max-storage-buffer-binding-size"])
        self.max_workgroup_size = min(int(self.limits["max-compute-invocations-per-workgroup"]),
                                      int(self.limits["max-compute-workgroup-size-x"]))
        self.workgroup_size = default_workgroup_size(self.max_workgroup_size)    # range tasks' default
        self.max_workgroup_storage = int(self.limits["max-compute-workgroup-storage-size"])
        self.max_buffer = int(self.limits["max-buffer-size"])
        self.window_bytes = wsplit.chunk_bytes(self.max_binding)    # containers past one binding (split.py)
        self.split_buffers = 0     # live buffers larger than one binding
        self.offset_alignment = max(int(self.limits["min-storage-buffer-offset-alignment"]),
                                    int(self.limits["min-uniform-buffer-offset-alignment"]))
        usage = wgpu.BufferUsage
        self.usage = usage.STORAGE | usage.COPY_SRC | usage.COPY_DST
        self.ring_host = bytearray(RING_BYTES)
        self.ring_buffer = self.device.create_buffer(size=RING_BYTES, usage=self.usage | usage.UNIFORM)
        self.ring_handle = WgslBuffer(self.ring_buffer, 4)   # sync() reads 4 bytes of it to wait
        self.ring_used = 0
        self.commands = command_recorder(self.device)    # the batch being recorded (encoding.py)
        self.batch_kernels: list[str] = []               # the kernels launched in it, named if wgpu rejects it
        self.pending_launches = 0
        self.pass_pipeline: Any = None   # the pipeline set last in the open compute pass
        self.pass_binding: tuple[Any, int] = (None, 0)    # and the bind group and ring offset set last in it
        self.batches = 0                 # submits so far: a ring slot or pending-buffer record is of one batch
        self.pending_buffers: set[WgslBuffer] = set()
        self.keepalive: list[Any] = []
        self.unwaited = False
        self.pipeline_cache = PipelineCache(self.device, wgpu.GPUError)
        self.print_sites: list[Any] = []        # print() statements of compiled kernels (printing.py)
        # debug=True: (kernel name, GlobalPtr) of every bounds-checked access; site k + 1 is written on failure
        self.bounds_sites: list[Any] | None = [] if debug else None
        # LOOP_LIMIT: (kernel name, first loop's loc, loop lines) of every probed task (codegen.py)
        self.loop_limit_sites: list[Any] = []
        # (kernel name, loc, N) of every register tile's creation (simt.py check_tile_subgroup)
        self.tile_sites: list[Any] = []
        self.print_buffer: WgslBuffer | None = None
        self.prints_pending = False
        self.layouts: dict[int, tuple[Any, Any]] = {}
        self.bind_groups: dict[tuple[Any, ...], Any] = {}
        self.bind_group_drops = 0    # bumped whenever bind_groups loses an entry: a group kept elsewhere is stale
        self.live: set[WgslBuffer] = set()
        self.staging: Any = None
        self.stats = {"submits": 0, "launches": 0, "arena_moves": 0}
        self.arenas = Arenas(self)
        self.timer: TimestampRecorder | None = None
        # adstacks: one growable heap, an overflow flag word, and which kernel each flag code names
        self.adstack_heap = AdStackHeap(self.allocate_binding, self._retire)
        self.adstack_flag = self.allocate(8)
        self.adstack_kernels: dict[int, WgslCompiledKernel] = {}
        self.adstack_watch: dict[int, tuple[WgslCompiledKernel, list[list[int]]]] = {}
        self.flag_read: int | None = None    # the flag, copied along by the last read-back (_read)
        self.print_header_read: np.ndarray | None = None    # the print buffer's header, likewise
        self.map_read_mode: Any = "READ_NOSYNC"    # _map_for_reading
        self.retired: list[WgslBuffer] = []

    @_serialized
    def register_adstack_kernel(self, compiled: WgslCompiledKernel) -> int:
        """The flag word's kernel part (11 bits) for a compiled kernel."""
        code = len(self.adstack_kernels) % 2047 + 1
        self.adstack_kernels[code] = compiled
        return code

    def adstack_threads(self, range_size: int) -> int:
        """Slice-owning threads of a task of `range_size` indices: one per dispatched invocation (capped by
        the heap's binding size at launch)."""
        groups = _groups_for(0, range_size, self.workgroup_size)
        return groups[0] * groups[1] * self.workgroup_size if groups else 1

    def _retire(self, buffer: WgslBuffer) -> None:
        """An outgrown heap: released once the recorded work that uses it has been submitted."""
        self.release_bytes(buffer.buffer)
        self.retired.append(buffer)

    def _adstack_overflow(self) -> WkError | None:
        """Read the overflow flag after the launches that could set it; a set flag is cleared and returned as
        an AdStackOverflowError."""
        if not self.adstack_watch:
            return None
        watched, self.adstack_watch = self.adstack_watch, {}
        code, self.flag_read = self.flag_read, None
        if code is None:
            code = int(np.frombuffer(self._read(self.adstack_flag, 4, 0), np.uint32)[0])
        if code == 0:
            return None
        self.upload(self.adstack_flag, np.zeros(8, np.uint8))
        return overflow_from_flag(code, watched)

    def _report_pending(self) -> None:
        """After a wait: print what kernels recorded, then clear every error flag the waited-for launches set
        (the print header's tile-subgroup, loop-limit and debug-check words, the adstack overflow flag) and raise
        what they say as one error (base.raise_pending): a register tile in too small a subgroup first, then a
        loop the driver cut short, as the values they spoilt (trip counts, stack depths) may have caused the
        others."""
        raise_pending([*self._drain_prints(), self._adstack_overflow()])

    # ---- description -----------------------------------------------------------------------------------
    def describe(self) -> str:
        return f"WGSL on {self.adapter.summary}"

    def storage_dtype(self, dtype: DataType) -> np.dtype:
        return wtypes.storage_dtype(dtype)

    def missing_features(self, dtype: DataType) -> tuple[str, ...]:
        feature = wtypes.REQUIRED_FEATURE.get(dtype)
        return () if feature is None or feature in self.features else (feature,)

    # ---- pipelines and bind groups -------------------------------------------------------------------------
    def pipeline_layout(self, containers: int) -> Any:
        """Binding 0: the launch-argument ring (uniform, dynamic offset); binding k+1: container k."""
        cached = self.layouts.get(containers)
        if cached is None:
            wgpu = self._wgpu
            compute = wgpu.ShaderStage.COMPUTE
            entries = [{"binding": 0, "visibility": compute,
                        "buffer": {"type": wgpu.BufferBindingType.uniform, "has_dynamic_offset": True}}]
            entries += [{"binding": k + 1, "visibility": compute,
                         "buffer": {"type": wgpu.BufferBindingType.storage}} for k in range(containers)]
            bind_group_layout = self.device.create_bind_group_layout(entries=entries)
            cached = (bind_group_layout, self.device.create_pipeline_layout(bind_group_layouts=[bind_group_layout]))
            self.layouts[containers] = cached
        return cached[1]

    def pipeline(self, wgsl: str, pipeline_layout: Any, flat: bool = False,
                 constants: dict[str, int] | None = None) -> Any:
        """The compute pipeline of a task's WGSL (pipelines.py)."""
        return self.pipeline_cache.pipeline(wgsl, pipeline_layout, flat, constants)

    @property
    def shader_modules(self) -> dict[str, Any]:
        """The shader modules made so far, by WGSL text."""
        return self.pipeline_cache.shader_modules

    @_serialized
    def bind_group(self, key: tuple[Any, ...]) -> Any:
        """`key`: (argument bytes, the kernel's windows per container slot, the bound buffers)."""
        params_size, windows, buffers = key[0], key[1], key[2:]
        entries = [{"binding": 0, "resource": {"buffer": self.ring_buffer, "offset": 0, "size": params_size}}]
        for k, b in enumerate(buffers):     # a container bound as windows (split.py); the rest whole
            split = k < len(windows) and windows[k] > 1
            for offset, size in wsplit.windows(b, self.max_binding, self.window_bytes) if split else \
                    [(b.offset, b.capacity)]:
                entries.append({"binding": len(entries), "resource": {"buffer": b.buffer, "offset": offset,
                                                                      "size": size}})
        count = len(entries) - 1
        bind_group_layout = self.layouts[count][0] if count in self.layouts else None
        if bind_group_layout is None:
            self.pipeline_layout(count)
            bind_group_layout = self.layouts[count][0]
        bind_group = self.device.create_bind_group(layout=bind_group_layout, entries=entries)
        self.bind_groups[key] = bind_group
        for b in set(buffers):
            b.bind_group_keys.append(key)
        return bind_group

    @_serialized
    def forget_bind_groups(self, buffer: WgslBuffer) -> None:
        for key in buffer.bind_group_keys:
            dropped = self.bind_groups.pop(key, None)
            if dropped is not None:
                self.bind_group_drops += 1
                if self.commands.open:
                    self.keepalive.append(dropped)    # recorded commands may use it (encoding.py)
        buffer.bind_group_keys.clear()

    def compile(self, kernel: ir.OffloadedKernel, origin: str | None = None) -> WgslCompiledKernel:
        """`origin`: where the IR came from (code_records.py), letting a start find the kernel's WGSL without
        generating it (shader_records.py); the drivers keep what they compile from it."""
        return WgslCompiledKernel(self, kernel, origin=origin)

    # ---- command recording --------------------------------------------------------------------------------
    @_serialized
    def begin_pass(self) -> Any:
        """Open a compute pass (and the batch's command encoder if needed); returns the recorder."""
        self.pass_pipeline = None
        self.pass_binding = (None, 0)
        # a launch checks timer.full() before it can get here, so a pair is free
        self.commands.begin_pass(None if self.timer is None else self.timer.next_writes())
        return self.commands

    @property
    def supports_gpu_timer(self) -> bool:
        return "timestamp-query" in self.features

    @contextmanager
    def gpu_timer(self) -> Iterator[GpuTime]:
        """Device time of the launches recorded inside the block, from begin/end-of-pass timestamp writes on
        every compute pass begun inside it (copies between passes are not counted). Work recorded before the
        block is submitted first; at exit everything is submitted and waited for, and `seconds` is set.
        Each submit inside the block reads its timestamps back, so timed batches wait for the GPU. Needs the
        adapter's `timestamp-query` feature; not reentrant."""
        if not self.supports_gpu_timer:
            raise WkError(f"gpu_timer needs the 'timestamp-query' feature, which adapter "
                          f"'{self.adapter.summary}' lacks")
        if self.timer is not None:
            raise WkError("gpu_timer blocks cannot nest")
        result = GpuTime()
        self.flush()
        timer = self.timer = TimestampRecorder(self, result)
        try:
            yield result
        finally:
            try:
                self.flush()       # even on an error: recorded passes write into this query set
            finally:
                self.timer = None
                timer.release()
        result.seconds = timer.ticks * timestamp_period_ns(self.queue) * 1e-9

    @_serialized
    def flush(self) -> None:
        """Submit everything recorded: the argument ring is written first (queue order puts it before). A batch
        wgpu rejects raises DeviceCommandError naming its kernels; the backend stays usable."""
        commands = self.commands
        ring_used, launches = self.ring_used, self.pending_launches
        self.ring_used = self.pending_launches = 0
        self.pending_buffers.clear()
        self.batches += 1
        kernels, self.batch_kernels = self.batch_kernels, []
        timed = 0
        try:
            if not commands.open:
                return
            if self.timer is not None:
                timed = self.timer.resolve(commands)
            commands.submit(self.queue, self.ring_buffer, self.ring_host, ring_used)
        except self._wgpu.GPUError as exc:
            commands.discard()
            named = ", ".join(f"'{name}'" for name in dict.fromkeys(kernels)) or "none (copies only)"
            raise DeviceCommandError(f"wgpu rejected a batch of {launches} launches on {self.adapter.summary} "
                                     f"(kernels: {named}); they did not run: {exc}") from exc
        finally:
            self.keepalive.clear()
        if timed:
            self.timer.collect(timed)
        self.stats["submits"] += 1
        self.stats["launches"] += launches
        self.unwaited = True
        for buffer in self.retired:   # dropped, not destroyed: wgpu frees it after the submitted work
            for key in buffer.bind_group_keys:
                self.bind_groups.pop(key, None)
            self.bind_group_drops += 1
            self.live.discard(buffer)
        self.retired.clear()

    # ---- storage ---------------------------------------------------------------------------------------------
    def check_capacity(self, nbytes: int) -> None:
        """A buffer past max_buffer_size can never be made (the budget is checked as it is taken); one past
        max_storage_buffer_binding_size is bound as windows (split.py). Buffers are whole vec4s (allocate), so
        that is the size compared."""
        if _whole_vectors(nbytes) > self.max_buffer:
            rounded = f" ({_whole_vectors(nbytes)} in whole 16-byte units)" if nbytes % 16 else ""
            raise OutOfMemoryError(f"a container of {nbytes} bytes{rounded} exceeds this device's max_buffer_size "
                                   f"of {self.max_buffer} bytes ({self.adapter.summary})")

    @_serialized
    def allocate(self, nbytes: int) -> WgslBuffer:
        self.check_capacity(nbytes)
        size = _whole_vectors(nbytes)
        self.budget.take(size)
        try:
            buffer = self.device.create_buffer(size=size, usage=self.usage)
        except self._wgpu.GPUError as exc:
            self.budget.give(size)
            raise OutOfMemoryError(f"allocating {size} bytes on {self.adapter.summary} failed: {exc}") from None
        self.buffer_sizes[id(buffer)] = size
        handle = WgslBuffer(buffer, int(nbytes))
        self.live.add(handle)
        self.split_buffers += size > self.max_binding
        return handle

    def allocate_binding(self, nbytes: int) -> WgslBuffer:
        """A buffer always bound whole (the adstack heap: its growth stops at the binding limit)."""
        if nbytes > self.max_binding:
            raise OutOfMemoryError(f"{nbytes} bytes exceed this device's max_storage_buffer_binding_size of "
                                   f"{self.max_binding} bytes ({self.adapter.summary})")
        return self.allocate(nbytes)

    @_serialized
    def release_bytes(self, buffer: Any) -> None:
        """A wgpu buffer from allocate() is no longer ours (destroyed, or dropped after pending work)."""
        self.budget.give(self.buffer_sizes.pop(id(buffer), 0))

    @_serialized
    def free(self, buffer: WgslBuffer) -> None:
        if buffer in self.pending_buffers:
            self.flush()
        self.forget_bind_groups(buffer)
        if buffer in self.live:
            self.live.discard(buffer)
            self.split_buffers -= buffer.capacity > self.max_binding
        if buffer.arena is not None:
            self.arenas.leave(buffer)     # the arena's space is not reused; the arena goes with its last one
        else:
            self.release_bytes(buffer.buffer)
            buffer.buffer.destroy()

    @_serialized
    def release_arena(self, handle: WgslBuffer) -> None:
        """An arena whose last container left: destroyed now, or after the submit of work that uses it."""
        if handle in self.pending_buffers:
            self._retire(handle)
            return
        self.forget_bind_groups(handle)
        self.live.discard(handle)
        self.release_bytes(handle.buffer)
        handle.buffer.destroy()


    def sync(self) -> None:
        """Submit, then wait. With nothing to read back (no adstack flag, no print buffer pending) the wait is
        a blocking device poll, which returns when the submitted work is done (H100: a launch + sync round
        trip 250-330 -> ~100 us; a map costs wgpu-native more than the wait itself), spinning first on a GPU
        adapter (waiting.py). Otherwise the flag or the
        print header is read back, which waits too: one submit and one map. With nothing recorded, unwaited or
        to report it returns at once, without the lock (the floor of every synchronising call)."""
        if not self.commands.open and not (self.unwaited or self.adstack_watch or self.prints_pending):
            return
        self._sync_locked()

    @_serialized
    def _sync_locked(self) -> None:
        if self.commands.open or self.unwaited or self.adstack_watch:
            if self.wait_idle is not None and not self.adstack_watch and not self.prints_pending:
                self.flush()
                self.wait_idle()
                self.unwaited = False
            else:
                self._read(self.ring_handle, 4, 0)
        self._report_pending()

    @_serialized
    def print_target(self) -> WgslBuffer:
        """The print buffer (made on first use) of kernels with print(); they have written to it from now."""
        if self.print_buffer is None:
            self.print_buffer = self.allocate(wprinting.PRINT_BUFFER_BYTES)
            self.upload(self.print_buffer, np.zeros(wprinting.HEADER_WORDS, np.uint32).view(np.uint8), 0)
        self.prints_pending = True
        self.print_header_read = None     # a header read before this launch says nothing about it
        return self.print_buffer

    def _drain_prints(self) -> list[WkError]:
        """After a wait: print what kernels recorded and empty the buffer for later launches; the errors its
        header records (a loop cut short, then a failed debug check), cleared with it."""
        if not self.prints_pending:
            return []
        self.prints_pending = False
        header, self.print_header_read = self.print_header_read, None
        if header is None:
            header = self._read(self.print_buffer, 4 * wprinting.HEADER_WORDS, 0).view(np.uint32)
        reserved, written = int(header[0]), int(header[1])
        bounds_site = wprinting.recorded_bounds_site(int(header[wprinting.BOUNDS_WORD]))
        loop_limit_site = int(header[wprinting.LOOP_LIMIT_WORD])
        tile_site, subgroup_size = wprinting.recorded_subgroup_site(int(header[wprinting.SUBGROUP_WORD]))
        if not reserved and not bounds_site and not loop_limit_site and not tile_site:
            return []
        capacity = self.print_buffer.nbytes // 4 - wprinting.HEADER_WORDS
        words = self._read(self.print_buffer, 4 * written, 4 * wprinting.HEADER_WORDS).view(np.uint32) \
            if written else np.zeros(0, np.uint32)
        self.queue.write_buffer(self.print_buffer.buffer, self.print_buffer.offset,
                                np.zeros(wprinting.HEADER_WORDS, np.uint32))
        wprinting.print_records(words, reserved, written, capacity, self.print_sites)
        errors: list[WkError] = []
        if tile_site:           # first: a tile's garbage may have sent loops and indices anywhere
            errors.append(self._subgroup_size_error(tile_site, subgroup_size))
        if loop_limit_site:
            kernel_name, loc, lines = self.loop_limit_sites[loop_limit_site - 1]
            where = f"its loop at line {lines[0]}" if len(lines) == 1 else \
                f"one of its loops (lines {', '.join(map(str, lines))})" if lines else "a loop of it"
            errors.append(LoopLimitError(format_located(
                f"kernel {kernel_name}: lavapipe ended {where} early: Mesa's llvmpipe stops the loops of a "
                f"shader invocation once they have run {LOOP_LIMIT_ITERATIONS} iterations together, so the "
                "kernel's results are truncated; run it with arch=wk.cpu, or spread the iterations over more "
                "threads or launches", loc)))
        if bounds_site and self.bounds_sites is not None:
            kernel_name, ptr = self.bounds_sites[bounds_site - 1]
            if isinstance(ptr, ir.AssertFail):
                errors.append(KernelAssertionError(format_located(assertion_message(kernel_name, ptr), ptr.loc)))
            else:
                shape = ptr.container.shape
                what = f"of shape {tuple(shape)}" if shape is not None else \
                    f"(an ndarray of {ptr.container.ndim} axes)"
                errors.append(BoundsCheckError(format_located(
                    f"kernel {kernel_name}: index out of range for {ptr.container.name} {what} (Out of bound "
                    "access; debug=True redirected it to element 0)", ptr.loc)))
        return errors

    def _subgroup_size_error(self, site: int, subgroup_size: int) -> SubgroupSizeError:
        """The error of register-tile site `site` (1-based, simt.py), made in a subgroup of `subgroup_size`."""
        kernel_name, loc, size = self.tile_sites[site - 1]
        if size <= 16:
            remedy = ("on lavapipe, start the process with the environment variable LP_NATIVE_VECTOR_WIDTH=512 "
                      "(16-invocation subgroups), or run on a GPU with subgroups of 16 or more (wk.cuda)")
        else:
            remedy = ("lavapipe has no 32-invocation subgroups: run it on a GPU whose subgroups have 32 or more "
                      "invocations, such as NVIDIA's (wk.cuda, or wk.vulkan there)")
        return SubgroupSizeError(format_located(
            f"kernel {kernel_name}: wk.simt.Tile{size}x{size} needs a subgroup of at least {size} invocations "
            f"(invocation i holds row i), but adapter '{self.adapter.summary}' ran this kernel in subgroups of "
            f"{subgroup_size}; the tile's rows past {subgroup_size} were lost, so the results of that launch (and "
            f"of launches that read them) are wrong and must not be used. To fix: {remedy}", loc))

    @_serialized
    def shutdown(self) -> None:
        """Finish pending work and release every buffer and cache; the device stays in the process cache."""
        try:
            self.flush()
        finally:
            for raw in {id(h.buffer): h.buffer for h in self.live}.values():   # arenas hold several handles
                raw.destroy()
            self.live.clear()
            self.split_buffers = 0
            self.buffer_sizes.clear()
            self.budget.used = 0
            self.bind_groups.clear()
            self.bind_group_drops += 1
            self.pipeline_cache.clear()
            self.layouts.clear()
            self.print_buffer = None
            self.prints_pending = False
            self.print_header_read = None
            if self.staging is not None:
                self.staging.destroy()
                self.staging = None
