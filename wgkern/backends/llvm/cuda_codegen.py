"""LLVM IR for the CUDA backend: gpu_codegen.py's kernel frame with CUDA's emitter.

CudaFunctionEmitter lowers wk.simt to CUDA (cuda_simt.py) and combines register reductions (reductions.py)
across each warp at the kernel's end, flushing them with one atomic per warp. Kernels take the argument block
`byval` and are marked with `!nvvm.annotations` (target.CudaTarget)."""
from __future__ import annotations

from wgkern.backends.reductions import COMBINE
from wgkern.ir import nodes as ir

from .cuda_simt import CudaSimtLowering
from .gpu_codegen import (  # noqa: F401 - the CUDA backend and its tests import the frame's constants from here
    MAX_THREADS_PER_BLOCK, PRINT_HEADER_WORDS, THREADS_PER_BLOCK, GpuFunctionEmitter, block_size, emit_gpu_module)
from .layout import ArgLayout
from .ops import BINARY
from .target import GpuTarget
from .types import llvm_type


class CudaFunctionEmitter(CudaSimtLowering, GpuFunctionEmitter):
    """GpuFunctionEmitter with wk.simt lowered to CUDA (cuda_simt.py) and register reductions combined across
    each warp."""

    def flush_chunk_reductions(self) -> None:
        """At a range kernel's end: combine each register across the warp (butterfly shuffles), then lane 0
        applies the warp's one atomic: `loss[None] += v` over a million indices makes 32x fewer atomics on
        one address than a flush per thread. Every thread of a block reaches this point (a parallel body's
        `return` and `continue` end only its index), so the shuffles see full warps. 16-bit values flush per
        thread."""
        for reduction, register in self.chunk_registers.items():
            dtype = reduction.dtype
            if dtype.bits not in (32, 64):
                self.flush_chunk_reductions_of([(reduction, register)])
                continue
            ty = llvm_type(dtype)
            total = self.op(f"load {ty}, ptr {register}")
            spelling = BINARY[dtype.kind].get(COMBINE[reduction.op])
            for offset in (16, 8, 4, 2, 1):
                other = self.shuffle_xor(total, dtype, offset)
                total = self.apply(spelling, reduction.ptr, dtype, [total, other])
            lane = self.op("and i32 %tid, 31")
            first, rest = self.label("warp.first"), self.label("warp.rest")
            self.cond_branch(self.op(f"icmp eq i32 {lane}, 0"), first, rest)
            self.start_block(first)
            self.visit_GlobalPtr(reduction.ptr)
            self.in_range_only(reduction.ptr, None, lambda: self.emit_atomic(
                reduction.ptr, reduction.op, dtype, self.value(reduction.ptr), total))
            self.branch(rest)
            self.start_block(rest)

    def shuffle_xor(self, value: str, dtype, offset: int) -> str:
        """The value of lane (this lane ^ offset), as 32-bit shuffles of its bits."""
        callee = self.module.intrinsic("llvm.nvvm.shfl.sync.bfly.i32", "i32", ["i32", "i32", "i32", "i32"])
        if dtype.bits == 32:
            bits = self.op(f"bitcast {llvm_type(dtype)} {value} to i32") if dtype.is_float else value
            moved = self.op(f"call i32 {callee}(i32 -1, i32 {bits}, i32 {offset}, i32 31)")
            return self.op(f"bitcast i32 {moved} to {llvm_type(dtype)}") if dtype.is_float else moved
        wide = self.op(f"bitcast {llvm_type(dtype)} {value} to i64") if dtype.is_float else value
        low = self.op(f"trunc i64 {wide} to i32")
        high = self.op(f"trunc i64 {self.op(f'lshr i64 {wide}, 32')} to i32")
        low = self.op(f"zext i32 {self.op(f'call i32 {callee}(i32 -1, i32 {low}, i32 {offset}, i32 31)')} to i64")
        high = self.op(f"zext i32 {self.op(f'call i32 {callee}(i32 -1, i32 {high}, i32 {offset}, i32 31)')} to i64")
        joined = self.op(f"or i64 {self.op(f'shl i64 {high}, 32')}, {low}")
        return self.op(f"bitcast i64 {joined} to {llvm_type(dtype)}") if dtype.is_float else joined


def emit_cuda_module(kernel: ir.OffloadedKernel, layout: ArgLayout, target: GpuTarget, prefix: str,
                     print_buffer: tuple[int, int], bounds_check: bool = False,
                     fast_math: bool = False) -> tuple[str, list[str], list]:
    """(LLVM IR text, one kernel name per task, bounds-checked sites) for CUDA."""
    return emit_gpu_module(kernel, layout, target, prefix, print_buffer, CudaFunctionEmitter, bounds_check,
                           fast_math)

