"""LLVM IR for the AMDGPU backend: gpu_codegen.py's kernel frame with the AMDGPU emitter and target.

The frame, statement lowerings, atomics, adstacks, random numbers and `print` are the ones CUDA uses; the target
(amdgpu_target.py) supplies the thread registers, the `amdgpu_kernel` signature and the address spaces. What
this emitter leaves out for now: the voting block barriers and the wave (warp, subgroup) operations of `wk.simt`
raise a CompileError naming the call, and register reductions flush one atomic per thread (no cross-lane
combine)."""
from __future__ import annotations

from wgkern.errors import CompileError
from wgkern.ir import nodes as ir
from wgkern.passes.analysis import FENCE_OPS

from .amdgpu_target import AmdgpuTarget
from .gpu_codegen import GpuFunctionEmitter, emit_gpu_module
from .gpu_shared import SharedArrayLowering
from .layout import ArgLayout


class AmdgpuFunctionEmitter(SharedArrayLowering, GpuFunctionEmitter):
    """GpuFunctionEmitter for AMDGPU with the block-level part of wk.simt: shared arrays in LDS (gpu_shared.py),
    `block.sync` (a workgroup release fence, `llvm.amdgcn.s.barrier`, an acquire fence), `block.mem_sync`
    (a workgroup fence), `grid.memfence` (an agent fence), thread and block indices. The voting barriers and the
    wave operations raise a CompileError naming the call."""

    def visit_SimtOp(self, stmt: ir.SimtOp) -> None:
        group, name = stmt.op.split(".")
        if group == "thread":           # wk.global_thread_idx(): 0 in serial code, as the one thread there
            self.values[stmt] = self.op("add i32 %gid, 0") if self.thread_loop is not None else "0"
            return
        if self.thread_loop is None and stmt.op not in FENCE_OPS:
            raise CompileError(f"wk.simt.{stmt.op}() works on the threads of a parallel loop", stmt.loc)
        if stmt.op == "block.sync":
            self.emit('fence syncscope("workgroup") release')
            self.emit(f"call void {self.module.intrinsic('llvm.amdgcn.s.barrier', 'void', [])}()")
            self.emit('fence syncscope("workgroup") acquire')
        elif stmt.op in ("block.mem_sync", "block.mem_fence"):
            self.emit('fence syncscope("workgroup") seq_cst')
        elif group == "grid":
            self.emit('fence syncscope("agent") seq_cst')
        elif stmt.op == "block.thread_idx":
            self.values[stmt] = self.op("add i32 %tid, 0")
        elif stmt.op == "block.global_thread_idx":
            self.values[stmt] = self.op("add i32 %gid, 0")
        else:
            raise CompileError(f"wk.simt.{stmt.op}() is not implemented on the AMDGPU backend yet (see "
                               "docs/amdgpu.md)", stmt.loc)


def emit_amdgpu_module(kernel: ir.OffloadedKernel, layout: ArgLayout, target: AmdgpuTarget, prefix: str,
                       print_buffer: tuple[int, int], bounds_check: bool = False,
                       fast_math: bool = False) -> tuple[str, list[str], list]:
    """(LLVM IR text, one kernel name per task, bounds-checked sites) for one gfx processor."""
    return emit_gpu_module(kernel, layout, target, prefix, print_buffer, AmdgpuFunctionEmitter, bounds_check,
                           fast_math)
