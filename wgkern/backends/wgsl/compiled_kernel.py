"""A kernel compiled for a WGSL device: one shader and pipeline per task, the bind groups of a launch's buffers,
the packed launch arguments, and the dispatch sizes (computed on the host, or from memory in the shader), with
the adstack heap sized and regrown around launches that need it."""
from __future__ import annotations

import functools
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from wgkern.backends.adstack import layout_task, stack_bytes_per_thread
from wgkern.backends.base import CompiledKernel, LaunchArgs
from wgkern.backends.wgsl import adstack as wadstack
from wgkern.backends.wgsl.adstack import metadata_rows
from wgkern.backends.wgsl.arena import same_buffers
from wgkern.backends.adstack import collect_stacks
from wgkern.backends.wgsl.bindings import BindingPlan, binding_plan
from wgkern.backends.wgsl import serial_chunks
from wgkern.backends.wgsl import split as wsplit
from wgkern.backends.wgsl.codegen import TaskShader, WgslCodegen, params_layout
from wgkern.backends.wgsl import outlining
from wgkern.backends.wgsl import shader_records
from wgkern.backends.wgsl.pipelines import Request
from wgkern.backends.wgsl.shader_common import LOOP_LIMIT
from wgkern.backends.wgsl import printing as wprinting
from wgkern.errors import DeviceFeatureError, OutOfMemoryError
from wgkern.ir import host_eval
from wgkern.ir import nodes as ir
from wgkern.ir.visitor import walk
from wgkern import dtypes as T
from wgkern.dtypes import DataType
from wgkern.backends.wgsl.buffers import (_U32, BOUNDS_FROM_MEMORY_GROUPS, MAX_DIMENSION, MAX_THREADS, RING_BYTES,
                                         WgslBuffer)

if TYPE_CHECKING:
    from wgkern.backends.wgsl.runtime import WgslBackend


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
    # a serial task whose loops run in chunks (serial_chunks.py): the loop number of each dispatch of a launch,
    chunks: Callable[[Sequence[Any], Sequence[tuple[int, ...]]], list[int]] | None = None
    # the pipeline of each loop, made with the kernel (`flat` is loop 0's)
    chunk_pipelines: dict[int, Any] | None = None
    # and the positions of ndarrays that must not be one array at a launch (serial_chunks.reread_aliases)
    reread_aliases: tuple[tuple[int, int], ...] = ()

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

    def __init__(self, backend: WgslBackend, kernel: ir.OffloadedKernel, windows: tuple[int, ...] | None = None,
                 origin: str | None = None):
        """`windows`: the bindings of each container slot (split.py); None: one each. `origin`: where the IR came
        from (code_records.py), letting a start find the kernel's WGSL without generating it (shader_records.py)."""
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
        # (buffers, bind group, the backend's bind_group_drops then) of the last launch that bound its buffers
        # directly: a launch on the same buffers reuses the bind group while the backend's cache has dropped none
        # (a freed buffer drops those that bind it)
        self.last_binding: tuple[list[Any], Any, int] | None = None
        self.adstack_code = backend.register_adstack_kernel(self)
        shaders = self._shaders(origin)
        # ((capacities, dispatch sizes), _lay_out_stacks' answer) of the last reverse launch
        self.stack_layout: tuple[Any, Any] | None = None
        self.params_size = self.layout.size
        self.stride = -(-self.params_size // backend.offset_alignment) * backend.offset_alignment
        self.pack_into = self.layout.pack.pack_into
        self.scalar_args = self.layout.scalar_args
        self.shape_axes = self.layout.shape_axes
        self.scalar_dtypes = [kernel.args[i].dtype for i in self.scalar_args]
        # A kernel whose argument block is the launch id and seed alone, and reads neither (no wk.random()), passes
        # the same arguments at every launch: it reuses the ring slot its last launch packed in the same batch
        # (`reused_slot`: (batch, offset)), so a repeated launch writes no arguments and, while the pass still
        # has its bind group at that offset, sets no bind group either. `recorded_batch`: the batch whose
        # pending buffers already hold last_binding's buffers.
        self.fixed_arguments = not (self.scalar_args or self.shape_axes or self.plan.packed) and not any(
            isinstance(stmt, ir.RandomValue) for task in kernel.tasks
            for block in (task.bounds, task.body) for stmt in walk(block))
        self.reused_slot: tuple[int, int] | None = None
        self.recorded_batch = -1
        self.listed_batch = -1
        # f16 scalars travel as f32: round to f16 on the host so the value is rounded once, as on the CPU
        self.f16_positions = [k for k, dtype in enumerate(self.scalar_dtypes) if dtype == T.f16]
        # kernels with adstacks bind the heap and the overflow flag after their containers, then the print buffer
        self.runtime_bindings = (2 if self.has_stacks else 0) + (1 if self.has_prints else 0)
        pipeline_layout = backend.pipeline_layout(self.plan.bindings + self.runtime_bindings)
        # every launch of a chunked serial task dispatches each of its loops at least once (serial_chunks.py), so
        # their pipelines are made with the tasks', in one batch
        made = backend.pipeline_cache.many([_task_request(shader, pipeline_layout) for shader in shaders] +
                                           [_chunk_request(shader.wgsl, pipeline_layout, loop) for shader in shaders
                                            for loop in range(1, len(shader.chunked_loops))])
        pipelines, chunk_pipelines = made[:len(shaders)], iter(made[len(shaders):])   # loops in task order
        self.tasks = [TaskDispatch(shader, pipeline,
                                   _dispatch_sizer(shader.task, kernel.containers, shader.workgroup_size),
                                   functools.partial(backend.pipeline, shader.wgsl, pipeline_layout, False))
                      for shader, pipeline in zip(shaders, pipelines)]
        for task in self.tasks:
            if task.shader.chunked_loops:
                loops = task.shader.chunked_loops
                task.chunks = functools.partial(_chunk_dispatches, loops,
                                                tuple(serial_chunks.chunk_iterations(loop) for loop in loops),
                                                kernel.containers)
                task.chunk_pipelines = {0: task.flat}
                task.chunk_pipelines.update((loop, next(chunk_pipelines)) for loop in range(1, len(loops)))
                task.reread_aliases = serial_chunks.reread_aliases(task.shader.task, kernel.containers)

    def _shaders(self, origin: str | None) -> list[TaskShader]:
        """The tasks' shaders, from the offline cache's record under `origin` where there is one, else generated
        (and recorded); sets stacks, has_stacks and layout."""
        backend, kernel = self.backend, self.kernel
        record_key = shader_records.key(origin, kernel, backend.debug, sorted(backend.features),
                                        backend.adapter.summary, backend.max_workgroup_size,
                                        backend.max_workgroup_storage, self.plan, self.windows,
                                        outlining.OUTLINE_LINES)
        if record_key is not None:
            self.stacks, self.has_stacks = metadata_rows(kernel)[0], False    # (none: code_records.key)
            self.layout = params_layout(kernel, self.plan.packed)
            shaders = shader_records.load(record_key, kernel, self.layout, backend.loop_limit_sites)
            if shaders is not None:
                return shaders
        codegen = WgslCodegen(kernel, backend.features, backend.adapter.summary, self.adstack_code, self.plan,
                              backend.print_sites, backend.bounds_sites, backend.loop_limit_sites,
                              backend.max_workgroup_size, backend.max_workgroup_storage, backend.tile_sites)
        self.stacks = codegen.stacks
        self.has_stacks = any(self.stacks)
        self.layout = codegen.layout
        shaders = codegen.generate()
        if record_key is not None:
            shader_records.store(record_key, self.layout, shaders)
        return shaders

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
        """Record the launch. The caller holds LAUNCH_LOCK, the backend's lock (runtime.py, Threads)."""
        backend = self.backend
        self._launch(args)
        if self.listed_batch != backend.batches:     # named if wgpu rejects the batch (runtime.flush)
            self.listed_batch = backend.batches
            backend.batch_kernels.append(self.kernel.name)
        if backend.debug:   # debug=True: a failed check raises at the launch that failed, as on the CPU
            backend.sync()

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
        if backend.ring_used + self.stride > RING_BYTES or backend.pending_launches >= backend.batch_limit or \
                (backend.timer is not None and backend.timer.full()):
            backend.flush()
        last = self.last_binding
        if last is not None and last[2] == backend.bind_group_drops and last[0] == args.buffers:
            bind_group = last[1]      # the previous launch's buffers: its bind group, and its arguments if fixed
            slot = self.reused_slot
            if slot is not None and slot[0] == backend.batches:
                offset = slot[1]
            else:
                offset = self._take_slot(args)
            if self.recorded_batch != backend.batches:
                self.recorded_batch = backend.batches
                backend.pending_buffers.update(args.buffers)
        else:
            self._refuse_reread_aliases(args.buffers)
            bound, bases = self._bindings(args)
            offset = backend.ring_used
            backend.ring_used = offset + self.stride
            self._pack(backend.ring_host, offset, args, bases)
            self.reused_slot = None
            if self.has_prints:
                bound = (*bound, backend.print_target())
            key = (self.params_size, self.windows, *bound)
            bind_group = backend.bind_groups.get(key)
            if bind_group is None:
                bind_group = backend.bind_group(key)
            if not (self.plan.packed or self.has_prints):      # bound is the buffers themselves: reusable
                self.last_binding = (list(args.buffers), bind_group, backend.bind_group_drops)
                self.reused_slot = (backend.batches, offset) if self.fixed_arguments else None
                self.recorded_batch = backend.batches
            backend.pending_buffers.update(args.buffers)
            if self.plan.packed:
                backend.pending_buffers.update(bound)
        commands = backend.commands
        if commands.compute_pass is None:
            backend.begin_pass()
        if backend.pass_binding[0] is not bind_group or backend.pass_binding[1] != offset:
            commands.set_bind_group(bind_group, offset)
            backend.pass_binding = (bind_group, offset)
        scalars, shapes = args.scalars, args.shapes
        for task in self.tasks:
            if task.chunks is not None:
                self._dispatch_chunks(task, scalars, shapes)
                continue
            groups = task.groups(scalars, shapes)
            if groups is not None:
                pipeline = task.flat if groups[2] else task.pipeline(False)
                if backend.pass_pipeline is not pipeline:    # repeated launches skip the state change
                    commands.set_pipeline(pipeline)
                    backend.pass_pipeline = pipeline
                commands.dispatch(groups[0], groups[1])
        backend.pending_launches += 1

    def _refuse_reread_aliases(self, buffers: Sequence[Any]) -> None:
        """Before anything of a launch on new buffers is recorded: an array passed as two ndarrays that a task
        with chunked loops must see apart (serial_chunks.reread_aliases) is an error."""
        for task in self.tasks:
            for read, written in task.reread_aliases:
                if buffers[read] is buffers[written]:
                    raise serial_chunks.alias_error(self.kernel.name, task.shader.task, self.kernel.containers,
                                                    read, written)

    def _take_slot(self, args: LaunchArgs) -> int:
        """Pack this launch's arguments into the next ring slot; a kernel with fixed arguments keeps the slot
        for its later launches in this batch."""
        backend = self.backend
        offset = backend.ring_used
        backend.ring_used = offset + self.stride
        self._pack(backend.ring_host, offset, args)
        if self.fixed_arguments:
            self.reused_slot = (backend.batches, offset)
        return offset

    def _dispatch_chunks(self, task: TaskDispatch, scalars: Sequence[Any], shapes: Sequence[tuple[int, ...]]) -> None:
        """A serial task whose loops run in chunks: one dispatch per chunk, in order (serial_chunks.py)."""
        backend = self.backend
        pipelines = task.chunk_pipelines
        for loop in task.chunks(scalars, shapes):
            pipeline = pipelines[loop]
            if backend.pass_pipeline is not pipeline:
                backend.commands.set_pipeline(pipeline)
                backend.pass_pipeline = pipeline
            backend.commands.dispatch(1, 1)

    def _lay_out_stacks(self, capacities: list[list[int]], dispatched: list[Any]) -> tuple[list[Any], list[int], int]:
        """Each task's dispatch (`dispatched`: TaskDispatch.groups) cut to what one heap binding holds, the
        heap's metadata words for the argument ring, and the heap's size in words (backends/adstack.py)."""
        backend = self.backend
        plans, metadata, heap_words = [], [], 0
        for task, specs, caps, groups in zip(self.tasks, self.stacks, capacities, dispatched):
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
        return plans, metadata, heap_words

    def _launch_with_stacks(self, args: LaunchArgs) -> None:
        """Reverse-mode launch: size each task's dispatch so its slot-major adstack slices fit one binding,
        lay the heap out (metadata rows go in the argument ring), then dispatch as usual. A launch with the
        capacities and dispatch sizes of the one before reuses its layout (a loop calling .grad())."""
        backend = self.backend
        capacities = wadstack.capacities_for(self.stacks, args.extra.get("adstack_capacities"))
        key = (capacities, [task.groups(args.scalars, args.shapes) for task in self.tasks])
        if self.stack_layout is None or self.stack_layout[0] != key:
            self.stack_layout = (key, self._lay_out_stacks(*key))
        plans, metadata, heap_words = self.stack_layout[1]
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
        commands = backend.commands
        if commands.compute_pass is None:
            backend.begin_pass()
        commands.set_bind_group(bind_group, offset)
        backend.pass_binding = (bind_group, offset)
        for task, groups in zip(self.tasks, plans):
            if groups is not None:
                pipeline = task.pipeline(groups[2])
                if backend.pass_pipeline is not pipeline:
                    commands.set_pipeline(pipeline)
                    backend.pass_pipeline = pipeline
                commands.dispatch(groups[0], groups[1])
        backend.pending_buffers.update(buffers)
        backend.pending_buffers.update(args.buffers)
        backend.pending_launches += 1
        backend.adstack_watch[self.adstack_code] = (self, capacities)
        backend.flag_read = None      # a flag read before this launch says nothing about it
        stats = getattr(backend, "runtime_stats", None)
        if stats is not None:
            stats.adstack_heap_bytes = max(heap_words, 1) * 4    # in use by this launch (the formula)
            stats.adstack_heap_grows = backend.adstack_heap.grows


def _task_request(shader: TaskShader, pipeline_layout: Any) -> Request:
    """The pipeline made with a task: its flat one (TaskDispatch), or a chunked serial task's first loop's."""
    if shader.chunked_loops:
        return _chunk_request(shader.wgsl, pipeline_layout, 0)
    return shader.wgsl, pipeline_layout, True, None


def _chunk_request(wgsl: str, pipeline_layout: Any, loop: int) -> Request:
    """The pipeline of a chunked serial task's loop number `loop`: the task's WGSL without the other loops
    (serial_chunks.chunk_loop_source), its override set to `loop` (serial_chunks.chunk_pipeline_constants)."""
    return (serial_chunks.chunk_loop_source(wgsl, loop), pipeline_layout, False,
            serial_chunks.chunk_pipeline_constants(loop))


def _chunk_dispatches(loops: Sequence[ir.RangeFor], sizes: Sequence[int], containers: list[ir.ContainerSlot],
                      scalars: Sequence[Any], shapes: Sequence[tuple[int, ...]]) -> list[int]:
    return serial_chunks.chunk_dispatches(loops, sizes, scalars, host_eval.shapes_by_slot(containers, shapes))


def _param_value(value: Any, dtype: DataType) -> Any:
    if dtype.is_float:
        return float(value)
    return T.wrap_int(int(value), dtype)
