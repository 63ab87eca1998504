"""Target hooks: what differs between the LLVM targets that share codegen.py (CPU, CUDA and AMDGPU).

A Target names math-library functions, the spin-wait hint, address spaces, function attributes and how atomics
are spelled (their memory scope, and metadata about the memory they touch). The CPU
target calls the process's libm (symbols resolve from the running Python process); the CUDA target defines its f32
sin and cos in the module (trig_f32.py), calls libdevice's `__nv_*` functions for the rest (ptx.py links them)
and keeps pointers generic (PTX addresses global memory
through generic pointers; the backend's loads are cheap either way).

A GpuTarget adds what the GPU kernel frame (cuda_codegen.py) needs: the thread and block registers, the kernel's
signature and how kernels are marked, the wave width, and the address space of allocas. CUDA and AMDGPU are the
two rows of that table; the AMDGPU one (amdgpu_target.py) is parameterised by the gfx processor."""
from __future__ import annotations

import platform
import sys
from dataclasses import dataclass

from . import trig_f32


@dataclass(frozen=True, slots=True)
class Target:
    """Per-target spelling used by codegen and the worker pool."""
    name: str
    global_address_space: str = ""          # e.g. " addrspace(1)" on GPUs
    function_attributes: str = "nounwind"
    # libm functions as LLVM sees them: pure (we never read errno), so calls CSE, hoist out of loops, and
    # sin + cos of one value fuse into one sincos call
    math_attributes: str = "nounwind willreturn memory(none)"
    # f32 sin and cos of one value computed together by one runtime function (sincos.py), not by libm
    fused_sincos: bool = True
    # adstack elements naturally aligned in the heap (slot-major layouts with aligned bases); else byte-aligned
    aligned_stacks: bool = False
    # alignment (bytes) of a wide access (VectorLoad/VectorStore, wide_access.py): containers passed from host
    # memory may start at any element, device allocations start on 256-byte boundaries (GpuTarget)
    wide_access_align: int = 4
    # LLVM intrinsics that take fast_math's flags at f32, so the target may use its hardware approximation
    # (CUDA: llvm.sqrt becomes sqrt.approx.f32, within 2^-23 relative, and 1/sqrt rsqrt.approx.f32, within
    # 2^-22.9, where the correctly rounded sqrt.rn.f32 is a dozen instructions with a branch)
    approximate_f32_intrinsics: frozenset[str] = frozenset()
    # attributes the module's functions take under fast_math, after function_attributes
    fast_math_function_attributes: str = ""
    # memory scope of the atomics a kernel makes on device memory, as LLVM spells it before the ordering
    # (' syncscope("agent")'); "" is LLVM's default, the whole system (CPU, CUDA)
    atomic_scope: str = ""
    # float atomic subtraction made as the atomic addition of the negated value, where the target has an add
    # instruction and no subtract (x - v and x + (-v) are the same IEEE operation, rounding included)
    atomic_fsub_as_fadd: bool = False

    def math_symbol(self, name: str, bits: int) -> str | None:
        """libm spelling: sinf for f32, sin for f64 (f16 is computed in f32 by codegen); None where the target
        has no implementation of the function at that width (codegen raises a CompileError naming it)."""
        return name + "f" if bits == 32 else name

    def math_definitions(self, symbol: str) -> tuple[dict[str, str], list[str]]:
        """({name: definition}, declarations) the module must hold for a call to `symbol`, where the target
        defines its math functions in the module itself; ({}, []) where they are declared and linked."""
        return {}, []

    def atomicrmw_metadata(self, operation: str, bits: int, fast_math: bool = False) -> str:
        """Metadata attachments (", !name !0, ...") of an `atomicrmw <operation>` on a `bits`-bit element of
        device memory: facts about that memory which let the target make the operation one instruction; ""
        where the target needs none. `fast_math`: the kernel allows f32 subnormals to flush to zero."""
        return ""

    def spin_hint(self) -> tuple[str, str]:
        """(call instruction, declaration) of the CPU's spin-wait hint, or ('', '') if none."""
        machine = platform.machine().lower()
        if machine in ("x86_64", "amd64", "i686"):
            return "call void @llvm.x86.sse2.pause()", "declare void @llvm.x86.sse2.pause()"
        if machine in ("aarch64", "arm64"):
            return "call void @llvm.aarch64.hint(i32 1)", "declare void @llvm.aarch64.hint(i32)"
        return "", ""

    def futex_syscall_number(self) -> int | None:
        """SYS_futex on Linux (x86_64: 202, aarch64: 98); None where workers poll with usleep instead."""
        if not sys.platform.startswith("linux"):
            return None
        return {"x86_64": 202, "amd64": 202, "aarch64": 98, "arm64": 98}.get(platform.machine().lower())


CPU_TARGET = Target("cpu")


@dataclass(frozen=True, slots=True)
class GpuTarget(Target):
    """A GPU target of the kernel frame (cuda_codegen.py): one LLVM kernel per task, its argument block passed
    whole as the kernel's parameters. `wave_size`: lanes that run in lock step (the CUDA warp, the AMD wave);
    `private_address_space`: where allocas live (" addrspace(5)" on AMDGPU; codegen casts them to generic);
    `shared_memory`: who sets the limit on a block's shared arrays, and the limit."""
    wave_size: int = 32
    private_address_space: str = ""
    shared_memory: tuple[str, int] = ("CUDA", 48 * 1024)   # (whose limit, bytes of static shared memory a block has)
    container_address_space: str = ""       # where container bases point (codegen.container_base), if not generic
    wide_access_align: int = 16             # every container is a whole device allocation
    # PTX and the AMDGPU ISAs have float atomic adds and no subtract: LLVM would make `atomicrmw fsub` a
    # compare-and-swap loop, which threads updating one element run one after another
    atomic_fsub_as_fadd: bool = True

    def thread_registers(self) -> tuple[list[str], list[str]]:
        """(entry instructions defining i32 %tid, %ctaid, %ntid, %nctaid, their declarations)."""
        raise NotImplementedError

    def kernel_signature(self, name: str, args_bytes: int) -> tuple[str, list[str]]:
        """(the kernel's `define` signature, entry instructions that make the argument block the generic
        pointer %args)."""
        raise NotImplementedError

    def module_trailer(self, kernels: list[str]) -> list[str]:
        """Lines after the module's functions that mark `kernels` as kernels (none where the calling
        convention does)."""
        return []


@dataclass(frozen=True, slots=True)
class CudaTarget(GpuTarget):
    """NVPTX: f32 sin and cos defined in the module (trig_f32.py: a fast path inlined at each call, the
    large-argument reduction shared), every other math function from libdevice (`__nv_expf` for f32, `__nv_sin`
    for f64), no fused CPU sincos helper; thread and block registers from `llvm.nvvm.read.ptx.sreg.*`; kernels
    take the argument block `byval` and are marked with `!nvvm.annotations`."""

    def math_symbol(self, name: str, bits: int) -> str | None:
        return trig_f32.symbol(name, bits) or "__nv_" + (name + "f" if bits == 32 else name)

    def math_definitions(self, symbol: str) -> tuple[dict[str, str], list[str]]:
        return trig_f32.definitions(symbol) if symbol.startswith(trig_f32.PREFIX) else ({}, [])

    def thread_registers(self) -> tuple[list[str], list[str]]:
        names = ("tid", "ctaid", "ntid", "nctaid")
        return ([f"  %{r} = call i32 @llvm.nvvm.read.ptx.sreg.{r}.x()" for r in names],
                [f"declare i32 @llvm.nvvm.read.ptx.sreg.{r}.x() nounwind readnone" for r in names])

    def kernel_signature(self, name: str, args_bytes: int) -> tuple[str, list[str]]:
        return f"void @{name}(ptr byval([{args_bytes} x i8]) align 8 %args)", []

    def module_trailer(self, kernels: list[str]) -> list[str]:
        annotations = [f"!{k + 1} = !{{ptr @{name}, !\"kernel\", i32 1}}" for k, name in enumerate(kernels)]
        marks = ", ".join(f"!{k + 1}" for k in range(len(kernels)))
        return [f"!nvvm.annotations = !{{{marks}}}", *annotations, ""]

    def spin_hint(self) -> tuple[str, str]:
        return "", ""

    def futex_syscall_number(self) -> int | None:
        return None


# f32 subnormal inputs and results read and become zeros of their sign (PTX's .ftz forms, as Quadrants' fast_math
# and GPUs' Vulkan drivers do): sqrt.approx.ftz.f32 and rcp.approx.ftz.f32 are one instruction each, the IEEE
# forms scale around it
FLUSH_F32_SUBNORMALS = '"denormal-fp-math-f32"="preserve-sign,preserve-sign"'
CUDA_TARGET = CudaTarget("cuda", fused_sincos=False, aligned_stacks=True,
                         approximate_f32_intrinsics=frozenset({"llvm.sqrt"}),
                         fast_math_function_attributes=FLUSH_F32_SUBNORMALS)
