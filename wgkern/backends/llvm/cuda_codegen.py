"""LLVM IR for the CUDA backend: gpu_codegen.py's kernel frame with CUDA's emitter.

CudaFunctionEmitter lowers wk.simt to CUDA (cuda_simt.py); register reductions (reductions.py) are combined across
each 32-lane warp with its shuffles and flushed with one atomic per warp (gpu_codegen.py). Kernels take the
argument block `byval` and are marked with `!nvvm.annotations` (target.CudaTarget)."""
from __future__ import annotations

from wgkern.ir import nodes as ir

from .cuda_simt import CudaSimtLowering
from .gpu_codegen import (  # noqa: F401 - the CUDA backend and its tests import the frame's constants from here
    MAX_THREADS_PER_BLOCK, PRINT_HEADER_WORDS, THREADS_PER_BLOCK, GpuFunctionEmitter, block_size, emit_gpu_module)
from .layout import ArgLayout
from .target import GpuTarget


class CudaFunctionEmitter(CudaSimtLowering, GpuFunctionEmitter):
    """GpuFunctionEmitter with wk.simt lowered to CUDA (cuda_simt.py), whose warp shuffles also combine register
    reductions across each warp (gpu_codegen.flush_chunk_reductions)."""


def emit_cuda_module(kernel: ir.OffloadedKernel, layout: ArgLayout, target: GpuTarget, prefix: str,
                     print_buffer: tuple[int, int], bounds_check: bool = False,
                     fast_math: bool = False) -> tuple[str, list[str], list]:
    """(LLVM IR text, one kernel name per task, bounds-checked sites) for CUDA."""
    return emit_gpu_module(kernel, layout, target, prefix, print_buffer, CudaFunctionEmitter, bounds_check,
                           fast_math)

