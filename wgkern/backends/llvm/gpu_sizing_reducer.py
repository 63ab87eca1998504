"""The GPU max-reducer: the launch-time sizer's reductions on the device, u32 atomic max per thread.

Two kernels, compiled once per backend (`ReducerKernels`):
- `wk_slice_max`: the raw maximum of a contiguous slice of a 32-bit integer container. The sizer peels most
  loop bounds (`for _ in range(n[i])` over a parallel `i`) into such slices (reducers.py: `PreparedJob.raw`);
  the maximum is taken over order-preserving keys (a signed value is biased by 2^31).
- `wk_job_max`: any other job of the reducer grammar, by interpreting its bytecode (bytecode.py, the same code
  wgsl/max_reducer.wgsl runs): one point of the job's cross product per thread and step, checked arithmetic and
  bounds that set flag bits (the host then recomputes the job exactly), `max(value, 0)` folded into one atomic
  max per thread, or (mode 'value') the value of a single read.
All jobs of a round are launched before one read-back. A READ in the bytecode names its container by an index
into a table of device addresses. Jobs the bytecode cannot express come back as None: the caller evaluates
them on the host, from a read-back of the container.

The kernels' bodies are target-independent LLVM functions (`wk_slice_range`, `wk_job_range`: params, first
point, stride; llvm/max_reducer.ll) under thin per-target kernel wrappers that find the thread's first point and
the grid's stride: NVPTX (cuda_sizing_reducer.py) and AMDGPU (amdgpu_sizing_reducer.py). So the same code also
runs on the host (tests/sizing checks the interpreter there against the numpy reducer). `DeviceReducer` talks
to the device through `ReducerDevice`; `ReducerKernels` is that device for a backend on the CUDA runtime
(cuda.py, on the CUDA driver or on HIP), given the module its target compiled."""
from __future__ import annotations

import ctypes
import struct
from typing import Any, Callable, Protocol

import numpy as np

from wgkern.resources import llvm_source
from wgkern.sizing.bytecode import NotEncodable, encode
from wgkern.sizing.reducers import MAX_POINTS, PreparedJob

THREADS = 256
MAX_BLOCKS_PER_SM = 8
MAX_AXES = 4
SLICE_PARAMS = "<QqIxxxxQ"           # data address, count, key bias, result address
JOB_PARAMS = "<QQQIIIIiiiiIIII"      # code, address table, results (value, flags); length, axes, points, mode,
JOB_PARAMS_BYTES = struct.calcsize(JOB_PARAMS)   # lo[4], extents[4]
MODES = {"max": 0, "value": 1}
CODE_PADDING = 4                     # zero words after the code: operand reads never leave the buffer


def generic_ir() -> str:
    """The reducer's target-independent LLVM bodies (llvm/max_reducer.ll, shipped with the package)."""
    return llvm_source("max_reducer.ll")


class ReducerDevice(Protocol):
    """What DeviceReducer needs of a device: a reusable workspace, copies, and the two reducer entry points run
    over `points` (the grid is the device's business)."""

    def workspace(self, nbytes: int) -> int: ...          # address of >= nbytes of device memory, reused

    def upload(self, address: int, data: bytes) -> None: ...

    def download(self, address: int, nbytes: int) -> bytes: ...

    def run(self, entry: str, params: bytes, points: int) -> None: ...   # 'slice' or 'job'


class ReducerKernels:
    """The reducer module of one backend on the CUDA runtime (cuda.py: CudaBackend, AmdgpuBackend), loaded
    from `code` (what its driver's load_module takes: PTX, or an AMDGPU code object), as a ReducerDevice."""

    def __init__(self, backend: Any, code: Any):
        self.backend = backend
        self.module = backend.driver.load_module(code)
        self.functions = {"slice": backend.driver.function(self.module, "wk_slice_max"),
                          "job": backend.driver.function(self.module, "wk_job_max")}
        self.blocks_cap = max(1, backend.info.multiprocessors * MAX_BLOCKS_PER_SM)
        self.runs = {"slice": 0, "job": 0}       # launches of each kernel (tests, benchmarks)
        self._workspace: Any = None

    def workspace(self, nbytes: int) -> int:
        """One buffer for a round's results, code and address table, grown by doubling and freed with the
        backend's memory (a cuMemAlloc + cuMemFree per round cost more than the reductions)."""
        if self._workspace is None or self._workspace.nbytes < nbytes:
            if self._workspace is not None:
                self.backend.free(self._workspace)
                self._workspace = None
            size = max(4096, 1 << (nbytes - 1).bit_length())
            self._workspace = self.backend.allocate(size)
        return self._workspace.address

    def upload(self, address: int, data: bytes) -> None:
        staged = ctypes.create_string_buffer(data, len(data))
        self.backend.driver.upload(address, ctypes.addressof(staged), len(data))

    def download(self, address: int, nbytes: int) -> bytes:
        out = ctypes.create_string_buffer(nbytes)
        self.backend.driver.download(ctypes.addressof(out), address, nbytes)
        return out.raw

    def run(self, entry: str, params: bytes, points: int) -> None:
        blocks = max(1, min(-(-points // THREADS), self.blocks_cap))
        self.runs[entry] += 1
        self.backend.start_timer()
        self.backend.driver.launch(self.functions[entry], blocks, THREADS, params)


class DeviceReducer:
    """ReducerBackend on a GPU: peeled slices and bytecode jobs over 32-bit integer containers on the device,
    the rest None. `address_of(slot)` gives the device address of a container's first element; `name` is the
    backend's."""
    gathers_reads = True

    def __init__(self, device: ReducerDevice, address_of: Callable[[Any], int],
                 shape: Callable[[Any], tuple[int, ...]], name: str = "cuda"):
        self.name = name
        self.device = device
        self.address_of = address_of
        self.shape = shape
        self.dispatches = 0

    def read_ok(self, dtype: Any) -> bool:
        return dtype.is_int and dtype.bits <= 32        # 8- and 16-bit reads carry their width (bytecode.py)

    def _slice(self, job: PreparedJob) -> tuple[int, int, int] | None:
        """(device address of the slice, its length, key bias), or None when the device cannot do the job."""
        raw = job.raw
        if raw is None or not hasattr(raw, "slot") or raw.dtype is None or raw.dtype.bits != 32 \
                or not raw.dtype.is_int or len(job.extents) != 1:
            return None
        shape = tuple(self.shape(raw.slot))
        if len(shape) != 1 or job.lo[0] < 0 or job.lo[0] + job.extents[0] > shape[0]:
            return None            # the host evaluates it (and raises the SizingError where out of bounds)
        bias = 0x8000_0000 if raw.dtype.is_signed else 0
        return self.address_of(raw.slot) + 4 * job.lo[0], job.extents[0], bias

    def _encode(self, job: PreparedJob, table: dict[int, int], addresses: list[int]) -> list[int] | None:
        """The job's bytecode with READs naming rows of the address table (added as needed), or None. A peeled
        job the slice kernel cannot take (an 8- or 16-bit slice) runs its whole body: max over the points of
        outer(raw) is outer(max raw), since outer does not decrease."""
        if len(job.extents) > MAX_AXES or job.points > MAX_POINTS \
                or any(not -2**31 <= lo < 2**31 for lo in job.lo):
            return None

        def row(slot: Any) -> int:
            found = table.get(id(slot))
            if found is None:
                found = table[id(slot)] = len(addresses)
                addresses.append(self.address_of(slot))
            return found
        try:
            return encode(job, row, self.shape, native_widths=True)
        except NotEncodable:
            return None

    def run(self, jobs: list[PreparedJob]) -> list[int | None]:
        results: list[int | None] = [None] * len(jobs)
        slices, programs = [], []
        table: dict[int, int] = {}
        addresses: list[int] = []
        for index, job in enumerate(jobs):
            if job.closed_form is not None:
                results[index] = job.closed_form
            elif (found := self._slice(job)) is not None:
                slices.append((index, job, *found))
            elif (words := self._encode(job, table, addresses)) is not None:
                programs.append((index, job, words))
        if not slices and not programs:
            return results
        device = self.device
        # the workspace: result words (zeroed: key 0 is the smallest; per job a value and a flags word), the
        # code of every job, then the table of container addresses; all of it in one upload
        results_words = len(slices) + 2 * len(programs)
        code_words = [w for _, _, words in programs for w in words] + [0] * CODE_PADDING
        table_at = -(-4 * (results_words + len(code_words)) // 8) * 8
        blob = bytearray(table_at + 8 * len(addresses))
        struct.pack_into(f"<{len(code_words)}I", blob, 4 * results_words, *code_words)
        struct.pack_into(f"<{len(addresses)}Q", blob, table_at, *addresses)
        base = device.workspace(len(blob))
        device.upload(base, bytes(blob))
        code_at = base + 4 * results_words
        for number, (_, _, address, count, bias) in enumerate(slices):
            device.run("slice", struct.pack(SLICE_PARAMS, address, count, bias, base + 4 * number), count)
        start = 0
        for number, (_, job, words) in enumerate(programs):
            points = job.points if job.job.mode == "max" else 1
            lo = (list(job.lo) + [0] * MAX_AXES)[:MAX_AXES]
            extents = (list(job.extents) + [1] * MAX_AXES)[:MAX_AXES]
            result = base + 4 * (len(slices) + 2 * number)
            device.run("job", struct.pack(JOB_PARAMS, code_at + 4 * start, base + table_at, result, len(words),
                                          len(job.extents), points, MODES[job.job.mode], *lo, *extents), points)
            start += len(words)
        self.dispatches += len(slices) + len(programs)
        words_out = np.frombuffer(device.download(base, 4 * results_words), np.uint32)
        for key, (index, job, _, _, bias) in zip(words_out, slices):
            value = int(key ^ np.uint32(bias))
            if bias:
                value = int(np.uint32(value).view(np.int32))
            results[index] = job.finish(value)
        for number, (index, job, _) in enumerate(programs):
            value, flags = (int(w) for w in words_out[len(slices) + 2 * number:len(slices) + 2 * number + 2])
            if not flags:
                results[index] = value if job.job.mode == "max" else int(np.uint32(value).view(np.int32))
        return results
