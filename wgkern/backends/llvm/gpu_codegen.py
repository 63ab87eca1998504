"""LLVM IR for the GPU backends (CUDA, AMDGPU): every task of an OffloadedKernel as one GPU kernel, sharing
codegen.py. What differs between the GPUs comes from their GpuTarget (target.py: thread registers, the kernel's
signature and marking) and the FunctionEmitter subclass each passes in (cuda_codegen.py, amdgpu_codegen.py: simt
lowering, whose shuffles also combine register reductions across the wave before their one atomic per wave).

Statements are emitted by codegen.FunctionEmitter exactly as on the CPU (same lowerings, atomics, adstacks,
random numbers); what differs is the frame around a task body and `print`:
- Each task is a kernel whose parameter block is the launch's argument block (layout.py, device addresses in
  place of host ones), passed whole by the launch call, so a launch uploads nothing.
- A range task evaluates its bounds in the kernel and runs a grid-stride loop: thread g of G handles indices
  begin + g, begin + g + G, ... So any grid size is correct; the runtime picks one from the host-evaluated range
  (or a capped grid when the bounds read device memory). The adstack slice of a thread is g (slot-major heap).
- A serial task is launched as one thread.
- `print(...)` appends a record to a device print buffer (an atomic add reserves it: word 0 counts reserved
  words, word 1 written ones; records start at word HEADER_WORDS as [site, value words...], each value widened
  to 64 bits as ir/printing.py decodes them); the backend prints them when it next waits for the device."""

from __future__ import annotations

from wgkern.errors import CompileError, InternalCompilerError
from wgkern.ir import nodes as ir
from wgkern.passes.analysis import first_simt_use

from . import printing
from .codegen import FunctionEmitter, ModuleEmitter, symbol_name
from .layout import ArgLayout
from wgkern.backends.reductions import COMBINE, chunk_reductions
from .ops import BINARY
from .target import GpuTarget
from .types import llvm_type

THREADS_PER_BLOCK = 256
MAX_THREADS_PER_BLOCK = 1024     # CUDA's limit on every GPU it runs
PRINT_HEADER_WORDS = 4


class CudaModuleEmitter(ModuleEmitter):
    """ModuleEmitter plus the device print buffer's address and capacity (int64 words) and kernel names."""

    target: GpuTarget

    def __init__(self, target: GpuTarget, layout: ArgLayout, prefix: str, bounds_check: bool, fast_math: bool,
                 print_buffer: tuple[int, int]):
        super().__init__(target, layout, prefix, bounds_check, fast_math)
        self.print_buffer = print_buffer
        self.kernels: list[str] = []
        self.shared_names: dict[int, str] = {}      # id(shared slot) -> its addrspace(3) global (cuda_simt.py)
        self.shared_bytes: dict[int, int] = {}      # task index -> bytes of its shared arrays

    def text(self) -> str:
        return super().text() + "\n".join(self.target.module_trailer(self.kernels))


class GpuFunctionEmitter(FunctionEmitter):
    """FunctionEmitter with `print` lowered to the device print buffer and register reductions combined across
    the wave before their atomic; a shared array's element is addressed by the target's `shared_pointer`, the
    wave's lanes combined by its `wave_total` (wk.simt lowering mixed in by the target's emitter:
    cuda_simt.py, amdgpu_simt.py)."""

    module: CudaModuleEmitter

    def visit_GlobalPtr(self, stmt: ir.GlobalPtr) -> None:
        if stmt.container.kind == "shared":
            self.shared_pointer(stmt)
        else:
            super().visit_GlobalPtr(stmt)

    def flush_chunk_reductions(self) -> None:
        """At a range kernel's end: each register combined across the wave (the simt lowering's `wave_total`:
        CUDA's 32-lane warp, AMDGPU's wave of 64 or 32 lanes), then the wave's first lane applies the one atomic:
        `loss[None] += v` over a million indices makes 32 (64) times fewer atomics on one address than a flush
        per thread. Every thread of a block reaches this point (a parallel body's `return` and `continue` end
        only its index). 8- and 16-bit values flush per thread."""
        for reduction, register in self.chunk_registers.items():
            dtype = reduction.dtype
            if dtype.bits not in (32, 64):
                self.flush_chunk_reductions_of([(reduction, register)])
                continue
            spelling = BINARY[dtype.kind].get(COMBINE[reduction.op])
            total, first = self.wave_total(
                self.op(f"load {llvm_type(dtype)}, ptr {register}"), dtype,
                lambda a, b: self.apply(spelling, reduction.ptr, dtype, [a, b]))
            leader, rest = self.label("wave.first"), self.label("wave.rest")
            self.cond_branch(first, leader, rest)
            self.start_block(leader)
            self.visit_GlobalPtr(reduction.ptr)
            self.in_range_only(reduction.ptr, None, lambda: self.emit_atomic(
                reduction.ptr, reduction.op, dtype, self.value(reduction.ptr), total))
            self.branch(rest)
            self.start_block(rest)

    def visit_Print(self, stmt: ir.Print) -> None:
        dtypes = [v.dtype for v in stmt.values]
        site = printing.register_site(stmt.pieces, dtypes, stmt.formats)
        words = [str(site)]
        for value, dtype in zip(stmt.values, dtypes):
            words.append(self.print_word(self.value(value), dtype))
        address, capacity = self.module.print_buffer
        buffer = self.device_pointer(address)
        scope, metadata = self.target.atomic_scope, self.target.atomicrmw_metadata("add", 64)
        start = self.op(f"atomicrmw add ptr {buffer}, i64 {len(words)}{scope} monotonic, align 8{metadata}")
        end = self.op(f"add i64 {start}, {len(words) + PRINT_HEADER_WORDS}")
        write, done = self.label("print.write"), self.label("print.done")
        self.cond_branch(self.op(f"icmp ule i64 {end}, {capacity}"), write, done)
        self.start_block(write)
        first = self.op(f"add i64 {start}, {PRINT_HEADER_WORDS}")
        for k, word in enumerate(words):
            position = self.op(f"add i64 {first}, {k}")
            slot = self.op(f"getelementptr inbounds i64, ptr {buffer}, i64 {position}")
            self.emit(f"store i64 {word}, ptr {slot}, align 8")
        written = self.op(f"getelementptr inbounds i64, ptr {buffer}, i64 1")
        self.emit(f"atomicrmw add ptr {written}, i64 {len(words)}{scope} monotonic, align 8{metadata}")
        self.branch(done)
        self.start_block(done)



def _finish(fn: FunctionEmitter, name: str) -> str:
    """The kernel's text: its signature and argument-block prelude from the target."""
    signature, prelude = fn.module.target.kernel_signature(name, max(fn.module.layout.size, 8))
    fn.entry[:0] = prelude
    return fn.finish(signature)


def block_size(task: ir.Task) -> int:
    """Threads per block of a task: loop_config(block_dim=N), else THREADS_PER_BLOCK (1 for serial tasks)."""
    if task.kind != "range":
        return 1
    if task.loop.block_dim > MAX_THREADS_PER_BLOCK:
        raise CompileError(f"block_dim={task.loop.block_dim} is more than CUDA's {MAX_THREADS_PER_BLOCK} threads "
                           "per block", task.loop.loc)
    return task.loop.block_dim or THREADS_PER_BLOCK


def emit_range_kernel(module: CudaModuleEmitter, task: ir.Task, name: str, task_index: int,
                      emitter: type[GpuFunctionEmitter]) -> str:
    """Grid-stride loop over the task's range; the thread's global id is its adstack slice. A task that uses
    wk.simt strides over whole blocks instead: index i is thread (i - begin) % block_dim of its block, every
    thread of a block takes the same trips, and in a partial last block the threads past the end skip the
    body (docs/simt.md)."""
    simt = first_simt_use(task.body) is not None
    block_size(task)            # a block_dim past CUDA's limit fails here, at compile time
    fn = emitter(module, thread_index=task.loop, task_index=task_index, worker="%gid")
    registers, declarations = module.target.thread_registers()
    fn.entry.extend(registers)
    for declaration in declarations:
        module.declare(declaration)
    fn.entry.extend([
        "  %block_base = mul i32 %ctaid, %ntid",
        "  %gid = add i32 %block_base, %tid",
        "  %ntid64 = zext i32 %ntid to i64",
        "  %nctaid64 = zext i32 %nctaid to i64",
        "  %grid_stride = mul i64 %ntid64, %nctaid64",
    ])
    fn.return_label = "task.next"
    fn.visit_block(task.bounds)
    begin = fn.op(f"sext i32 {fn.value(task.loop.begin)} to i64")
    end = fn.op(f"sext i32 {fn.value(task.loop.end)} to i64")
    count = fn.op(f"sub i64 {end}, {begin}")
    counter = fn.entry_op("alloca i64", "k")
    index_slot = fn.entry_op("alloca i32", "idx")
    fn.loop_slots[task.loop] = index_slot
    fn.emit(f"store i64 {fn.op(('zext i32 %block_base' if simt else 'zext i32 %gid') + ' to i64')}, ptr {counter}")
    fn.branch("task.cond")
    fn.start_block("task.cond")
    k = fn.op(f"load i64, ptr {counter}")
    fn.cond_branch(fn.op(f"icmp slt i64 {k}, {count}"), "task.block" if simt else "task.body", "exit")
    fn.chunk_reductions = chunk_reductions(task)
    if simt:
        fn.start_block("task.block")
        k = fn.op(f"add i64 {k}, {fn.op('zext i32 %tid to i64')}")
        fn.cond_branch(fn.op(f"icmp slt i64 {k}, {count}"), "task.body", "task.next")
    fn.start_block("task.body")
    index = fn.op(f"add i64 {k}, {begin}")
    fn.emit(f"store i32 {fn.op(f'trunc i64 {index} to i32')}, ptr {index_slot}")
    fn.emit_parallel_body(task)
    k = fn.op(f"load i64, ptr {counter}")
    fn.emit(f"store i64 {fn.op(f'add i64 {k}, %grid_stride')}, ptr {counter}")
    fn.branch("task.cond")
    fn.start_block("exit")
    fn.flush_chunk_reductions()
    fn.emit("ret void")
    return _finish(fn, name)


def emit_serial_kernel(module: CudaModuleEmitter, task: ir.Task, name: str, task_index: int,
                       emitter: type[GpuFunctionEmitter]) -> str:
    """The body once, on one thread (adstack slice 0)."""
    fn = emitter(module, task_index=task_index)
    fn.visit_block(task.body)
    fn.branch("exit")
    fn.start_block("exit")
    fn.emit("ret void")
    return _finish(fn, name)


def emit_gpu_module(kernel: ir.OffloadedKernel, layout: ArgLayout, target: GpuTarget, prefix: str,
                    print_buffer: tuple[int, int], emitter: type[GpuFunctionEmitter], bounds_check: bool = False,
                    fast_math: bool = False) -> tuple[str, list[str], list]:
    """(LLVM IR text, one kernel name per task, bounds-checked sites): every task as one kernel of `target`,
    its statements lowered by `emitter` (a FunctionEmitter with the target's print, simt and flush)."""
    module = CudaModuleEmitter(target, layout, prefix, bounds_check, fast_math, print_buffer)
    module.slot_indices = {slot: index for index, slot in enumerate(kernel.containers)}
    module.set_range_proofs(kernel.tasks)
    rows = 0
    for task in kernel.tasks:
        module.adstack_rows.append(rows)
        rows += sum(isinstance(s, ir.AdStackAlloca) for s in task.body.stmts)
    for index, task in enumerate(kernel.tasks):
        name = f"{prefix}_t{index}_{symbol_name(task.name)}"[:120]
        if task.kind == "range":
            if task.loop is None:
                raise InternalCompilerError(f"range task {task.name} has no loop", task.loc)
            module.functions.append(emit_range_kernel(module, task, name, index, emitter))
        else:
            module.functions.append(emit_serial_kernel(module, task, name, index, emitter))
        module.kernels.append(name)
    return module.text(), list(module.kernels), module.bounds_sites
