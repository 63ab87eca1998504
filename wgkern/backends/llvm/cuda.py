"""CudaBackend: device memory through the CUDA driver API, kernels as PTX from the shared LLVM codegen.

A buffer is device memory (cuMemAlloc); kernels never access outside it (out-of-range accesses are dropped by
the shared LLVM codegen, bounds.py). Every task of a kernel is one PTX kernel (cuda_codegen.py) launched on the
legacy default stream, so launches, copies and read-backs run in program order; launches return at once, and `sync()` / read-backs wait.

Per launch: the argument block (layout.py, with device addresses) is copied into the kernel's parameter
buffer and passed whole to cuLaunchKernel; the grid is sized from the range evaluated on the host (ir/host_eval):
one thread per index (capped at 2^28 indices; grid-stride loops cover the rest); a range whose bounds live
in device memory gets a grid of a few waves.

Kernels with adstacks: the heap (backends/adstack.py, slot-major, one slice per launched thread), an overflow
flag word, and a per-kernel context (heap address, flag address, launch code, metadata rows) uploaded before
the launch. The flag is read when the host next waits (sync, read-back) and raises AdStackOverflowError once.
`print(...)` records land in a device buffer printed at the same points; debug=True builds check bounds into a
per-kernel error word, read after every launch (debug runs synchronously)."""
from __future__ import annotations

import ctypes
import functools
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from wgkern.backends.adstack import (AdStackHeap, KernelStackLayout, collect_stacks, element_bytes,
                                     layout_kernel, overflow_from_flag)
from wgkern.errors import CompileError, OutOfMemoryError, WkError
from wgkern.ir import host_eval
from wgkern.ir import nodes as ir
from wgkern import dtypes as T
from wgkern.dtypes import DataType
from wgkern.ir.printing import decode_words, emit, format_print

from .. import code_records
from ..base import Backend, CompiledKernel, LaunchArgs, MemoryBudget, raise_pending
from . import cuda_driver, cuda_graphs, ptx
from . import printing as cpu_printing
from .adstack import AdStackContext
from .cpu import debug_check_error
from .cuda_codegen import PRINT_HEADER_WORDS, THREADS_PER_BLOCK, block_size, emit_cuda_module
from wgkern.backends.reductions import chunk_reductions
from .codegen import symbol_name
from .layout import ArgLayout, build_layout, pack_launch
from .target import CUDA_TARGET

PRINT_BUFFER_WORDS = 1 << 17          # 1 MiB of int64 words between waits
MAX_PARAM_BYTES = 4096                # CUDA's kernel parameter block limit
MAX_BLOCKS = 1 << 20                  # a known range runs one thread per index up to 2^28 indices
CAPPED_BLOCKS_PER_SM = 32             # bounds read on the device: enough blocks to fill the GPU many times
WAVE_BLOCKS_PER_SM = 8                # one full wave: reverse kernels (few idle heap slices), reductions


@dataclass(eq=False, slots=True)
class CudaBuffer:
    """Device memory for one container: `address` is its first byte, the start of its own allocation."""
    address: int
    nbytes: int


@dataclass(slots=True)
class GpuTime:
    """Filled in when a `gpu_timer()` block ends."""
    seconds: float = 0.0


class TaskLaunch:
    """One task's PTX kernel and how many blocks a launch of it runs (None: an empty range, skipped)."""

    def __init__(self, function: Any, task: ir.Task, containers: list[ir.ContainerSlot], max_blocks: int,
                 capped_blocks: int):
        self.function = function
        self.task = task
        self.threads = block_size(task)      # threads per block (loop_config(block_dim=N))
        self.blocks = _block_sizer(task, containers, max_blocks, capped_blocks, self.threads)


def _blocks_of(count: int, max_blocks: int, threads: int = THREADS_PER_BLOCK) -> int | None:
    if count <= 0:
        return None
    return min(-(-count // threads), max_blocks)


def _block_sizer(task: ir.Task, containers: list[ir.ContainerSlot], max_blocks: int, capped_blocks: int | None = None,
                 threads: int = THREADS_PER_BLOCK) -> Callable[[Sequence[Any], Sequence[tuple[int, ...]]], int | None]:
    """Precompute what can be: constant ranges once, `range(x.shape[k])` and `range(n)` cheaply; bounds read
    from device memory get `capped_blocks` (default `max_blocks`; the kernel computes the bounds). `threads`:
    the task's threads per block."""
    _blocks_for = functools.partial(_blocks_of, threads=threads)
    if task.kind == "serial":
        return lambda scalars, shapes: 1
    if any(isinstance(s, (ir.GlobalLoad, ir.GlobalPtr)) for s in task.bounds.stmts):
        capped = min(capped_blocks or max_blocks, max_blocks)
        return lambda scalars, shapes: capped
    begin = host_eval.try_constant(task.loop.begin)
    end = host_eval.try_constant(task.loop.end)
    if begin is not None and end is not None:
        fixed = _blocks_for(int(end) - int(begin), max_blocks)
        return lambda scalars, shapes: fixed
    end_stmt = task.loop.end
    if begin is not None and isinstance(end_stmt, ir.ShapeOf):
        slot_index = next(k for k, c in enumerate(containers) if c is end_stmt.container)
        axis, start = end_stmt.axis, int(begin)
        return lambda scalars, shapes: _blocks_for(shapes[slot_index][axis] - start, max_blocks)
    if begin is not None and isinstance(end_stmt, ir.ArgLoad) and end_stmt.dtype.is_int:
        arg, start = end_stmt.arg_index, int(begin)
        return lambda scalars, shapes: _blocks_for(T.wrap_int(int(scalars[arg]), T.i32) - start, max_blocks)

    def evaluate(scalars: Sequence[Any], shapes: Sequence[tuple[int, ...]]) -> int | None:
        bounds = host_eval.evaluate_bounds(task, scalars, host_eval.shapes_by_slot(containers, shapes))
        return _blocks_for(bounds[1] - bounds[0], max_blocks) if bounds is not None else max_blocks
    inputs = host_eval.bounds_inputs(task, containers)
    if inputs is None:
        return evaluate
    arg_indices, slot_indices = inputs
    known: dict[tuple, int | None] = {}

    def remembered(scalars: Sequence[Any], shapes: Sequence[tuple[int, ...]]) -> int | None:
        """`evaluate` once per value of the arguments and shapes the bounds read (Genesis's launches repeat
        them: interpreting the bounds' statements every launch was most of a launch's host time)."""
        key = (*[scalars[i] for i in arg_indices], *[shapes[k] for k in slot_indices])
        try:
            return known[key]
        except KeyError:
            if len(known) >= 64:
                known.clear()
            blocks = known[key] = evaluate(scalars, shapes)
            return blocks
    return remembered


class CudaCompiledKernel(CompiledKernel):
    """One kernel's PTX module on one CudaBackend. `source()` is the LLVM IR as generated,
    `source(optimized=True)` the PTX."""

    def __init__(self, kernel: ir.OffloadedKernel, backend: "CudaBackend", origin: str | None = None):
        """`origin`: where the IR came from (code_records.py), letting a start find its PTX without generating
        the module."""
        self.origin = origin
        self.kernel = kernel
        self.backend = backend
        driver = backend.driver
        started = time.perf_counter()
        self.stacks = collect_stacks(kernel)
        self.has_stacks = any(self.stacks)
        self.owned: list[CudaBuffer] = []
        debug_addresses = None
        self.error_word: CudaBuffer | None = None
        if backend.debug:
            self.error_word = self._own(8)
            debug_addresses = (self.error_word.address, self._own(64).address)
        context_address = None
        self.code = 0
        if self.has_stacks:
            self.code = backend.register_adstack_kernel(self)
            self.context_host = AdStackContext(sum(len(specs) for specs in self.stacks), self.code << 20)
            self.context = self._own(self.context_host.host.nbytes)
            context_address = self.context.address
        self.stack_layout: KernelStackLayout | None = None      # the last reverse launch's (prepare_adstacks)
        self.layout: ArgLayout = build_layout(kernel, debug_addresses, context_address)
        if self.layout.size > MAX_PARAM_BYTES:
            raise CompileError(f"kernel '{kernel.name}' passes {self.layout.size} bytes of arguments (containers, "
                               f"shapes, scalars), more than CUDA's {MAX_PARAM_BYTES}-byte parameter block; split "
                               "it into kernels that touch fewer containers", kernel.loc)
        prefix = self.prefix = f"wk_{symbol_name(kernel.name)[:60]}"   # one module per kernel: names need not be unique
        self.has_prints = code_records.prints(kernel)
        print_buffer = (backend.print_buffer.address, PRINT_BUFFER_WORDS) if self.has_prints else (0, 0)
        names, generated = self.build_module(prefix, print_buffer)
        self.tasks = [TaskLaunch(driver.function(self.module, name), task, kernel.containers,
                                 self._max_blocks(task), backend.capped_blocks)
                      for name, task in zip(names, kernel.tasks)]
        self.params = ctypes.create_string_buffer(max(self.layout.size, 8))
        self.params_size = ctypes.c_size_t(max(self.layout.size, 8))
        self.extra = driver.launch_extra(self.params, self.params_size)
        self.repeat_graph = cuda_graphs.repeat_graph(self)
        self.times = (generated - started, time.perf_counter() - generated)

    def build_module(self, prefix: str, print_buffer: tuple[int, int]) -> tuple[list[str], float]:
        """Generate, compile and load the kernel's module (sets ir_text, bounds_sites, ptx, module): (one
        kernel name per task, the time code generation ended)."""
        backend = self.backend
        # kernels that print have the print buffer's address in their code: not worth caching
        use_cache = backend.offline_cache and not self.has_prints
        record_key = code_records.key(self.origin if use_cache else None, self.kernel, backend.debug, "cuda",
                                      backend.arch, CUDA_TARGET.name, backend.fast_math)
        if record_key is not None:
            names = self._recorded(record_key)
            if names is not None:
                return names, time.perf_counter()
        self.ir_text, names, self.bounds_sites = emit_cuda_module(
            self.kernel, self.layout, CUDA_TARGET, prefix, print_buffer, backend.debug, backend.fast_math)
        generated = time.perf_counter()
        ptx_key = ptx.cache_key(self.ir_text, backend.arch) if use_cache else None
        self.ptx = ptx.cached_ptx(self.ir_text, backend.arch, use_cache, ptx_key)
        self.module = backend.driver.load_module(self.ptx)
        if record_key:
            code_records.store(record_key, self.layout, tuple(names), ptx_key)
        return names, generated

    def _recorded(self, record_key: str) -> list[str] | None:
        """The task kernels' names of the module a record names, its PTX loaded (sets ptx, module; ir_text is
        generated when asked for), or None (no record, its PTX gone, or a layout other than this build's)."""
        record = code_records.load(record_key, self.layout, 2)
        if record is None or len(record[0]) != len(self.kernel.tasks):
            return None
        code = ptx.stored_ptx(record[1])
        if code is None:
            return None
        self.ptx, self.ir_text, self.bounds_sites = code, None, []
        self.module = self.backend.driver.load_module(code)
        return list(record[0])

    def _max_blocks(self, task: ir.Task) -> int:
        """One thread per index, except: reverse kernels (the heap holds a slice per thread) and tasks with
        register reductions (each warp flushes one atomic to the same address) run a wave of blocks that
        loop over the range."""
        backend = self.backend
        if self.has_stacks or (task.kind == "range" and chunk_reductions(task)):
            return backend.max_blocks_wave
        return backend.max_blocks

    def _own(self, nbytes: int) -> CudaBuffer:
        buffer = self.backend.allocate(nbytes)
        self.owned.append(buffer)
        return buffer

    def launch(self, args: LaunchArgs) -> None:
        backend = self.backend
        backend.driver.bind()
        packed, grids = self.launch_block(args)
        if backend.timer_start is not None:
            backend.start_timer()
        if self.repeat_graph is not None and self.repeat_graph.launch(packed, grids):
            return
        plan = list(zip(self.tasks, grids))
        if self.has_stacks:
            self.prepare_adstacks(args.extra.get("adstack_capacities"), plan)
        ctypes.memmove(self.params, packed, len(packed))
        launch = backend.driver.launch_function
        for task, blocks in plan:
            if blocks is None:
                continue
            code = launch(task.function, blocks, 1, 1, task.threads, 1, 1, 0, None, None, self.extra)
            if code:
                backend.driver.check(code, f"{getattr(launch, '__name__', 'launch')} ({self.kernel.name})")
        backend.pending = True
        if self.has_prints:
            backend.prints_pending = True
        if self.error_word is not None:     # debug=True: this launch's failed check is raised here, with the rest
            backend.sync(self.bounds_error(args))

    def launch_block(self, args: LaunchArgs) -> tuple[bytes, tuple[int | None, ...]]:
        """A launch's argument block and each task's number of blocks (None: an empty range, skipped)."""
        scalars, shapes = args.scalars, args.shapes
        return pack_launch(self.layout, self, args), tuple(task.blocks(scalars, shapes) for task in self.tasks)

    def prepare_adstacks(self, capacities: list[list[int]] | None, plan: list[tuple[TaskLaunch, int | None]]) -> None:
        """Lay the heap out for this launch's capacities and blocks and upload the context the kernel reads. A
        launch with the capacities and blocks of the one before reuses its layout and, where the heap stayed,
        the context already on the device: no upload (a copy from pageable memory waits for the stream)."""
        backend = self.backend
        layout = self.stack_layout = layout_kernel(
            self.stacks, capacities, [(blocks or 1) * task.threads for task, blocks in plan[:len(self.stacks)]],
            element_bytes, slot_major=True, alignment=8, last=self.stack_layout)
        heap_bytes = layout.heap_units
        heap = backend.adstack_heap.ensure(heap_bytes)
        context = self.context_host
        if context.fill(layout, heap.address, backend.overflow_flag.address):
            backend.driver.upload(self.context.address, context.host.ctypes.data, context.host.nbytes)
        backend.adstack_watch[self.code] = (self, capacities)
        stats = getattr(backend, "runtime_stats", None)
        if stats is not None:
            stats.adstack_heap_bytes = heap_bytes    # in use by this launch: threads x sum(slot bytes x capacity)
            stats.adstack_heap_grows = backend.adstack_heap.grows

    def bounds_error(self, args: LaunchArgs) -> Callable[[], WkError | None]:
        """After the launch's wait: the failed debug check its error word records (the word cleared), or None."""
        def read() -> WkError | None:
            word = np.zeros(2, np.int32)
            self.backend.driver.download(word.ctypes.data, self.error_word.address, 8)
            site = int(word[0])
            if not site:
                return None
            self.backend.driver.zero(self.error_word.address, 8)
            return debug_check_error(self.kernel, self.bounds_sites[site - 1], args)
        return read

    def source(self, optimized: bool = False) -> str:
        """The LLVM IR as generated, or with `optimized=True` the PTX."""
        if optimized:
            return self.ptx
        if self.ir_text is None:          # the PTX came from a record (build_module): generated now
            self.ir_text = emit_cuda_module(self.kernel, self.layout, CUDA_TARGET, self.prefix, (0, 0), False,
                                            self.backend.fast_math)[0]
        return self.ir_text

    def release(self) -> None:
        for buffer in self.owned:
            self.backend.free(buffer)
        self.owned.clear()


class CudaBackend(Backend):
    """Device `device` (an ordinal, runtime/devices.py) of the CUDA driver. `debug` compiles bounds-checked global
    accesses (wk.init(debug=True))."""

    name = "cuda"
    wide_memory_access = True
    supports_adstack = True
    kernel_class = CudaCompiledKernel

    def shared_memory_bytes(self) -> int | None:
        return CUDA_TARGET.shared_memory[1]       # shared arrays are declared statically (docs/simt.md)

    def __init__(self, debug: bool = False, fast_math: bool = False, device_memory_limit: int | None = None,
                 offline_cache: bool = True, device: int = 0):
        self.driver = self.open_driver(device)
        self.info = self.driver.info
        self.arch = self.device_arch()
        self.budget = MemoryBudget(device_memory_limit)
        self.debug = debug
        self.fast_math = fast_math
        self.offline_cache = offline_cache       # compiled PTX kept on disk between runs (ptx.cached_ptx)
        self.max_blocks = MAX_BLOCKS
        self.capped_blocks = max(1, self.info.multiprocessors * CAPPED_BLOCKS_PER_SM)
        self.max_blocks_wave = max(1, self.info.multiprocessors * WAVE_BLOCKS_PER_SM)
        self.live: set[int] = set()
        self.pending = False
        self.pending_error: WkError | None = None
        self._print_buffer: CudaBuffer | None = None       # made for the first kernel that prints
        self.prints_pending = False
        self._overflow_flag: CudaBuffer | None = None      # made for the first kernel with adstacks
        self.adstack_heap = AdStackHeap(self.allocate, self.free)
        self.adstack_kernels: dict[int, CudaCompiledKernel] = {}
        self.adstack_watch: dict[int, tuple[CudaCompiledKernel, Any]] = {}
        self.compiled: list[CudaCompiledKernel] = []
        self._reducer_kernels: Any = None
        self.released = False
        self.torch_device = self.shared_torch_device(device)
        self.timer_start: Any = None    # a gpu_timer block's start event, recorded at its first launch

    def device_loops(self, schedule: list[Any]) -> Any | None:
        """A graph kernel's loops as conditional nodes of one CUDA graph (cuda_graphs.py), where the driver has them."""
        return cuda_graphs.loop_graph(self, schedule)

    def open_driver(self, ordinal: int) -> Any:
        return cuda_driver.driver(ordinal)

    def shared_torch_device(self, ordinal: int) -> tuple[str, int] | None:
        """torch's CUDA device `ordinal` uses the same primary context and the same legacy default stream as
        this backend, so its tensors' memory is usable here as it is (lang/torch_arguments.py)."""
        return ("cuda", ordinal)

    def device_arch(self) -> str:
        """What kernels are compiled for: the `sm_XY` of the device."""
        return ptx.architecture(self.info.compute_capability)

    @property
    def print_buffer(self) -> CudaBuffer:
        if self._print_buffer is None:
            self._print_buffer = self.allocate(8 * PRINT_BUFFER_WORDS)
        return self._print_buffer

    @property
    def overflow_flag(self) -> CudaBuffer:
        if self._overflow_flag is None:
            self._overflow_flag = self.allocate(8)
        return self._overflow_flag

    supports_gpu_timer = True

    def sizing_reducer(self, address_of: Callable[[Any], int], shape: Callable[[Any], tuple[int, ...]]) -> Any:
        """The launch-time sizer's device reducer (backends/llvm/gpu_sizing_reducer.py), its kernels compiled on
        first use (`reducer_kernels`)."""
        from wgkern.backends.llvm.gpu_sizing_reducer import DeviceReducer
        if self._reducer_kernels is None:
            self._reducer_kernels = self.reducer_kernels()
        return DeviceReducer(self._reducer_kernels, address_of, shape, self.name)

    def reducer_kernels(self) -> Any:
        """The reducer's two kernels compiled and loaded for this device (gpu_sizing_reducer.ReducerKernels)."""
        from wgkern.backends.llvm.cuda_sizing_reducer import cuda_reducer_kernels
        return cuda_reducer_kernels(self)

    @contextmanager
    def gpu_timer(self) -> Iterator[GpuTime]:
        """Device time of the launches made inside the block, in `.seconds` once the block has ended: CUDA events
        recorded right before the block's first kernel launch (`timer_start`, taken by the launch) and at its end.
        An event recorded on an idle stream completes at once, so one recorded when the block begins would count
        the host's time until the first launch arrives (a 0.19 ms saxpy timed at 0.21 ms)."""
        elapsed = GpuTime()
        start, end = self.driver.event(), self.driver.event()
        self.timer_start = start
        try:
            yield elapsed
            self.start_timer()         # nothing launched inside: an empty interval
            self.driver.record(end)
            elapsed.seconds = self.driver.elapsed_ms(start, end) / 1e3
        finally:
            self.timer_start = None
            self.driver.destroy_event(start)
            self.driver.destroy_event(end)

    def start_timer(self) -> None:
        """Record the open gpu_timer block's start event, if it waits for its first launch."""
        start, self.timer_start = self.timer_start, None
        if start is not None:
            self.driver.record(start)

    # ---- memory ------------------------------------------------------------------------------------------
    def storage_dtype(self, dtype: DataType) -> np.dtype:
        return dtype.np_dtype

    def check_capacity(self, nbytes: int) -> None:
        """A buffer larger than the device's whole memory can never be allocated."""
        if nbytes > self.info.total_memory:
            raise OutOfMemoryError(f"it exceeds the {self.info.total_memory} bytes of memory of {self.info.summary}")

    def allocate(self, nbytes: int) -> CudaBuffer:
        self.budget.take(nbytes)
        total = max(nbytes, 1)
        try:
            address = self.driver.allocate(total)
        except Exception:
            self.budget.give(nbytes)
            raise
        self.driver.zero(address, total)
        self.live.add(address)
        return CudaBuffer(address, nbytes)

    def adopt_device(self, address: int, nbytes: int) -> CudaBuffer:
        """Memory another library allocated in this context (not counted in the budget, never freed here)."""
        return CudaBuffer(address, nbytes)

    def device_address(self, buffer: CudaBuffer) -> int:
        return buffer.address

    def free(self, buffer: CudaBuffer) -> None:
        """cuMemFree waits for the device to finish work that may still use the memory."""
        if buffer.address in self.live:
            self.live.discard(buffer.address)
            self.budget.give(buffer.nbytes)
            self.driver.free(buffer.address)

    def upload(self, buffer: CudaBuffer, data: np.ndarray, offset: int = 0) -> None:
        raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        if raw.size:
            self.driver.upload(buffer.address + offset, raw.ctypes.data, raw.size)

    def download(self, buffer: CudaBuffer, nbytes: int, offset: int = 0, out: np.ndarray | None = None) -> np.ndarray:
        result = out[:nbytes] if out is not None else np.empty(nbytes, np.uint8)
        if nbytes > 0:
            self.driver.download(result.ctypes.data, buffer.address + offset, nbytes)
        self.pending = False
        self._after_wait()
        return result

    def copy(self, dst: CudaBuffer, src: CudaBuffer, nbytes: int) -> None:
        if nbytes > 0:
            self.driver.copy(dst.address, src.address, nbytes)

    # ---- kernels -----------------------------------------------------------------------------------------
    def compile(self, kernel: ir.OffloadedKernel, origin: str | None = None) -> CudaCompiledKernel:
        compiled = self.kernel_class(kernel, self, origin)
        self.compiled.append(compiled)
        return compiled

    def register_adstack_kernel(self, compiled: CudaCompiledKernel) -> int:
        """The flag word's kernel part (11 bits) for a compiled kernel."""
        code = len(self.adstack_kernels) % 2047 + 1
        self.adstack_kernels[code] = compiled
        return code

    def adstack_threads(self, range_size: int) -> int:
        blocks = _blocks_of(range_size, self.max_blocks_wave)
        return blocks * THREADS_PER_BLOCK if blocks else 1

    # ---- waiting -----------------------------------------------------------------------------------------
    def sync(self, launch_error: Callable[[], WkError | None] | None = None) -> None:
        """Wait for the device, then report (`launch_error`: a debug launch's own check, read after the wait)."""
        if self.pending:
            self.driver.synchronize()
            self.pending = False
        self._after_wait(launch_error)

    def _after_wait(self, launch_error: Callable[[], WkError | None] | None = None) -> None:
        """The device is idle: print recorded output, then clear every recorded error (a debug launch's failed
        check, an adstack overflow, a pending error) and raise them as one (base.raise_pending), so none is
        raised again by a later wait."""
        if self.prints_pending:
            self.prints_pending = False
            self._drain_prints()
        checked = launch_error() if launch_error is not None else None
        overflow = self._adstack_overflow() if self.adstack_watch else None
        error, self.pending_error = self.pending_error, None
        raise_pending([checked, error, overflow])

    def _drain_prints(self) -> None:
        header = np.zeros(PRINT_HEADER_WORDS, np.int64)
        address = self.print_buffer.address
        capacity = PRINT_BUFFER_WORDS
        self.driver.download(header.ctypes.data, address, header.nbytes)
        reserved, written = int(header[0]), int(header[1])
        if not reserved:
            return
        words = np.zeros(max(written, 1), np.int64)
        if written:
            self.driver.download(words.ctypes.data, address + 8 * PRINT_HEADER_WORDS, 8 * written)
        self.driver.zero(address, header.nbytes)
        position = 0
        while position < written:
            pieces, dtypes, formats = cpu_printing.site(int(words[position]))
            count = len(dtypes)
            values = decode_words([int(w) for w in words[position + 1:position + 1 + count]], dtypes)
            emit(format_print(pieces, values, dtypes, formats), pieces)
            position += 1 + count
        if reserved > written:
            emit(f"[wgkern] {reserved - written} words of print() output were dropped: the print buffer holds "
                 f"{capacity - PRINT_HEADER_WORDS} words between waits for the device (wk.sync(), "
                 "read-backs)\n")

    def _adstack_overflow(self) -> WkError | None:
        """The overflow flag after the launches that could set it: a set flag is cleared and returned."""
        flag = np.zeros(2, np.int32)
        self.driver.download(flag.ctypes.data, self.overflow_flag.address, 8)
        watched, self.adstack_watch = self.adstack_watch, {}
        code = int(flag[0])
        if not code:
            return None
        self.driver.zero(self.overflow_flag.address, 8)
        return overflow_from_flag(code, watched)

    # ---- lifetime ----------------------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Wait for the device, then free every buffer this backend allocated and unload its modules."""
        if self.released:
            return
        self.released = True
        try:
            self.driver.synchronize()
        finally:
            for compiled in self.compiled:
                self.driver.unload(compiled.module)
            self.compiled.clear()
            if self._reducer_kernels is not None:
                self.driver.unload(self._reducer_kernels.module)
                self._reducer_kernels = None
            for base in list(self.live):
                self.driver.free(base)
            self.live.clear()
            self._print_buffer = self._overflow_flag = None
            self.budget.used = 0

    def describe(self) -> str:
        return f"cuda on {self.info.summary}"
