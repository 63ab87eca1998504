"""The WGSL max-reducer runtime: every job of a round in one compute pass, one submission, one read-back.

`MaxReducerPipeline(device)` compiles wgsl/max_reducer.wgsl once (keep one per device, on the backend).
`WgslReducer` runs prepared jobs against the launch's device buffers: bytecode of all jobs in one storage
buffer, a 256-byte uniform record per job (dynamic offset), and one `data` binding per group of jobs reading
the same containers (the container itself, or a device-side gather of several, so the shader never switches
between bindings). A flagged job comes back as None: the caller recomputes it exactly on the host.
`WgslLaunchContext` is the WGSL adapter of sizing.LaunchContext."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Sequence

import numpy as np

from wgkern.sizing.bytecode import NotEncodable, encode
from wgkern.sizing.cache import SizeCache
from wgkern.sizing.reducers import MAX_POINTS, PreparedJob

WORKGROUP = 64
MAX_GROUPS = 65535
POINTS_PER_INVOCATION = 64   # grid-stride depth: fewer, longer invocations (per-workgroup cost matters)
MAX_AXES = 4
RECORD = 256          # uniform record stride (minUniformBufferOffsetAlignment)
MODES = {"max": 0, "value": 1}
MODE_SLICE = 2        # peeled job: order-preserving u32 max of a contiguous slice (max_reducer.wgsl)


class MaxReducerPipeline:
    """The compiled generic reducer of one wgpu device (plus its layout and a dummy data buffer)."""

    def __init__(self, device: Any):
        import wgpu
        from wgkern.resources import wgsl_source
        from wgkern.backends.wgsl.shader_module import create_shader_module

        self.wgpu = wgpu
        self.device = device
        stage = wgpu.ShaderStage.COMPUTE
        read_only = {"type": wgpu.BufferBindingType.read_only_storage}
        self.layout = device.create_bind_group_layout(entries=[
            {"binding": 0, "visibility": stage, "buffer": read_only},
            {"binding": 1, "visibility": stage, "buffer": {"type": wgpu.BufferBindingType.storage}},
            {"binding": 2, "visibility": stage, "buffer": {"type": wgpu.BufferBindingType.uniform,
                                                           "has_dynamic_offset": True, "min_binding_size": 64}},
            {"binding": 3, "visibility": stage, "buffer": read_only}])
        module = create_shader_module(device, wgsl_source("max_reducer.wgsl"))
        self.pipeline = device.create_compute_pipeline(
            layout=device.create_pipeline_layout(bind_group_layouts=[self.layout]),
            compute={"module": module, "entry_point": "main"})
        self.dummy = device.create_buffer(size=16, usage=wgpu.BufferUsage.STORAGE)


Item = tuple[int, PreparedJob, list[Any]]      # (result index, job, containers it reads)


def _batches(items: list[Item]) -> list[list[Item]]:
    """Jobs grouped by the set of containers they read: each group binds one data buffer (the container
    itself, or a gather of several)."""
    groups: dict[frozenset[int], list[Item]] = {}
    for item in items:
        groups.setdefault(frozenset(id(s) for s in item[2]), []).append(item)
    return list(groups.values())


def _slots_of(job: PreparedJob) -> list[Any]:
    from wgkern.sizing.cache import content_slots
    return content_slots(job.job.body)


class WgslReducer:
    """ReducerBackend on a wgpu device. `buffer_of(slot)` gives (wgpu buffer, byte offset) of the container's
    32-bit words (a container packed into an arena starts at an offset)."""
    name = "wgsl"
    gathers_reads = True

    def __init__(self, pipeline: MaxReducerPipeline, buffer_of: Callable[[Any], Any],
                 shape: Callable[[Any], tuple[int, ...]]):
        self.pipeline = pipeline
        self.buffer_of = buffer_of
        self.shape = shape
        self.dispatches = 0
        self.errors: list[Exception] = []     # device errors survived by falling back to the host

    def read_ok(self, dtype: Any) -> bool:
        return dtype.is_int and dtype.bits <= 32

    def run(self, jobs: list[PreparedJob]) -> list[int | None]:
        results: list[int | None] = [None] * len(jobs)
        runnable: list[Item] = []
        for index, job in enumerate(jobs):
            if job.closed_form is not None:
                results[index] = job.closed_form
            elif len(job.extents) <= MAX_AXES and job.points <= MAX_POINTS:
                runnable.append((index, job, _slots_of(job)))
        if runnable:
            try:
                self._dispatch(_batches(runnable), results)
            except self.pipeline.wgpu.GPUError as error:   # e.g. a gather past the storage binding limit
                self.errors.append(error)                   # its jobs stay None: the host recomputes them
        return results

    def _code(self, job: PreparedJob, base: Callable[[Any], int]) -> list[int]:
        """Bytecode, or for a peeled job the words (base, signed) of the slice it maximises."""
        if job.raw is None:
            return encode(job, base, self.shape)
        (extent,) = tuple(self.shape(job.raw.slot))
        if job.lo[0] < 0 or job.lo[0] + job.extents[0] > extent:
            raise NotEncodable("slice out of bounds")        # the host fallback raises the SizingError
        return [base(job.raw.slot), 1 if job.raw.dtype.is_signed else 0]

    def _data(self, encoder: Any, slots: list[Any]) -> tuple[Any, dict[int, int]]:
        """The buffer a batch binds as `data` and each container's word base in it: the container itself
        when there is one, else a gather of all of them (device-side copies in this submission)."""
        if not slots:
            return self.pipeline.dummy, {}
        if len(slots) == 1:
            source, byte_offset = self.buffer_of(slots[0])
            return source, {id(slots[0]): byte_offset // 4}
        sizes = [max(4 * int(np.prod(self.shape(s), dtype=np.int64)), 4) for s in slots]
        gather = self.pipeline.device.create_buffer(size=sum(sizes), usage=self.pipeline.wgpu.BufferUsage.STORAGE
                                                    | self.pipeline.wgpu.BufferUsage.COPY_DST)
        bases, offset = {}, 0
        for slot, size in zip(slots, sizes):
            source, byte_offset = self.buffer_of(slot)
            encoder.copy_buffer_to_buffer(source, byte_offset, gather, offset, min(size, source.size - byte_offset))
            bases[id(slot)] = offset // 4
            offset += size
        return gather, bases

    def _dispatch(self, batches: list[list[Item]], results: list[int | None]) -> None:
        wgpu, device, p = self.pipeline.wgpu, self.pipeline.device, self.pipeline
        encoder = device.create_command_encoder()
        code: list[int] = []
        records: list[tuple[int, PreparedJob, int, int, Any]] = []     # (result, job, code start, length, data)
        for batch in batches:
            slots = list({id(s): s for _, _, job_slots in batch for s in job_slots}.values())
            encoded = []
            for index, job, _ in batch:
                try:
                    encoded.append((index, job, self._code(job, lambda s: 0)))
                except NotEncodable:
                    continue
            if not encoded:
                continue
            data, bases = self._data(encoder, slots)
            for index, job, _ in encoded:
                words = self._code(job, lambda s: bases[id(s)])
                records.append((index, job, len(code), len(words), data))
                code.extend(words)
        if not records:
            return
        self.dispatches += len(records)
        U = wgpu.BufferUsage
        code_buffer = device.create_buffer_with_data(data=np.asarray(code + [0], np.uint32).tobytes(),
                                                     usage=U.STORAGE)
        out = device.create_buffer_with_data(data=np.zeros(2 * len(records), np.uint32).tobytes(),
                                             usage=U.STORAGE | U.COPY_SRC)
        uniform = np.zeros((len(records), RECORD // 4), np.uint32)
        dispatch: list[tuple[int, int, Any]] = []
        for number, (index, job, start, length, data) in enumerate(records):
            points = job.points if job.job.mode == "max" else 1
            groups = max(1, min(-(-points // (WORKGROUP * POINTS_PER_INVOCATION)), MAX_GROUPS))
            lo = (list(job.lo) + [0] * MAX_AXES)[:MAX_AXES]
            ext = (list(job.extents) + [1] * MAX_AXES)[:MAX_AXES]
            mode = MODE_SLICE if job.raw is not None else MODES[job.job.mode]
            uniform[number, :8] = [start, length, len(job.extents), points, number, mode, groups * WORKGROUP, 0]
            uniform[number, 8:12] = np.asarray(lo, np.int64).astype(np.int32).view(np.uint32)
            uniform[number, 12:16] = ext
            dispatch.append((number, groups, data))
        uniform_buffer = device.create_buffer_with_data(data=uniform.tobytes(), usage=U.UNIFORM)
        bind_groups: dict[int, Any] = {}
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(p.pipeline)
        for number, groups, data in dispatch:
            bind_group = bind_groups.get(id(data))
            if bind_group is None:
                bind_group = bind_groups[id(data)] = device.create_bind_group(layout=p.layout, entries=[
                    {"binding": 0, "resource": {"buffer": code_buffer}},
                    {"binding": 1, "resource": {"buffer": out}},
                    {"binding": 2, "resource": {"buffer": uniform_buffer, "offset": 0, "size": 64}},
                    {"binding": 3, "resource": {"buffer": data}}])
            compute.set_bind_group(0, bind_group, [number * RECORD])
            compute.dispatch_workgroups(groups)
        compute.end()
        staging = device.create_buffer(size=out.size, usage=U.MAP_READ | U.COPY_DST)
        encoder.copy_buffer_to_buffer(out, 0, staging, 0, out.size)
        device.queue.submit([encoder.finish()])
        staging.map_sync(wgpu.MapMode.READ)
        words = np.frombuffer(bytes(staging.read_mapped()), np.uint32).copy()
        staging.unmap()
        for number, (index, job, *_rest) in enumerate(records):
            value, flags = int(words[2 * number]), int(words[2 * number + 1])
            if not flags:
                results[index] = _decode(job, value)


def _decode(job: PreparedJob, value: int) -> int:
    """The job's result from its result word (a slice job's word is an order-preserving key)."""
    if job.raw is not None:
        if job.raw.dtype.is_signed:
            return job.finish(int(np.uint32(value ^ 0x8000_0000).view(np.int32)))
        return job.finish(value)
    return value if job.job.mode == "max" else int(np.uint32(value).view(np.int32))


@dataclass
class WgslLaunchContext:
    """WGSL adapter of sizing.LaunchContext. `buffer_of(slot)` -> (wgpu buffer, byte offset) of the container,
    `download(slot)` -> its contents as a full-shape numpy array (host fallback only, once per launch)."""
    scalars: Sequence[Any]
    shapes: Callable[[Any], tuple[int, ...]]
    tokens: Callable[[Any], Hashable | None]
    buffer_of: Callable[[Any], Any]
    download: Callable[[Any], np.ndarray]
    pipeline: MaxReducerPipeline
    stats: Any
    cache: SizeCache
    default_ad_stack_size: int = 32
    downloaded: dict[int, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.device_reducer = WgslReducer(self.pipeline, self.buffer_of, self.shape)

    def scalar(self, arg_index: int) -> int:
        return int(self.scalars[arg_index])

    def shape(self, slot: Any) -> tuple[int, ...]:
        return tuple(self.shapes(slot))

    def token(self, slot: Any) -> Hashable | None:
        return self.tokens(slot)

    def host_array(self, slot: Any) -> np.ndarray:
        array = self.downloaded.get(id(slot))
        if array is None:
            array = self.downloaded[id(slot)] = self.download(slot)
        return array

    def read(self, slot: Any, flat_index: int) -> int:
        return int(self.host_array(slot).reshape(-1)[flat_index])
