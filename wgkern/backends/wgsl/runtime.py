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
they call one another); a launch is recorded whole before another thread's launch or flush.

`gpu_timer()` measures device time of the launches recorded inside it with begin/end-of-pass timestamp writes
(feature timestamp-query). Codegen lives in codegen.py, adapter choice and the process-wide device cache in
adapters.py."""
from __future__ import annotations

import functools

import struct
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from wgkern.backends.adstack import AdStackHeap, layout_task, overflow_from_flag, stack_bytes_per_thread
from wgkern.backends.base import Backend, CompiledKernel, LaunchArgs, MemoryBudget, raise_pending
from wgkern.backends.wgsl import adstack as wadstack
from wgkern.backends.wgsl import adapters as wadapters
from wgkern.backends.wgsl.arena import Arena, Arenas, same_buffers
from wgkern.backends.wgsl.timing import GpuTime, TimestampRecorder, timestamp_period_ns
from wgkern.backends.wgsl import types as wtypes
from wgkern.backends.adstack import collect_stacks
from wgkern.backends.wgsl.bindings import BindingPlan, binding_plan
from wgkern.backends.wgsl import split as wsplit
from wgkern.backends.wgsl.codegen import TaskShader, WgslCodegen, default_workgroup_size
from wgkern.backends.wgsl.shader_common import (LOOP_LIMIT, LOOP_LIMIT_ITERATIONS, MASKED_BRANCHES, NATIVE_DIVISION,
                                                OPAQUE_BOOL_INTS)
from wgkern.backends.wgsl.encoding import LaunchEncoder
from wgkern.backends.wgsl.exact import STRICT_FLOATS
from wgkern.backends.wgsl.shader_module import create_shader_module
from wgkern.backends.wgsl import printing as wprinting
from wgkern.errors import (BoundsCheckError, CompileError, DeviceFeatureError, InternalCompilerError,
                           KernelAssertionError, LoopLimitError, OutOfMemoryError, WkError, format_located)
from wgkern.ir import host_eval
from wgkern.ir import nodes as ir
from wgkern import dtypes as T
from wgkern.dtypes import DataType
from wgkern.ir.printing import assertion_message

def _serialized(method: Callable[..., Any]) -> Callable[..., Any]:
    """Run a WgslBackend method holding the backend's lock (see the module docstring, Threads)."""
    @functools.wraps(method)
    def locked(self: Any, *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            return method(self, *args, **kwargs)
    return locked


RING_BYTES = 1 << 20          # launch-argument ring: one upload per submit
STAGING_KEEP_BYTES = 1 << 26  # read-backs up to this size reuse one staging buffer
# Launches per submit. On a GPU the device starts on a batch while Python records the next; on a CPU adapter
# (lavapipe) the "device" shares the cores with Python, so work is submitted in large batches.
BATCH_LIMIT_GPU = 256
BATCH_LIMIT_CPU = 4096
MAX_DIMENSION = 65535         # workgroups per dispatch dimension (WebGPU default limit, lavapipe's too)
BOUNDS_FROM_MEMORY_GROUPS = 1024   # capped dispatch for ranges whose bounds are computed in the shader
MAX_THREADS = 1 << 31         # the shader's u32 thread index math stays exact below this
NVIDIA_VENDOR_ID = 0x10DE
_U32 = 0xFFFFFFFF


def _whole_vectors(nbytes: int) -> int:
    """Bytes allocated and bound for `nbytes`: whole vec4s, so wide_access.py's vector view of a binding holds
    the container's last, partial vector."""
    return max(16, -(-int(nbytes) // 16) * 16)


class WgslBuffer:
    """A container's storage: `capacity` bytes (`nbytes` rounded up to 16) at `offset` in the wgpu `buffer`.
    A container starts in its own buffer (offset 0); packed binding may move it into an `arena` (arena.py), and
    then `buffer`/`offset` change but the handle stays the same object. Hashes by identity: bind groups are
    cached by the tuple of buffers they bind."""
    __slots__ = ("buffer", "nbytes", "capacity", "offset", "arena", "bind_group_keys")

    def __init__(self, buffer: Any, nbytes: int, capacity: int | None = None):
        self.buffer = buffer
        self.nbytes = nbytes
        self.capacity = buffer.size if capacity is None else capacity
        self.offset = 0
        self.arena: Arena | None = None
        self.bind_group_keys: list[tuple[Any, ...]] = []

    def __repr__(self) -> str:
        return f"<WgslBuffer {self.nbytes} bytes>"


# ---- per-task dispatch sizing ------------------------------------------------------------------------------

def fold_groups(groups: int, workgroup: int) -> tuple[int, int]:
    """Workgroup counts past 65535 fold into 2-D; the shader's grid-stride loop covers anything capped."""
    groups = min(groups, MAX_THREADS // workgroup)
    if groups <= MAX_DIMENSION:
        return groups, 1
    rows = -(-groups // MAX_DIMENSION)       # as square as needed, so at most rows - 1 groups idle
    return -(-groups // rows), rows


def _groups_for(begin: int, end: int, workgroup: int) -> tuple[int, int, bool] | None:
    """(x, y, flat): the workgroups (of `workgroup` invocations) of a launch over [begin, end), and whether they
    cover every index with one invocation each (then the flat pipeline runs; a capped dispatch needs the
    grid-stride loop)."""
    count = end - begin
    if count <= 0:
        return None
    x, y = fold_groups(-(-count // workgroup), workgroup)
    return x, y, x * y * workgroup >= count


@dataclass(slots=True)
class TaskDispatch:
    """A compiled task and how many workgroups a launch dispatches. `groups(scalars, shapes)` returns
    (x, y, flat), or None when the range is empty (the dispatch is skipped). A range task's shader has an
    override constant `wk_flat`: its flat pipeline (wk_flat = true, made with the task) runs one index per
    invocation and lets the driver drop the grid-stride loop (lavapipe compiles such a shader ~40% faster);
    the loop pipeline is made on first need (capped dispatches: bounds read in the shader, adstack launches
    capped to the heap's binding, more than 2^31 indices)."""
    shader: TaskShader
    flat: Any
    groups: Callable[[Sequence[Any], Sequence[tuple[int, ...]]], tuple[int, int, bool] | None]
    make_loop: Callable[[], Any]
    loop: Any = None

    def pipeline(self, flat: bool) -> Any:
        if flat:
            return self.flat
        if self.loop is None:
            self.loop = self.make_loop()
        return self.loop


def _dispatch_sizer(task: ir.Task, containers: list[ir.ContainerSlot], workgroup: int
                    ) -> Callable[[Sequence[Any], Sequence[tuple[int, ...]]], tuple[int, int] | None]:
    """Precompute as much of the dispatch size as possible: constant bounds are sized once; bounds that read
    global memory get a capped dispatch (the shader computes them); the rest are evaluated per launch.
    `workgroup`: the task's invocations per workgroup."""
    _groups = functools.partial(_groups_for, workgroup=workgroup)
    if task.kind == "serial":
        return lambda scalars, shapes: (1, 1, True)
    if any(isinstance(s, (ir.GlobalLoad, ir.GlobalPtr)) for s in task.bounds.stmts):
        capped = (BOUNDS_FROM_MEMORY_GROUPS, 1, False)
        return lambda scalars, shapes: capped
    begin = host_eval.try_constant(task.loop.begin)
    end = host_eval.try_constant(task.loop.end)
    if begin is not None and end is not None:
        fixed = _groups(int(begin), int(end))
        return lambda scalars, shapes: fixed
    end_stmt = task.loop.end
    if begin is not None and isinstance(end_stmt, ir.ShapeOf):       # the common `for i in range(x.shape[0])`
        slot_index = next(k for k, c in enumerate(containers) if c is end_stmt.container)
        axis, start = end_stmt.axis, int(begin)
        return lambda scalars, shapes: _groups(start, shapes[slot_index][axis])
    if begin is not None and isinstance(end_stmt, ir.ArgLoad) and end_stmt.dtype.is_int:
        arg, start = end_stmt.arg_index, int(begin)
        return lambda scalars, shapes: _groups(start, T.wrap_int(int(scalars[arg]), T.i32))

    def evaluate(scalars: Sequence[Any], shapes: Sequence[tuple[int, ...]]) -> tuple[int, int] | None:
        bounds = host_eval.evaluate_bounds(task, scalars, host_eval.shapes_by_slot(containers, shapes))
        return _groups(*bounds) if bounds is not None else (BOUNDS_FROM_MEMORY_GROUPS, 1, False)
    return evaluate


class WgslCompiledKernel(CompiledKernel):
    """One OffloadedKernel on one WgslBackend: a pipeline per task sharing one pipeline layout."""

    def __init__(self, backend: WgslBackend, kernel: ir.OffloadedKernel, windows: tuple[int, ...] | None = None):
        """`windows`: the bindings of each container slot (split.py); None: one each."""
        self.backend = backend
        self.kernel = kernel
        self.windows = windows or (1,) * len(kernel.containers)
        self.variants: dict[tuple[int, ...], WgslCompiledKernel] = {self.windows: self}
        limit = int(backend.limits["max-storage-buffers-per-shader-stage"])
        self.has_prints = wprinting.needs_print_buffer(kernel.tasks, backend.debug, LOOP_LIMIT in backend.features)
        # the argument ring, the adstack heap and flag (reverse kernels), the print buffer (printing.py)
        reserved = 1 + (2 if any(collect_stacks(kernel)) else 0) + (1 if self.has_prints else 0)
        packed = sum(self.windows) + reserved > limit
        if packed and max(self.windows, default=1) > 1:
            raise DeviceFeatureError(wsplit.too_many_bindings(kernel, self.windows, backend.window_bytes,
                                                              backend.max_binding, reserved, limit),
                                     kernel.loc, ("max-storage-buffers-per-shader-stage",))
        self.plan: BindingPlan = binding_plan(kernel, backend.features, backend.adapter.summary, packed,
                                              self.windows, backend.window_bytes)
        if self.plan.bindings + reserved > limit:
            raise DeviceFeatureError(f"kernel '{kernel.name}' touches {len(kernel.containers)} containers of "
                                     f"{self.plan.bindings} distinct element types; packed binding needs one "
                                     f"storage buffer per type plus {reserved} for the runtime, and this device "
                                     f"allows {limit} per shader stage", kernel.loc,
                                     ("max-storage-buffers-per-shader-stage",))
        self.last_packing: tuple[Any, int, tuple[WgslBuffer, ...], list[int]] | None = None
        # (buffers, bind-group key, bind group) of the last launch that bound its buffers directly: a launch on
        # the same buffers reuses the bind group while the backend's cache still holds it (a freed buffer drops it)
        self.last_binding: tuple[list[Any], tuple[Any, ...], Any] | None = None
        self.adstack_code = backend.register_adstack_kernel(self)
        codegen = WgslCodegen(kernel, backend.features, backend.adapter.summary, self.adstack_code, self.plan,
                              backend.print_sites, backend.bounds_sites, backend.loop_limit_sites,
                              backend.max_workgroup_size, backend.max_workgroup_storage)
        self.stacks = codegen.stacks
        self.has_stacks = any(self.stacks)
        self.layout = codegen.layout
        self.params_size = self.layout.size
        self.stride = -(-self.params_size // backend.offset_alignment) * backend.offset_alignment
        self.pack_into = self.layout.pack.pack_into
        self.scalar_args = self.layout.scalar_args
        self.shape_axes = self.layout.shape_axes
        self.scalar_dtypes = [kernel.args[i].dtype for i in self.scalar_args]
        # f16 scalars travel as f32: round to f16 on the host so the value is rounded once, as on the CPU
        self.f16_positions = [k for k, dtype in enumerate(self.scalar_dtypes) if dtype == T.f16]
        # kernels with adstacks bind the heap and the overflow flag after their containers, then the print buffer
        self.runtime_bindings = (2 if self.has_stacks else 0) + (1 if self.has_prints else 0)
        pipeline_layout = backend.pipeline_layout(self.plan.bindings + self.runtime_bindings)
        self.tasks = [TaskDispatch(shader, backend.pipeline(shader.wgsl, pipeline_layout, flat=True),
                                   _dispatch_sizer(shader.task, kernel.containers, shader.workgroup_size),
                                   functools.partial(backend.pipeline, shader.wgsl, pipeline_layout, False))
                      for shader in codegen.generate()]

    def source(self) -> str:
        return "\n".join(task.shader.wgsl for task in self.tasks)

    def _bindings(self, args: LaunchArgs) -> tuple[tuple[WgslBuffer, ...], list[int]]:
        """The buffers bound after the ring, and the arena bases (packed binding only) for the ring."""
        if not self.plan.packed:
            return tuple(args.buffers), []
        arenas = self.backend.arenas
        last = self.last_packing
        if last is not None and last[1] == arenas.epoch and same_buffers(last[0], args.buffers):
            return last[2], last[3]
        bound, bases = arenas.bind(self.plan, args.buffers)
        self.last_packing = (tuple(args.buffers), arenas.epoch, bound, bases)
        return bound, bases

    def _pack(self, ring: bytearray, offset: int, args: LaunchArgs, bases: Sequence[int] = (),
              metadata: Sequence[int] = ()) -> None:
        if not (self.scalar_args or self.shape_axes or bases or metadata):    # launch id and seed only
            self.pack_into(ring, offset, args.launch_id & _U32, args.seed & _U32)
            return
        scalars, shapes = args.scalars, args.shapes
        values = [scalars[i] for i in self.scalar_args]
        for k in self.f16_positions:
            values[k] = float(np.float16(values[k]))
        for k, axis in self.shape_axes:
            values.append(shapes[k][axis])
        values.extend(bases)
        values.extend(metadata)
        try:
            self.pack_into(ring, offset, args.launch_id & _U32, args.seed & _U32, *values)
        except struct.error:   # out-of-range Python ints, numpy bools...: wrap as the kernel would see them
            fixed = [_param_value(v, dt) for v, dt in zip(values, self.scalar_dtypes)]
            fixed.extend(values[len(self.scalar_dtypes):])
            self.pack_into(ring, offset, args.launch_id & _U32, args.seed & _U32, *fixed)

    def launch(self, args: LaunchArgs) -> None:
        with self.backend.lock:
            self._launch(args)
            if self.backend.debug:   # debug=True: a failed check raises at the launch that failed, as on the CPU
                self.backend.sync()

    def _launch(self, args: LaunchArgs) -> None:
        backend = self.backend
        if backend.split_buffers:     # some live container is bound as windows: this launch's may be
            windows = wsplit.window_counts(args.buffers, backend.max_binding, backend.window_bytes)
            if windows != self.windows:
                variant = self.variants.get(windows)
                if variant is None:
                    variant = self.variants[windows] = WgslCompiledKernel(backend, self.kernel, windows)
                    variant.variants = self.variants
                variant._launch(args)
                return
        if self.has_stacks:
            self._launch_with_stacks(args)
            return
        backend = self.backend
        offset = backend.ring_used
        if offset + self.stride > RING_BYTES or backend.pending_launches >= backend.batch_limit or \
                (backend.timer is not None and backend.timer.full()):
            backend.flush()
            offset = 0
        last = self.last_binding
        if last is not None and last[0] == args.buffers and backend.bind_groups.get(last[1]) is last[2]:
            bound, bind_group = args.buffers, last[2]      # the previous launch's buffers: its bind group
            self._pack(backend.ring_host, offset, args)
        else:
            bound, bases = self._bindings(args)
            self._pack(backend.ring_host, offset, args, bases)
            if self.has_prints:
                bound = (*bound, backend.print_target())
            key = (self.params_size, self.windows, *bound)
            bind_group = backend.bind_groups.get(key)
            if bind_group is None:
                bind_group = backend.bind_group(key)
            if not (self.plan.packed or self.has_prints):      # bound is the buffers themselves: reusable
                self.last_binding = (list(args.buffers), key, bind_group)
        backend.ring_used = offset + self.stride
        compute_pass = backend.compute_pass or backend.begin_pass()
        encoder = backend.launch_encoder
        encoder.set_bind_group(compute_pass, bind_group, offset)
        scalars, shapes = args.scalars, args.shapes
        for task in self.tasks:
            groups = task.groups(scalars, shapes)
            if groups is not None:
                pipeline = task.flat if groups[2] else task.pipeline(False)
                if backend.pass_pipeline is not pipeline:    # repeated launches skip the state change
                    compute_pass.set_pipeline(pipeline)
                    backend.pass_pipeline = pipeline
                encoder.dispatch(compute_pass, groups[0], groups[1])
        backend.pending_buffers.update(args.buffers)
        if self.plan.packed:
            backend.pending_buffers.update(bound)
        backend.pending_launches += 1


    def _launch_with_stacks(self, args: LaunchArgs) -> None:
        """Reverse-mode launch: size each task's dispatch so its slot-major adstack slices fit one binding,
        lay the heap out (metadata rows go in the argument ring), then dispatch as usual."""
        backend = self.backend
        capacities = wadstack.capacities_for(self.stacks, args.extra.get("adstack_capacities"))
        plans, metadata, heap_words = [], [], 0
        for task, specs, caps in zip(self.tasks, self.stacks, capacities):
            groups = task.groups(args.scalars, args.shapes)
            if groups is not None and specs:
                per_thread = max(stack_bytes_per_thread(specs, caps, wadstack.words_of), 1)
                size = task.shader.workgroup_size       # loop_config(block_dim=N) or the device's default
                fit = backend.max_binding // 4 // per_thread // size
                if fit < 1:
                    raise OutOfMemoryError(f"kernel '{self.kernel.name}': one workgroup's adstacks need "
                                           f"{per_thread * 4 * size} bytes, more than the device's "
                                           f"max_storage_buffer_binding_size ({backend.max_binding}); pass a "
                                           "smaller wk.init(ad_stack_size=...)")
                if groups[0] * groups[1] > fit:
                    groups = (*fold_groups(fit, size), False)
            threads = groups[0] * groups[1] * task.shader.workgroup_size if groups is not None else 1
            layout = layout_task(specs, caps, threads, wadstack.words_of, slot_major=True)
            metadata.extend(int(v) for v in layout.metadata.reshape(-1))
            heap_words = max(heap_words, layout.heap_units)
            plans.append(groups)
        heap = backend.adstack_heap.ensure(max(heap_words, 1) * 4)
        offset = backend.ring_used
        if offset + self.stride > RING_BYTES or backend.pending_launches >= backend.batch_limit or \
                (backend.timer is not None and backend.timer.full()):
            backend.flush()
            offset = 0
        bound, bases = self._bindings(args)
        self._pack(backend.ring_host, offset, args, bases, metadata)
        backend.ring_used = offset + self.stride
        buffers = (*bound, heap, backend.adstack_flag)
        if self.has_prints:
            buffers = (*buffers, backend.print_target())
        key = (self.params_size, self.windows, *buffers)
        bind_group = backend.bind_groups.get(key) or backend.bind_group(key)
        compute_pass = backend.compute_pass or backend.begin_pass()
        backend.launch_encoder.set_bind_group(compute_pass, bind_group, offset)
        for task, groups in zip(self.tasks, plans):
            if groups is not None:
                pipeline = task.pipeline(groups[2])
                compute_pass.set_pipeline(pipeline)
                backend.pass_pipeline = pipeline
                backend.launch_encoder.dispatch(compute_pass, groups[0], groups[1])
        backend.pending_buffers.update(buffers)
        backend.pending_buffers.update(args.buffers)
        backend.pending_launches += 1
        backend.adstack_watch[self.adstack_code] = (self, capacities)
        backend.flag_read = None      # a flag read before this launch says nothing about it
        stats = getattr(backend, "runtime_stats", None)
        if stats is not None:
            stats.adstack_heap_bytes = max(heap_words, 1) * 4    # in use by this launch (the formula)
            stats.adstack_heap_grows = backend.adstack_heap.grows


def _param_value(value: Any, dtype: DataType) -> Any:
    if dtype.is_float:
        return float(value)
    return T.wrap_int(int(value), dtype)


# ---- the backend ------------------------------------------------------------------------------------------

class WgslBackend(Backend):
    """One wgpu device (shared process-wide, adapters.py). `adapter`: a wgpu adapter, else `kind` picks one."""
    name = "wgsl"
    wide_memory_access = True
    supports_adstack = True

    def shared_memory_bytes(self) -> int | None:
        return self.max_workgroup_storage         # the adapter's max-compute-workgroup-storage-size

    def __init__(self, adapter: Any = None, kind: str = "webgpu", debug: bool = False,
                 device_memory_limit: int | None = None, fast_math: bool = False, webgpu_profile: str | None = None):
        import wgpu
        self.lock = threading.RLock()     # see the module docstring, Threads
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
        self.encoder: Any = None
        self.compute_pass: Any = None
        self.pending_launches = 0
        self.pass_pipeline: Any = None   # the pipeline set last in the open compute pass
        self.pending_buffers: set[WgslBuffer] = set()
        self.keepalive: list[Any] = []
        self.unwaited = False
        self.pipelines: dict[str, Any] = {}
        self.shader_modules: dict[str, Any] = {}
        self.print_sites: list[Any] = []        # print() statements of compiled kernels (printing.py)
        # debug=True: (kernel name, GlobalPtr) of every bounds-checked access; site k + 1 is written on failure
        self.bounds_sites: list[Any] | None = [] if debug else None
        # LOOP_LIMIT: (kernel name, first loop's loc, loop lines) of every probed task (codegen.py)
        self.loop_limit_sites: list[Any] = []
        self.print_buffer: WgslBuffer | None = None
        self.prints_pending = False
        self.layouts: dict[int, tuple[Any, Any]] = {}
        self.bind_groups: dict[tuple[Any, ...], Any] = {}
        self.launch_encoder = LaunchEncoder()
        self.live: set[WgslBuffer] = set()
        self.staging: Any = None
        self.stats = {"submits": 0, "launches": 0, "pipelines": 0, "arena_moves": 0}
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
        (the print header's loop-limit and debug-check words, the adstack overflow flag) and raise what they
        say as one error (base.raise_pending): a loop the driver cut short first, as the values it truncated
        (trip counts, stack depths) may have caused the others."""
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

    def pipeline(self, wgsl: str, pipeline_layout: Any, flat: bool = False) -> Any:
        """The compute pipeline of a task's WGSL; `flat` sets its `wk_flat` override (TaskDispatch)."""
        flat = flat and "override wk_flat" in wgsl
        key = f"{id(pipeline_layout)} {flat}\n{wgsl}"
        cached = self.pipelines.get(key)
        if cached is None:
            try:
                module = self.shader_modules.get(wgsl)
                if module is None:
                    module = self.shader_modules[wgsl] = create_shader_module(self.device, wgsl)
                stage = {"module": module, "entry_point": "main"}
                if flat:
                    stage["constants"] = {"wk_flat": 1}
                cached = self.device.create_compute_pipeline(layout=pipeline_layout, compute=stage)
            except self._wgpu.GPUError as exc:
                numbered = "\n".join(f"{n + 1:4d}  {line}" for n, line in enumerate(wgsl.splitlines()))
                raise InternalCompilerError(f"naga rejected the generated WGSL: {exc}\n{numbered}") from None
            self.pipelines[key] = cached
            self.stats["pipelines"] += 1
        return cached

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
            if dropped is not None and self.encoder is not None:
                self.keepalive.append(dropped)    # recorded commands may use it (encoding.py)
        buffer.bind_group_keys.clear()

    def compile(self, kernel: ir.OffloadedKernel) -> WgslCompiledKernel:
        return WgslCompiledKernel(self, kernel)

    # ---- command recording --------------------------------------------------------------------------------
    @_serialized
    def begin_pass(self) -> Any:
        self.pass_pipeline = None
        if self.encoder is None:
            self.encoder = self.device.create_command_encoder()
        if self.timer is None:
            self.compute_pass = self.encoder.begin_compute_pass()
        else:    # a launch checks timer.full() before it can get here, so a pair is free
            self.compute_pass = self.encoder.begin_compute_pass(timestamp_writes=self.timer.next_writes())
        return self.compute_pass

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

    def _copy_encoder(self) -> Any:
        """The open encoder with the compute pass ended, so a copy lands in order between launches."""
        if self.compute_pass is not None:
            self.compute_pass.end()
            self.compute_pass = None
        if self.encoder is None:
            self.encoder = self.device.create_command_encoder()
        return self.encoder

    @_serialized
    def flush(self) -> None:
        """Submit everything recorded: the argument ring is written first (queue order puts it before)."""
        encoder, compute_pass = self.encoder, self.compute_pass
        self.encoder = self.compute_pass = None
        ring_used, launches = self.ring_used, self.pending_launches
        self.ring_used = self.pending_launches = 0
        self.pending_buffers.clear()
        timed = 0
        try:
            if encoder is None:
                return
            if compute_pass is not None:
                compute_pass.end()
            if ring_used:
                self.queue.write_buffer(self.ring_buffer, 0, memoryview(self.ring_host)[:ring_used])
            if self.timer is not None:
                timed = self.timer.resolve(encoder)
            self.queue.submit([encoder.finish()])
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

    @_serialized
    def upload(self, buffer: WgslBuffer, data: np.ndarray, offset: int = 0) -> None:
        raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        if raw.size == 0:
            return
        start, end = offset & ~3, -(-(offset + raw.size) // 4) * 4
        if start != offset or end != offset + raw.size:   # copies move whole words: merge with what is there
            words = self.download(buffer, end - start, start) if end <= buffer.capacity else \
                np.zeros(end - start, np.uint8)
            words[offset - start:offset - start + raw.size] = raw
            raw, offset = words, start
        if buffer in self.pending_buffers:   # recorded launches use it: copy in order, not before them
            staged = self.device.create_buffer_with_data(data=raw, usage=self._wgpu.BufferUsage.COPY_SRC)
            self._copy_encoder().copy_buffer_to_buffer(staged, 0, buffer.buffer, buffer.offset + offset, raw.size)
            self.keepalive.append(staged)
        else:
            self.queue.write_buffer(buffer.buffer, buffer.offset + offset, raw)

    @_serialized
    def copy(self, dst: WgslBuffer, src: WgslBuffer, nbytes: int) -> None:
        size = min(-(-nbytes // 4) * 4, dst.capacity, src.capacity)
        if size:
            self._copy_encoder().copy_buffer_to_buffer(src.buffer, src.offset, dst.buffer, dst.offset, size)
            self.pending_buffers.update((dst, src))

    def _staging_buffer(self, size: int) -> Any:
        """The kept staging buffer (grown to a power of two), or for a read past STAGING_KEEP_BYTES one of its
        own that _read destroys after use (a read-back of a large container must not hold its size for good)."""
        usage = self._wgpu.BufferUsage
        if size > STAGING_KEEP_BYTES:
            return self.device.create_buffer(size=size, usage=usage.MAP_READ | usage.COPY_DST)
        if self.staging is None or self.staging.size < size:
            capacity = max(256, 1 << (size - 1).bit_length())
            self.staging = self.device.create_buffer(size=capacity, usage=usage.MAP_READ | usage.COPY_DST)
        return self.staging

    @_serialized
    def download(self, buffer: WgslBuffer, nbytes: int, offset: int = 0, out: np.ndarray | None = None) -> np.ndarray:
        """Bytes of the buffer (after all earlier launches); into `out` (uint8, >= nbytes) when given, which
        spares the page faults of a fresh allocation on large read-backs."""
        data = self._read(buffer, nbytes, offset, out)
        self._report_pending()
        return data

    def _read(self, buffer: WgslBuffer, nbytes: int, offset: int = 0, out: np.ndarray | None = None) -> np.ndarray:
        if nbytes <= 0:
            return np.zeros(0, np.uint8)
        start = offset & ~3
        end = min(-(-(offset + nbytes) // 4) * 4, buffer.capacity)
        size = end - start
        # while reverse launches are watched, their overflow flag rides along (one submit and one map, not two)
        flag = bool(self.adstack_watch) and buffer is not self.adstack_flag
        # so does the print buffer's header while kernels that print (or watch loops) have run
        header = self.prints_pending and buffer is not self.print_buffer
        header_bytes = 4 * wprinting.HEADER_WORDS * header
        total = size + 4 * flag + header_bytes
        staging = self._staging_buffer(total)
        encoder = self._copy_encoder()
        encoder.copy_buffer_to_buffer(buffer.buffer, buffer.offset + start, staging, 0, size)
        if flag:
            encoder.copy_buffer_to_buffer(self.adstack_flag.buffer, self.adstack_flag.offset, staging, size, 4)
        if header:
            encoder.copy_buffer_to_buffer(self.print_buffer.buffer, self.print_buffer.offset, staging,
                                          size + 4 * flag, header_bytes)
        self.flush()
        self._map_for_reading(staging, total)
        try:
            mapped = np.frombuffer(staging.read_mapped(0, total, copy=False), np.uint8)
            result = out[:nbytes] if out is not None else np.empty(nbytes, np.uint8)
            np.copyto(result, mapped[offset - start:offset - start + nbytes])
            if flag:
                self.flag_read = int(mapped[size:size + 4].view(np.uint32)[0])
            if header:
                self.print_header_read = mapped[size + 4 * flag:total].view(np.uint32).copy()
        finally:
            staging.unmap()
            if staging is not self.staging:
                staging.destroy()
        self.unwaited = False
        return result

    def _map_for_reading(self, staging: Any, size: int) -> None:
        """Map `staging` once the submitted copy into it is done. wgpu-py's READ mode first submits an empty
        command buffer (for maps of buffers written without a later submit); every read-back here maps right
        after submitting its copy, so it asks for READ_NOSYNC, which spares that submit (on lavapipe a submit
        costs a queue-thread round trip). Where wgpu-py does not know that mode, plain READ. wgpu-py's
        map_sync waits for its poll thread to see the map done; polling the device here, blocking, resolves the
        map on this thread instead (lavapipe: a launch + sync round trip 193 -> 170 us)."""
        if self.map_read_mode == "READ_NOSYNC":
            try:
                promise = staging.map_async("READ_NOSYNC", 0, size)
            except (ValueError, KeyError, TypeError, AttributeError):
                self.map_read_mode = self._wgpu.MapMode.READ
            else:
                poll = getattr(self.device, "_poll_wait", None)
                if poll is not None:
                    poll()
                promise.sync_wait()
                return
        staging.map_sync(self.map_read_mode, 0, size)

    def sync(self) -> None:
        """Submit, then wait. With nothing to read back (no adstack flag, no print buffer pending) the wait is
        a blocking device poll, which returns when the submitted work is done (H100: a launch + sync round
        trip 250-330 -> ~100 us; a map costs wgpu-native more than the wait itself). Otherwise the flag or the
        print header is read back, which waits too: one submit and one map. With nothing recorded, unwaited or
        to report it returns at once, without the lock (the floor of every synchronising call)."""
        if self.encoder is None and not (self.unwaited or self.adstack_watch or self.prints_pending):
            return
        self._sync_locked()

    @_serialized
    def _sync_locked(self) -> None:
        if self.encoder is not None or self.unwaited or self.adstack_watch:
            poll = getattr(self.device, "_poll_wait", None)
            if poll is not None and not self.adstack_watch and not self.prints_pending:
                self.flush()
                poll()
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
        if not reserved and not bounds_site and not loop_limit_site:
            return []
        capacity = self.print_buffer.nbytes // 4 - wprinting.HEADER_WORDS
        words = self._read(self.print_buffer, 4 * written, 4 * wprinting.HEADER_WORDS).view(np.uint32) \
            if written else np.zeros(0, np.uint32)
        self.queue.write_buffer(self.print_buffer.buffer, self.print_buffer.offset,
                                np.zeros(wprinting.HEADER_WORDS, np.uint32))
        wprinting.print_records(words, reserved, written, capacity, self.print_sites)
        errors: list[WkError] = []
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
            self.pipelines.clear()
            self.shader_modules.clear()
            self.layouts.clear()
            self.print_buffer = None
            self.prints_pending = False
            self.print_header_read = None
            if self.staging is not None:
                self.staging.destroy()
                self.staging = None
