"""AmdgpuBackend (`wk.amdgpu`): the CUDA backend's runtime (cuda.py: buffers, argument blocks, grids, adstack heap,
print buffer, waits) driving the HIP runtime (hip_driver.py), with kernels compiled, linked and checked by
amdgpu_compile.py for the device's gfx processor. Written against HIP's documented API and NOT run on an AMD GPU
(docs/amdgpu.md).

What differs from CUDA: each kernel's module is a linked code object for the device's processor (one of
amdgpu_target.PROCESSORS, else ArchUnavailableError); launch-time sizing reduces bounds on the device with the
reducer kernels CUDA runs, built for AMDGPU (amdgpu_sizing_reducer.py); `source(optimized=True)` is the LLVM IR."""
from __future__ import annotations

import time
from typing import Any

from wgkern.errors import ArchUnavailableError

from . import hip_driver
from .amdgpu_compile import build_code_object
from .amdgpu_target import PROCESSORS
from .cuda import CudaBackend, CudaCompiledKernel


class AmdgpuCompiledKernel(CudaCompiledKernel):
    """One kernel's code object on one AmdgpuBackend."""

    def build_module(self, prefix: str, print_buffer: tuple[int, int]) -> tuple[list[str], float]:
        backend = self.backend
        started = time.perf_counter()
        # kernels that print have the print buffer's address in their code: not worth caching
        built = build_code_object(self.kernel, self.layout, backend.arch, prefix, print_buffer, backend.debug,
                                  backend.fast_math, backend.offline_cache and not self.has_prints)
        self.ir_text, self.bounds_sites, self.code_object = built.ir_text, built.bounds_sites, built
        self.ptx = ""                        # CUDA's field; the code object is `code_object.data`
        self.module = backend.driver.load_module(built.data)
        return built.kernel_names, started

    def source(self, optimized: bool = False) -> str:
        """The LLVM IR as generated (`optimized=True`: the same; the code object is binary)."""
        return self.ir_text


class AmdgpuBackend(CudaBackend):
    """Device `device` of the HIP runtime."""

    name = "amdgpu"
    kernel_class = AmdgpuCompiledKernel

    def reducer_kernels(self) -> Any:
        """The sizing reducer's kernels as a checked code object for this device's processor."""
        from .amdgpu_sizing_reducer import amdgpu_reducer_kernels
        return amdgpu_reducer_kernels(self)

    def open_driver(self, ordinal: int) -> Any:
        return hip_driver.driver(ordinal)

    def device_loops(self, schedule: list[Any]) -> Any | None:
        """None: a graph kernel's loops are run by the host (HIP graphs have no conditional nodes)."""
        return None

    def shared_torch_device(self, ordinal: int) -> tuple[str, int] | None:
        """None: sharing ROCm torch's memory (its device type is also "cuda") is not checked on AMD hardware."""
        return None

    def shared_memory_bytes(self) -> int | None:
        return PROCESSORS[self.arch].max_lds_bytes      # LDS per workgroup

    def device_arch(self) -> str:
        processor = self.info.processor
        if processor not in PROCESSORS:
            raise ArchUnavailableError(f"wk.amdgpu compiles for {', '.join(PROCESSORS)}; this GPU is {processor}")
        return processor

    def describe(self) -> str:
        return f"amdgpu on {self.info.summary}"
