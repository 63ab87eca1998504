"""LLVM IR text for one OffloadedKernel: one module holding every task plus an entry that runs them in order.

FunctionEmitter is the IRVisitor that turns statements into instructions; op spellings come from ops.py,
intrinsic-free lowerings (Python floor division, masked shifts...) from lowering.py, target differences from
target.py. Module shape and the task ABI are described in emit_module's docstring."""
from __future__ import annotations

import re
from typing import Callable

from wgkern.errors import CompileError, InternalCompilerError
from wgkern.ir import nodes as ir
from wgkern.ir.ops import UnaryOpKind
from wgkern.ir.visitor import IRVisitor
from wgkern.passes.index_ranges import trailing_in_range
from wgkern import dtypes as T
from wgkern.dtypes import DataType
from . import printing, sincos
from .adstack import AdStackLowering
from .atomics import AtomicLowering
from .bounds import BoundsLowering
from .control_flow import ControlFlowLowering
from wgkern.backends.reductions import COMBINE, ChunkReduction, chunk_reductions, identity
from .layout import LAUNCH_ID_OFFSET, SEED_OFFSET, ArgLayout
from .lowering import Lowerings
from .memory import MemoryLowering
from .ops import BINARY, UNARY, Inst, Intrinsic, Lowering, Math, OpSpelling
from .target import Target
from .types import const_literal, llvm_type, memory_type, type_suffix, zero_literal
from .wide_access import WideAccessLowering

# A range task's chunk covers at least this much estimated work (statements x iterations), so cheap bodies
# get big chunks and launches below two chunks run inline on the calling thread.
WORK_PER_CHUNK = 16384
# A range task whose guarded accesses move with its index runs in blocks of this many indices, each checked once
# (emit_range_task): long enough to vectorise, short enough that only the blocks at a container's ends pay.
VERSIONED_BLOCK = 2048
_LOOP_COST_FACTOR = 16
_HEAVY_STMTS = (ir.AtomicOp, ir.RandomValue)
_FAST_MATH_OPCODES = frozenset({"fadd", "fsub", "fmul", "fdiv", "fneg"})

# mix(h) of docs/internals.md; the multipliers are 0x7feb352d and 0x846ca68b (LLVM wants them signed).
HASH_HELPERS = """
define internal i32 @wk.mix(i32 %h0) alwaysinline nounwind {
  %s1 = lshr i32 %h0, 16
  %h1 = xor i32 %h0, %s1
  %h2 = mul i32 %h1, {m1}
  %s2 = lshr i32 %h2, 15
  %h3 = xor i32 %h2, %s2
  %h4 = mul i32 %h3, {m2}
  %s3 = lshr i32 %h4, 16
  %h5 = xor i32 %h4, %s3
  ret i32 %h5
}
define internal i32 @wk.hash(i32 %a, i32 %b, i32 %c, i32 %d) alwaysinline nounwind {
  %m1 = call i32 @wk.mix(i32 %a)
  %x1 = xor i32 %m1, %b
  %m2 = call i32 @wk.mix(i32 %x1)
  %x2 = xor i32 %m2, %c
  %m3 = call i32 @wk.mix(i32 %x2)
  %x3 = xor i32 %m3, %d
  %m4 = call i32 @wk.mix(i32 %x3)
  ret i32 %m4
}
""".replace("{m1}", str(0x7FEB352D)).replace("{m2}", str(0x846CA68B - (1 << 32)))


def symbol_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", text)


def estimate_cost(block: ir.Block) -> int:
    """Rough per-iteration work of a body: statements, with nested loops counted _LOOP_COST_FACTOR times."""
    cost = 0
    for stmt in block.stmts:
        cost += 4 if isinstance(stmt, _HEAVY_STMTS) else 1
        for child in stmt.blocks():
            factor = _LOOP_COST_FACTOR if isinstance(stmt, (ir.RangeFor, ir.While)) else 1
            cost += factor * estimate_cost(child)
    return max(cost, 1)


class ModuleEmitter:
    """Collects function definitions, declarations and helpers of one LLVM module."""

    def __init__(self, target: Target, layout: ArgLayout, prefix: str, bounds_check: bool = False,
                 fast_math: bool = False, single_thread: bool = False):
        self.target = target
        # the backend runs every task on the launching thread alone (CpuBackend(threads=1)): range tasks are
        # called directly, not through the worker pool, and atomics are plain read-modify-writes (atomics.py)
        self.single_thread = single_thread
        # Taichi's fast_math: float arithmetic may be reassociated and contracted (reductions vectorise);
        # NaN and infinity semantics are kept (no nnan/ninf).
        self.float_flags = " reassoc contract nsz arcp afn" if fast_math else ""
        self.fast_math = fast_math
        extra = target.fast_math_function_attributes if fast_math else ""
        self.function_attributes = f"{target.function_attributes} {extra}".strip()
        self.bounds_check = bounds_check
        self.bounds_sites: list[ir.GlobalPtr | ir.AssertFail] = []   # site id k + 1 is written to the error word
        self.global_ptr = "ptr" + target.global_address_space
        self.layout = layout
        self.prefix = prefix
        self.functions: list[str] = []
        self.declarations: set[str] = set()
        self.helpers: dict[str, str] = {}
        self.slot_indices: dict[ir.ContainerSlot, int] = {}
        self.adstack_rows: list[int] = []    # first metadata row of each task's stacks (adstack.py)
        self.sincos_operands: set[ir.Stmt] = set()     # f32 values whose sin and cos are fused (sincos.py)
        self.in_range: set[ir.GlobalPtr] = set()       # accesses that need no check (passes/index_ranges.py)
        self.trailing_in_range: dict[ir.GlobalPtr, int] = {}   # and how many last axes of the others are proven

    def set_range_proofs(self, tasks: list[ir.Task]) -> None:
        """What passes/index_ranges.py proves of the accesses of `tasks`: in_range and trailing_in_range."""
        for task in tasks:
            self.trailing_in_range.update(trailing_in_range((task.bounds, task.body)))
        self.in_range = {ptr for ptr, count in self.trailing_in_range.items() if count == len(ptr.indices)}

    def declare(self, text: str) -> None:
        self.declarations.add(text)

    def intrinsic(self, name: str, ret: str, params: list[str]) -> str:
        """Declare `name` (already suffixed) and return it as a callee."""
        self.declare(f"declare {ret} @{name}({', '.join(params)})")
        return "@" + name

    def text(self) -> str:
        parts = [f"; wgkern module {self.prefix}", *sorted(self.declarations), *self.helpers.values(),
                 *self.functions, "!0 = !{}", ""]
        return "\n".join(parts)


class FunctionEmitter(IRVisitor, Lowerings, MemoryLowering, ControlFlowLowering, AdStackLowering, AtomicLowering,
                      BoundsLowering, WideAccessLowering):
    """Emits the instructions of one LLVM function from IR blocks. Values map statement -> operand text.
    `worker` is the i32 slice index of the running thread (adstack slices), `task_index` the task's number."""

    def __init__(self, module: ModuleEmitter, thread_index: ir.RangeFor | None = None, task_index: int = 0,
                 worker: str = "0"):
        self.module = module
        self.target = module.target
        self.layout = module.layout
        self.lines: list[str] = []
        self.entry: list[str] = []
        self.values: dict[ir.Stmt, str] = {}
        self.counter = 0
        self.terminated = False
        self.current_label = "start"                    # the block instructions go to (finish() opens it)
        self.current_stmt: ir.Stmt | None = None        # the statement being lowered (for error locations)
        self.guards: dict[ir.GlobalPtr, str] = {}       # checked accesses -> i1 "in range" (bounds.py)
        self.unguarded: set[ir.GlobalPtr] = set()       # accesses this copy of a loop knows to be in range
        self.loops: list[tuple[str, str]] = []          # (continue label, break label)
        self.loop_slots: dict[ir.RangeFor, str] = {}    # loop -> alloca holding its index
        self.return_label = "exit"
        self.thread_loop = thread_index
        self.container_cache: dict[tuple[int, str], str] = {}
        self.rng_counter: str | None = None
        self.task_index = task_index
        self.worker = worker
        self.stack_registers: dict[ir.AdStackAlloca, object] = {}
        self.chunk_reductions: dict[ir.AtomicOp, ChunkReduction] = {}   # reductions.py (range tasks)
        self.chunk_registers: dict[ChunkReduction, str] = {}            # -> its alloca, in creation order

    # ---- emission primitives -----------------------------------------------------------------------------
    def fresh(self, hint: str = "t") -> str:
        self.counter += 1
        return f"%{hint}{self.counter}"

    def label(self, hint: str) -> str:
        self.counter += 1
        return f"{hint}.{self.counter}"

    def emit(self, text: str) -> None:
        self.lines.append("  " + text)

    def op(self, text: str, hint: str = "t") -> str:
        name = self.fresh(hint)
        self.emit(f"{name} = {text}")
        return name

    def entry_op(self, text: str, hint: str = "e") -> str:
        """An instruction of the entry block. Where the target keeps allocas in their own address space
        (AMDGPU's private addrspace(5)), an alloca is made there and cast to the generic pointer every other
        instruction takes (LLVM's address-space inference turns the accesses back into private ones)."""
        name = self.fresh(hint)
        space = getattr(self.target, "private_address_space", "")
        if space and text.startswith("alloca "):
            self.entry.append(f"  {name}.private = {text},{space}")
            self.entry.append(f"  {name} = addrspacecast ptr{space} {name}.private to ptr")
            return name
        self.entry.append(f"  {name} = {text}")
        return name

    def start_block(self, label: str) -> None:
        self.lines.append(f"{label}:")
        self.current_label = label
        self.terminated = False

    def branch(self, label: str) -> None:
        if not self.terminated:
            self.emit(f"br label %{label}")
        self.terminated = True

    def cond_branch(self, cond: str, then_label: str, else_label: str) -> None:
        self.emit(f"br i1 {cond}, label %{then_label}, label %{else_label}")
        self.terminated = True

    def ensure_open_block(self) -> None:
        """After a terminator, statements go into a fresh (unreachable) block so the IR stays valid."""
        if self.terminated:
            self.start_block(self.label("dead"))

    def value(self, stmt: ir.Stmt) -> str:
        found = self.values.get(stmt)
        if found is None:
            raise InternalCompilerError(f"{type(stmt).__name__} used outside the task that defines it", stmt.loc)
        return found

    def visit(self, stmt: ir.Stmt) -> None:
        self.ensure_open_block()
        self.current_stmt = stmt
        super().visit(stmt)

    # ---- argument block ----------------------------------------------------------------------------------
    def arg_field(self, offset: int, ty: str, key: str) -> str:
        """Invariant load of a field of the argument block, emitted once in the entry block."""
        cached = self.container_cache.get((offset, key))
        if cached is not None:
            return cached
        address = self.entry_op(f"getelementptr inbounds i8, ptr %args, i64 {offset}")
        value = self.entry_op(f"load {ty}, ptr {address}, align 4, !invariant.load !0")
        self.container_cache[(offset, key)] = value
        return value


    # ---- values ------------------------------------------------------------------------------------------
    def visit_Const(self, stmt: ir.Const) -> None:
        self.values[stmt] = const_literal(stmt.value, stmt.dtype)

    def visit_ArgLoad(self, stmt: ir.ArgLoad) -> None:
        offset = self.layout.scalar.get(stmt.arg_index)
        if offset is None:
            raise InternalCompilerError(f"argument {stmt.arg_index} is not a scalar", stmt.loc)
        raw = self.arg_field(offset, memory_type(stmt.dtype), memory_type(stmt.dtype))
        self.values[stmt] = self.from_memory(raw, stmt.dtype)

    def visit_ShapeOf(self, stmt: ir.ShapeOf) -> None:
        index = self.slot_index(stmt.container, stmt)
        self.values[stmt] = self.container_extent(index, stmt.container, stmt.axis)

    def visit_UnaryOp(self, stmt: ir.UnaryOp) -> None:
        dtype = stmt.operand.dtype
        if stmt.operand in self.module.sincos_operands and stmt.op in (UnaryOpKind.SIN, UnaryOpKind.COS):
            self.values[stmt] = self.fused_sincos(stmt)
            return
        spelling = UNARY[dtype.kind].get(stmt.op)
        self.values[stmt] = self.apply(spelling, stmt, dtype, [self.value(stmt.operand)])

    def visit_BinaryOp(self, stmt: ir.BinaryOp) -> None:
        dtype = stmt.lhs.dtype
        spelling = BINARY[dtype.kind].get(stmt.op)
        rhs = self.value(stmt.rhs)
        if stmt.rhs.dtype != dtype:
            rhs = self.convert(rhs, stmt.rhs.dtype, dtype)
        self.values[stmt] = self.apply(spelling, stmt, dtype, [self.value(stmt.lhs), rhs])

    def apply(self, spelling: OpSpelling | None, stmt: ir.Stmt, dtype: DataType, operands: list[str]) -> str:
        """Emit `spelling` on operands of `dtype` (the operands' type; comparisons yield i1)."""
        ty = llvm_type(dtype)
        if isinstance(spelling, Inst):
            opcode = spelling.opcode
            if dtype.is_float and opcode in _FAST_MATH_OPCODES:
                opcode += self.module.float_flags
            return self.op(f"{opcode} {ty} {', '.join(operands)}")
        if isinstance(spelling, Intrinsic):
            return self.call_float_promoted(spelling.name, dtype, operands, intrinsic=True)
        if isinstance(spelling, Math):
            return self.call_float_promoted(spelling.name, dtype, operands, intrinsic=False)
        if isinstance(spelling, Lowering):
            return getattr(self, "lower_" + spelling.name)(dtype, *operands)
        raise InternalCompilerError(f"op {stmt.op.value!r} is not defined on {dtype}", stmt.loc)

    def fused_sincos(self, stmt: ir.UnaryOp) -> str:
        self.module.declare(sincos.declaration(self.target.math_attributes))
        pair = self.op(f"call {{float, float}} @{sincos.SYMBOL}(float {self.value(stmt.operand)})")
        return self.op(f"extractvalue {{float, float}} {pair}, {1 if stmt.op is UnaryOpKind.COS else 0}")

    def call_intrinsic(self, name: str, dtype: DataType, operands: list[str], extra: str = "") -> str:
        ty = llvm_type(dtype)
        params = [ty] * len(operands) + ([extra.split()[0]] if extra else [])
        callee = self.module.intrinsic(f"{name}.{type_suffix(dtype)}", ty, params)
        args = [f"{ty} {o}" for o in operands] + ([extra] if extra else [])
        return self.op(f"call{self.approximation_flags(name, dtype)} {ty} {callee}({', '.join(args)})")

    def approximation_flags(self, intrinsic: str, dtype: DataType) -> str:
        """fast_math's flags where the target may approximate `intrinsic` at `dtype` (Target's
        approximate_f32_intrinsics), else none: the intrinsic stays correctly rounded."""
        if dtype == T.f32 and intrinsic in self.target.approximate_f32_intrinsics:
            return self.module.float_flags
        return ""

    def call_float_promoted(self, name: str, dtype: DataType, operands: list[str], intrinsic: bool) -> str:
        """Call an intrinsic or math function; f16 computes in f32 and rounds once (numpy does the same)."""
        if dtype.bits == 16 and dtype.is_float:
            wide = [self.op(f"fpext half {o} to float") for o in operands]
            result = self.call_float_promoted(name, T.f32, wide, intrinsic)
            return self.op(f"fptrunc float {result} to half")
        if intrinsic or not dtype.is_float:
            return self.call_intrinsic(name, dtype, operands)
        ty = llvm_type(dtype)
        symbol = self.target.math_symbol(name, dtype.bits)
        if symbol is None:
            stmt = self.current_stmt
            raise CompileError(f"{name} of {dtype} has no implementation on the {self.target.name} target yet "
                               "(no math library is linked for it: see docs/amdgpu.md, 'Math')",
                               stmt.loc if stmt is not None else None)
        helpers, declarations = self.target.math_definitions(symbol)
        for name, text in helpers.items():
            self.module.helpers.setdefault(name, text)
        for declaration in declarations:
            self.module.declare(declaration)
        if not helpers:
            self.module.declare(f"declare {ty} @{symbol}({', '.join([ty] * len(operands))}) "
                                f"{self.target.math_attributes}")
        args = ", ".join(f"{ty} {o}" for o in operands)
        return self.op(f"call {ty} @{symbol}({args})")

    def visit_TernarySelect(self, stmt: ir.TernarySelect) -> None:
        ty = llvm_type(stmt.dtype)
        self.values[stmt] = self.op(f"select i1 {self.value(stmt.cond)}, {ty} {self.value(stmt.true_value)}, "
                                    f"{ty} {self.value(stmt.false_value)}")

    def visit_Cast(self, stmt: ir.Cast) -> None:
        source = stmt.operand.dtype
        operand = self.value(stmt.operand)
        if stmt.bitcast:
            if source.bits != stmt.dtype.bits:
                raise InternalCompilerError(f"bitcast {source} -> {stmt.dtype} changes width", stmt.loc)
            self.values[stmt] = self.op(f"bitcast {llvm_type(source)} {operand} to {llvm_type(stmt.dtype)}")
            return
        self.values[stmt] = self.convert(operand, source, stmt.dtype)

    def visit_RandomValue(self, stmt: ir.RandomValue) -> None:
        if self.rng_counter is None:
            self.rng_counter = self.entry_op("alloca i32", "rng")
            self.entry.append(f"  store i32 0, ptr {self.rng_counter}")
        count = self.op(f"load i32, ptr {self.rng_counter}")
        self.emit(f"store i32 {self.op(f'add i32 {count}, 1')}, ptr {self.rng_counter}")
        site = ((stmt.site << 20) & 0xFFFFFFFF) - (1 << 32 if (stmt.site << 20) & 0x80000000 else 0)
        mixed = self.op(f"xor i32 {count}, {site}")
        seed = self.arg_field(SEED_OFFSET, "i32", "i32")
        launch = self.arg_field(LAUNCH_ID_OFFSET, "i32", "i32")
        thread = "0"
        if self.thread_loop is not None:
            thread = self.op(f"load i32, ptr {self.loop_slots[self.thread_loop]}")
        self.module.helpers["wk.hash"] = HASH_HELPERS
        bits = self.op(f"call i32 @wk.hash(i32 {seed}, i32 {launch}, i32 {thread}, i32 {mixed})")
        self.values[stmt] = self.lower_random(stmt.dtype, bits)

    # ---- locals ------------------------------------------------------------------------------------------
    def visit_Alloca(self, stmt: ir.Alloca) -> None:
        ty = llvm_type(stmt.dtype)
        slot = self.entry_op(f"alloca {ty}", "local")
        self.values[stmt] = slot
        self.emit(f"store {ty} {zero_literal(stmt.dtype)}, ptr {slot}")

    def visit_LocalLoad(self, stmt: ir.LocalLoad) -> None:
        self.values[stmt] = self.op(f"load {llvm_type(stmt.alloca.dtype)}, ptr {self.value(stmt.alloca)}")

    def visit_LocalStore(self, stmt: ir.LocalStore) -> None:
        value = self.value(stmt.value)
        if stmt.value.dtype != stmt.alloca.dtype:
            value = self.convert(value, stmt.value.dtype, stmt.alloca.dtype)
        self.emit(f"store {llvm_type(stmt.alloca.dtype)} {value}, ptr {self.value(stmt.alloca)}")


    def visit_AtomicOp(self, stmt: ir.AtomicOp) -> None:
        dtype = stmt.ptr.dtype
        reduction = self.chunk_reductions.get(stmt)
        if reduction is not None:
            register = self.chunk_register(reduction)
            ty = llvm_type(dtype)
            combined = self.apply(BINARY[dtype.kind].get(COMBINE[reduction.op]), stmt, dtype,
                                  [self.op(f"load {ty}, ptr {register}"), self.value(stmt.value)])
            self.emit(f"store {ty} {combined}, ptr {register}")
            self.values[stmt] = zero_literal(dtype)     # unused (reductions.py only takes unused atomics)
            return
        operands = []
        for operand in (stmt.value, stmt.expected):
            if operand is not None:
                value = self.value(operand)
                operands.append(self.convert(value, operand.dtype, dtype) if operand.dtype != dtype else value)
        self.values[stmt] = self.in_range_only(
            stmt.ptr, dtype, lambda: self.emit_atomic(stmt, stmt.op, dtype, self.value(stmt.ptr), *operands))

    def chunk_register(self, reduction: ChunkReduction) -> str:
        register = self.chunk_registers.get(reduction)
        if register is None:
            ty = llvm_type(reduction.dtype)
            register = self.entry_op(f"alloca {ty}", "chunk_sum")
            start = const_literal(identity(reduction.op, reduction.dtype), reduction.dtype)
            self.entry.append(f"  store {ty} {start}, ptr {register}")
            self.chunk_registers[reduction] = register
        return register

    def flush_chunk_reductions(self) -> None:
        """At the end of a chunk: one atomic per register (its constant address is valid here)."""
        self.flush_chunk_reductions_of(list(self.chunk_registers.items()))

    def flush_chunk_reductions_of(self, registers: list[tuple[ChunkReduction, str]]) -> None:
        for reduction, register in registers:
            dtype = reduction.dtype
            self.visit_GlobalPtr(reduction.ptr)
            total = self.op(f"load {llvm_type(dtype)}, ptr {register}")
            self.in_range_only(reduction.ptr, None, lambda: self.emit_atomic(
                reduction.ptr, reduction.op, dtype, self.value(reduction.ptr), total))

    def visit_Print(self, stmt: ir.Print) -> None:
        dtypes = [v.dtype for v in stmt.values]
        site = printing.register_site(stmt.pieces, dtypes, stmt.formats)
        self.module.declare("declare void @wk_print(i32, ptr)")
        count = max(len(dtypes), 1)
        words = self.entry_op(f"alloca [{count} x i64], align 8", "print")
        for k, (value, dtype) in enumerate(zip(stmt.values, dtypes)):
            word = self.print_word(self.value(value), dtype)
            slot = self.op(f"getelementptr inbounds [{count} x i64], ptr {words}, i64 0, i64 {k}")
            self.emit(f"store i64 {word}, ptr {slot}, align 8")
        self.emit(f"call void @wk_print(i32 {site}, ptr {words})")

    def print_word(self, operand: str, dtype: DataType) -> str:
        """One printed value as a 64-bit word (ir/printing.decode_words' encoding: ints sign- or
        zero-extended, floats as float64 bits)."""
        if dtype.is_float:
            wide = operand if dtype.bits == 64 else self.op(f"fpext {llvm_type(dtype)} {operand} to double")
            return self.op(f"bitcast double {wide} to i64")
        if dtype.bits == 64:
            return operand
        extend = "sext" if dtype.is_signed else "zext"
        return self.op(f"{extend} {llvm_type(dtype)} {operand} to i64")


    def reset_random_counter_deferred(self) -> None:
        """Each parallel index restarts its RandomValue counter at 0 (docs/internals.md). A placeholder line,
        filled in by finish() once we know whether the body draws random numbers."""
        self.lines.append("  ;@rng-reset")

    def emit_parallel_body(self, task: ir.Task, next_label: str = "task.next") -> None:
        """One index of a range task, from an open `task.body` block (the index already in its loop slot) to
        the start of the `next_label` block that advances to the next index."""
        self.reset_random_counter_deferred()
        self.loops.append((next_label, next_label))    # `continue` in the parallel body ends this index
        self.visit_block(task.body)
        self.loops.pop()
        self.branch(next_label)
        self.start_block(next_label)

    def visit_SimtOp(self, stmt: ir.SimtOp) -> None:
        """The CPU has wk.global_thread_idx() only (its worker's number); backends/llvm/cpu.py refuses the
        other wk.simt calls before code is generated, and CUDA lowers them in cuda_simt.py."""
        if stmt.op != "thread.global_thread_idx":
            raise InternalCompilerError(f"wk.simt.{stmt.op}() reached the CPU code generator", stmt.loc)
        self.values[stmt] = self.op(f"add i32 {self.worker}, 0")


    # ---- whole functions ---------------------------------------------------------------------------------
    def finish(self, signature: str) -> str:
        body = self.lines
        reset = f"  store i32 0, ptr {self.rng_counter}" if self.rng_counter else None
        body = [reset if line == "  ;@rng-reset" else line for line in body if reset or line != "  ;@rng-reset"]
        return "\n".join([f"define {signature} {self.module.function_attributes} {{", "entry:", *self.entry,
                          "  br label %start", "start:", *body, "}", ""])


def emit_range_task(module: ModuleEmitter, task: ir.Task, name: str, task_index: int) -> str:
    """`void name(ptr args, i64 lo, i64 hi, i32 worker)`: runs the body for every index in [lo, hi) on the
    thread whose adstack slice is `worker`. Where guarded accesses move with the index (`x[i + k]`), [lo, hi)
    runs in blocks of VERSIONED_BLOCK indices, and a block whose first and last index keep them all in range
    runs a copy of the loop without their guards (bounds.py: versioned_ptrs)."""
    fn = FunctionEmitter(module, thread_index=task.loop, task_index=task_index, worker="%worker")
    lo = fn.op("trunc i64 %lo to i32")
    hi = fn.op("trunc i64 %hi to i32")
    slot = fn.entry_op("alloca i32", "idx")
    fn.loop_slots[task.loop] = slot
    fn.chunk_reductions = chunk_reductions(task)
    versioned = fn.versioned_ptrs(task)
    if not versioned:
        emit_index_loop(fn, task, slot, lo, hi, "", "exit")
    else:
        block_slot = fn.entry_op("alloca i32", "block")
        fn.emit(f"store i32 {lo}, ptr {block_slot}")
        fn.branch("block.cond")
        fn.start_block("block.cond")
        start = fn.op(f"load i32, ptr {block_slot}")
        fn.cond_branch(fn.op(f"icmp slt i32 {start}, {hi}"), "block.body", "exit")
        fn.start_block("block.body")
        left = fn.op(f"sub i32 {hi}, {start}")
        size = fn.op(f"select i1 {fn.op(f'icmp slt i32 {left}, {VERSIONED_BLOCK}')}, i32 {left}, "
                     f"i32 {VERSIONED_BLOCK}")
        end = fn.op(f"add nsw i32 {start}, {size}")
        fn.cond_branch(fn.chunk_in_range(versioned, start, end), "fast.start", "task.start")
        fn.start_block("fast.start")
        fn.unguarded = set(versioned)
        emit_index_loop(fn, task, slot, start, end, "fast.", "block.next")
        fn.unguarded = set()
        fn.start_block("task.start")
        emit_index_loop(fn, task, slot, start, end, "", "block.next")
        fn.start_block("block.next")
        fn.emit(f"store i32 {end}, ptr {block_slot}")
        fn.branch("block.cond")
    fn.start_block("exit")
    fn.flush_chunk_reductions()
    fn.emit("ret void")
    return fn.finish(f"void @{name}(ptr noalias nocapture readonly %args, i64 %lo, i64 %hi, i32 %worker)")


def emit_index_loop(fn: FunctionEmitter, task: ir.Task, slot: str, lo: str, hi: str, prefix: str,
                    done: str) -> None:
    """The loop over [lo, hi) of a range task's body, its labels prefixed by `prefix`; it ends at `done`."""
    fn.return_label = f"{prefix}task.next"
    fn.emit(f"store i32 {lo}, ptr {slot}")
    fn.branch(f"{prefix}task.cond")
    fn.start_block(f"{prefix}task.cond")
    current = fn.op(f"load i32, ptr {slot}")
    fn.cond_branch(fn.op(f"icmp slt i32 {current}, {hi}"), f"{prefix}task.body", done)
    fn.start_block(f"{prefix}task.body")
    fn.emit_parallel_body(task, f"{prefix}task.next")
    current = fn.op(f"load i32, ptr {slot}")
    fn.emit(f"store i32 {fn.op(f'add nsw i32 {current}, 1')}, ptr {slot}")
    fn.branch(f"{prefix}task.cond")


def emit_serial_task(module: ModuleEmitter, task: ir.Task, name: str, task_index: int) -> str:
    """`void name(ptr args)`: runs the body once (thread index 0 for random numbers, adstack slice 0)."""
    fn = FunctionEmitter(module, task_index=task_index)
    fn.visit_block(task.body)
    fn.branch("exit")
    fn.start_block("exit")
    fn.emit("ret void")
    return fn.finish(f"void @{name}(ptr noalias nocapture readonly %args)")


def emit_entry(module: ModuleEmitter, kernel: ir.OffloadedKernel, task_names: list[str], name: str,
               task_lanes: list[int] | None = None) -> str:
    """`void name(ptr args)`: evaluates each range task's bounds and hands it to wk_parallel_for, in order (or,
    single-threaded, calls it on the whole range). A task that runs `task_lanes[k]` indices at a time gets chunks
    of a multiple of that many."""
    fn = FunctionEmitter(module)
    for task, task_name in zip(kernel.tasks, task_names):
        if task.kind == "serial":
            fn.emit(f"call void @{task_name}(ptr %args)")
            continue
        fn.visit_block(task.bounds)
        begin = fn.op(f"sext i32 {fn.value(task.loop.begin)} to i64")
        end = fn.op(f"sext i32 {fn.value(task.loop.end)} to i64")
        if module.single_thread:           # no other thread may run it: its atomics are plain (atomics.py)
            runs, done = fn.label("task.run"), fn.label("task.done")
            fn.cond_branch(fn.op(f"icmp slt i64 {begin}, {end}"), runs, done)
            fn.start_block(runs)
            fn.emit(f"call void @{task_name}(ptr %args, i64 {begin}, i64 {end}, i32 0)")
            fn.branch(done)
            fn.start_block(done)
            continue
        grain = max(1, WORK_PER_CHUNK // estimate_cost(task.body))
        lanes = task_lanes[kernel.tasks.index(task)] if task_lanes else 1
        grain = -(-grain // lanes) * lanes
        module.declare("declare void @wk_parallel_for(ptr, ptr, i64, i64, i64)")
        fn.emit(f"call void @wk_parallel_for(ptr @{task_name}, ptr %args, i64 {begin}, i64 {end}, i64 {grain})")
    fn.emit("ret void")
    return fn.finish(f"void @{name}(ptr noalias nocapture readonly %args)")


def emit_module(kernel: ir.OffloadedKernel, layout: ArgLayout, target: Target, prefix: str,
                bounds_check: bool = False, fast_math: bool = False,
                lane_tasks: tuple[Callable[[ir.Task], int], Callable[..., str]] | None = None,
                single_thread: bool = False) -> tuple[str, str, list[ir.GlobalPtr]]:
    """(LLVM IR text, entry symbol, bounds-checked sites). One module per kernel: task i is `<prefix>_t<i>`
    (range tasks take (args, lo, hi), serial ones (args)); `<prefix>_entry(args)` runs all tasks in order,
    range tasks through the worker pool's `wk_parallel_for(fn, args, begin, end, grain)`. `lane_tasks`
    (width, emitter): a range task whose width is above 1 is emitted by that emitter (the CPU's lanes.py).
    `single_thread`: the caller runs every task itself (ModuleEmitter.single_thread)."""
    module = ModuleEmitter(target, layout, prefix, bounds_check, fast_math, single_thread)
    module.slot_indices = {slot: index for index, slot in enumerate(kernel.containers)}
    module.set_range_proofs(kernel.tasks)
    if target.fused_sincos:
        module.sincos_operands = sincos.paired_operands([task.body for task in kernel.tasks])
    rows = 0
    for task in kernel.tasks:
        module.adstack_rows.append(rows)
        rows += sum(isinstance(s, ir.AdStackAlloca) for s in task.body.stmts)
    names = []
    widths = [lane_tasks[0](task) if lane_tasks else 1 for task in kernel.tasks]
    for index, task in enumerate(kernel.tasks):
        name = f"{prefix}_t{index}_{symbol_name(task.name)}"[:120]
        names.append(name)
        emitter = emit_range_task if task.kind == "range" else emit_serial_task
        if task.kind == "range" and task.loop is None:
            raise InternalCompilerError(f"range task {task.name} has no loop", task.loc)
        if widths[index] > 1:
            emitter = lane_tasks[1]
        module.functions.append(emitter(module, task, name, index))
    entry = f"{prefix}_entry"
    module.functions.append(emit_entry(module, kernel, names, entry, widths))
    return module.text(), entry, module.bounds_sites

