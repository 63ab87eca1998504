"""Checked global accesses in LLVM IR, shared by the CPU and CUDA code generators.

Without debug=True, an access that passes/index_ranges.py cannot prove inside its container is guarded: its
flat element offset is computed in 64 bits from the sign-extended indices (exact for any i32 indices), one
unsigned compare against the container's element count decides. A load or atomic runs under a branch on that
bit and gives 0 where it is skipped (the loop vectoriser makes such loads masked vector loads); a plain store
goes to a module-private sink instead (a select of the address: a plain store per lane when vectorised,
where a masked vector store runs in microcode on AMD's Zen cores and measured slower). Accesses at the
parallel loop's own index, and others passes/index_ranges.py proves, get no guard at all.
With debug=True every access that is not proven is checked per axis instead, and a failure records the site
in the launch's error word (cpu.py and cuda.py raise BoundsCheckError after the launch); kernel assertions
(ir.AssertFail) record theirs the same way.

A mixin of codegen.FunctionEmitter (it uses the emitter's `op`/`emit`/block helpers and argument fields)."""
from __future__ import annotations

from typing import Callable

from wgkern.ir import nodes as ir
from wgkern.lang.types import DataType

from .layout import ERROR_WORD_OFFSET, SCRATCH_OFFSET
from .types import llvm_type, zero_literal

BOUNDS_FAIL_HELPER = """
define internal void @wk.bounds_fail({gptr} %error_word, i32 %site) cold noinline nounwind {
  %first = cmpxchg {gptr} %error_word, i32 0, i32 %site monotonic monotonic
  ret void
}
"""


class BoundsLowering:
    """Mixin for codegen.FunctionEmitter: guarded accesses, debug=True's bounds checks and ir.AssertFail."""

    def guarded_offset(self, stmt: ir.GlobalPtr, strides: list[str], count: str) -> str:
        """The i64 flat element offset of `stmt` (row-major `strides`, i32 operands); records in `guards` the
        i1 that says whether it lies in [0, count)."""
        offset = "0"
        for axis, idx in enumerate(stmt.indices):
            term = self.op(f"sext i32 {self.value(idx)} to i64")
            if strides[axis] != "1":
                term = self.op(f"mul nsw i64 {term}, {self.wide(strides[axis])}")
            offset = term if offset == "0" else self.op(f"add i64 {offset}, {term}")
        self.guards[stmt] = self.op(f"icmp ult i64 {offset}, {count}")
        return offset

    def wide(self, value: str) -> str:
        """An i32 operand (a literal or an entry-block value) as i64, extended once in the entry block."""
        if value.lstrip("-").isdigit():
            return value
        cached = self.container_cache.get((value, "i64"))
        if cached is None:
            cached = self.container_cache[(value, "i64")] = self.entry_op(f"sext i32 {value} to i64")
        return cached

    def container_count(self, slot_index: int, slot: ir.ContainerSlot) -> str:
        """The i64 element count of a container: a literal for static shapes, else computed once."""
        if slot.shape is not None:
            count = 1
            for extent in slot.shape:
                count *= int(extent)
            return str(count)
        cached = self.container_cache.get((slot_index, "count"))
        if cached is None:
            cached = "1"
            for axis in range(slot.ndim):
                extent = self.wide(self.container_extent(slot_index, slot, axis))
                cached = extent if cached == "1" else self.entry_op(f"mul i64 {cached}, {extent}")
            self.container_cache[(slot_index, "count")] = cached
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
