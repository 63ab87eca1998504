"""Adstacks in WGSL: the per-thread stacks of a reverse-mode task, in one heap of u32 words (slot-major).

Owns the lowering of the AdStack* statements (a mixin of WgslCodegen), how each dtype is packed into words, and
the launch-time plan: metadata rows (base, thread_stride, slot_stride, capacity, in words) travel in the
argument ring, so new capacities never recompile. Layout, heap growth and overflow messages are shared with the
CPU backend (backends/adstack.py). A stack's depth, its top value and the top's adjoint live in registers
(function-scope vars): a push writes the heap and the top register, a pop re-reads the new top from the heap, so
the replay never reads back what it just pushed and the adjoint sweep touches the heap once per pop. The
metadata is read once per adjoint unit, where the stack is declared (lavapipe does not hoist storage reads out
of loops: reading it per access made the reverse sweep twice as slow)."""
from __future__ import annotations

from typing import Any

from wgkern.backends.adstack import METADATA_FIELDS, StackSpec, collect_stacks, flag_code
from wgkern.backends.wgsl import types as wtypes
from wgkern.errors import InternalCompilerError
from wgkern.ir import nodes as ir
from wgkern import dtypes as T
from wgkern.dtypes import DataType

HEAP_NAME = "wk_adstack_heap"
FLAG_NAME = "wk_adstack_flag"


def words_of(dtype: DataType) -> int:
    """u32 words one element of `dtype` takes in the heap."""
    return 2 if dtype.bits == 64 else 1


def encode(value: str, dtype: DataType) -> list[str]:
    """Expressions of the u32 words holding `value` (low word first)."""
    if dtype.bits == 64:
        bits = value if dtype == T.u64 else f"bitcast<u64>({value})"
        return [f"u32({bits} & 0xfffffffflu)", f"u32({bits} >> 32u)"]
    if dtype.is_bool:
        return [f"select(0u, 1u, {value})"]
    if dtype == T.f16:
        return [f"pack2x16float(vec2<f32>(f32({value}), 0.0f))"]
    return [f"bitcast<u32>({value})"]


def decode(words: list[str], dtype: DataType) -> str:
    if dtype.bits == 64:
        bits = f"(u64({words[0]}) | (u64({words[1]}) << 32u))"
        return bits if dtype == T.u64 else f"bitcast<{dtype.name}>({bits})"
    if dtype.is_bool:
        return f"({words[0]} != 0u)"
    if dtype == T.f16:
        return f"f16(unpack2x16float({words[0]}).x)"
    return f"bitcast<{'i32' if dtype.is_signed else ('u32' if dtype.is_unsigned else 'f32')}>({words[0]})"


def metadata_rows(kernel: ir.OffloadedKernel) -> tuple[list[list[StackSpec]], list[int]]:
    """The stacks of each task and the first metadata row of each task (rows run over all tasks)."""
    stacks = collect_stacks(kernel)
    first_rows, row = [], 0
    for specs in stacks:
        first_rows.append(row)
        row += len(specs)
    return stacks, first_rows


class AdStackLowering:
    """Mixin for WgslCodegen: `self.stack_row_base` (this task's first metadata row), `self.task_index` and
    `self.adstack_code` (the flag word's kernel part) are set by the codegen, as are `emit`, `value`, `fresh`."""

    def _stack(self, stack: ir.AdStackAlloca) -> str:
        """The name prefix of the stack's registers (`<p>_depth`, `<p>_top`, `<p>_adj`, `<p>_base`, ...)."""
        prefix = self.names.get(stack)
        if prefix is None:
            raise InternalCompilerError("adstack used before its AdStackAlloca", stack.loc)
        return prefix

    def _meta(self, row: int, field: int) -> str:
        word = row * METADATA_FIELDS + field
        return f"wk_params.stack_meta[{word // 4}][{word % 4}]"

    def _slot_words(self, prefix: str, stack: ir.AdStackAlloca, index: str) -> list[str]:
        """Heap word expressions of slot `index` (a u32 expression) of `stack` for this thread."""
        address = self.fresh("a")
        self.emit(f"let {address} = {prefix}_base + {index} * {prefix}_stride;")
        return [f"{HEAP_NAME}[{address} + {k}u]" for k in range(words_of(stack.dtype))]

    def visit_AdStackAlloca(self, stmt: ir.AdStackAlloca) -> None:
        prefix = self.fresh("s")
        row = self.stack_row_base + stmt.stack_id
        ty = wtypes.register_type(stmt.dtype)
        self.emit(f"// adstack '{stmt.name}' (empty at each parallel index)")
        self.emit(f"var {prefix}_depth: i32 = 0i;")
        self.emit(f"var {prefix}_top: {ty} = {wtypes.zero(stmt.dtype)};")
        if stmt.dtype.is_float:
            self.emit(f"var {prefix}_adj: {ty} = {wtypes.zero(stmt.dtype)};")
        self.emit(f"let {prefix}_base = {self._meta(row, 0)} + wk_slice * {self._meta(row, 1)};")
        self.emit(f"let {prefix}_stride = {self._meta(row, 2)};")
        self.emit(f"let {prefix}_capacity = {self._meta(row, 3)};")
        self.names[stmt] = prefix

    def visit_AdStackPush(self, stmt: ir.AdStackPush) -> None:
        stack = stmt.stack
        prefix = self._stack(stack)
        value = self.value(stmt.value)
        code = flag_code(self.adstack_code, self.task_index, stack.stack_id)
        self.emit(f"{prefix}_top = {value};")
        if stack.dtype.is_float:
            self.emit(f"{prefix}_adj = {wtypes.zero(stack.dtype)};")
        self.emit(f"if (u32({prefix}_depth) >= {prefix}_capacity) {{")
        # any overflowing push's code will do (one is reported); a store, not atomicMax: llvmpipe compiles an
        # atomic read-modify-write into a loop over the lanes, measurably slower to JIT
        self.emit(f"  atomicStore(&{FLAG_NAME}[0], {code}u);   // overflow: reported at the next sync")
        self.emit("  wk_overflowed = true;")
        self.emit("} else {")
        self.indent += 1
        for word, encoded in zip(self._slot_words(prefix, stack, f"u32({prefix}_depth)"),
                                 encode(value, stack.dtype)):
            self.emit(f"{word} = {encoded};")
        self.emit(f"{prefix}_depth = {prefix}_depth + 1i;")
        self.indent -= 1
        self.emit("}")

    def visit_AdStackOverflowed(self, stmt: ir.AdStackOverflowed) -> None:
        self.let(stmt, "wk_overflowed")

    def visit_AdStackPop(self, stmt: ir.AdStackPop) -> None:
        stack = stmt.stack
        prefix = self._stack(stack)
        self.emit(f"{prefix}_depth = max({prefix}_depth - 1i, 0i);")
        words = self._slot_words(prefix, stack, f"u32(max({prefix}_depth - 1i, 0i))")
        self.emit(f"{prefix}_top = {decode(words, stack.dtype)};")
        if stack.dtype.is_float:
            self.emit(f"{prefix}_adj = {wtypes.zero(stack.dtype)};")

    def visit_AdStackLoadTop(self, stmt: ir.AdStackLoadTop) -> None:
        self.let(stmt, f"{self._stack(stmt.stack)}_top")

    def visit_AdStackLoadTopAdj(self, stmt: ir.AdStackLoadTopAdj) -> None:
        self.let(stmt, f"{self._stack(stmt.stack)}_adj")

    def visit_AdStackAccAdjoint(self, stmt: ir.AdStackAccAdjoint) -> None:
        prefix = self._stack(stmt.stack)
        self.emit(f"{prefix}_adj = {prefix}_adj + {self.value(stmt.value)};")

    def adstack_declarations(self, first_binding: int) -> str:
        return (f"@group(0) @binding({first_binding}) var<storage, read_write> {HEAP_NAME}: array<u32>;\n"
                f"@group(0) @binding({first_binding + 1}) var<storage, read_write> {FLAG_NAME}: "
                f"array<atomic<u32>>;\n")


def capacities_for(stacks: list[list[StackSpec]], given: Any) -> list[list[int]]:
    """`LaunchArgs.extra['adstack_capacities']`, else each stack's static capacity (32 when unknown)."""
    if given:
        return [[int(c) for c in task] for task in given]
    return [[spec.static_capacity or 32 for spec in specs] for specs in stacks]
