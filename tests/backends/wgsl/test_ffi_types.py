"""backends/wgsl/ffi_types.py: one parse fills cffi's cache with the types that a parse of each string gives."""
from __future__ import annotations

import cffi
import pytest

from wgkern.backends.wgsl import ffi_types

HEADER = """
typedef struct WGPUBarImpl* WGPUBar;
typedef struct WGPUChainedStruct { struct WGPUChainedStruct * next; int sType; } WGPUChainedStruct;
typedef struct WGPUFoo { WGPUChainedStruct * nextInChain; WGPUBar bar; double weights[3]; } WGPUFoo;
typedef void (*WGPUFooCallback)(WGPUFoo const * foo, void * userdata);
typedef unsigned int WGPUFlags;
"""


def _ffi() -> cffi.FFI:
    ffi = cffi.FFI()
    ffi.cdef(HEADER)
    return ffi


def test_filled_types_are_those_a_parse_gives():
    filled, parsed = _ffi(), _ffi()
    added = ffi_types.parse_at_once(filled)
    keys = [f"{name}{form}" for name in parsed.list_types()[0] for form in (" *", "[]")]
    keys += ["char[]", "char []", "uint8_t []", "uint8_t *", "uint32_t[1]", "uintptr_t", "intptr_t",
             "WGPUChainedStruct * "]
    assert added == len(keys)        # WGPUCommandBuffer[1]: no such typedef here, left out
    for key in keys:
        assert key in filled._parsed_types
        assert filled.typeof(key).cname == parsed.typeof(key).cname, key
    foo = filled.new("WGPUFoo *")
    foo.weights[2] = 1.5
    assert foo.weights[2] == 1.5 and filled.typeof("WGPUBar[]").cname == "struct WGPUBarImpl *[]"
    assert filled.sizeof(filled.new("uint32_t[1]")) == 4
    assert ffi_types.parse_at_once(filled) == 0          # all there already


def test_a_failed_parse_fills_nothing(monkeypatch):
    ffi = _ffi()

    def refuse(cdecl):
        raise cffi.CDefError(f"cannot parse {cdecl[:20]!r}")
    monkeypatch.setattr(ffi, "typeof", refuse)
    assert ffi_types.parse_at_once(ffi) == 0
    monkeypatch.undo()
    assert "WGPUFoo *" not in ffi._parsed_types
    assert ffi.new("WGPUFoo *").bar == ffi.NULL          # parsed on use, as without the module


def test_an_ffi_without_a_parsed_type_cache_is_left_alone():
    class Bare:
        def list_types(self):
            raise AssertionError("not asked")
    assert ffi_types.parse_at_once(Bare()) == 0


def test_wgpu_native_types_are_filled(wgsl):
    """On a WGSL arch the backend has made its device, so wgpu-native's ffi holds the filled strings."""
    pytest.importorskip("wgpu")
    from wgpu.backends.wgpu_native import ffi
    for key in ("WGPUBufferDescriptor *", "WGPUBindGroupEntry[]", "WGPUCommandEncoderDescriptor *", "char []"):
        assert key in ffi._parsed_types
    assert ffi.typeof("WGPUBindGroupEntry[]").cname == "WGPUBindGroupEntry[]"
    assert ffi.new("WGPUBufferDescriptor *").size == 0
