"""LLVM IR for the AMDGPU backend: gpu_codegen.py's kernel frame with the AMDGPU emitter and target.

The frame, statement lowerings, atomics, adstacks, random numbers and `print` are the ones CUDA uses; the target
(amdgpu_target.py) supplies the thread registers, the `amdgpu_kernel` signature, the address spaces, and the
atomics' device scope and memory metadata; amdgpu_simt.py lowers `wk.simt`, and its ds_bpermute shuffles combine
register reductions across the wave (64 lanes on gfx90a, 32 on gfx1100) before one atomic per wave
(gpu_codegen.flush_chunk_reductions)."""
from __future__ import annotations

from wgkern.ir import nodes as ir

from .amdgpu_simt import AmdgpuSimtLowering
from .amdgpu_target import AmdgpuTarget
from .gpu_codegen import GpuFunctionEmitter, emit_gpu_module
from .layout import ArgLayout


class AmdgpuFunctionEmitter(AmdgpuSimtLowering, GpuFunctionEmitter):
    """GpuFunctionEmitter for AMDGPU with wk.simt lowered to AMD's waves (amdgpu_simt.py) and shared arrays in
    LDS (gpu_shared.py)."""


def emit_amdgpu_module(kernel: ir.OffloadedKernel, layout: ArgLayout, target: AmdgpuTarget, prefix: str,
                       print_buffer: tuple[int, int], bounds_check: bool = False,
                       fast_math: bool = False) -> tuple[str, list[str], list]:
    """(LLVM IR text, one kernel name per task, bounds-checked sites) for one gfx processor."""
    return emit_gpu_module(kernel, layout, target, prefix, print_buffer, AmdgpuFunctionEmitter, bounds_check,
                           fast_math)
