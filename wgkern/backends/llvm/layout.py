"""The packed argument block of one launch: byte offsets shared by codegen and the CPU runtime.

Layout (little-endian, every field at a fixed offset): u32 seed @0, u32 launch_id @4, (debug builds: the
error-word and scratch addresses @8 and @16), then per container
slot an 8-byte base address followed, for slots without a static shape, by its ndim i32 extents (padded
to 8 bytes), then one 8-byte slot per scalar argument holding the value in its dtype (u1 as one byte).
`ArgLayout.pack(args)` builds the block with one precompiled struct.Struct call; a launch whose buffers and
shapes are fixed (a launch plan's) packs the container part once (`pack_containers`) and then only the header
and scalars around it (`pack_around`)."""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from wgkern.ir.nodes import OffloadedKernel

SEED_OFFSET = 0
LAUNCH_ID_OFFSET = 4
# debug builds only: address of the i32 bounds-error word and of a scratch element out-of-range accesses use
ERROR_WORD_OFFSET = 8
SCRATCH_OFFSET = 16

# struct codes per dtype name; ints are packed unsigned after masking, so any Python int wraps.
_STRUCT_CODE = {
    "f16": "e", "f32": "f", "f64": "d", "i8": "B", "i16": "H", "i32": "I", "i64": "Q",
    "u8": "B", "u16": "H", "u32": "I", "u64": "Q", "u1": "B",
}


def buffer_address(buffer: Any) -> int:
    """Base address of a CPU buffer: a CpuBuffer (has .address), a numpy array, or None (unbound: 0)."""
    address = getattr(buffer, "address", None)
    if address is not None:
        return address
    if buffer is None:
        return 0
    if isinstance(buffer, np.ndarray):
        return buffer.ctypes.data
    raise TypeError(f"not a CPU buffer: {type(buffer).__name__}")


@dataclass(slots=True)
class ArgLayout:
    """Offsets of every field of one kernel's argument block, and its packer."""
    size: int
    container_address: list[int]
    container_shape: list[int | None]      # offset of the i32 extents, None where the shape is static
    scalar: dict[int, int]                 # arg index -> offset
    pack: Callable[[Any], bytes]
    adstack_context: int | None = None     # offset of the adstack context pointer (kernels with adstacks)
    pack_containers: Callable[[Any], bytes] | None = None     # the container part of the block alone
    pack_around: Callable[[Any, bytes], bytes] | None = None  # header + given container part + scalars


def build_layout(kernel: OffloadedKernel, debug_addresses: tuple[int, int] | None = None,
                 adstack_context_address: int | None = None) -> ArgLayout:
    """Assign offsets and generate a packer `pack(launch_args) -> bytes` with no per-field Python loop.
    `debug_addresses` (error word, scratch) are baked into the header of bounds-checked builds, and so is
    the address of the kernel's adstack context (heap, flag, per-stack metadata; see adstack.py)."""
    fmt = ["<II"]
    exprs = ["a.seed & 0xFFFFFFFF", "a.launch_id & 0xFFFFFFFF"]
    offset = 8
    if debug_addresses is not None:
        fmt.append("QQ")
        exprs.extend(str(address) for address in debug_addresses)
        offset = SCRATCH_OFFSET + 8
    adstack_context = None
    if adstack_context_address is not None:
        adstack_context = offset
        fmt.append("Q")
        exprs.append(str(adstack_context_address))
        offset += 8
    head = len(fmt)
    container_address: list[int] = []
    container_shape: list[int | None] = []
    for k, slot in enumerate(kernel.containers):
        container_address.append(offset)
        fmt.append("Q")
        exprs.append(f"_address(b[{k}])")
        offset += 8
        if slot.shape is not None:
            container_shape.append(None)
            continue
        container_shape.append(offset)
        fmt.append("i" * slot.ndim)
        exprs.extend(f"s[{k}][{axis}]" for axis in range(slot.ndim))
        padded = (4 * slot.ndim + 7) // 8 * 8
        fmt.append("x" * (padded - 4 * slot.ndim))
        offset += padded
    middle = len(fmt)
    scalar: dict[int, int] = {}
    for index, spec in enumerate(kernel.args):
        if spec.kind != "scalar":
            continue
        scalar[index] = offset
        code = _STRUCT_CODE[spec.dtype.name]
        fmt.append(code + "x" * (8 - struct.calcsize("<" + code)))
        if spec.dtype.is_float:
            exprs.append(f"c[{index}]")
        elif spec.dtype.is_bool:
            exprs.append(f"(1 if c[{index}] else 0)")
        else:
            exprs.append(f"int(c[{index}]) & {(1 << spec.dtype.bits) - 1:#x}")
        offset += 8
    packer = struct.Struct("".join(fmt))
    source = ("def pack(a):\n    b = a.buffers\n    s = a.shapes\n    c = a.scalars\n"
              f"    return _pack({', '.join(exprs)})\n")
    namespace: dict[str, Any] = {"_pack": packer.pack, "_address": buffer_address}
    exec(compile(source, f"<wgkern arg packer {kernel.name}>", "exec"), namespace)  # noqa: S102 - generated
    # The same fields in three runs: the header's expressions, then the containers', then the scalars'.
    head_exprs = len(debug_addresses or ()) + (adstack_context is not None) + 2
    container_exprs = len(exprs) - head_exprs - (len(fmt) - middle)
    parts = {"_head": struct.Struct("".join(fmt[:head])).pack,
             "_containers": struct.Struct("<" + "".join(fmt[head:middle])).pack,
             "_scalars": struct.Struct("<" + "".join(fmt[middle:])).pack, "_address": buffer_address}
    split = ("def pack_containers(a):\n    b = a.buffers\n    s = a.shapes\n"
             f"    return _containers({', '.join(exprs[head_exprs:head_exprs + container_exprs])})\n"
             "def pack_around(a, middle):\n    c = a.scalars\n"
             f"    return _head({', '.join(exprs[:head_exprs])}) + middle + "
             f"_scalars({', '.join(exprs[head_exprs + container_exprs:])})\n")
    exec(compile(split, f"<wgkern arg packer {kernel.name} (parts)>", "exec"), parts)  # noqa: S102 - generated
    return ArgLayout(offset, container_address, container_shape, scalar, namespace["pack"], adstack_context,
                     parts["pack_containers"], parts["pack_around"])


def pack_launch(layout: ArgLayout, owner: Any, args: Any) -> bytes:
    """`args`' argument block for `layout`; with fixed bindings (LaunchArgs.bound_cache) the container part is
    packed once per `owner` (the compiled kernel whose layout it is) and kept in that cache."""
    cache = args.bound_cache
    if cache is None:
        return layout.pack(args)
    middle = cache.get(owner)
    if middle is None:
        middle = cache[owner] = layout.pack_containers(args)
    return layout.pack_around(args, middle)
