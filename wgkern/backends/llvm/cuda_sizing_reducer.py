"""The CUDA max-reducer's kernels: llvm/max_reducer.ll's bodies under the NVPTX wrappers
(llvm/max_reducer_nvptx.ll), compiled to PTX and loaded as a ReducerDevice (gpu_sizing_reducer.py)."""
from __future__ import annotations

import ctypes
from typing import Any

from wgkern.resources import llvm_source

from .gpu_sizing_reducer import JOB_PARAMS_BYTES, MAX_BLOCKS_PER_SM, THREADS, generic_ir


def cuda_module() -> str:
    """The reducer module for NVPTX: the generic bodies under the kernel wrappers."""
    wrappers = llvm_source("max_reducer_nvptx.ll").replace("JOB_BYTES", str(JOB_PARAMS_BYTES))
    return generic_ir() + wrappers


class ReducerKernels:
    """The compiled reducer module of one CudaBackend (both kernels), as a ReducerDevice."""

    def __init__(self, backend: Any):
        from wgkern.backends.llvm import ptx
        self.backend = backend
        code = ptx.cached_ptx(cuda_module(), backend.arch, backend.offline_cache)
        self.module = backend.driver.load_module(code)
        self.functions = {"slice": backend.driver.function(self.module, "wk_slice_max"),
                          "job": backend.driver.function(self.module, "wk_job_max")}
        self.blocks_cap = max(1, backend.info.multiprocessors * MAX_BLOCKS_PER_SM)
        self.runs = {"slice": 0, "job": 0}       # launches of each kernel (tests, benchmarks)
        self._workspace: Any = None

    def workspace(self, nbytes: int) -> int:
        """One buffer for a round's results, code and address table, grown by doubling and freed with the
        backend's memory (a cuMemAlloc + cuMemFree per round cost more than the reductions)."""
        if self._workspace is None or self._workspace.nbytes < nbytes:
            if self._workspace is not None:
                self.backend.free(self._workspace)
                self._workspace = None
            size = max(4096, 1 << (nbytes - 1).bit_length())
            self._workspace = self.backend.allocate(size)
        return self._workspace.address

    def upload(self, address: int, data: bytes) -> None:
        staged = ctypes.create_string_buffer(data, len(data))
        self.backend.driver.upload(address, ctypes.addressof(staged), len(data))

    def download(self, address: int, nbytes: int) -> bytes:
        out = ctypes.create_string_buffer(nbytes)
        self.backend.driver.download(ctypes.addressof(out), address, nbytes)
        return out.raw

    def run(self, entry: str, params: bytes, points: int) -> None:
        blocks = max(1, min(-(-points // THREADS), self.blocks_cap))
        self.runs[entry] += 1
        self.backend.driver.launch(self.functions[entry], blocks, THREADS, params)
