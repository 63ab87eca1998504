"""The CUDA max-reducer's kernels: llvm/max_reducer.ll's bodies under the NVPTX wrappers
(llvm/max_reducer_nvptx.ll), compiled to PTX (ptx.py, kept in the offline cache) for the device's sm_XY."""
from __future__ import annotations

from typing import Any

from wgkern.resources import llvm_source

from . import ptx
from .gpu_sizing_reducer import JOB_PARAMS_BYTES, ReducerKernels, generic_ir


def cuda_module() -> str:
    """The reducer module for NVPTX: the generic bodies under the kernel wrappers."""
    wrappers = llvm_source("max_reducer_nvptx.ll").replace("JOB_BYTES", str(JOB_PARAMS_BYTES))
    return generic_ir() + wrappers


def cuda_reducer_kernels(backend: Any) -> ReducerKernels:
    """The reducer kernels of a CudaBackend, compiled for its device."""
    return ReducerKernels(backend, ptx.cached_ptx(cuda_module(), backend.arch, backend.offline_cache))
