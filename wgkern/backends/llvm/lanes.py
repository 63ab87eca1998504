"""Lane-vectorised range tasks on CPU targets: LANES consecutive indices of a range task run together, one
per vector lane, with a mask.

A range task whose body takes an f32 sin or cos is latency-bound on one index at a time (each libm call
waits for the one before it in a dependent chain); run LANES indices side by side, the polynomial of
vector_sincos.py computes all their sines at once. Every value is a `<LANES x T>` vector and control flow
is masked (SPMD): an `if` runs both branches under the lanes that take each (a branch skips one that no
lane takes), an inner `for` runs until the lane with the most trips is done, each lane's index stopping at
its own end, and every side effect is masked: stores of locals are selects, global loads and stores are
masked gathers and scatters (lanes whose guarded access is out of range, bounds.py, drop it as the scalar
code does), chunk reductions keep one register per lane, and every lane has its own adstack slice (slice =
worker x LANES + lane). Operations with no vector spelling (libm calls other than f32 sin/cos, lowerings)
run lane by lane through the scalar emitter. Masks are built from frozen conditions, so a value that
inactive lanes computed never poisons a branch.

`lane_width(task, ...)` decides: only with fast_math (the polynomial is within 1 ulp; without fast_math the
exact libm calls stay), never with debug=True checks, and only where every statement of the body has a
rule here (no while loops, break, continue, return, random numbers, printing, atomics other than chunk
reductions, AdStackOverflowed, f16 or wk.simt). Other tasks keep codegen.py's scalar loop."""
from __future__ import annotations

from wgkern.errors import InternalCompilerError
from wgkern.backends.adstack import METADATA_FIELDS
from wgkern.backends.reductions import COMBINE, chunk_reductions, identity
from wgkern.ir import nodes as ir
from wgkern.ir.ops import UnaryOpKind
from wgkern.ir.visitor import walk
from wgkern import dtypes as T
from wgkern.dtypes import DataType

from . import vector_sincos
from .adstack import CONTEXT_HEADER, StackRegisters
from .codegen import FunctionEmitter, ModuleEmitter
from .ops import BINARY, UNARY, Inst, Intrinsic
from .types import const_literal, llvm_type, memory_type, zero_literal

LANES = 8       # f32 lanes of an AVX2 register; the double-precision polynomial takes two

_SUPPORTED = (ir.Const, ir.ArgLoad, ir.ShapeOf, ir.UnaryOp, ir.BinaryOp, ir.TernarySelect, ir.Cast, ir.Alloca,
              ir.LocalLoad, ir.LocalStore, ir.GlobalPtr, ir.GlobalLoad, ir.GlobalStore, ir.If, ir.RangeFor,
              ir.LoopIndex, ir.AdStackAlloca, ir.AdStackPush, ir.AdStackPop, ir.AdStackLoadTop,
              ir.AdStackLoadTopAdj, ir.AdStackAccAdjoint, ir.AtomicOp)
_SINCOS = (UnaryOpKind.SIN, UnaryOpKind.COS)
_I32, _I64 = T.i32, T.i64


def lane_width(task: ir.Task, debug: bool, fast_math: bool) -> int:
    """LANES where `task` runs lane-vectorised (see the module docstring), else 1."""
    if task.kind != "range" or task.loop is None or debug or not fast_math:
        return 1
    reductions = chunk_reductions(task)
    wants = False
    for stmt in walk(task.body):
        if not isinstance(stmt, _SUPPORTED):
            return 1
        if stmt.dtype is not None and stmt.dtype.is_float and stmt.dtype.bits == 16:
            return 1
        if isinstance(stmt, ir.AtomicOp) and stmt not in reductions:
            return 1
        if isinstance(stmt, ir.GlobalPtr) and stmt.container.kind == "shared":
            return 1
        if isinstance(stmt, ir.RangeFor) and stmt.parallel:
            return 1
        if isinstance(stmt, ir.UnaryOp) and stmt.op in _SINCOS and stmt.operand.dtype.name == "f32":
            wants = True
    return LANES if wants else 1


def kernel_lanes(kernel: ir.OffloadedKernel, debug: bool, fast_math: bool) -> int:
    """The lanes of the kernel's widest task: its adstack heap holds that many slices per worker."""
    return max((lane_width(task, debug, fast_math) for task in kernel.tasks), default=1)


def _splat(ty: str, literal: str) -> str:
    return "<" + ", ".join([f"{ty} {literal}"] * LANES) + ">"


_LANE_NUMBERS = "<" + ", ".join(f"i32 {k}" for k in range(LANES)) + ">"
_MASK = f"<{LANES} x i1>"


class LaneEmitter(FunctionEmitter):
    """FunctionEmitter whose values are `<LANES x T>` vectors under `self.mask` (an <LANES x i1> value)."""

    def __init__(self, module: ModuleEmitter, task: ir.Task, task_index: int):
        super().__init__(module, thread_index=task.loop, task_index=task_index, worker="%worker")
        self.mask = _splat("i1", "true")
        self.scalar_mode = False        # flushing chunk reductions: addresses are scalar, other values lane 0

    # ---- vector helpers ----------------------------------------------------------------------------------
    @staticmethod
    def vt(dtype: DataType) -> str:
        return f"<{LANES} x {llvm_type(dtype)}>"

    def value(self, stmt: ir.Stmt) -> str:
        found = super().value(stmt)
        if self.scalar_mode and not isinstance(stmt, ir.GlobalPtr):
            return self.op(f"extractelement {self.vt(stmt.dtype)} {found}, i32 0")
        return found

    def any_lane(self, mask: str) -> str:
        callee = self.module.intrinsic(f"llvm.vector.reduce.or.v{LANES}i1", "i1", [_MASK])
        return self.op(f"call i1 {callee}({_MASK} {mask})")

    def and_mask(self, mask: str, cond: str) -> str:
        """mask & cond, with `cond` frozen: lanes outside the mask may hold poison, which must not spread."""
        frozen = self.op(f"freeze {_MASK} {cond}")
        return self.op(f"and {_MASK} {mask}, {frozen}")

    def select(self, mask: str, ty: str, new: str, old: str) -> str:
        return self.op(f"select {_MASK} {mask}, {ty} {new}, {ty} {old}")

    def per_lane(self, dtype: DataType, operands: list[tuple[str, DataType]], scalar) -> str:
        """`scalar(lane operands)` (a scalar emitter routine) on each lane, gathered into one vector."""
        out = "undef"
        for k in range(LANES):
            lane = [self.op(f"extractelement {self.vt(t)} {v}, i32 {k}") for v, t in operands]
            result = scalar(lane)
            out = self.op(f"insertelement {self.vt(dtype)} {out}, {llvm_type(dtype)} {result}, i32 {k}")
        return out

    def masked_store(self, slot: str, dtype: DataType, value: str) -> None:
        ty = self.vt(dtype)
        old = self.op(f"load {ty}, ptr {slot}")
        self.emit(f"store {ty} {self.select(self.mask, ty, value, old)}, ptr {slot}")

    def vector_slot(self, dtype: DataType, hint: str, initial: str | None = None) -> str:
        """An entry-block alloca of one vector, initialised there (so no lane ever reads poison from it)."""
        ty = self.vt(dtype)
        slot = self.entry_op(f"alloca {ty}", hint)
        self.entry.append(f"  store {ty} {initial or 'zeroinitializer'}, ptr {slot}")
        return slot

    # ---- values ------------------------------------------------------------------------------------------
    def visit_Const(self, stmt: ir.Const) -> None:
        self.values[stmt] = _splat(llvm_type(stmt.dtype), const_literal(stmt.value, stmt.dtype))

    def uniform(self, scalar: str, dtype: DataType) -> str:
        ty = self.vt(dtype)
        one = self.op(f"insertelement {ty} poison, {llvm_type(dtype)} {scalar}, i32 0")
        return self.op(f"shufflevector {ty} {one}, {ty} poison, <{LANES} x i32> zeroinitializer")

    def visit_ArgLoad(self, stmt: ir.ArgLoad) -> None:
        super().visit_ArgLoad(stmt)
        self.values[stmt] = self.uniform(self.values[stmt], stmt.dtype)

    def visit_ShapeOf(self, stmt: ir.ShapeOf) -> None:
        super().visit_ShapeOf(stmt)
        self.values[stmt] = self.uniform(self.values[stmt], stmt.dtype)

    def visit_UnaryOp(self, stmt: ir.UnaryOp) -> None:
        dtype = stmt.operand.dtype
        operand = self.value(stmt.operand)
        if stmt.op in _SINCOS and dtype.name == "f32":
            op = "sin" if stmt.op is UnaryOpKind.SIN else "cos"
            name = vector_sincos.helper_name(op, LANES)
            self.module.helpers.setdefault(name, vector_sincos.helper_text(op, LANES))
            for declaration in vector_sincos.declarations(LANES, self.target.math_attributes):
                self.module.declare(declaration)
            self.values[stmt] = self.op(f"call {self.vt(dtype)} @{name}({self.vt(dtype)} {operand})")
            return
        spelling = UNARY[dtype.kind].get(stmt.op)
        self.values[stmt] = self.vector_apply(spelling, stmt, dtype, [(operand, dtype)])

    def visit_BinaryOp(self, stmt: ir.BinaryOp) -> None:
        dtype = stmt.lhs.dtype
        spelling = BINARY[dtype.kind].get(stmt.op)
        rhs = self.value(stmt.rhs)
        if stmt.rhs.dtype != dtype:
            rhs = self.vector_convert(rhs, stmt.rhs.dtype, dtype)
        self.values[stmt] = self.vector_apply(spelling, stmt, dtype, [(self.value(stmt.lhs), dtype), (rhs, dtype)])

    def vector_apply(self, spelling, stmt: ir.Stmt, dtype: DataType, operands: list[tuple[str, DataType]]) -> str:
        """`spelling` over vectors: instructions and intrinsics as vector operations, the rest lane by lane."""
        values = [v for v, _ in operands]
        if isinstance(spelling, Inst):
            opcode = spelling.opcode
            if dtype.is_float and opcode in ("fadd", "fsub", "fmul", "fdiv", "fneg"):
                opcode += self.module.float_flags
            return self.op(f"{opcode} {self.vt(dtype)} {', '.join(values)}")
        if isinstance(spelling, Intrinsic):
            ty = self.vt(dtype)
            suffix = f"v{LANES}{'f' if dtype.is_float else 'i'}{dtype.bits}"
            callee = self.module.intrinsic(f"{spelling.name}.{suffix}", ty, [ty] * len(values))
            return self.op(f"call {ty} {callee}({', '.join(f'{ty} {v}' for v in values)})")
        return self.per_lane(stmt.dtype or dtype, operands,
                             lambda lane: FunctionEmitter.apply(self, spelling, stmt, dtype, lane))

    def vector_convert(self, value: str, source: DataType, dest: DataType) -> str:
        if source == dest:
            return value
        return self.per_lane(dest, [(value, source)], lambda lane: self.convert(lane[0], source, dest))

    def visit_TernarySelect(self, stmt: ir.TernarySelect) -> None:
        ty = self.vt(stmt.dtype)
        self.values[stmt] = self.op(f"select {_MASK} {self.value(stmt.cond)}, {ty} {self.value(stmt.true_value)}, "
                                    f"{ty} {self.value(stmt.false_value)}")

    def visit_Cast(self, stmt: ir.Cast) -> None:
        source = stmt.operand.dtype
        operand = self.value(stmt.operand)
        if stmt.bitcast:
            self.values[stmt] = self.op(f"bitcast {self.vt(source)} {operand} to {self.vt(stmt.dtype)}")
            return
        self.values[stmt] = self.vector_convert(operand, source, stmt.dtype)

    # ---- locals ------------------------------------------------------------------------------------------
    def visit_Alloca(self, stmt: ir.Alloca) -> None:
        slot = self.vector_slot(stmt.dtype, "local")
        self.values[stmt] = slot
        self.masked_store(slot, stmt.dtype, "zeroinitializer")

    def visit_LocalLoad(self, stmt: ir.LocalLoad) -> None:
        self.values[stmt] = self.op(f"load {self.vt(stmt.alloca.dtype)}, ptr {self.value(stmt.alloca)}")

    def visit_LocalStore(self, stmt: ir.LocalStore) -> None:
        value = self.value(stmt.value)
        if stmt.value.dtype != stmt.alloca.dtype:
            value = self.vector_convert(value, stmt.value.dtype, stmt.alloca.dtype)
        self.masked_store(self.value(stmt.alloca), stmt.alloca.dtype, value)

    # ---- globals -----------------------------------------------------------------------------------------
    def visit_GlobalPtr(self, stmt: ir.GlobalPtr) -> None:
        if self.scalar_mode:
            super().visit_GlobalPtr(stmt)
            return
        slot = stmt.container
        index = self.slot_index(slot, stmt)
        strides = self.container_strides(index, slot)
        wide = f"<{LANES} x i64>"
        offset = "zeroinitializer"
        for idx, stride in zip(stmt.indices, strides):
            term = self.op(f"sext {self.vt(idx.dtype)} {self.value(idx)} to {wide}")
            if stride != "1":
                term = self.op(f"mul {wide} {term}, {self.uniform(self.wide(stride), _I64)}")
            offset = term if offset == "zeroinitializer" else self.op(f"add {wide} {offset}, {term}")
        if stmt not in self.module.in_range:
            count = self.uniform(self.container_count(index, slot), _I64)
            self.guards[stmt] = self.op(f"icmp ult {wide} {offset}, {count}")
        base = self.container_base(index)
        self.values[stmt] = self.op(f"getelementptr {memory_type(slot.dtype)}, ptr {base}, {wide} {offset}")

    def access_mask(self, ptr: ir.GlobalPtr) -> str:
        guard = self.guards.get(ptr)
        return self.mask if guard is None else self.op(f"and {_MASK} {self.mask}, {guard}")

    def visit_GlobalLoad(self, stmt: ir.GlobalLoad) -> None:
        dtype = stmt.ptr.dtype
        mem = f"<{LANES} x {memory_type(dtype)}>"
        suffix = f"v{LANES}{memory_type(dtype).replace('float', 'f32').replace('double', 'f64')}"
        callee = self.module.intrinsic(f"llvm.masked.gather.{suffix}.v{LANES}p0", mem,
                                       [f"<{LANES} x ptr>", "i32", _MASK, mem])
        raw = self.op(f"call {mem} {callee}(<{LANES} x ptr> {self.value(stmt.ptr)}, i32 {dtype.nbytes}, "
                      f"{_MASK} {self.access_mask(stmt.ptr)}, {mem} zeroinitializer)")
        self.values[stmt] = self.op(f"icmp ne {mem} {raw}, zeroinitializer") if dtype.is_bool else raw

    def scatter(self, dtype: DataType, value: str, pointers: str, mask: str, align: int) -> None:
        mem = f"<{LANES} x {memory_type(dtype)}>"
        if dtype.is_bool:
            value = self.op(f"zext {_MASK} {value} to {mem}")
        suffix = f"v{LANES}{memory_type(dtype).replace('float', 'f32').replace('double', 'f64')}"
        callee = self.module.intrinsic(f"llvm.masked.scatter.{suffix}.v{LANES}p0", "void",
                                       [mem, f"<{LANES} x ptr>", "i32", _MASK])
        self.emit(f"call void {callee}({mem} {value}, <{LANES} x ptr> {pointers}, i32 {align}, {_MASK} {mask})")

    def visit_GlobalStore(self, stmt: ir.GlobalStore) -> None:
        dtype = stmt.ptr.dtype
        value = self.value(stmt.value)
        if stmt.value.dtype != dtype:
            value = self.vector_convert(value, stmt.value.dtype, dtype)
        self.scatter(dtype, value, self.value(stmt.ptr), self.access_mask(stmt.ptr), dtype.nbytes)

    def visit_AtomicOp(self, stmt: ir.AtomicOp) -> None:
        """A chunk reduction (lane_width admits no other atomic): each lane combines into its own register."""
        reduction = self.chunk_reductions.get(stmt)
        if reduction is None:
            raise InternalCompilerError("an atomic other than a chunk reduction in a lane-vectorised task", stmt.loc)
        dtype = stmt.ptr.dtype
        ty = self.vt(dtype)
        register = self.chunk_registers.get(reduction)
        start = _splat(llvm_type(dtype), const_literal(identity(reduction.op, dtype), dtype))
        if register is None:
            register = self.chunk_registers[reduction] = self.vector_slot(dtype, "chunk_sum", start)
        spelling = BINARY[dtype.kind].get(COMBINE[reduction.op])
        value = self.select(self.mask, ty, self.value(stmt.value), start)
        old = self.op(f"load {ty}, ptr {register}")
        combined = self.vector_apply(spelling, stmt, dtype, [(old, dtype), (value, dtype)])
        self.emit(f"store {ty} {combined}, ptr {register}")
        self.values[stmt] = "zeroinitializer"

    def flush_chunk_reductions(self) -> None:
        """Combine each register's lanes in lane order into a scalar, then one atomic as the scalar code does."""
        scalar_registers = []
        for reduction, register in self.chunk_registers.items():
            dtype = reduction.dtype
            lanes = self.op(f"load {self.vt(dtype)}, ptr {register}")
            spelling = BINARY[dtype.kind].get(COMBINE[reduction.op])
            total = self.op(f"extractelement {self.vt(dtype)} {lanes}, i32 0")
            for k in range(1, LANES):
                lane = self.op(f"extractelement {self.vt(dtype)} {lanes}, i32 {k}")
                total = FunctionEmitter.apply(self, spelling, reduction.ptr, dtype, [total, lane])
            scalar = self.entry_op(f"alloca {llvm_type(dtype)}", "chunk_total")
            self.emit(f"store {llvm_type(dtype)} {total}, ptr {scalar}")
            scalar_registers.append((reduction, scalar))
        self.scalar_mode = True
        self.flush_chunk_reductions_of(scalar_registers)
        self.scalar_mode = False

    # ---- control flow ------------------------------------------------------------------------------------
    def visit_If(self, stmt: ir.If) -> None:
        outer = self.mask
        cond = self.op(f"freeze {_MASK} {self.value(stmt.cond)}")
        taken = self.op(f"and {_MASK} {outer}, {cond}")
        not_cond = self.op(f"xor {_MASK} {cond}, {_splat('i1', 'true')}")
        other = self.op(f"and {_MASK} {outer}, {not_cond}")
        for mask, block in ((taken, stmt.then_block), (other, stmt.else_block)):
            if not block.stmts:
                continue
            run, skip = self.label("lanes.then"), self.label("lanes.endif")
            self.cond_branch(self.any_lane(mask), run, skip)
            self.start_block(run)
            self.mask = mask
            self.visit_block(block)
            self.branch(skip)
            self.start_block(skip)
        self.mask = outer

    def visit_RangeFor(self, stmt: ir.RangeFor) -> None:
        """An inner loop: each lane runs its own [begin, end) (or end-1 down to begin), all until the last."""
        outer = self.mask
        vi = self.vt(stmt.begin.dtype)
        begin, end = self.value(stmt.begin), self.value(stmt.end)
        slot = self.vector_slot(stmt.begin.dtype, "idx")
        self.loop_slots[stmt] = slot
        one = _splat("i32", "1")
        first = self.op(f"sub {vi} {end}, {one}") if stmt.reversed else begin
        self.emit(f"store {vi} {first}, ptr {slot}")
        cond, body, done = self.label("lanes.for.cond"), self.label("lanes.for.body"), self.label("lanes.for.end")
        self.branch(cond)
        self.start_block(cond)
        current = self.op(f"load {vi}, ptr {slot}")
        inside = self.op(f"icmp sge {vi} {current}, {begin}" if stmt.reversed else f"icmp slt {vi} {current}, {end}")
        active = self.and_mask(outer, inside)
        self.cond_branch(self.any_lane(active), body, done)
        self.start_block(body)
        self.mask = active
        self.visit_block(stmt.body)
        current = self.op(f"load {vi}, ptr {slot}")
        opcode = "sub" if stmt.reversed else "add"
        self.emit(f"store {vi} {self.op(f'{opcode} {vi} {current}, {one}')}, ptr {slot}")
        self.branch(cond)
        self.start_block(done)
        self.mask = outer

    def visit_LoopIndex(self, stmt: ir.LoopIndex) -> None:
        slot = self.loop_slots.get(stmt.loop)
        if slot is None:
            raise InternalCompilerError("LoopIndex outside its loop", stmt.loc)
        self.values[stmt] = self.op(f"load <{LANES} x i32>, ptr {slot}")

    # ---- adstacks: one slice per lane --------------------------------------------------------------------
    def visit_AdStackAlloca(self, stmt: ir.AdStackAlloca) -> None:
        registers = self.stack_registers.get(stmt)
        if registers is None:
            row = CONTEXT_HEADER + METADATA_FIELDS * self.stack_row(stmt)
            heap = self.entry_op(f"inttoptr i64 {self.context_word(0)} to ptr")
            base, thread_stride, slot_stride, capacity = (self.context_word(row + k) for k in range(METADATA_FIELDS))
            worker = self.entry_op(f"sext i32 {self.worker} to i64")
            first_slice = self.entry_op(f"mul i64 {worker}, {LANES}")
            wide = f"<{LANES} x i64>"
            lanes = self.entry_op(f"zext <{LANES} x i32> {_LANE_NUMBERS} to {wide}")
            slices = self.entry_op(f"add {wide} {lanes}, {self.entry_uniform(first_slice)}")
            offsets = self.entry_op(f"mul {wide} {slices}, {self.entry_uniform(thread_stride)}")
            offsets = self.entry_op(f"add {wide} {offsets}, {self.entry_uniform(base)}")
            primal = self.entry_op(f"getelementptr i8, ptr {heap}, {wide} {offsets}")
            launch_code = self.entry_op(f"trunc i64 {self.context_word(2)} to i32")
            code = self.entry_op(f"or i32 {launch_code}, {(self.task_index << 10) | (stmt.stack_id + 1)}")
            depth = self.vector_slot(_I32, "depth")
            top = self.vector_slot(stmt.dtype, "top")
            adjoint = self.vector_slot(stmt.dtype, "adj") if stmt.dtype.is_float else ""
            registers = StackRegisters(depth, top, adjoint, primal, self.entry_uniform(slot_stride),
                                       self.entry_uniform(capacity), code)
            self.stack_registers[stmt] = registers
        self.masked_store(registers.depth, _I32, "zeroinitializer")
        self.masked_store(registers.top, stmt.dtype, "zeroinitializer")
        if registers.adjoint:
            self.masked_store(registers.adjoint, stmt.dtype, "zeroinitializer")

    def entry_uniform(self, scalar: str) -> str:
        wide = f"<{LANES} x i64>"
        one = self.entry_op(f"insertelement {wide} poison, i64 {scalar}, i32 0")
        return self.entry_op(f"shufflevector {wide} {one}, {wide} poison, <{LANES} x i32> zeroinitializer")

    def slot_address(self, registers: StackRegisters, depth: str) -> str:
        wide = f"<{LANES} x i64>"
        slots = self.op(f"zext <{LANES} x i32> {depth} to {wide}")
        offset = self.op(f"mul {wide} {slots}, {registers.slot_stride}")
        return self.op(f"getelementptr i8, <{LANES} x ptr> {registers.primal}, {wide} {offset}")

    def visit_AdStackPush(self, stmt: ir.AdStackPush) -> None:
        stack = stmt.stack
        registers = self._registers(stack, stmt)
        vi = f"<{LANES} x i32>"
        depth = self.op(f"load {vi}, ptr {registers.depth}")
        value = self.value(stmt.value)
        if stmt.value.dtype != stack.dtype:
            value = self.vector_convert(value, stmt.value.dtype, stack.dtype)
        self.masked_store(registers.top, stack.dtype, value)
        if registers.adjoint:
            self.masked_store(registers.adjoint, stack.dtype, "zeroinitializer")
        wide_depth = self.op(f"zext {vi} {depth} to <{LANES} x i64>")
        fits = self.op(f"icmp ult <{LANES} x i64> {wide_depth}, {registers.capacity}")
        ok = self.op(f"and {_MASK} {self.mask}, {fits}")
        self.scatter(stack.dtype, value, self.slot_address(registers, depth), ok, self.stack_alignment(stack))
        deeper = self.op(f"add {vi} {depth}, {_splat('i32', '1')}")
        self.emit(f"store {vi} {self.select(ok, vi, deeper, depth)}, ptr {registers.depth}")
        over = self.op(f"xor {_MASK} {ok}, {self.mask}")       # active lanes that did not fit
        over_label, done_label = self.label("lanes.push.over"), self.label("lanes.push.end")
        self.cond_branch(self.any_lane(over), over_label, done_label)
        self.start_block(over_label)
        flag = self.container_cache.get(("adstack", "flag"))
        if flag is None:
            flag = self.entry_op(f"inttoptr i64 {self.context_word(1)} to ptr")
            self.container_cache[("adstack", "flag")] = flag
        self.emit(f"store atomic i32 {registers.flag_code}, ptr {flag} monotonic, align 4")
        self.branch(done_label)
        self.start_block(done_label)

    def visit_AdStackPop(self, stmt: ir.AdStackPop) -> None:
        stack = stmt.stack
        registers = self._registers(stack, stmt)
        vi = f"<{LANES} x i32>"
        zero, one = "zeroinitializer", _splat("i32", "1")
        depth = self.op(f"load {vi}, ptr {registers.depth}")
        below = self.op(f"sub {vi} {depth}, {one}")
        nonempty = self.op(f"icmp sgt {vi} {depth}, {zero}")
        new_depth = self.op(f"select {_MASK} {nonempty}, {vi} {below}, {vi} {zero}")
        self.masked_store(registers.depth, _I32, new_depth)
        under = self.op(f"sub {vi} {new_depth}, {one}")
        above_empty = self.op(f"icmp sgt {vi} {new_depth}, {zero}")
        top_slot = self.op(f"select {_MASK} {above_empty}, {vi} {under}, {vi} {zero}")
        mem = f"<{LANES} x {memory_type(stack.dtype)}>"
        suffix = f"v{LANES}{memory_type(stack.dtype).replace('float', 'f32').replace('double', 'f64')}"
        callee = self.module.intrinsic(f"llvm.masked.gather.{suffix}.v{LANES}p0", mem,
                                       [f"<{LANES} x ptr>", "i32", _MASK, mem])
        raw = self.op(f"call {mem} {callee}(<{LANES} x ptr> {self.slot_address(registers, top_slot)}, "
                      f"i32 {self.stack_alignment(stack)}, {_MASK} {self.mask}, {mem} zeroinitializer)")
        value = self.op(f"icmp ne {mem} {raw}, zeroinitializer") if stack.dtype.is_bool else raw
        self.masked_store(registers.top, stack.dtype, value)
        if registers.adjoint:
            self.masked_store(registers.adjoint, stack.dtype, "zeroinitializer")

    def visit_AdStackLoadTop(self, stmt: ir.AdStackLoadTop) -> None:
        registers = self._registers(stmt.stack, stmt)
        self.values[stmt] = self.op(f"load {self.vt(stmt.stack.dtype)}, ptr {registers.top}")

    def visit_AdStackLoadTopAdj(self, stmt: ir.AdStackLoadTopAdj) -> None:
        registers = self._registers(stmt.stack, stmt)
        self.values[stmt] = self.op(f"load {self.vt(stmt.stack.dtype)}, ptr {registers.adjoint}")

    def visit_AdStackAccAdjoint(self, stmt: ir.AdStackAccAdjoint) -> None:
        stack = stmt.stack
        registers = self._registers(stack, stmt)
        ty = self.vt(stack.dtype)
        value = self.value(stmt.value)
        if stmt.value.dtype != stack.dtype:
            value = self.vector_convert(value, stmt.value.dtype, stack.dtype)
        old = self.op(f"load {ty}, ptr {registers.adjoint}")
        self.masked_store(registers.adjoint, stack.dtype, self.op(f"fadd{self.module.float_flags} {ty} {old}, {value}"))


def emit_lane_task(module: ModuleEmitter, task: ir.Task, name: str, task_index: int) -> str:
    """`void name(ptr args, i64 lo, i64 hi, i32 worker)` (codegen.emit_range_task's ABI): [lo, hi) in groups of
    LANES consecutive indices, the last group masked to the indices below hi."""
    fn = LaneEmitter(module, task, task_index)
    fn.chunk_reductions = chunk_reductions(task)
    vi = f"<{LANES} x i32>"
    lo = fn.op("trunc i64 %lo to i32")
    hi = fn.uniform(fn.op("trunc i64 %hi to i32"), _I32)
    base_slot = fn.entry_op("alloca i32", "group")
    index_slot = fn.vector_slot(_I32, "idx")
    fn.loop_slots[task.loop] = index_slot
    fn.emit(f"store i32 {lo}, ptr {base_slot}")
    fn.branch("group.cond")
    fn.start_block("group.cond")
    base = fn.op(f"load i32, ptr {base_slot}")
    fn.cond_branch(fn.op(f"icmp slt i32 {base}, {fn.op('trunc i64 %hi to i32')}"), "group.body", "exit")
    fn.start_block("group.body")
    indices = fn.op(f"add {vi} {fn.uniform(base, _I32)}, {_LANE_NUMBERS}")
    fn.emit(f"store {vi} {indices}, ptr {index_slot}")
    fn.mask = fn.op(f"icmp slt {vi} {indices}, {hi}")
    fn.visit_block(task.body)
    fn.branch("group.next")
    fn.start_block("group.next")
    fn.emit(f"store i32 {fn.op(f'add i32 {base}, {LANES}')}, ptr {base_slot}")
    fn.branch("group.cond")
    fn.start_block("exit")
    fn.flush_chunk_reductions()
    fn.emit("ret void")
    return fn.finish(f"void @{name}(ptr noalias nocapture readonly %args, i64 %lo, i64 %hi, i32 %worker)")

