"""The CUDA max-reducer's kernels: llvm/max_reducer.ll's bodies under the NVPTX wrappers
(llvm/max_reducer_nvptx.ll), compiled to PTX and loaded as a ReducerDevice (gpu_sizing_reducer.py)."""
from __future__ import annotations

from wgkern.resources import llvm_source

from .gpu_sizing_reducer import JOB_PARAMS_BYTES, generic_ir


def cuda_module() -> str:
    """The reducer module for NVPTX: the generic bodies under the kernel wrappers."""
    wrappers = llvm_source("max_reducer_nvptx.ll").replace("JOB_BYTES", str(JOB_PARAMS_BYTES))
    return generic_ir() + wrappers
