"""Atomic read-modify-writes in LLVM IR: one `atomicrmw` where LLVM has the operation, one `cmpxchg` for
compare-and-swap, and a `cmpxchg` loop on the element's bits for the rest (atomic_mul).

A mixin of codegen.FunctionEmitter (it uses the emitter's `op`/`emit`/block helpers); the op tables are
ops.py's ATOMIC and ATOMIC_CMPXCHG_LOOP. Every atomic is `monotonic` (relaxed), as on every other backend, at the
target's memory scope (target.Target.atomic_scope: the whole system by default, the device on AMDGPU); an
`atomicrmw` carries the target's metadata about the memory (Target.atomicrmw_metadata), which is what lets
LLVM's AMDGPU backend make it one instruction instead of a compare-and-swap loop. In a module whose tasks only
the launching thread runs (ModuleEmitter.single_thread), the operations that are one LLVM instruction are a
plain load, that instruction and a store: no other thread can write in between, and an f32 add is otherwise a
compare-and-swap loop on x86."""
from __future__ import annotations

from wgkern.errors import InternalCompilerError
from wgkern.ir import nodes as ir
from wgkern.ir.ops import AtomicOpKind
from wgkern.dtypes import DataType

from .ops import ATOMIC, ATOMIC_CMPXCHG_LOOP, BINARY
from .types import llvm_type, memory_type


# atomicrmw operations whose LLVM instruction of the same name computes the stored value (single-threaded modules)
PLAIN_READ_MODIFY_WRITE = frozenset({"fadd", "fsub", "add", "sub", "and", "or", "xor"})


class AtomicLowering:
    """Mixin for codegen.FunctionEmitter: atomics on global memory (AtomicOp and chunk-reduction flushes)."""

    def emit_atomic(self, stmt: ir.Stmt, op: AtomicOpKind, dtype: DataType, address: str, value: str,
                    expected: str | None = None) -> str:
        """Atomic `op` on the `dtype` element at `address` with register values `value` (and `expected`, for
        CAS); returns the old contents as a register value. `stmt` locates errors."""
        mem = memory_type(dtype)
        gptr = self.module.global_ptr
        scope = self.target.atomic_scope
        if op is AtomicOpKind.CAS:
            pair = self.op(f"cmpxchg {gptr} {address}, {mem} {self.to_memory(expected, dtype)}, "
                           f"{mem} {self.to_memory(value, dtype)}{scope} monotonic monotonic, align {dtype.nbytes}")
            return self.from_memory(self.op(f"extractvalue {{{mem}, i1}} {pair}, 0"), dtype)
        operation = ATOMIC[dtype.kind].get(op)
        if self.module.single_thread and operation in PLAIN_READ_MODIFY_WRITE:
            operand = self.to_memory(value, dtype)
            old = self.op(f"load {mem}, {gptr} {address}, align {dtype.nbytes}")
            self.emit(f"store {mem} {self.op(f'{operation} {mem} {old}, {operand}')}, {gptr} {address}, "
                      f"align {dtype.nbytes}")
            return self.from_memory(old, dtype)
        if operation is not None:
            operand = self.to_memory(value, dtype)
            if operation == "fsub" and self.target.atomic_fsub_as_fadd:
                operation, operand = "fadd", self.op(f"fneg {mem} {operand}")
            old = self.op(f"atomicrmw {operation} {gptr} {address}, {mem} {operand}{scope} monotonic, "
                          f"align {dtype.nbytes}"
                          f"{self.target.atomicrmw_metadata(operation, dtype.bits, self.module.fast_math)}")
            return self.from_memory(old, dtype)
        if op not in ATOMIC_CMPXCHG_LOOP or dtype.is_bool:
            raise InternalCompilerError(f"atomic {op.value} is not defined on {dtype}", stmt.loc)
        return self.cmpxchg_loop(stmt, op, dtype, address, value)

    def cmpxchg_loop(self, stmt: ir.Stmt, op: AtomicOpKind, dtype: DataType, address: str, value: str) -> str:
        """old = *address; retry cmpxchg(old -> combine(old, value)) until no other thread wrote in between.
        Compared as integer bits, so a NaN in memory cannot make the loop spin."""
        gptr = self.module.global_ptr
        ty = llvm_type(dtype)
        bits = f"i{dtype.bits}"
        seen_slot = self.entry_op(f"alloca {bits}", "cas_seen")
        scope = self.target.atomic_scope
        first = self.op(f"load atomic {bits}, {gptr} {address}{scope} monotonic, align {dtype.nbytes}")
        self.emit(f"store {bits} {first}, ptr {seen_slot}")
        loop, done = self.label("cas.loop"), self.label("cas.done")
        self.branch(loop)
        self.start_block(loop)
        old_bits = self.op(f"load {bits}, ptr {seen_slot}")
        old = self.op(f"bitcast {bits} {old_bits} to {ty}") if dtype.is_float else old_bits
        new = self.apply(BINARY[dtype.kind].get(ATOMIC_CMPXCHG_LOOP[op]), stmt, dtype, [old, value])
        new_bits = self.op(f"bitcast {ty} {new} to {bits}") if dtype.is_float else new
        pair = self.op(f"cmpxchg {gptr} {address}, {bits} {old_bits}, {bits} {new_bits}{scope} monotonic "
                       f"monotonic, align {dtype.nbytes}")
        self.emit(f"store {bits} {self.op(f'extractvalue {{{bits}, i1}} {pair}, 0')}, ptr {seen_slot}")
        self.cond_branch(self.op(f"extractvalue {{{bits}, i1}} {pair}, 1"), done, loop)
        self.start_block(done)
        return old
