"""One kernel through the whole AMDGPU pipeline: LLVM IR (amdgpu_codegen.py) -> object (amdgpu_object.py) ->
linked code object (amdgpu_link.py) -> checked (amdgpu_check.py), for one gfx processor. `linked_code_object`
is the middle of it for any module of LLVM IR (the sizing reducer's, amdgpu_sizing_reducer.py).

Linked code objects are kept in the offline cache (`amdgpu/`, disk_cache.py) keyed by the IR text and
the processor; a cached one is checked again when read (the checks are cheap and the expectations come from
the kernel, not from the cache)."""
from __future__ import annotations

from dataclasses import dataclass

from wgkern.ir import nodes as ir
from wgkern import disk_cache

from .amdgpu_check import ExpectedKernel, KernelReport, check_code_object
from .amdgpu_codegen import emit_amdgpu_module
from .amdgpu_link import link_code_object
from .amdgpu_object import compile_object
from .amdgpu_target import amdgpu_target
from .gpu_codegen import block_size
from .layout import ArgLayout


@dataclass(frozen=True, slots=True)
class AmdgpuCodeObject:
    """A kernel's linked, checked code object for one processor: one GPU kernel per task, in task order."""
    processor: str
    ir_text: str
    kernel_names: list[str]
    data: bytes
    reports: list[KernelReport]
    bounds_sites: list


def build_code_object(kernel: ir.OffloadedKernel, layout: ArgLayout, processor: str, prefix: str,
                      print_buffer: tuple[int, int], bounds_check: bool = False, fast_math: bool = False,
                      use_cache: bool = True) -> AmdgpuCodeObject:
    """Compile, link and check `kernel` for `processor`; CompileError on a kernel the backend cannot build or
    a code object that fails a check."""
    target = amdgpu_target(processor)
    text, names, sites = emit_amdgpu_module(kernel, layout, target, prefix, print_buffer, bounds_check, fast_math)
    data = linked_code_object(text, processor, use_cache)
    expected = [ExpectedKernel(name, block_size(task), task.kind == "range")
                for name, task in zip(names, kernel.tasks)]
    reports = check_code_object(data, processor, expected, max(layout.size, 8))
    return AmdgpuCodeObject(processor, text, names, data, reports, sites)


def linked_code_object(ir_text: str, processor: str, use_cache: bool = True) -> bytes:
    """The code object of a module's LLVM IR for `processor`, compiled and linked (unchecked), or the one the
    offline cache kept for the same IR, processor and LLVM."""
    key = ""
    if use_cache:
        import llvmlite
        key = disk_cache.cache_key(ir_text, processor, llvmlite.__version__)
        data = disk_cache.load("amdgpu", key, ".hsaco")
        if data is not None:
            return data
    obj, _ = compile_object(ir_text, processor)
    data = link_code_object(obj)
    if use_cache:
        disk_cache.store("amdgpu", key, ".hsaco", data)
    return data
