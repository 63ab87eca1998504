"""LLVM IR for the AMDGPU backend: gpu_codegen.py's kernel frame with the AMDGPU emitter and target.

The frame, statement lowerings, atomics, adstacks, random numbers and `print` are the ones CUDA uses; the target
(amdgpu_target.py) supplies the thread registers, the `amdgpu_kernel` signature and the address spaces. What
this emitter leaves out for now: `wk.simt` (block barriers, shared arrays, wave operations) raises a
CompileError naming the call, and register reductions flush one atomic per thread (no cross-lane combine)."""
from __future__ import annotations

from wgkern.errors import CompileError
from wgkern.ir import nodes as ir

from .amdgpu_target import AmdgpuTarget
from .gpu_codegen import GpuFunctionEmitter, emit_gpu_module
from .layout import ArgLayout


class AmdgpuFunctionEmitter(GpuFunctionEmitter):
    """GpuFunctionEmitter for AMDGPU: wk.simt is refused with a CompileError at its line;
    `wk.global_thread_idx()` (the one simt value every backend has) is the thread's global id."""

    def visit_SimtOp(self, stmt: ir.SimtOp) -> None:
        if stmt.op.startswith("thread."):
            self.values[stmt] = self.op("add i32 %gid, 0") if self.thread_loop is not None else "0"
            return
        raise CompileError(f"wk.simt.{stmt.op}() is not implemented on the AMDGPU backend yet (see "
                           "docs/amdgpu.md)", stmt.loc)

    def shared_pointer(self, stmt: ir.GlobalPtr) -> None:
        raise CompileError("block-shared arrays (wk.simt.block.SharedArray) are not implemented on the AMDGPU "
                           "backend yet (see docs/amdgpu.md)", stmt.container.loc or stmt.loc)


def emit_amdgpu_module(kernel: ir.OffloadedKernel, layout: ArgLayout, target: AmdgpuTarget, prefix: str,
                       print_buffer: tuple[int, int], bounds_check: bool = False,
                       fast_math: bool = False) -> tuple[str, list[str], list]:
    """(LLVM IR text, one kernel name per task, bounds-checked sites) for one gfx processor."""
    return emit_gpu_module(kernel, layout, target, prefix, print_buffer, AmdgpuFunctionEmitter, bounds_check,
                           fast_math)
