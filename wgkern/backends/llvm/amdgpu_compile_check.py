"""The AMDGPU compile-check backend (`WK_ARCH=amdgpu-compile`): kernels run on the CPU backend, and every kernel
is also built for AMDGPU through the whole pipeline, for every processor of COMPILE_CHECK_PROCESSORS (gfx90a,
wave64; gfx1100, wave32): LLVM IR from the GPU kernel frame, an object from LLVM's amdgcn target, a code object
linked by ld.lld, and the code object checked (amdgpu_check.py) against the launch's argument layout and the
processor's limits.

The first kernel with adstacks also builds the launch-time sizing reducer's kernels (amdgpu_sizing_reducer.py),
which wk.amdgpu runs before launching such a kernel, for every processor.

So a test suite run under it passes only where every kernel it compiles builds into a valid AMDGPU code object
(a kernel the AMDGPU backend cannot build raises its CompileError at compile time, as `wk.amdgpu` would), and
its results are still checked, with the CPU computing them. Nothing runs on an AMD GPU. The AMDGPU layout is the
one the HIP backend launches with: the argument block of layout.py, with placeholder addresses where a device
address is baked into the code (the debug error word, the adstack context, the print buffer)."""
from __future__ import annotations

from wgkern.backends.adstack import collect_stacks
from wgkern.errors import ArchUnavailableError
from wgkern.ir import nodes as ir
from wgkern.ir.visitor import walk

from .amdgpu_check import KernelReport
from .amdgpu_compile import AmdgpuCodeObject, build_code_object
from .amdgpu_link import find_linker
from .amdgpu_sizing_reducer import reducer_code_object
from .amdgpu_target import COMPILE_CHECK_PROCESSORS
from .codegen import symbol_name
from .cpu import CpuBackend, CpuCompiledKernel
from .layout import build_layout

ARCH_NAME = "amdgpu-compile"
# Device addresses the code bakes in, for kernels that are built and never launched: distinct, aligned, nonzero.
_DEBUG_WORDS = (1 << 40, (1 << 40) + 64)
_ADSTACK_CONTEXT = 1 << 41
_PRINT_BUFFER = (1 << 42, 1 << 17)


def require_linker() -> None:
    """ArchUnavailableError naming what is missing where no ld.lld can be run."""
    if find_linker() is None:
        raise ArchUnavailableError(f"{ARCH_NAME} links AMDGPU code objects with ld.lld, and none was found: "
                                   "install ROCm, or `pip install 'wgkern[amdgpu]'` (ziglang bundles ld.lld), or "
                                   "point WK_LLD at an ld.lld (or zig) executable")


def build_for_processors(kernel: ir.OffloadedKernel, debug: bool, fast_math: bool,
                         use_cache: bool) -> list[AmdgpuCodeObject]:
    """The kernel's checked code object for every compile-check processor."""
    layout = build_layout(kernel, _DEBUG_WORDS if debug else None,
                          _ADSTACK_CONTEXT if any(collect_stacks(kernel)) else None)
    prints = any(isinstance(stmt, ir.Print) for task in kernel.tasks for stmt in walk(task.body))
    prefix = f"wk_{symbol_name(kernel.name)[:60]}"
    return [build_code_object(kernel, layout, processor, prefix, _PRINT_BUFFER if prints else (0, 0), debug,
                              fast_math, use_cache)
            for processor in COMPILE_CHECK_PROCESSORS]


class AmdgpuCompileCheckBackend(CpuBackend):
    """CpuBackend whose compile() also builds and checks the kernel for AMDGPU (module docstring). The offline
    cache keeps linked code objects (`amdgpu/`) as wk.init(offline_cache=...) says."""

    def __init__(self, threads: int | None = None, debug: bool = False, fast_math: bool = False,
                 device_memory_limit: int | None = None, offline_cache: bool = False):
        require_linker()
        super().__init__(threads, debug=debug, fast_math=fast_math, device_memory_limit=device_memory_limit,
                         offline_cache=offline_cache)
        self.code_objects: dict[str, list[AmdgpuCodeObject]] = {}     # kernel name -> its latest build
        self.reducer_reports: dict[str, tuple[KernelReport, ...]] = {}  # processor -> the sizing reducer's kernels

    def compile(self, kernel: ir.OffloadedKernel, origin: str | None = None) -> CpuCompiledKernel:
        compiled = super().compile(kernel, origin)        # the CPU's own refusals (wk.simt) come first
        self.code_objects[kernel.name] = build_for_processors(kernel, self.debug, self.fast_math,
                                                              self.offline_cache)
        if any(collect_stacks(kernel)) and not self.reducer_reports:
            # wk.amdgpu sizes this kernel's adstacks with its device reducer: that too builds for each processor
            self.reducer_reports = {processor: reducer_code_object(processor, self.offline_cache)[1]
                                    for processor in COMPILE_CHECK_PROCESSORS}
        return compiled

    def describe(self) -> str:
        return (f"{super().describe()}; every kernel also compiled and checked for AMDGPU "
                f"({', '.join(COMPILE_CHECK_PROCESSORS)})")
