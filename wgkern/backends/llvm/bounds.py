"""Checked global accesses in LLVM IR, shared by the CPU and CUDA code generators.

Without debug=True, an access that passes/index_ranges.py cannot prove inside its container is guarded: its
flat element offset is computed in 64 bits from the sign-extended indices (exact for any i32 indices), one
unsigned compare against the container's element count decides. A load or atomic runs under a branch on that
bit and gives 0 where it is skipped (the loop vectoriser makes such loads masked vector loads); a plain store
goes to a module-private sink instead (a select of the address: a plain store per lane when vectorised,
where a masked vector store runs in microcode on AMD's Zen cores and measured slower). Accesses at the
parallel loop's own index, and others passes/index_ranges.py proves, get no guard at all. On the CPU, accesses
that move with a range task's index are checked once per block of indices instead (versioned_ptrs, and
codegen.emit_range_task).
With debug=True every access that is not proven is checked per axis instead, and a failure records the site
in the launch's error word (cpu.py and cuda.py raise BoundsCheckError after the launch); kernel assertions
(ir.AssertFail) record theirs the same way.

A mixin of codegen.FunctionEmitter (it uses the emitter's `op`/`emit`/block helpers and argument fields)."""
from __future__ import annotations

from typing import Callable

from wgkern.ir import nodes as ir
from wgkern.ir.ops import BinaryOpKind as B
from wgkern.ir.visitor import walk
from wgkern.dtypes import DataType

from .layout import ERROR_WORD_OFFSET, SCRATCH_OFFSET
from .types import const_literal, llvm_type, zero_literal

BOUNDS_FAIL_HELPER = """
define internal void @wk.bounds_fail({gptr} %error_word, i32 %site) cold noinline nounwind {
  %first = cmpxchg {gptr} %error_word, i32 0, i32 %site monotonic monotonic
  ret void
}
"""


_INVARIANT_OPS = frozenset({B.ADD, B.SUB, B.MUL, B.MIN, B.MAX, B.FLOORDIV, B.MOD})


def _invariant(stmt: ir.Stmt, depth: int = 0) -> bool:
    """A value of arguments and constants alone (the same for every index of a task), i32."""
    if stmt.dtype is None or stmt.dtype.name != "i32" or depth > 8:
        return False
    if isinstance(stmt, (ir.Const, ir.ArgLoad, ir.ShapeOf)):
        return True
    return isinstance(stmt, ir.BinaryOp) and stmt.op in _INVARIANT_OPS and \
        _invariant(stmt.lhs, depth + 1) and _invariant(stmt.rhs, depth + 1)


def _postorder(stmt: ir.Stmt) -> list[ir.Stmt]:
    """`stmt` and the statements it is computed from (an _invariant tree), operands first."""
    if isinstance(stmt, ir.BinaryOp):
        return [*_postorder(stmt.lhs), *_postorder(stmt.rhs), stmt]
    return [stmt]


class BoundsLowering:
    """Mixin for codegen.FunctionEmitter: guarded accesses, debug=True's bounds checks and ir.AssertFail."""

    def guarded_offset(self, stmt: ir.GlobalPtr, slot_index: int, strides: list[str]) -> str:
        """The i64 flat element offset of `stmt` (row-major `strides`, i32 operands); records in `guards` the
        i1 that says whether it lies in [0, element count), unless this copy of the loop knows it does. Where
        the last axes' indices are proven inside their axes, that is whether the offset over the other axes
        lies in [0, their element count) (passes/index_ranges.py gives the argument): the same i1 for every
        component of a vector or matrix read at one index, so the optimiser merges their branches."""
        indices = [self.value(idx) for idx in stmt.indices]
        offset = self.flat_offset(indices, strides)
        if stmt in self.unguarded:
            self.guards.pop(stmt, None)
            return offset
        slot = stmt.container
        leading = len(indices) - self.module.trailing_in_range.get(stmt, 0)
        if leading < len(indices):
            checked = self.flat_offset(indices[:leading], self.container_strides(slot_index, slot, leading))
            count = self.container_count(slot_index, slot, leading)
        else:
            checked, count = offset, self.container_count(slot_index, slot)
        self.guards[stmt] = self.op(f"icmp ult i64 {checked}, {count}")
        return offset

    def flat_offset(self, indices: list[str], strides: list[str]) -> str:
        """sum(sext(index) * stride) in i64: exact for any i32 indices."""
        offset = "0"
        for index, stride in zip(indices, strides):
            term = self.op(f"sext i32 {index} to i64")
            if stride != "1":
                term = self.op(f"mul nsw i64 {term}, {self.wide(stride)}")
            offset = term if offset == "0" else self.op(f"add i64 {offset}, {term}")
        return offset

    # ---- range tasks: a copy of the loop without the guards of accesses that move with the index -------------
    def versioned_ptrs(self, task: ir.Task) -> dict[ir.GlobalPtr, tuple[int, ir.Stmt | None, bool]]:
        """Guarded accesses of `task` whose indices are constants but one, `i`, `i + c` or `i - c` (i the
        task's index, c loop-invariant): their flat offset grows with i, so they are all in range for a chunk
        when they are at its first and last index. ptr -> (that axis, c or None, subtracted)."""
        if self.module.bounds_check or any(isinstance(s, ir.AdStackAlloca) for s in walk(task.body)):
            return {}
        found = {}
        for stmt in walk(task.body):
            if not isinstance(stmt, ir.GlobalPtr) or stmt in self.module.in_range or stmt.container.kind == "shared":
                continue
            moving = [k for k, index in enumerate(stmt.indices) if not isinstance(index, ir.Const)]
            if len(moving) != 1:
                continue
            shape = self._moving_index(stmt.indices[moving[0]], task.loop)
            if shape is not None:
                found[stmt] = (moving[0], *shape)
        return found

    def _moving_index(self, index: ir.Stmt, loop: ir.RangeFor) -> tuple[ir.Stmt | None, bool] | None:
        def is_index(stmt: ir.Stmt) -> bool:
            return isinstance(stmt, ir.LoopIndex) and stmt.loop is loop
        if is_index(index):
            return None, False
        if isinstance(index, ir.BinaryOp) and index.op in (B.ADD, B.SUB):
            if is_index(index.lhs) and _invariant(index.rhs):
                return index.rhs, index.op is B.SUB
            if index.op is B.ADD and is_index(index.rhs) and _invariant(index.lhs):
                return index.lhs, False
        return None

    def chunk_in_range(self, versioned: dict, lo: str, hi: str) -> str:
        """i1: every access of `versioned` is in range at index lo and at hi - 1 (lo < hi)."""
        last = self.op(f"sub i32 {hi}, 1")
        verdict = "true"
        for ptr, (axis, shift, subtract) in versioned.items():
            slot_index = self.slot_index(ptr.container, ptr)
            strides = self.container_strides(slot_index, ptr.container)
            count = self.container_count(slot_index, ptr.container)
            amount = None
            if shift is not None:
                for stmt in _postorder(shift):
                    self.visit(stmt)
                amount = self.value(shift)
            for at in (lo, last):
                moved = at if amount is None else self.op(f"{'sub' if subtract else 'add'} i32 {at}, {amount}")
                indices = [moved if k == axis else self.value(index) if index in self.values
                           else const_literal(index.value, index.dtype) for k, index in enumerate(ptr.indices)]
                inside = self.op(f"icmp ult i64 {self.flat_offset(indices, strides)}, {count}")
                verdict = self.op(f"and i1 {verdict}, {inside}")
        return verdict

    def wide(self, value: str) -> str:
        """An i32 operand (a literal or an entry-block value) as i64, extended once in the entry block."""
        if value.lstrip("-").isdigit():
            return value
        cached = self.container_cache.get((value, "i64"))
        if cached is None:
            cached = self.container_cache[(value, "i64")] = self.entry_op(f"sext i32 {value} to i64")
        return cached

    def container_count(self, slot_index: int, slot: ir.ContainerSlot, axes: int | None = None) -> str:
        """The i64 element count of a container (of its first `axes` axes when given): a literal for static
        shapes, else computed once."""
        axes = slot.ndim if axes is None else axes
        if slot.shape is not None:
            count = 1
            for extent in slot.shape[:axes]:
                count *= int(extent)
            return str(count)
        key = (slot_index, "count" if axes == slot.ndim else f"count/{axes}")
        cached = self.container_cache.get(key)
        if cached is None:
            cached = "1"
            for axis in range(axes):
                extent = self.wide(self.container_extent(slot_index, slot, axis))
                cached = extent if cached == "1" else self.entry_op(f"mul i64 {cached}, {extent}")
            self.container_cache[key] = cached
        return cached

    def store_address(self, ptr: ir.GlobalPtr) -> str:
        """Where a plain store through `ptr` goes: its address, or a module-private sink where its guard fails
        (a select, not a branch: the loop vectoriser keeps such a store a plain one per lane instead of a
        masked vector store, which AMD's Zen cores run in microcode)."""
        address = self.value(ptr)
        guard = self.guards.get(ptr)
        if guard is None:
            return address
        gptr = self.module.global_ptr
        self.module.helpers["wk.sink"] = (f"@wk.sink = internal{self.target.global_address_space} global "
                                          "[64 x i8] zeroinitializer, align 64")
        return self.op(f"select i1 {guard}, {gptr} {address}, {gptr} @wk.sink")

    def in_range_only(self, ptr: ir.GlobalPtr, dtype: DataType | None, access: Callable[[], str | None]) -> str:
        """Emit `access()` (a load, store or atomic through `ptr`) only where ptr's guard holds; its value, or 0
        of `dtype` where the guard fails (dtype None: no value)."""
        guard = self.guards.get(ptr)
        if guard is None:
            return access()
        before = self.current_label
        inside, after = self.label("in_range"), self.label("in_range.end")
        self.cond_branch(guard, inside, after)
        self.start_block(inside)
        value = access()
        last = self.current_label
        self.branch(after)
        self.start_block(after)
        if dtype is None:
            return ""
        return self.op(f"phi {llvm_type(dtype)} [ {value}, %{last} ], [ {zero_literal(dtype)}, %{before} ]")

    def checked_address(self, stmt: ir.GlobalPtr, slot_index: int, address: str) -> str:
        """Debug builds: an index outside [0, extent) on any axis records the site in the error word; the
        access is then dropped (guarded like an unproven one, its address a scratch element)."""
        in_range = "true"
        for axis, idx in enumerate(stmt.indices):
            extent = self.container_extent(slot_index, stmt.container, axis)
            axis_ok = self.op(f"icmp ult i32 {self.value(idx)}, {extent}")
            in_range = self.op(f"and i1 {in_range}, {axis_ok}")
        self.module.bounds_sites.append(stmt)
        site = len(self.module.bounds_sites)
        gptr = self.module.global_ptr
        error_word = self.arg_field(ERROR_WORD_OFFSET, gptr, gptr)
        scratch = self.arg_field(SCRATCH_OFFSET, gptr, gptr)
        ok_label, bad_label = self.label("bounds.ok"), self.label("bounds.bad")
        self.cond_branch(in_range, ok_label, bad_label)
        self.start_block(bad_label)
        self.emit(f"call void @wk.bounds_fail({gptr} {error_word}, i32 {site})")
        self.branch(ok_label)
        self.start_block(ok_label)
        self.module.helpers["wk.bounds_fail"] = BOUNDS_FAIL_HELPER.replace("{gptr}", gptr)
        self.guards[stmt] = in_range        # and the access is dropped as without debug=True
        return self.op(f"select i1 {in_range}, {gptr} {address}, {gptr} {scratch}")

    def visit_AssertFail(self, stmt: ir.AssertFail) -> None:
        """Recorded in the error word like a failed bounds check (debug=True only); cpu.py raises it."""
        self.module.bounds_sites.append(stmt)
        gptr = self.module.global_ptr
        error_word = self.arg_field(ERROR_WORD_OFFSET, gptr, gptr)
        self.emit(f"call void @wk.bounds_fail({gptr} {error_word}, i32 {len(self.module.bounds_sites)})")
        self.module.helpers["wk.bounds_fail"] = BOUNDS_FAIL_HELPER.replace("{gptr}", gptr)
