"""The AMDGPU max-reducer's kernels: llvm/max_reducer.ll's target-independent bodies (gpu_sizing_reducer.py, the
ones CUDA runs) under AMDGPU kernel wrappers (llvm/max_reducer_amdgpu.ll), built for one gfx processor through the
pipeline every AMDGPU kernel takes (amdgpu_compile.linked_code_object: object, ld.lld, offline cache) and checked
(amdgpu_check.py: symbols, kernel descriptors, wave width, registers, and one `by_value` argument of each kernel's
parameter block).

The wrappers are `amdgpu_kernel`s taking their parameter block in the kernel-argument segment (passed whole by
hipModuleLaunchKernel, as every wgkern kernel's argument block is) and computing the thread's first point and the
grid's stride from the workitem and workgroup ids and the HSA dispatch packet. The bodies' allocas are generic
(the host JIT runs them too); on AMDGPU stack memory is the private address space, so `private_allocas` moves
each into it and casts it back to a generic pointer; their atomics (a u32 max per thread, an `or` of the flags)
are relaxed at system scope, which `device_atomics` makes device scope on coarse-grained device memory, as a
kernel's own atomics are (amdgpu_target.py), so each is one instruction instead of a compare-and-swap loop.
Written against HIP's documented API and not run on an AMD GPU (docs/amdgpu.md)."""
from __future__ import annotations

import functools
import re
import struct
from typing import Any

from wgkern.errors import InternalCompilerError
from wgkern.resources import llvm_source

from .amdgpu_check import ExpectedKernel, KernelReport, check_code_object
from .amdgpu_compile import linked_code_object
from .amdgpu_target import AGENT_SCOPE, DEVICE_MEMORY_METADATA
from .gpu_sizing_reducer import JOB_PARAMS_BYTES, SLICE_PARAMS, THREADS, ReducerKernels, generic_ir

# each kernel: (symbol, bytes of its parameter block)
KERNELS = {"slice": ("wk_slice_max", struct.calcsize(SLICE_PARAMS)), "job": ("wk_job_max", JOB_PARAMS_BYTES)}
_ALLOCA = re.compile(r"^(\s*)(%[\w.]+) = alloca (.+)$", re.MULTILINE)
_ATOMICRMW = re.compile(r"^(\s*%[\w.]+ = atomicrmw \w+ ptr %[\w.]+, i32 %[\w.]+) monotonic, (align \d+)$",
                        re.MULTILINE)


def private_allocas(ir_text: str) -> str:
    """`%x = alloca T, align N` as an alloca in AMDGPU's private address space (5) cast to the generic `%x`."""
    return _ALLOCA.sub(r"\1\2.private = alloca \3, addrspace(5)\n"
                       r"\1\2 = addrspacecast ptr addrspace(5) \2.private to ptr", ir_text)


def device_atomics(ir_text: str) -> str:
    """Each `atomicrmw ... monotonic, align N` of the bodies at device scope, with the metadata saying that the
    memory is coarse-grained and on this device (amdgpu_target.DEVICE_MEMORY_METADATA; the wrappers define its
    `!0`); InternalCompilerError where the bodies hold an atomicrmw of another form, which would stay a loop
    at system scope."""
    rewritten, count = _ATOMICRMW.subn(rf"\1{AGENT_SCOPE} monotonic, \2{DEVICE_MEMORY_METADATA}", ir_text)
    total = len(re.findall(r"= atomicrmw ", ir_text))
    if count != total:
        raise InternalCompilerError(f"the sizing reducer's bodies hold {total} atomicrmw instructions, {count} of "
                                    "them of the form device_atomics rewrites")
    return rewritten


def amdgpu_module() -> str:
    """The reducer module for AMDGPU (any gfx processor): the generic bodies under the kernel wrappers."""
    wrappers = llvm_source("max_reducer_amdgpu.ll").replace("JOB_BYTES", str(JOB_PARAMS_BYTES))
    return device_atomics(private_allocas(generic_ir())) + wrappers


@functools.lru_cache(maxsize=None)
def _built(processor: str, use_cache: bool) -> tuple[bytes, tuple[KernelReport, ...]]:
    data = linked_code_object(amdgpu_module(), processor, use_cache)
    reports = [check_code_object(data, processor, [ExpectedKernel(name, THREADS, True)], size)[0]
               for name, size in KERNELS.values()]
    return data, tuple(reports)


def reducer_code_object(processor: str, use_cache: bool = True) -> tuple[bytes, tuple[KernelReport, ...]]:
    """(the reducer's checked code object for `processor`, one report per kernel of KERNELS); CompileError where a
    check fails. Built once per process and processor (the module does not depend on the program)."""
    return _built(processor, use_cache)


def amdgpu_reducer_kernels(backend: Any) -> ReducerKernels:
    """The reducer kernels of an AmdgpuBackend, built for its device's processor."""
    data, _ = reducer_code_object(backend.arch, backend.offline_cache)
    return ReducerKernels(backend, data)
