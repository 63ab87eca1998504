"""LLVM lowering of the adstack statements, and the per-kernel adstack context the CPU and CUDA runtimes fill.

The context is an int64 array whose address is baked into the argument block: [heap address, flag address,
launch code, 0, then METADATA_FIELDS int64 per stack, task by task in stack_id order]. Metadata is in bytes:
element address = heap + base + worker * thread_stride + depth * slot_stride (backends/adstack.py).
The depth counter, the top value and the top's adjoint live in function-local allocas (registers after
mem2reg), reset where the stack is declared: at the start of each parallel index. A push writes the heap and
the top register; a pop re-reads the new top, so the replay never waits on a store it just made and the adjoint
sweep reads the heap once per pop (the heap holds primals only, see backends/adstack.py)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wgkern.backends.adstack import METADATA_FIELDS, KernelStackLayout
from wgkern.errors import InternalCompilerError
from wgkern.ir import nodes as ir

from .types import llvm_type, memory_type, zero_literal

CONTEXT_HEADER = 4     # int64 words before the first metadata row


class AdStackContext:
    """A kernel's adstack context on the host (`host`, laid out as the module docstring says) and what it was
    last filled from, so that a reverse launch with the layout and heap of the one before writes nothing."""

    def __init__(self, rows: int, code_word: int):
        self.host = np.zeros(CONTEXT_HEADER + METADATA_FIELDS * rows, dtype=np.int64)
        self.code_word = code_word
        self.written: tuple[KernelStackLayout, tuple[int, int]] | None = None

    def fill(self, layout: KernelStackLayout, heap_address: int, flag_address: int) -> bool:
        """Fill the context for `layout` (backends/adstack.py layout_kernel) and these addresses; False, with
        nothing written, where it holds them already."""
        header = (heap_address, flag_address)
        written = self.written
        if written is not None and written[0] is layout and written[1] == header:
            return False
        host = self.host
        host[0], host[1], host[2] = heap_address, flag_address, self.code_word
        host[CONTEXT_HEADER:CONTEXT_HEADER + layout.rows.size] = layout.rows
        self.written = (layout, header)
        return True


@dataclass(slots=True)
class StackRegisters:
    """What one function knows about one stack: its depth alloca and the invariant metadata values."""
    depth: str
    top: str           # alloca holding the top's primal
    adjoint: str       # alloca holding the top's adjoint (float stacks)
    primal: str        # ptr to this thread's slot 0
    slot_stride: str   # i64 bytes
    capacity: str      # i64
    flag_code: str     # i32 word written to the overflow flag


class AdStackLowering:
    """Mixin for codegen.FunctionEmitter: visit rules for AdStack* statements."""

    def stack_row(self, stmt: ir.AdStackAlloca) -> int:
        return self.module.adstack_rows[self.task_index] + stmt.stack_id

    def context_word(self, index: int) -> str:
        """Invariant i64 word `index` of the adstack context (loaded once in the entry block)."""
        key = ("adstack", index)
        cached = self.container_cache.get(key)
        if cached is not None:
            return cached
        offset = self.layout.adstack_context
        if offset is None:
            raise InternalCompilerError("kernel has adstacks but no adstack context", None)
        context = self.arg_field(offset, "ptr", "ptr")
        address = self.entry_op(f"getelementptr inbounds i64, ptr {context}, i64 {index}")
        value = self.entry_op(f"load i64, ptr {address}, align 8, !invariant.load !0")
        self.container_cache[key] = value
        return value

    def visit_AdStackAlloca(self, stmt: ir.AdStackAlloca) -> None:
        registers = self.stack_registers.get(stmt)
        ty = llvm_type(stmt.dtype)
        if registers is None:
            row = CONTEXT_HEADER + METADATA_FIELDS * self.stack_row(stmt)
            heap = self.entry_op(f"inttoptr i64 {self.context_word(0)} to ptr")
            base, thread_stride, slot_stride, capacity = (self.context_word(row + k) for k in range(METADATA_FIELDS))
            worker = self.entry_op(f"sext i32 {self.worker} to i64")
            slice_offset = self.entry_op(f"mul i64 {worker}, {thread_stride}")
            primal_offset = self.entry_op(f"add i64 {slice_offset}, {base}")
            primal = self.entry_op(f"getelementptr inbounds i8, ptr {heap}, i64 {primal_offset}")
            launch_code = self.entry_op(f"trunc i64 {self.context_word(2)} to i32")
            code = self.entry_op(f"or i32 {launch_code}, {(self.task_index << 10) | (stmt.stack_id + 1)}")
            depth = self.entry_op("alloca i32", "depth")
            top = self.entry_op(f"alloca {ty}", "top")
            adjoint = self.entry_op(f"alloca {ty}", "adj") if stmt.dtype.is_float else ""
            registers = StackRegisters(depth, top, adjoint, primal, slot_stride, capacity, code)
            self.stack_registers[stmt] = registers
        self.emit(f"store i32 0, ptr {registers.depth}")
        self.emit(f"store i1 false, ptr {self.overflowed_slot()}")    # per unit (unit_guard.py re-runs units)
        self.emit(f"store {ty} {zero_literal(stmt.dtype)}, ptr {registers.top}")
        if registers.adjoint:
            self.emit(f"store {ty} {zero_literal(stmt.dtype)}, ptr {registers.adjoint}")

    def stack_alignment(self, stack: ir.AdStackAlloca) -> int:
        """Alignment of a heap element: natural where the target lays stacks out aligned (CUDA, where byte-wise
        accesses are slow), else 1 (CPU slices pack stacks of mixed dtypes back to back)."""
        return (1 if stack.dtype.is_bool else stack.dtype.nbytes) if self.target.aligned_stacks else 1

    def _registers(self, stack: ir.AdStackAlloca, stmt: ir.Stmt) -> StackRegisters:
        registers = self.stack_registers.get(stack)
        if registers is None:
            raise InternalCompilerError("adstack used before its declaration", stmt.loc)
        return registers

    def visit_AdStackPush(self, stmt: ir.AdStackPush) -> None:
        stack = stmt.stack
        registers = self._registers(stack, stmt)
        depth = self.op(f"load i32, ptr {registers.depth}")
        wide = self.op(f"zext i32 {depth} to i64")
        value = self.value(stmt.value)
        if stmt.value.dtype != stack.dtype:
            value = self.convert(value, stmt.value.dtype, stack.dtype)
        ty = llvm_type(stack.dtype)
        self.emit(f"store {ty} {value}, ptr {registers.top}")
        if registers.adjoint:
            self.emit(f"store {ty} {zero_literal(stack.dtype)}, ptr {registers.adjoint}")
        fits = self.op(f"icmp ult i64 {wide}, {registers.capacity}")
        ok_label, over_label, done_label = self.label("push.ok"), self.label("push.over"), self.label("push.end")
        self.cond_branch(fits, ok_label, over_label)
        self.start_block(ok_label)
        offset = self.op(f"mul i64 {wide}, {registers.slot_stride}")
        primal = self.op(f"getelementptr inbounds i8, ptr {registers.primal}, i64 {offset}")
        self.emit(f"store {memory_type(stack.dtype)} {self.to_memory(value, stack.dtype)}, ptr {primal}, "
                  f"align {self.stack_alignment(stack)}")
        self.emit(f"store i32 {self.op(f'add i32 {depth}, 1')}, ptr {registers.depth}")
        self.branch(done_label)
        self.start_block(over_label)
        flag = self.container_cache.get(("adstack", "flag"))
        if flag is None:
            flag = self.entry_op(f"inttoptr i64 {self.context_word(1)} to ptr")
            self.container_cache[("adstack", "flag")] = flag
        self.emit(f"store atomic i32 {registers.flag_code}, ptr {flag}{self.target.atomic_scope} monotonic, align 4")
        self.emit(f"store i1 true, ptr {self.overflowed_slot()}")
        self.branch(done_label)
        self.start_block(done_label)

    def overflowed_slot(self) -> str:
        """This unit's 'a push overflowed' register (an i1 alloca, false at function entry and at each unit's
        stack declarations)."""
        slot = self.container_cache.get(("adstack", "overflowed"))
        if slot is None:
            slot = self.entry_op("alloca i1", "overflowed")
            self.entry.append(f"  store i1 false, ptr {slot}")
            self.container_cache[("adstack", "overflowed")] = slot
        return slot

    def visit_AdStackOverflowed(self, stmt: ir.AdStackOverflowed) -> None:
        self.values[stmt] = self.op(f"load i1, ptr {self.overflowed_slot()}")

    def visit_AdStackPop(self, stmt: ir.AdStackPop) -> None:
        stack = stmt.stack
        registers = self._registers(stack, stmt)
        depth = self.op(f"load i32, ptr {registers.depth}")
        nonempty = self.op(f"icmp sgt i32 {depth}, 0")
        below = self.op(f"sub i32 {depth}, 1")
        new_depth = self.op(f"select i1 {nonempty}, i32 {below}, i32 0")
        self.emit(f"store i32 {new_depth}, ptr {registers.depth}")
        # the new top is slot new_depth - 1 (slot 0 when empty: load-top clamps)
        above_empty = self.op(f"icmp sgt i32 {new_depth}, 0")
        top_slot = self.op(f"select i1 {above_empty}, i32 {self.op(f'sub i32 {new_depth}, 1')}, i32 0")
        offset = self.op(f"mul i64 {self.op(f'zext i32 {top_slot} to i64')}, {registers.slot_stride}")
        address = self.op(f"getelementptr inbounds i8, ptr {registers.primal}, i64 {offset}")
        raw = self.op(f"load {memory_type(stack.dtype)}, ptr {address}, align {self.stack_alignment(stack)}")
        ty = llvm_type(stack.dtype)
        self.emit(f"store {ty} {self.from_memory(raw, stack.dtype)}, ptr {registers.top}")
        if registers.adjoint:
            self.emit(f"store {ty} {zero_literal(stack.dtype)}, ptr {registers.adjoint}")

    def visit_AdStackLoadTop(self, stmt: ir.AdStackLoadTop) -> None:
        registers = self._registers(stmt.stack, stmt)
        self.values[stmt] = self.op(f"load {llvm_type(stmt.stack.dtype)}, ptr {registers.top}")

    def visit_AdStackLoadTopAdj(self, stmt: ir.AdStackLoadTopAdj) -> None:
        registers = self._registers(stmt.stack, stmt)
        self.values[stmt] = self.op(f"load {llvm_type(stmt.stack.dtype)}, ptr {registers.adjoint}")

    def visit_AdStackAccAdjoint(self, stmt: ir.AdStackAccAdjoint) -> None:
        stack = stmt.stack
        registers = self._registers(stack, stmt)
        ty = llvm_type(stack.dtype)
        value = self.value(stmt.value)
        if stmt.value.dtype != stack.dtype:
            value = self.convert(value, stmt.value.dtype, stack.dtype)
        old = self.op(f"load {ty}, ptr {registers.adjoint}")
        total = self.op(f"fadd{self.module.float_flags} {ty} {old}, {value}")
        self.emit(f"store {ty} {total}, ptr {registers.adjoint}")
