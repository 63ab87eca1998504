"""Shader modules from generated WGSL, without naga's loop bounding.

wgpu guards every WGSL loop with a 64-bit iteration counter by default (`ForceLoopBounding`), so a shader
that loops forever cannot make a driver's compiler assume it terminates. That costs a counter update and a
test per iteration and, on lavapipe, ~12 ms of every cold compile of a kernel with a few loops (measured on
the benchmark's compile workload: 88 -> 76 ms median). Kernels are the user's own code, as on the CPU
backend (and in Taichi or Quadrants, whose shaders carry no such counter): a kernel that never finishes
hangs either way. Bounds checks stay on (`BoundsChecks`), so an out-of-range index still cannot reach
another buffer on a driver without robust buffer access.

wgpu-native has `wgpuDeviceCreateShaderModuleTrusted` for this; wgpu-py has no wrapper, so it is called
through wgpu-py's cffi library (with wgpu-py's error capture, so naga's validation errors still raise
`GPUValidationError`). Where wgpu-py's internals are not what this module expects, the public
`create_shader_module` is used instead."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

DUMP_ENV = "WK_DUMP_WGSL"


def dump_shader(wgsl: str) -> None:
    """Write `wgsl` to $WK_DUMP_WGSL/wgsl-<hash>.wgsl (read at call time; nothing when unset): the shaders a run
    compiles (those naga accepted), for reading or for checking with another WGSL compiler (tools/check_wgsl)."""
    folder = os.environ.get(DUMP_ENV)
    if folder:
        path = Path(folder) / f"wgsl-{hashlib.sha1(wgsl.encode()).hexdigest()[:16]}.wgsl"
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_text(wgsl)


def create_shader_module(device: Any, wgsl: str) -> Any:
    """`device.create_shader_module(code=wgsl)`, without loop bounding where wgpu-native offers that."""
    module = _create(device, wgsl)
    dump_shader(wgsl)
    return module


def _create(device: Any, wgsl: str) -> Any:
    try:
        from wgpu.backends.wgpu_native import _api
        ffi, lib, libf = _api.ffi, _api.lib, _api.libf
        create = libf.wgpuDeviceCreateShaderModuleTrusted
        checks = lib.WGPUShaderRuntimeChecks_BoundsChecks
        handle = device._internal
    except (ImportError, AttributeError):
        return device.create_shader_module(code=wgsl)
    text = wgsl.encode()
    chars = ffi.new("char[]", text)
    source = ffi.new("WGPUShaderSourceWGSL *")
    source.code.data = chars
    source.code.length = len(text)
    source.chain.next = ffi.NULL
    source.chain.sType = lib.WGPUSType_ShaderSourceWGSL
    descriptor = ffi.new("WGPUShaderModuleDescriptor *")
    descriptor.nextInChain = ffi.cast("WGPUChainedStruct *", source)
    descriptor.label.data = ffi.NULL
    descriptor.label.length = 0
    module_id = create(handle, descriptor, checks)
    if module_id == ffi.NULL:
        raise RuntimeError("shader module creation failed")
    return _api.GPUShaderModule("", module_id, device)
