"""Reference interpreter of offloaded IR: slow, exact, backend-free.

It executes the semantics written in docs/internals.md one statement at a time (the per-op rules are
host_eval.py's, shared with constant folding) with numpy scalars, so passes
(autodiff above all) can be tested without a backend, and backends can be checked against it. Adstacks are
unbounded Python lists here, with an optional capacity check that raises like a backend would."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from wgkern.errors import AdStackOverflowError, InternalCompilerError
from wgkern.ir import nodes as ir
from wgkern.ir.host_eval import NotFoldable, fold_binary, fold_cast, fold_unary
from wgkern.ir.ops import AtomicOpKind, BinaryOpKind
from wgkern import dtypes as T


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


def _np(value: Any, dtype: T.DataType) -> Any:
    if dtype.is_bool:
        return bool(value)
    if dtype.is_float:
        return dtype.np_dtype.type(value)
    return T.wrap_int(int(value), dtype)


def _binary(op: BinaryOpKind, lhs: Any, rhs: Any, dtype: T.DataType) -> Any:
    try:
        return fold_binary(op, lhs, rhs, dtype, exact_only=False)
    except NotFoldable:
        if not dtype.is_bool:
            raise
        # Arithmetic on u1 (typecheck widens it to i32; hand-built IR may not): computed in i32, != 0.
        return bool(fold_binary(op, int(lhs), int(rhs), T.i32, exact_only=False))


# How each atomic combines the old contents with its value (EXCHANGE and CAS store the value instead).
ATOMIC: dict[AtomicOpKind, BinaryOpKind] = {
    AtomicOpKind.ADD: BinaryOpKind.ADD, AtomicOpKind.SUB: BinaryOpKind.SUB, AtomicOpKind.MIN: BinaryOpKind.MIN,
    AtomicOpKind.MAX: BinaryOpKind.MAX, AtomicOpKind.AND: BinaryOpKind.BIT_AND,
    AtomicOpKind.OR: BinaryOpKind.BIT_OR, AtomicOpKind.XOR: BinaryOpKind.BIT_XOR, AtomicOpKind.MUL: BinaryOpKind.MUL,
}


def _mix(h: int) -> int:
    h &= 0xFFFFFFFF
    h ^= h >> 16
    h = (h * 0x7FEB352D) & 0xFFFFFFFF
    h ^= h >> 15
    h = (h * 0x846CA68B) & 0xFFFFFFFF
    h ^= h >> 16
    return h


def wk_hash(a: int, b: int, c: int, d: int) -> int:
    """The counter-based hash behind wk.random (docs/internals.md)."""
    return _mix(_mix(_mix(_mix(a) ^ (b & 0xFFFFFFFF)) ^ (c & 0xFFFFFFFF)) ^ (d & 0xFFFFFFFF))


def _cast(value: Any, src: T.DataType, dst: T.DataType, bitcast: bool) -> Any:
    try:
        return fold_cast(value, src, dst, bitcast)
    except NotFoldable:          # an int too wide for an exact narrow float: round like the hardware
        return dst.np_dtype.type(int(value))


class Interpreter:
    """Runs an OffloadedKernel. `arrays[k]` is a numpy array (full shape) for container slot k (modified in
    place); `scalars[i]` the value of scalar argument i. `stack_capacity(stack)` gives an adstack's capacity
    (None: unbounded)."""

    def __init__(self, kernel: ir.OffloadedKernel, arrays: list[np.ndarray], scalars: list[Any],
                 launch_id: int = 0, seed: int = 0,
                 stack_capacity: Callable[[ir.AdStackAlloca], int | None] | None = None):
        self.kernel = kernel
        self.slot_index = {id(c): k for k, c in enumerate(kernel.containers)}
        self.arrays = arrays
        self.scalars = scalars
        self.launch_id = launch_id
        self.seed = seed
        self.stack_capacity = stack_capacity or (lambda s: s.capacity)
        self.values: dict[int, Any] = {}
        self.locals: dict[int, Any] = {}
        self.stacks: dict[int, list[list[Any]]] = {}
        self.loop_index: dict[int, int] = {}
        self.thread = 0
        self.counter = 0
        self.overflowed: list[ir.AdStackAlloca] = []

    def run(self) -> None:
        for task in self.kernel.tasks:
            if task.kind == "serial":
                self._start_unit(0)
                self._run_block(task.body)
                continue
            self._run_block(task.bounds)
            begin = self.values[id(task.loop.begin)]
            end = self.values[id(task.loop.end)]
            for index in range(begin, end):
                self._start_unit(index)
                self.loop_index[id(task.loop)] = index
                self._run_block(task.body)
        if self.overflowed:
            stack = self.overflowed[0]
            raise AdStackOverflowError(f"adstack '{stack.name}' overflowed (capacity {self.stack_capacity(stack)})")

    def exec_AdStackOverflowed(self, s: ir.AdStackOverflowed) -> Any:
        return self.thread_overflowed

    def _start_unit(self, thread: int) -> None:
        self.thread_overflowed = False
        self.thread = thread
        self.counter = 0
        self.locals.clear()
        self.stacks.clear()

    def _run_block(self, block: ir.Block) -> None:
        for stmt in block.stmts:
            self._exec(stmt)

    def _val(self, stmt: ir.Stmt) -> Any:
        return self.values[id(stmt)]

    def _address(self, ptr: ir.GlobalPtr) -> tuple[np.ndarray, int | None]:
        """The container's elements as a flat view, and the element's row-major offset; None when that offset is
        outside the container (every backend then drops a write or atomic and reads 0)."""
        array = self.arrays[self.slot_index[id(ptr.container)]]
        offset = 0
        for axis, index in enumerate(ptr.indices):
            offset = offset * array.shape[axis] + int(self._val(index))
        flat = array.reshape(-1)
        return flat, offset if 0 <= offset < flat.size else None

    def _exec(self, stmt: ir.Stmt) -> None:
        method = getattr(self, "exec_" + type(stmt).__name__, None)
        if method is None:
            raise InternalCompilerError(f"interpreter has no rule for {type(stmt).__name__}", stmt.loc)
        result = method(stmt)
        if stmt.dtype is not None and result is not None:
            self.values[id(stmt)] = _np(result, stmt.dtype) if not stmt.dtype.is_float else stmt.dtype.np_dtype.type(result)

    # ---- values
    def exec_Const(self, s: ir.Const) -> Any:
        return s.value

    def exec_ArgLoad(self, s: ir.ArgLoad) -> Any:
        return self.scalars[s.arg_index]

    def exec_UnaryOp(self, s: ir.UnaryOp) -> Any:
        return fold_unary(s.op, self._val(s.operand), s.operand.dtype, exact_only=False)

    def exec_BinaryOp(self, s: ir.BinaryOp) -> Any:
        return _binary(s.op, self._val(s.lhs), self._val(s.rhs), s.lhs.dtype)

    def exec_TernarySelect(self, s: ir.TernarySelect) -> Any:
        return self._val(s.true_value) if self._val(s.cond) else self._val(s.false_value)

    def exec_Cast(self, s: ir.Cast) -> Any:
        return _cast(self._val(s.operand), s.operand.dtype, s.dtype, s.bitcast)

    def exec_RandomValue(self, s: ir.RandomValue) -> Any:
        h = wk_hash(self.seed, self.launch_id, self.thread, (s.site << 20) ^ self.counter)
        self.counter += 1
        if s.dtype.is_float:
            return (h >> 8) * 2.0 ** -24
        return T.wrap_int(h, s.dtype)

    def exec_ShapeOf(self, s: ir.ShapeOf) -> Any:
        return self.arrays[self.slot_index[id(s.container)]].shape[s.axis]

    def exec_LoopIndex(self, s: ir.LoopIndex) -> Any:
        return self.loop_index[id(s.loop)]

    # ---- locals
    def exec_Alloca(self, s: ir.Alloca) -> None:
        self.locals[id(s)] = _np(0, s.dtype)

    def exec_LocalLoad(self, s: ir.LocalLoad) -> Any:
        return self.locals[id(s.alloca)]

    def exec_LocalStore(self, s: ir.LocalStore) -> None:
        self.locals[id(s.alloca)] = self._val(s.value)

    # ---- globals
    def exec_GlobalPtr(self, s: ir.GlobalPtr) -> None:
        return None

    def exec_GlobalLoad(self, s: ir.GlobalLoad) -> Any:
        array, index = self._address(s.ptr)
        return array[index] if index is not None else _np(0, s.dtype)

    def exec_AssertFail(self, s: ir.AssertFail) -> None:
        from wgkern.errors import KernelAssertionError, format_located
        raise KernelAssertionError(format_located(f"assertion failed: {s.message}", s.loc))

    def exec_Print(self, s: ir.Print) -> None:
        from wgkern.ir.printing import emit, format_print
        emit(format_print(s.pieces, [self._val(v) for v in s.values], [v.dtype for v in s.values], s.formats))

    def exec_GlobalStore(self, s: ir.GlobalStore) -> None:
        array, index = self._address(s.ptr)
        if index is not None:
            array[index] = self._val(s.value)

    def _wide(self, s: ir.VectorLoad | ir.VectorStore, width: int) -> tuple[np.ndarray, int]:
        """The container's elements and the first of a wide access, which the pass emits only in range and
        aligned (an internal error here, where a backend would read or write the wrong memory)."""
        flat = self.arrays[self.slot_index[id(s.container)]].reshape(-1)
        start = int(self._val(s.index))
        if start % width or not 0 <= start <= flat.size - width:
            raise InternalCompilerError(f"{type(s).__name__} of {width} elements at {start} of "
                                        f"{s.container.name} ({flat.size} elements)", s.loc)
        return flat, start

    def exec_VectorLoad(self, s: ir.VectorLoad) -> None:
        flat, start = self._wide(s, s.width)
        self.values[id(s)] = flat[start:start + s.width].copy()

    def exec_VectorLane(self, s: ir.VectorLane) -> Any:
        return self.values[id(s.vector)][s.lane]

    def exec_VectorStore(self, s: ir.VectorStore) -> None:
        flat, start = self._wide(s, len(s.values))
        flat[start:start + len(s.values)] = [self._val(v) for v in s.values]

    def exec_AtomicOp(self, s: ir.AtomicOp) -> Any:
        array, index = self._address(s.ptr)
        if index is None:
            return _np(0, s.dtype)
        old = array[index]
        old_value = old.item() if not s.dtype.is_float else old
        value = self._val(s.value)
        if s.op is AtomicOpKind.EXCHANGE:
            array[index] = value
        elif s.op is AtomicOpKind.CAS:
            if old_value == self._val(s.expected):
                array[index] = value
        else:
            array[index] = _binary(ATOMIC[s.op], old_value, value, s.dtype)
        return old_value

    # ---- control flow
    def exec_RangeFor(self, s: ir.RangeFor) -> None:
        begin, end = int(self._val(s.begin)), int(self._val(s.end))
        indices = range(end - 1, begin - 1, -1) if s.reversed else range(begin, end)
        for index in indices:
            self.loop_index[id(s)] = index
            try:
                self._run_block(s.body)
            except _Continue:
                continue
            except _Break:
                break

    def exec_While(self, s: ir.While) -> None:
        while True:
            try:
                self._run_block(s.body)
            except _Continue:
                continue
            except _Break:
                break

    def exec_Break(self, s: ir.Break) -> None:
        raise _Break()

    def exec_Continue(self, s: ir.Continue) -> None:
        raise _Continue()

    def exec_If(self, s: ir.If) -> None:
        self._run_block(s.then_block if self._val(s.cond) else s.else_block)

    # ---- adstacks: each entry is [primal, adjoint]
    def exec_AdStackAlloca(self, s: ir.AdStackAlloca) -> None:
        self.stacks[id(s)] = []

    def exec_AdStackPush(self, s: ir.AdStackPush) -> None:
        stack = self.stacks[id(s.stack)]
        capacity = self.stack_capacity(s.stack)
        if capacity is not None and len(stack) >= capacity:
            if s.stack not in self.overflowed:
                self.overflowed.append(s.stack)
            self.thread_overflowed = True
            return
        stack.append([self._val(s.value), _np(0, s.stack.dtype)])

    def exec_AdStackPop(self, s: ir.AdStackPop) -> None:
        stack = self.stacks[id(s.stack)]
        if stack:
            stack.pop()

    def _top(self, s: ir.Stmt) -> list[Any]:
        stack = self.stacks[id(s.stack)]
        return stack[-1] if stack else [_np(0, s.stack.dtype), _np(0, s.stack.dtype)]

    def exec_AdStackLoadTop(self, s: ir.AdStackLoadTop) -> Any:
        return self._top(s)[0]

    def exec_AdStackLoadTopAdj(self, s: ir.AdStackLoadTopAdj) -> Any:
        return self._top(s)[1]

    def exec_AdStackAccAdjoint(self, s: ir.AdStackAccAdjoint) -> None:
        stack = self.stacks[id(s.stack)]
        if stack:
            stack[-1][1] = s.stack.dtype.np_dtype.type(stack[-1][1] + self._val(s.value))
