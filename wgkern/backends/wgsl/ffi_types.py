"""wgpu-native's C types for cffi, parsed together once per process instead of one parse per type.

wgpu-py (and this backend's direct calls, encoding.py, shader_module.py, waiting.py) name a C type by a string
at its first use: `ffi.new("WGPUBufferDescriptor *")`. cffi parses each new string with pycparser after a
preamble declaring every typedef of the header (432 for wgpu-native), so each costs ~10 ms whatever its length,
and a process that makes a device, a buffer and a pipeline and reads back meets ~45 of them: about 0.45 s of a
one-second start on lavapipe. `parse_at_once` parses the forms these strings take (a pointer to, and an
array of, every typedef; a few scalar and array forms) as the parameters of one function type (~50 ms) and
fills cffi's cache of parsed strings with the results, so the later lookups are dictionary hits. The types are
the ones a parse of the string gives (cffi keeps one ctype object per type). Strings not covered (callback
signatures) are parsed on first use, as before; where cffi's internals differ nothing is filled."""
from __future__ import annotations

from typing import Any

# strings used verbatim besides '<typedef> *' and '<typedef>[]' (wgpu-py 0.32 and this backend), kept where their
# type's name is a typedef of the header or one of SCALARS
SCALARS = ("char", "uint8_t", "uint32_t", "uintptr_t", "intptr_t")
EXTRA = ("char[]", "char []", "uint8_t []", "uint8_t *", "uint32_t[1]", "uintptr_t", "intptr_t",
         "WGPUChainedStruct * ", "WGPUCommandBuffer[1]")


def _parameter(key: str) -> str:
    """The function parameter that has `key`'s type: itself, or for an array a pointer to it."""
    key = key.strip()
    if key.endswith("]"):
        base, bracket = key[:key.index("[")].rstrip(), key[key.index("["):]
        return f"{base} (*){bracket}"
    return key


def parse_at_once(ffi: Any) -> int:
    """Fill `ffi`'s cache of parsed type strings (wgpu-native's ffi) for the pointer and array forms of all its
    typedefs and EXTRA, from one parse; returns how many strings were added (0 when all are there already, or
    where this cffi keeps no such cache)."""
    cache = getattr(ffi, "_parsed_types", None)
    if not isinstance(cache, dict) or not hasattr(ffi, "list_types"):
        return 0
    typedefs = ffi.list_types()[0]
    keys = [form.format(name) for name in typedefs for form in ("{} *", "{}[]")]
    known = {*typedefs, *SCALARS}
    keys += [key for key in EXTRA if key not in keys and key.split("[")[0].split("*")[0].strip() in known]
    keys = [key for key in keys if key not in cache]
    if not keys:
        return 0
    try:
        function = ffi.typeof(f"void(*)({', '.join(_parameter(key) for key in keys)})")
        types = function.args
    except Exception:       # noqa: BLE001 - cffi's CDefError and kin: a type this header lacks; parse on use
        return 0
    added = 0
    for key, ctype in zip(keys, types):
        if key.strip().endswith("]"):
            ctype = ctype.item
        cache.setdefault(key, (ctype, False))
        added += 1
    return added


def prepare() -> None:
    """parse_at_once for wgpu-py's native ffi, if wgpu-py has one."""
    try:
        from wgpu.backends.wgpu_native import ffi
    except ImportError:
        return
    parse_at_once(ffi)
