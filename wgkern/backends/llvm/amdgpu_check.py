"""Checks of a linked AMDGPU code object against the kernels wgkern meant to build and the processor's limits.

`check_code_object` reads the ELF (amdgpu_elf.py) and raises a CompileError naming the kernel and the failed
fact unless, for every expected kernel:
- the code object is for the processor (`amdhsa.target`), the kernel's function symbol and its 64-byte kernel
  descriptor `<kernel>.kd` exist, and the descriptor's entry offset leads to the function;
- its amdhsa metadata names the descriptor, and its explicit arguments are exactly the launch's argument block:
  one `by_value` argument at offset 0 of the block's size (layout.py), within a kernel-argument segment whose
  size the descriptor repeats;
- the wave width is the processor's (metadata and the descriptor's wave32 bit); VGPRs (with AccVGPRs), SGPRs
  and LDS are within the processor's limits, the descriptor's VGPR blocks cover the VGPRs used, and its LDS and
  scratch sizes match the metadata; the maximum workgroup size admits the task's block;
- a range kernel's descriptor enables the dispatch pointer its block and grid sizes are read from.
It returns what was found per kernel (registers, LDS, scratch, spills) for reports."""
from __future__ import annotations

from dataclasses import dataclass

from wgkern.errors import CompileError

from .amdgpu_elf import CodeObject, CodeObjectError, read_code_object
from .amdgpu_target import PROCESSORS


@dataclass(frozen=True, slots=True)
class KernelReport:
    name: str
    vgprs: int
    agprs: int
    sgprs: int
    lds_bytes: int
    scratch_bytes: int
    spills: int


@dataclass(frozen=True, slots=True)
class ExpectedKernel:
    """A kernel the code object must hold: its symbol, the threads per block it is launched with, and whether
    it reads block and grid sizes from the dispatch packet (range kernels do)."""
    name: str
    block: int
    reads_dispatch: bool


def check_code_object(data: bytes, processor: str, kernels: list[ExpectedKernel],
                      args_bytes: int) -> list[KernelReport]:
    limits = PROCESSORS[processor]
    try:
        code = read_code_object(data)
    except (CodeObjectError, IndexError, ValueError) as exc:
        raise CompileError(f"the AMDGPU code object for {processor} cannot be read: {exc}") from exc
    target = str(code.metadata.get("amdhsa.target", ""))
    if target.split("--")[-1].split(":")[0] != processor:
        raise CompileError(f"the AMDGPU code object is for {target or 'no target'}, not {processor}")
    by_name = {entry.get(".name"): entry for entry in code.metadata.get("amdhsa.kernels", [])}
    return [_check_kernel(code, by_name, kernel, processor, limits, args_bytes) for kernel in kernels]


def _check_kernel(code: CodeObject, by_name: dict, kernel: ExpectedKernel, processor: str, limits,
                  args_bytes: int) -> KernelReport:
    name = kernel.name

    def fail(what: str) -> CompileError:
        return CompileError(f"AMDGPU kernel {name} ({processor}): {what}")

    function = code.symbols.get(name)
    if function is None or function[2] != "func":
        raise fail("no function symbol in the code object")
    descriptor = code.descriptors.get(name)
    if descriptor is None:
        raise fail(f"no kernel descriptor {name}.kd")
    descriptor_address = code.symbols[name + ".kd"][0]
    if descriptor_address + descriptor.kernel_code_entry_byte_offset != function[0]:
        raise fail("the kernel descriptor's entry offset does not lead to the kernel's code")
    meta = by_name.get(name)
    if meta is None or meta.get(".symbol") != name + ".kd":
        raise fail("no amdhsa metadata naming its kernel descriptor")
    explicit = [arg for arg in meta.get(".args", []) if not str(arg.get(".value_kind", "")).startswith("hidden")]
    wanted = [{"offset": 0, "size": args_bytes, "value_kind": "by_value"}]
    found = [{key[1:]: arg.get(key) for key in (".offset", ".size", ".value_kind")} for arg in explicit]
    if found != wanted:
        raise fail(f"its arguments are {found}, not the launch's {args_bytes}-byte argument block {wanted}")
    segment = meta.get(".kernarg_segment_size", 0)
    if segment < args_bytes or descriptor.kernarg_size != segment:
        raise fail(f"kernel-argument segment of {segment} bytes (descriptor: {descriptor.kernarg_size}) for a "
                   f"{args_bytes}-byte argument block")
    wave = meta.get(".wavefront_size")
    if wave != limits.wave_size or descriptor.wavefront_size32 != (limits.wave_size == 32):
        raise fail(f"wave size {wave} (descriptor wave32 bit: {descriptor.wavefront_size32}), not "
                   f"{limits.wave_size}")
    vgprs, agprs, sgprs = meta.get(".vgpr_count", 0), meta.get(".agpr_count", 0), meta.get(".sgpr_count", 0)
    if vgprs + agprs > limits.max_vgprs or sgprs > limits.max_sgprs:
        raise fail(f"{vgprs} VGPRs + {agprs} AccVGPRs and {sgprs} SGPRs exceed {processor}'s {limits.max_vgprs} "
                   f"and {limits.max_sgprs}")
    if (descriptor.granulated_vgprs + 1) * limits.vgpr_granule < vgprs:
        raise fail(f"the descriptor allocates {(descriptor.granulated_vgprs + 1) * limits.vgpr_granule} VGPRs "
                   f"for {vgprs} used")
    lds, scratch = meta.get(".group_segment_fixed_size", 0), meta.get(".private_segment_fixed_size", 0)
    if lds > limits.max_lds_bytes or descriptor.group_segment_fixed_size != lds:
        raise fail(f"{lds} bytes of LDS (descriptor: {descriptor.group_segment_fixed_size}); {processor} has "
                   f"{limits.max_lds_bytes} per workgroup")
    if descriptor.private_segment_fixed_size != scratch:
        raise fail(f"scratch of {scratch} bytes in the metadata, {descriptor.private_segment_fixed_size} in the "
                   "descriptor")
    if meta.get(".max_flat_workgroup_size", 0) < kernel.block:
        raise fail(f"launched with {kernel.block} threads per block, at most "
                   f"{meta.get('.max_flat_workgroup_size')} allowed")
    if kernel.reads_dispatch and not descriptor.dispatch_ptr_enabled:
        raise fail("reads the dispatch packet, but its descriptor does not enable the dispatch pointer")
    spills = meta.get(".vgpr_spill_count", 0) + meta.get(".sgpr_spill_count", 0)
    return KernelReport(name, vgprs, agprs, sgprs, lds, scratch, spills)
