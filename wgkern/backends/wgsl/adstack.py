"""Adstacks in WGSL: the per-thread stacks of a reverse-mode task, in one heap of u32 words (slot-major).

Owns the lowering of the AdStack* statements (a mixin of WgslCodegen), how each dtype is packed into words, and
the launch-time plan: metadata rows (primal_base, adjoint_base, thread_stride, slot_stride, capacity, in words)
travel in the argument ring, so new capacities never recompile. Layout, heap growth and overflow messages are
shared with the CPU backend (backends/adstack.py). A stack's depth lives in a register."""
from __future__ import annotations

from typing import Any

from wgkern.backends.adstack import METADATA_FIELDS, StackSpec, collect_stacks, flag_code
from wgkern.errors import InternalCompilerError
from wgkern.ir import nodes as ir
from wgkern.lang import types as T
from wgkern.lang.types import DataType

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

    def _stack(self, stack: ir.AdStackAlloca) -> tuple[str, int]:
        depth = self.names.get(stack)
        if depth is None:
            raise InternalCompilerError("adstack used before its AdStackAlloca", stack.loc)
        return depth, self.stack_row_base + stack.stack_id

    def _meta(self, row: int, field: int) -> str:
        return f"wk_params.stack_meta[{row * METADATA_FIELDS + field}]"

    def _slot_words(self, stack: ir.AdStackAlloca, index: str, adjoint: bool) -> list[str]:
        """Heap word indices of slot `index` (a u32 expression) of `stack` for this thread."""
        _, row = self._stack(stack)
        base = self._meta(row, 1 if adjoint else 0)
        address = self.fresh("a")
        self.emit(f"let {address} = {base} + wk_slice * {self._meta(row, 2)} + {index} * {self._meta(row, 3)};")
        return [f"{HEAP_NAME}[{address} + {k}u]" for k in range(words_of(stack.dtype))]

    def _top(self, stack: ir.AdStackAlloca) -> str:
        depth, _ = self._stack(stack)
        return f"u32(max({depth} - 1i, 0i))"

    def visit_AdStackAlloca(self, stmt: ir.AdStackAlloca) -> None:
        depth = self.fresh("depth")
        self.emit(f"var {depth}: i32 = 0i;   // adstack '{stmt.name}' (empty at each parallel index)")
        self.names[stmt] = depth

    def visit_AdStackPush(self, stmt: ir.AdStackPush) -> None:
        depth, row = self._stack(stmt.stack)
        code = flag_code(self.adstack_code, self.task_index, stmt.stack.stack_id)
        self.emit(f"if (u32({depth}) >= {self._meta(row, 4)}) {{")
        self.emit(f"  atomicMax(&{FLAG_NAME}[0], {code}u);   // overflow: reported at the next sync")
        self.emit("  wk_overflowed = true;")
        self.emit("} else {")
        self.indent += 1
        for word, value in zip(self._slot_words(stmt.stack, f"u32({depth})", False),
                               encode(self.value(stmt.value), stmt.stack.dtype)):
            self.emit(f"{word} = {value};")
        if stmt.stack.dtype.is_float:
            for word in self._slot_words(stmt.stack, f"u32({depth})", True):
                self.emit(f"{word} = 0u;")
        self.emit(f"{depth} = {depth} + 1i;")
        self.indent -= 1
        self.emit("}")

    def visit_AdStackOverflowed(self, stmt: ir.AdStackOverflowed) -> None:
        self.let(stmt, "wk_overflowed")

    def visit_AdStackPop(self, stmt: ir.AdStackPop) -> None:
        depth, _ = self._stack(stmt.stack)
        self.emit(f"{depth} = max({depth} - 1i, 0i);")

    def visit_AdStackLoadTop(self, stmt: ir.AdStackLoadTop) -> None:
        words = self._slot_words(stmt.stack, self._top(stmt.stack), False)
        self.let(stmt, decode(words, stmt.stack.dtype))

    def visit_AdStackLoadTopAdj(self, stmt: ir.AdStackLoadTopAdj) -> None:
        words = self._slot_words(stmt.stack, self._top(stmt.stack), True)
        self.let(stmt, decode(words, stmt.stack.dtype))

    def visit_AdStackAccAdjoint(self, stmt: ir.AdStackAccAdjoint) -> None:
        depth, _ = self._stack(stmt.stack)
        dtype = stmt.stack.dtype
        self.emit(f"if ({depth} > 0i) {{")
        self.indent += 1
        words = self._slot_words(stmt.stack, self._top(stmt.stack), True)
        total = self.fresh("adj")
        self.emit(f"let {total} = {decode(words, dtype)} + {self.value(stmt.value)};")
        for word, value in zip(words, encode(total, dtype)):
            self.emit(f"{word} = {value};")
        self.indent -= 1
        self.emit("}")

    def adstack_declarations(self, first_binding: int) -> str:
        return (f"@group(0) @binding({first_binding}) var<storage, read_write> {HEAP_NAME}: array<u32>;\n"
                f"@group(0) @binding({first_binding + 1}) var<storage, read_write> {FLAG_NAME}: "
                f"array<atomic<u32>>;\n")


def capacities_for(stacks: list[list[StackSpec]], given: Any) -> list[list[int]]:
    """`LaunchArgs.extra['adstack_capacities']`, else each stack's static capacity (32 when unknown)."""
    if given:
        return [[int(c) for c in task] for task in given]
    return [[spec.static_capacity or 32 for spec in specs] for specs in stacks]
