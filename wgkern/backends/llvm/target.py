"""Target hooks: what differs between the LLVM targets that share codegen.py (CPU and CUDA; AMDGPU later).

A Target names math-library functions, the spin-wait hint, address spaces and function attributes. The CPU
target calls the process's libm (symbols resolve from the running Python process); the CUDA target calls
libdevice's `__nv_*` functions (ptx.py links them) and keeps pointers generic (PTX addresses global memory
through generic pointers; the backend's loads are cheap either way)."""
from __future__ import annotations

import platform
import sys
from dataclasses import dataclass


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

    def math_symbol(self, name: str, bits: int) -> str:
        """libm spelling: sinf for f32, sin for f64 (f16 is computed in f32 by codegen)."""
        return name + "f" if bits == 32 else name

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
class CudaTarget(Target):
    """NVPTX: libdevice math (`__nv_sinf` for f32, `__nv_sin` for f64), no fused CPU sincos helper."""

    def math_symbol(self, name: str, bits: int) -> str:
        return "__nv_" + (name + "f" if bits == 32 else name)

    def spin_hint(self) -> tuple[str, str]:
        return "", ""

    def futex_syscall_number(self) -> int | None:
        return None


CUDA_TARGET = CudaTarget("cuda", fused_sincos=False, aligned_stacks=True)
