"""Reading an AMDGPU code object (a 64-bit little-endian ELF): its symbols, kernel descriptors and the amdhsa
metadata note, without ROCm.

`read_code_object(data)` returns a CodeObject: every symbol (name -> (value, size, type)), the bytes of each
kernel's 64-byte kernel descriptor (`<kernel>.kd`), and the metadata of the NT_AMDGPU_METADATA note (a MessagePack
map, decoded by `unpack`, holding `amdhsa.target` and one `amdhsa.kernels` entry per kernel). The descriptor's
fields are decoded as LLVM's AMDGPUUsage documents them (code object v4 and later)."""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

NT_AMDGPU_METADATA = 32
_SHT_SYMTAB, _SHT_NOTE, _SHT_DYNSYM = 2, 7, 11
_STT_NAMES = {0: "notype", 1: "object", 2: "func", 3: "section", 4: "file"}


class CodeObjectError(ValueError):
    """The bytes are not an AMDGPU code object this reader understands."""


@dataclass(frozen=True, slots=True)
class KernelDescriptor:
    """The fields of a kernel descriptor the checks use."""
    group_segment_fixed_size: int
    private_segment_fixed_size: int
    kernarg_size: int
    kernel_code_entry_byte_offset: int
    compute_pgm_rsrc1: int
    compute_pgm_rsrc2: int
    kernel_code_properties: int

    @property
    def granulated_vgprs(self) -> int:
        """compute_pgm_rsrc1 bits 0-5: VGPR blocks allocated, minus one."""
        return self.compute_pgm_rsrc1 & 0x3F

    @property
    def dispatch_ptr_enabled(self) -> bool:
        """kernel_code_properties bit 1: ENABLE_SGPR_DISPATCH_PTR."""
        return bool(self.kernel_code_properties & (1 << 1))

    @property
    def wavefront_size32(self) -> bool:
        """kernel_code_properties bit 10: ENABLE_WAVEFRONT_SIZE32."""
        return bool(self.kernel_code_properties & (1 << 10))


def kernel_descriptor(raw: bytes) -> KernelDescriptor:
    if len(raw) != 64:
        raise CodeObjectError(f"a kernel descriptor is 64 bytes, this one {len(raw)}")
    group, private, kernarg = struct.unpack_from("<III", raw, 0)
    entry, = struct.unpack_from("<q", raw, 16)
    rsrc1, rsrc2 = struct.unpack_from("<II", raw, 48)
    properties, = struct.unpack_from("<H", raw, 56)
    return KernelDescriptor(group, private, kernarg, entry, rsrc1, rsrc2, properties)


@dataclass(slots=True)
class CodeObject:
    machine: int
    flags: int
    symbols: dict[str, tuple[int, int, str]] = field(default_factory=dict)   # name -> (value, size, type)
    descriptors: dict[str, KernelDescriptor] = field(default_factory=dict)  # kernel name -> its descriptor
    metadata: dict[str, Any] = field(default_factory=dict)


def read_code_object(data: bytes) -> CodeObject:
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise CodeObjectError("not a 64-bit little-endian ELF file")
    machine, = struct.unpack_from("<H", data, 18)
    if machine != 224:                        # EM_AMDGPU
        raise CodeObjectError(f"ELF machine {machine}, not EM_AMDGPU (224)")
    flags, = struct.unpack_from("<I", data, 48)
    shoff, = struct.unpack_from("<Q", data, 40)
    shentsize, shnum = struct.unpack_from("<HH", data, 58)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + k * shentsize) for k in range(shnum)]
    code = CodeObject(machine, flags)
    for _name, kind, _flags, _addr, offset, size, link, _info, _align, entsize in sections:
        if kind in (_SHT_SYMTAB, _SHT_DYNSYM):
            strings = sections[link]
            for k in range(size // entsize):
                name_at, info, _other, index, value, sym_size = struct.unpack_from("<IBBHQQ", data,
                                                                                   offset + k * entsize)
                name = _c_string(data, strings[4] + name_at)
                if name and index:
                    code.symbols[name] = (value, sym_size, _STT_NAMES.get(info & 0xF, str(info & 0xF)))
        elif kind == _SHT_NOTE:
            code.metadata.update(_metadata_notes(data[offset:offset + size]))
    for name, (value, size, kind) in code.symbols.items():
        if name.endswith(".kd") and kind == "object":
            file_offset = _file_offset(sections, value)
            code.descriptors[name[:-3]] = kernel_descriptor(data[file_offset:file_offset + size])
    return code


def _c_string(data: bytes, at: int) -> str:
    return data[at:data.index(b"\0", at)].decode()


def _file_offset(sections: list[tuple], address: int) -> int:
    for _name, kind, _flags, addr, offset, size, *_ in sections:
        if kind != 8 and addr and addr <= address < addr + size:       # not SHT_NOBITS
            return offset + address - addr
    raise CodeObjectError(f"no section holds address {address:#x}")


def _metadata_notes(notes: bytes) -> dict[str, Any]:
    found: dict[str, Any] = {}
    at = 0
    while at + 12 <= len(notes):
        name_size, desc_size, kind = struct.unpack_from("<III", notes, at)
        name = notes[at + 12:at + 12 + name_size].rstrip(b"\0")
        desc_at = at + 12 + (name_size + 3) // 4 * 4
        if name == b"AMDGPU" and kind == NT_AMDGPU_METADATA:
            found.update(unpack(notes[desc_at:desc_at + desc_size]))
        at = desc_at + (desc_size + 3) // 4 * 4
    return found


# ---- MessagePack (the subset code object metadata uses, and the rest of the format's fixed types) ----------

def unpack(data: bytes) -> Any:
    """The one MessagePack value of `data`."""
    value, end = _value(data, 0)
    if end != len(data):
        raise CodeObjectError(f"{len(data) - end} bytes after the MessagePack value")
    return value


_FIXED = {0xCC: "B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q", 0xD0: "b", 0xD1: ">h", 0xD2: ">i", 0xD3: ">q",
          0xCA: ">f", 0xCB: ">d"}
_SIZED = {0xD9: ("B", "str"), 0xDA: (">H", "str"), 0xDB: (">I", "str"), 0xC4: ("B", "bin"),
          0xC5: (">H", "bin"), 0xC6: (">I", "bin"), 0xDC: (">H", "array"), 0xDD: (">I", "array"),
          0xDE: (">H", "map"), 0xDF: (">I", "map")}


def _value(data: bytes, at: int) -> tuple[Any, int]:
    tag = data[at]
    at += 1
    if tag <= 0x7F:
        return tag, at
    if tag >= 0xE0:
        return tag - 0x100, at
    if 0x80 <= tag <= 0x8F:
        return _items(data, at, tag & 0x0F, "map")
    if 0x90 <= tag <= 0x9F:
        return _items(data, at, tag & 0x0F, "array")
    if 0xA0 <= tag <= 0xBF:
        return _items(data, at, tag & 0x1F, "str")
    if tag in (0xC0, 0xC2, 0xC3):
        return {0xC0: None, 0xC2: False, 0xC3: True}[tag], at
    if tag in _FIXED:
        fmt = _FIXED[tag]
        return struct.unpack_from(fmt, data, at)[0], at + struct.calcsize(fmt)
    if tag in _SIZED:
        fmt, kind = _SIZED[tag]
        count, = struct.unpack_from(fmt, data, at)
        return _items(data, at + struct.calcsize(fmt), count, kind)
    raise CodeObjectError(f"MessagePack type byte {tag:#x} is not supported")


def _items(data: bytes, at: int, count: int, kind: str) -> tuple[Any, int]:
    if kind == "str":
        return data[at:at + count].decode(), at + count
    if kind == "bin":
        return bytes(data[at:at + count]), at + count
    values = []
    for _ in range(count * (2 if kind == "map" else 1)):
        value, at = _value(data, at)
        values.append(value)
    if kind == "array":
        return values, at
    return dict(zip(values[::2], values[1::2])), at
