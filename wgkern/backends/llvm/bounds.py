"""Checked global accesses in LLVM IR: debug=True's bounds checks and kernel assertions, which record a failing
site in the launch's error word (cpu.py and cuda.py raise it after the launch).

A mixin of codegen.FunctionEmitter (it uses the emitter's `op`/`emit`/block helpers and argument fields)."""
from __future__ import annotations

from wgkern.ir import nodes as ir

from .layout import ERROR_WORD_OFFSET, SCRATCH_OFFSET

BOUNDS_FAIL_HELPER = """
define internal void @wk.bounds_fail({gptr} %error_word, i32 %site) cold noinline nounwind {
  %first = cmpxchg {gptr} %error_word, i32 0, i32 %site monotonic monotonic
  ret void
}
"""


class BoundsLowering:
    """Mixin for codegen.FunctionEmitter: debug=True's bounds checks and ir.AssertFail."""

    def checked_address(self, stmt: ir.GlobalPtr, slot_index: int, address: str) -> str:
        """Debug builds: an index outside [0, extent) on any axis records the site in the error word and
        redirects the access to a scratch element, so nothing outside the container is touched."""
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
        return self.op(f"select i1 {in_range}, {gptr} {address}, {gptr} {scratch}")

    def visit_AssertFail(self, stmt: ir.AssertFail) -> None:
        """Recorded in the error word like a failed bounds check (debug=True only); cpu.py raises it."""
        self.module.bounds_sites.append(stmt)
        gptr = self.module.global_ptr
        error_word = self.arg_field(ERROR_WORD_OFFSET, gptr, gptr)
        self.emit(f"call void @wk.bounds_fail({gptr} {error_word}, i32 {len(self.module.bounds_sites)})")
        self.module.helpers["wk.bounds_fail"] = BOUNDS_FAIL_HELPER.replace("{gptr}", gptr)
