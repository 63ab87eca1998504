"""The AMDGPU row of the GPU target table (target.GpuTarget), and what each supported gfx processor allows.

Kernels use the `amdgpu_kernel` calling convention and take the launch's argument block by reference in the
kernel-argument segment (`ptr addrspace(4) byref([S x i8])`, the one explicit argument HIP's
`hipModuleLaunchKernel` fills from its `HIP_LAUNCH_PARAM_BUFFER_POINTER`); the prelude casts it to the generic
pointer `%args` the shared codegen reads. Thread and block ids come from `llvm.amdgcn.workitem.id.x` and
`llvm.amdgcn.workgroup.id.x`; the block size and the grid size (in work-items) from the HSA dispatch packet
(`llvm.amdgcn.dispatch.ptr`: workgroup_size_x is the u16 at byte 4, grid_size_x the u32 at byte 12). Container
bases are loaded as addrspace(1) (global) pointers, shared arrays are addrspace(3) (LDS) globals and allocas
addrspace(5) (private); all are used through generic pointers, which LLVM's address-space inference turns back
into each space's instructions.

Atomics on device memory are at device (agent) scope: a kernel shares its containers with the rest of the device,
never with the host while it runs. Each `atomicrmw` says that the memory is coarse-grained and on this device
(`!amdgpu.no.fine.grained.memory`, `!amdgpu.no.remote.memory`: wgkern allocates with hipMalloc); without that LLVM
turns every operation but integer add and exchange into a compare-and-swap loop. With it LLVM makes each one
instruction where the processor has one (gfx90a: the integer ones, f32 add, f64 add, min and max; gfx1100: the
integer ones, f32 add, min and max) and a loop elsewhere (8- and 16-bit values, f16, gfx90a's f32 min and max,
gfx1100's f64). gfx90a's f32 atomic add flushes subnormal inputs and results to zero, so LLVM uses it only when
told that the denormal mode may be ignored (`!amdgpu.ignore.denormal.mode`), which wgkern does.

Math: ROCm's ocml bitcode is not linked; every math function (sin, exp, pow, atan2, ... at f32 and f64) is
wgkern's own, defined in the module as LLVM IR (soft_math.py). LLVM's AMDGPU backend lowers only a few f32 math
intrinsics itself (with less accuracy), fails on the rest with "no libcall available", and aborts the process
on f64 sin, so codegen never emits those intrinsics for this target."""
from __future__ import annotations

from dataclasses import dataclass

from . import soft_math
from .target import GpuTarget

TRIPLE = "amdgcn-amd-amdhsa"


@dataclass(frozen=True, slots=True)
class Processor:
    """Limits of one gfx processor that a compiled kernel must respect (AMD's ISA manuals, LLVM's
    AMDGPUUsage): registers per lane, LDS per workgroup, the wave width HIP compiles for by default, and the
    VGPR allocation granule the kernel descriptor counts in."""
    name: str
    wave_size: int
    max_vgprs: int           # architectural VGPRs plus AccVGPRs (gfx90a's unified file)
    max_sgprs: int           # as the metadata's .sgpr_count counts them: with VCC, FLAT_SCRATCH, XNACK_MASK
    max_lds_bytes: int
    vgpr_granule: int
    f32_atomic_add_flushes: bool     # global_atomic_add_f32 flushes f32 subnormals (LLVM asks for leave to use it)


PROCESSORS = {
    # MI200 (CDNA2): 102 addressable SGPRs plus VCC, FLAT_SCRATCH and XNACK_MASK (2 each)
    "gfx90a": Processor("gfx90a", 64, 512, 108, 64 * 1024, 8, True),
    # RX 7900 (RDNA3), wave32: 106 addressable SGPRs plus VCC
    "gfx1100": Processor("gfx1100", 32, 256, 108, 64 * 1024, 8, False),
}
COMPILE_CHECK_PROCESSORS = ("gfx90a", "gfx1100")

# the scope of a kernel's atomics, and what every `atomicrmw` says about the memory it touches (the module's `!0`
# is the empty node these flags take)
AGENT_SCOPE = ' syncscope("agent")'
DEVICE_MEMORY_METADATA = ", !amdgpu.no.fine.grained.memory !0, !amdgpu.no.remote.memory !0"


@dataclass(frozen=True, slots=True)
class AmdgpuTarget(GpuTarget):
    """AMDGPU for one gfx processor (its wave width)."""
    processor: str = "gfx90a"

    def math_symbol(self, name: str, bits: int) -> str | None:
        return soft_math.symbol(name, bits)

    def math_definitions(self, symbol: str) -> tuple[dict[str, str], list[str]]:
        return soft_math.definitions(symbol)

    def atomicrmw_metadata(self, operation: str, bits: int, fast_math: bool = False) -> str:
        # gfx90a's f32 add instruction flushes subnormals: used under fast_math only (which flushes them anyway,
        # as CUDA's .ftz forms do); without it the add stays a compare-and-swap loop, exact for subnormals
        if operation == "fadd" and bits == 32 and PROCESSORS[self.processor].f32_atomic_add_flushes and fast_math:
            return DEVICE_MEMORY_METADATA + ", !amdgpu.ignore.denormal.mode !0"
        return DEVICE_MEMORY_METADATA

    def spin_hint(self) -> tuple[str, str]:
        return "", ""

    def futex_syscall_number(self) -> int | None:
        return None

    def thread_registers(self) -> tuple[list[str], list[str]]:
        return ([
            "  %tid = call i32 @llvm.amdgcn.workitem.id.x()",
            "  %ctaid = call i32 @llvm.amdgcn.workgroup.id.x()",
            "  %dispatch = call ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()",
            "  %dispatch.wg = getelementptr inbounds i8, ptr addrspace(4) %dispatch, i64 4",
            "  %dispatch.wg16 = load i16, ptr addrspace(4) %dispatch.wg, align 4, !invariant.load !0",
            "  %ntid = zext i16 %dispatch.wg16 to i32",
            "  %dispatch.grid = getelementptr inbounds i8, ptr addrspace(4) %dispatch, i64 12",
            "  %dispatch.items = load i32, ptr addrspace(4) %dispatch.grid, align 4, !invariant.load !0",
            "  %nctaid = udiv i32 %dispatch.items, %ntid",
        ], [
            "declare i32 @llvm.amdgcn.workitem.id.x() nounwind readnone",
            "declare i32 @llvm.amdgcn.workgroup.id.x() nounwind readnone",
            "declare ptr addrspace(4) @llvm.amdgcn.dispatch.ptr() nounwind readnone",
        ])

    def kernel_signature(self, name: str, args_bytes: int) -> tuple[str, list[str]]:
        return (f"amdgpu_kernel void @{name}(ptr addrspace(4) byref([{args_bytes} x i8]) align 8 %args.kernarg)",
                ["  %args = addrspacecast ptr addrspace(4) %args.kernarg to ptr"])


def amdgpu_target(processor: str) -> AmdgpuTarget:
    """The target of a supported gfx processor (PROCESSORS), or ValueError naming the supported ones."""
    facts = PROCESSORS.get(processor)
    if facts is None:
        raise ValueError(f"unknown AMDGPU processor {processor!r}; supported: {', '.join(PROCESSORS)}")
    return AmdgpuTarget(f"amdgpu ({processor})", container_address_space=" addrspace(1)", fused_sincos=False,
                        aligned_stacks=True, wave_size=facts.wave_size, private_address_space=" addrspace(5)",
                        shared_memory=("AMDGPU", facts.max_lds_bytes), atomic_scope=AGENT_SCOPE,
                        processor=processor)
