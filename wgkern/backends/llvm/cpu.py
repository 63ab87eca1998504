"""CpuBackend: numpy-owned storage, LLVM JIT compilation, synchronous launches on the native worker pool.

A buffer is a CpuBuffer (a 64-byte aligned numpy uint8 array and its address). compile() emits one LLVM
module per kernel (codegen.py), optimises it at O3 once and JITs it; launch() packs the argument block
(layout.py) and makes ONE ctypes call into the kernel's entry, which runs every task in order and hands
range tasks to wk_parallel_for (worker_pool.py). No Python runs while a kernel executes."""
from __future__ import annotations

import ctypes
import threading
import time
from typing import Any
from dataclasses import dataclass

import numpy as np

from wgkern.backends.adstack import (AdStackHeap, KernelStackLayout, collect_stacks, decode_flag,
                                     element_bytes, layout_kernel, overflow_error)
from wgkern.errors import BoundsCheckError, CompileError, KernelAssertionError, WkError, format_located
from wgkern.passes.analysis import describe_simt_use, first_simt_use
from wgkern.ir import nodes as ir
from wgkern.ir.nodes import OffloadedKernel
from wgkern.dtypes import DataType
from wgkern import disk_cache
from wgkern.ir.printing import assertion_message

from .. import code_records
from ..base import Backend, CompiledKernel, LaunchArgs, MemoryBudget, raise_pending
from .adstack import AdStackContext
from .codegen import emit_module, symbol_name
from .host_memory import check_host_request, refused_allocation
from .jit import compile_ir, function_address, host_jit, load_compiled, optimized_text
from .layout import ArgLayout, build_layout, pack_launch
from . import lanes, sincos
from .target import CPU_TARGET, Target
from .worker_pool import WorkerPool, default_thread_count, worker_pool

ALIGNMENT = 64
_ENTRY_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_char_p)
_PLACEHOLDER = "wkSYMBOLS_"     # replaced by a digest of the module (CpuCompiledKernel)


@dataclass(eq=False, slots=True)
class CpuBuffer:
    """Host memory for one container: `array` is uint8 and 64-byte aligned (or, `adopted`, memory of another
    library's array, aligned to its elements); `address` its first byte."""
    array: np.ndarray
    address: int
    nbytes: int
    adopted: bool = False


def _host_bytes(nbytes: int) -> int:
    """The bytes aligned_bytes(nbytes) takes from the host."""
    return max(nbytes, 1) + ALIGNMENT


def aligned_bytes(nbytes: int) -> tuple[np.ndarray, int]:
    """A zeroed uint8 array of at least `nbytes` (one byte minimum) starting on an ALIGNMENT boundary. Kernels
    never access outside it: out-of-range accesses are dropped (bounds.py)."""
    raw = np.zeros(max(nbytes, 1) + ALIGNMENT, dtype=np.uint8)
    start = -raw.ctypes.data % ALIGNMENT
    array = raw[start:start + max(nbytes, 1)]
    return array, array.ctypes.data



def debug_check_error(kernel: ir.OffloadedKernel, site: ir.Stmt, args: LaunchArgs) -> WkError:
    """The error of a failed debug check recorded in a kernel's error word: an assertion (ir.AssertFail) or an
    out-of-range access (ir.GlobalPtr, whose shape comes from the launch for ndarrays)."""
    if isinstance(site, ir.AssertFail):
        return KernelAssertionError(format_located(assertion_message(kernel.name, site), site.loc))
    shape = site.container.shape      # static: fields, temps, a block's shared arrays (CUDA)
    if shape is None:
        slot_index = next(k for k, slot in enumerate(kernel.containers) if slot is site.container)
        shape = tuple(args.shapes[slot_index])
    message = (f"kernel {kernel.name}: index out of range for {site.container.name} of shape "
               f"{tuple(shape)} (Out of bound access; debug=True skipped it)")
    return BoundsCheckError(format_located(message, site.loc))


@dataclass(slots=True)
class CompileTimes:
    """Seconds spent in each compile phase (for wk.stats and benchmarks)."""
    codegen: float = 0.0
    llvm: float = 0.0


def _refuse_simt(kernel: OffloadedKernel) -> None:
    """wk.simt needs threads that run in blocks, which the CPU backend does not have (Taichi and Quadrants
    refuse it on the CPU too): the first use is a CompileError at its line."""
    for task in kernel.tasks:
        found = first_simt_use(task.body)
        if found is not None:
            raise CompileError(f"{describe_simt_use(found)} needs a GPU's blocks of threads: it runs on wk.cuda and "
                               "the WGSL arches (wk.vulkan, wk.metal, wk.dx12), not on the CPU backend", found.loc)


class CpuCompiledKernel(CompiledKernel):
    """One JIT-compiled kernel. `source()` is the LLVM IR as generated (before O3);
    `source(optimized=True)` the module after O3."""

    def __init__(self, kernel: OffloadedKernel, target: Target = CPU_TARGET, debug: bool = False,
                 backend: "CpuBackend | None" = None, fast_math: bool = False, origin: str | None = None):
        """`origin`: where the IR came from (code_records.py), letting a start find its compiled code without
        generating it."""
        self.kernel = kernel
        self.backend = backend
        started = time.perf_counter()
        self.error_word: np.ndarray | None = None
        debug_addresses = None
        if debug:
            self.error_word, error_address = aligned_bytes(8)
            self.scratch, scratch_address = aligned_bytes(64)
            debug_addresses = (error_address, scratch_address)
        self.stacks = collect_stacks(kernel)
        self.has_stacks = any(self.stacks)
        context_address = None
        if self.has_stacks:
            self.adstack_context = AdStackContext(sum(len(specs) for specs in self.stacks), 1 << 20)
            context_address = self.adstack_context.host.ctypes.data
        self.stack_layout: KernelStackLayout | None = None      # the last reverse launch's (prepare_adstacks)
        self.layout: ArgLayout = build_layout(kernel, debug_addresses, context_address)
        # Symbols are named after the module's content (a digest of it generated with a placeholder prefix):
        # the same kernel compiled again, in this process or a later one, is the same text, which the JIT
        # then finds in its engine or in the offline cache instead of compiling it (jit.py).
        name = symbol_name(kernel.name)[:60]
        self.lanes = lanes.kernel_lanes(kernel, debug, fast_math)      # indices its widest task runs at once
        lane_tasks = (lambda task: lanes.lane_width(task, debug, fast_math), lanes.emit_lane_task)
        single_thread = backend is not None and backend.single_thread

        def generate() -> tuple[str, str, list[ir.Stmt]]:
            text, entry_name, bounds_sites = emit_module(kernel, self.layout, target, f"{_PLACEHOLDER}{name}",
                                                         debug, fast_math, lane_tasks, single_thread)
            digest = f"wk{disk_cache.cache_key(text)[:16]}_"
            return text.replace(_PLACEHOLDER, digest), entry_name.replace(_PLACEHOLDER, digest), bounds_sites

        self._generate = generate
        self._ir_text: str | None = None
        use_cache = backend is not None and backend.offline_cache
        record_key = code_records.key(origin if use_cache else None, kernel, debug, "cpu", host_jit().machine_id,
                                      target.name, fast_math, single_thread)
        self.module = self._recorded(record_key, target, use_cache) if record_key else None
        generated = time.perf_counter()
        if self.module is None:
            self._ir_text, self.entry_name, self.bounds_sites = generate()
            generated = time.perf_counter()
            uses_sincos = sincos.SYMBOL in self._ir_text
            if uses_sincos:
                sincos.ensure_compiled(target.math_attributes, use_cache)
            self.module = compile_ir(self._ir_text, use_cache=use_cache)
            if record_key:
                code_records.store(record_key, self.layout, self.module.name, self.entry_name, uses_sincos)
        self.entry = _ENTRY_TYPE(function_address(self.entry_name))
        self.times = CompileTimes(generated - started, time.perf_counter() - generated)

    def _recorded(self, record_key: str, target: Target, use_cache: bool) -> Any | None:
        """The module a record names, loaded (sets entry_name), or None (no record, its code gone, or a layout
        other than this build's)."""
        record = code_records.load(record_key, self.layout, 3)
        if record is None:
            return None
        module_key, entry_name, uses_sincos = record
        if uses_sincos:
            sincos.ensure_compiled(target.math_attributes, use_cache)
        module = load_compiled(module_key)
        if module is not None:
            self.entry_name, self.bounds_sites = entry_name, []
        return module

    @property
    def ir_text(self) -> str:
        """The module's LLVM IR as generated (generated now where the compiled code came from a record)."""
        if self._ir_text is None:
            self._ir_text = self._generate()[0]
        return self._ir_text

    def launch(self, args: LaunchArgs) -> None:
        """Synchronous: returns when every task finished. Debug builds raise BoundsCheckError afterwards.
        Kernels with adstacks lay out the heap first (capacities from `args.extra['adstack_capacities']`,
        one list per task) and record an overflow for the next sync."""
        if self.has_stacks:
            with self.backend.adstack_lock:
                self.prepare_adstacks(args.extra.get("adstack_capacities"))
                self.entry(self.pack(args))
                self.check_overflow(args.extra.get("adstack_capacities"))
        else:
            self.entry(self.pack(args))
        if self.error_word is not None and self.error_word.any():
            self.raise_bounds_error(args)

    def pack(self, args: LaunchArgs) -> bytes:
        """The argument block; with fixed bindings (`args.bound_cache`) the container part is packed once."""
        return pack_launch(self.layout, self, args)

    def prepare_adstacks(self, capacities: list[list[int]] | None) -> None:
        """Lay the heap out for this launch and write the context the kernel reads; a launch with the
        capacities and slice count of the one before reuses its layout, and its context where the heap stayed."""
        backend = self.backend
        layout = self.stack_layout = layout_kernel(
            self.stacks, capacities, [backend.adstack_threads(0)] * len(self.stacks), element_bytes,
            slot_major=False, last=self.stack_layout)
        heap_bytes = layout.heap_units
        heap = backend.adstack_heap.ensure(heap_bytes)
        self.adstack_context.fill(layout, heap.address, backend.overflow_flag.ctypes.data)
        stats = getattr(backend, "runtime_stats", None)
        if stats is not None:
            stats.adstack_heap_bytes = heap_bytes    # in use by this launch: threads x sum(slot bytes x capacity)
            stats.adstack_heap_grows = backend.adstack_heap.grows

    def check_overflow(self, capacities: list[list[int]] | None) -> None:
        flag = self.backend.overflow_flag
        code = int(flag[0])
        if code == 0:
            return
        flag[0] = 0
        _, task_index, stack_id = decode_flag(code)
        spec = capacity = None
        if task_index < len(self.stacks) and 0 <= stack_id < len(self.stacks[task_index]):
            spec = self.stacks[task_index][stack_id]
            capacity = capacities[task_index][stack_id] if capacities else spec.static_capacity
        if self.backend.pending_error is None:
            self.backend.pending_error = overflow_error(self.kernel.name, spec, capacity)

    def raise_bounds_error(self, args: LaunchArgs) -> None:
        """A failed debug check of this launch, raised with a recorded adstack overflow (cleared with it)."""
        site = int(self.error_word.view(np.int32)[0])
        self.error_word[:] = 0
        pending, self.backend.pending_error = self.backend.pending_error, None
        raise_pending([debug_check_error(self.kernel, self.bounds_sites[site - 1], args), pending])

    def source(self, optimized: bool = False) -> str:
        return optimized_text(self.ir_text) if optimized else self.ir_text


class CpuBackend(Backend):
    """The LLVM CPU device. `threads` counts the launching thread (default: the CPUs this process may use);
    `debug` compiles bounds-checked global accesses (wk.init(debug=True))."""

    name = "cpu"
    # LLVM's loop vectoriser already turns element-wise chunks into 8-wide AVX2 loops; the pass's groups of 4
    # (wide_access.py lowers them here too) measured 1.3-1.7x slower on saxpy 2^24
    wide_memory_access = False
    supports_adstack = True

    def __init__(self, threads: int | None = None, target: Target = CPU_TARGET, debug: bool = False,
                 fast_math: bool = False, device_memory_limit: int | None = None, offline_cache: bool = False):
        self.budget = MemoryBudget(device_memory_limit)
        self.offline_cache = offline_cache       # object code kept on disk between runs (jit.compile_ir)
        self.target = target
        self.debug = debug
        self.fast_math = fast_math
        self.pool: WorkerPool = worker_pool()
        self.pool.acquire(threads)
        # threads=1: kernels run every task on the launching thread and skip the pool (codegen.emit_entry),
        # whatever workers another backend keeps in it, so their atomics can be plain (atomics.py)
        self.single_thread = (threads or default_thread_count()) == 1
        self.released = False
        self.adstack_heap = AdStackHeap(self.allocate, self.free)
        self.adstack_lock = threading.Lock()
        self.overflow_flag = np.zeros(2, dtype=np.int32)
        self.pending_error: WkError | None = None

    def slice_count(self) -> int:
        """Adstack slices: one per thread that may run a task (the launching thread is slice 0)."""
        return len(self.pool.threads) + 1

    def adstack_threads(self, range_size: int) -> int:
        """Slices the adstack heap holds for a task of `range_size` indices: one per thread, times the lanes of
        a lane-vectorised task where this backend may compile one (lanes.py; one slice per lane; a scalar task
        uses the first slice-count ones)."""
        return self.slice_count() * self.stack_lanes

    @property
    def stack_lanes(self) -> int:
        return lanes.LANES if self.fast_math and not self.debug else 1

    def storage_dtype(self, dtype: DataType) -> np.dtype:
        return dtype.np_dtype

    def check_capacity(self, nbytes: int) -> None:
        """Host memory (host_memory.py): what the machine can give, less what this backend holds."""
        check_host_request(_host_bytes(nbytes), self.budget.used)

    def allocate(self, nbytes: int) -> CpuBuffer:
        self.check_capacity(nbytes)
        self.budget.take(nbytes)
        try:
            array, address = aligned_bytes(nbytes)
        except MemoryError as exc:
            self.budget.give(nbytes)
            raise refused_allocation(_host_bytes(nbytes), exc) from None
        return CpuBuffer(array, address, nbytes)

    def free(self, buffer: CpuBuffer) -> None:
        """Memory returns to numpy when the last reference (views included) goes away; the budget now."""
        if not buffer.adopted:
            self.budget.give(buffer.nbytes)

    adopts_host_memory = True

    def adopt(self, memory: np.ndarray) -> CpuBuffer:
        """Kernels read and write `memory` itself (not counted in the budget: its owner allocated it)."""
        raw = memory.reshape(-1).view(np.uint8)
        return CpuBuffer(raw, raw.ctypes.data, raw.size, adopted=True)

    def upload(self, buffer: CpuBuffer, data: np.ndarray, offset: int = 0) -> None:
        raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        buffer.array[offset:offset + raw.size] = raw

    def download(self, buffer: CpuBuffer, nbytes: int, offset: int = 0, out: np.ndarray | None = None) -> np.ndarray:
        if out is None:
            return buffer.array[offset:offset + nbytes].copy()
        np.copyto(out[:nbytes], buffer.array[offset:offset + nbytes])
        return out[:nbytes]

    def copy(self, dst: CpuBuffer, src: CpuBuffer, nbytes: int) -> None:
        dst.array[:nbytes] = src.array[:nbytes]

    def host_view(self, buffer: CpuBuffer, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
        dtype = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        return buffer.array[:count * dtype.itemsize].view(dtype).reshape(shape)

    def compile(self, kernel: OffloadedKernel, origin: str | None = None) -> CpuCompiledKernel:
        _refuse_simt(kernel)
        return CpuCompiledKernel(kernel, self.target, self.debug, self, self.fast_math, origin)

    def sync(self) -> None:
        """Launches are synchronous; only a recorded adstack overflow can be pending (raised once)."""
        error, self.pending_error = self.pending_error, None
        if error is not None:
            raise error

    def shutdown(self) -> None:
        """Release the worker pool; its threads stop when no CpuBackend uses it (a new one restarts them)."""
        if not self.released:
            self.released = True
            self.adstack_heap.drop()
            self.pool.release()

    def worker_threads(self) -> int:
        return self.pool.worker_count()

    def describe(self) -> str:
        return f"cpu (LLVM JIT, {len(self.pool.threads) + 1} threads)"

