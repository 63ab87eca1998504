"""The HIP runtime API through ctypes: the subset an AMDGPU backend needs (device, memory, code-object modules,
launches, streams, events), with errors as exceptions. Written against HIP's documented C API (hip_runtime_api.h
of ROCm 6); it has NOT been run against a real HIP runtime or an AMD GPU (docs/amdgpu.md).

Only `libamdhip64.so` (ROCm's HIP runtime) is needed. The interface is cuda_driver.Driver's, so the GPU backend
code written for CUDA drives it: `allocate`/`free`/`zero`/`upload`/`download`/`copy`, `load_module` (a linked code
object's bytes), `function`, `launch_function` (hipModuleLaunchKernel, whose arguments are cuLaunchKernel's)
with `launch_extra` (the argument block passed whole through HIP_LAUNCH_PARAM_BUFFER_POINTER), events, and
`stream`/`destroy_stream`/`synchronize_stream`. The gfx processor of the device is read from the ROCm kernel
driver's topology (`/sys/class/kfd/kfd/topology/nodes/*/properties`, `gfx_target_version`), which needs no
version-dependent struct layout."""
from __future__ import annotations

import ctypes
import ctypes.util
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wgkern.backends.llvm.gpu_driver import (bound_driver, launch_extra, open_library, out_of_memory, probe_device,
                                             type_functions)
from wgkern.errors import WkError

_P, _vp, _u, _i = ctypes.POINTER, ctypes.c_void_p, ctypes.c_uint, ctypes.c_int
_size = ctypes.c_size_t

_SIGNATURES: dict[str, list[Any]] = {
    "hipInit": [_u],
    "hipDriverGetVersion": [_P(_i)],
    "hipGetDeviceCount": [_P(_i)],
    "hipSetDevice": [_i],
    "hipDeviceGetName": [ctypes.c_char_p, _i, _i],
    "hipDeviceTotalMem": [_P(_size), _i],
    "hipDeviceSynchronize": [],
    "hipMalloc": [_P(_vp), _size],
    "hipFree": [_vp],
    "hipMemGetInfo": [_P(_size), _P(_size)],
    "hipMemcpyHtoD": [_vp, _vp, _size],
    "hipMemcpyDtoH": [_vp, _vp, _size],
    "hipMemcpyDtoD": [_vp, _vp, _size],
    "hipMemsetD8": [_vp, ctypes.c_ubyte, _size],
    "hipModuleLoadData": [_P(_vp), _vp],
    "hipModuleGetFunction": [_P(_vp), _vp, ctypes.c_char_p],
    "hipModuleUnload": [_vp],
    "hipModuleLaunchKernel": [_vp, _u, _u, _u, _u, _u, _u, _u, _vp, _P(_vp), _P(_vp)],
    "hipStreamCreate": [_P(_vp)],
    "hipStreamSynchronize": [_vp],
    "hipStreamDestroy": [_vp],
    "hipEventCreate": [_P(_vp)],
    "hipEventRecord": [_vp, _vp],
    "hipEventSynchronize": [_vp],
    "hipEventElapsedTime": [_P(ctypes.c_float), _vp, _vp],
    "hipEventDestroy": [_vp],
    "hipGetErrorName": [_i],
    "hipGetErrorString": [_i],
}
_RESTYPES = {"hipGetErrorName": ctypes.c_char_p, "hipGetErrorString": ctypes.c_char_p}

HIP_ERROR_OUT_OF_MEMORY = 2
# hipModuleLaunchKernel's `extra` (hip_runtime_api.h): the kernel's whole argument block as one buffer
_LAUNCH_PARAM_BUFFER_POINTER, _LAUNCH_PARAM_BUFFER_SIZE, _LAUNCH_PARAM_END = 1, 2, 3
KFD_TOPOLOGY = Path("/sys/class/kfd/kfd/topology/nodes")


class HipError(WkError):
    """A HIP runtime call failed."""


def load_library() -> tuple[Any, str]:
    """(the HIP runtime library, '') or (None, why not)."""
    found = ctypes.util.find_library("amdhip64")
    names = ["libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5", "/opt/rocm/lib/libamdhip64.so"]
    return open_library(names + ([found] if found else []), "ROCm's HIP runtime (libamdhip64.so) was not found")


def gfx_processors(topology: Path | None = None) -> list[str]:
    """The gfx names of the GPUs the ROCm kernel driver lists, in its node order (CPU nodes have version 0):
    gfx_target_version is major * 10000 + minor * 100 + stepping, e.g. 90010 -> gfx90a, 110000 -> gfx1100."""
    found = []
    topology = KFD_TOPOLOGY if topology is None else topology
    nodes = sorted(topology.glob("*/properties"), key=lambda p: int(p.parent.name)) if topology.is_dir() else []
    for properties in nodes:
        for line in properties.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "gfx_target_version" and int(value or 0):
                version = int(value)
                found.append(f"gfx{version // 10000}{version // 100 % 100:x}{version % 100:x}")
    return found


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    ordinal: int
    name: str
    processor: str             # gfx name, e.g. gfx90a
    multiprocessors: int       # compute units (used to size capped grids)
    total_memory: int
    driver_version: int

    @property
    def summary(self) -> str:
        return f"{self.name} ({self.processor}, HIP {self.driver_version})"


class Driver:
    """The HIP runtime with typed functions, on one device (hipSetDevice on each calling thread)."""

    def __init__(self, lib: Any, ordinal: int = 0, processors: list[str] | None = None):
        self.lib = lib
        type_functions(lib, _SIGNATURES, _RESTYPES,
                       lambda name: HipError(f"the HIP runtime library has no {name}: it is too old"))
        self.check(lib.hipInit(0), "hipInit")
        count = _i()
        self.check(lib.hipGetDeviceCount(ctypes.byref(count)), "hipGetDeviceCount")
        if ordinal >= count.value:
            raise HipError(f"no HIP device {ordinal}: the runtime reports {count.value}")
        self.device = ordinal
        self.bound_thread: int | None = None
        self.bind()
        processors = gfx_processors() if processors is None else processors
        if ordinal >= len(processors):
            raise HipError(f"the gfx processor of HIP device {ordinal} is unknown (the ROCm kernel driver's "
                           f"topology lists {processors or 'no GPUs'})")
        self.info = self._describe(ordinal, processors[ordinal])
        self.launch_function = lib.hipModuleLaunchKernel
        self.released = False

    # ---- errors ------------------------------------------------------------------------------------------
    def error_text(self, code: int) -> str:
        name = self.lib.hipGetErrorName(code) or b"?"
        text = self.lib.hipGetErrorString(code) or b""
        return f"{name.decode()} ({code}): {text.decode()}"

    def check(self, code: int, call: str) -> None:
        if code:
            raise HipError(f"HIP {call} failed: {self.error_text(code)}")

    # ---- device ------------------------------------------------------------------------------------------
    def bind(self) -> None:
        ident = threading.get_ident()
        if self.bound_thread != ident:
            self.check(self.lib.hipSetDevice(self.device), "hipSetDevice")
            self.bound_thread = ident

    def _describe(self, ordinal: int, processor: str) -> DeviceInfo:
        raw = ctypes.create_string_buffer(256)
        self.check(self.lib.hipDeviceGetName(raw, 256, self.device), "hipDeviceGetName")
        total = _size()
        self.check(self.lib.hipDeviceTotalMem(ctypes.byref(total), self.device), "hipDeviceTotalMem")
        version = _i()
        self.check(self.lib.hipDriverGetVersion(ctypes.byref(version)), "hipDriverGetVersion")
        units = _compute_units(ordinal)
        return DeviceInfo(ordinal, raw.value.decode(errors="replace"), processor, units, total.value,
                          version.value)

    def synchronize(self) -> None:
        self.bind()
        self.check(self.lib.hipDeviceSynchronize(), "hipDeviceSynchronize (an earlier kernel launch failed)")

    def release(self) -> None:
        self.released = True

    # ---- memory ------------------------------------------------------------------------------------------
    def allocate(self, nbytes: int) -> int:
        self.bind()
        pointer = _vp()
        code = self.lib.hipMalloc(ctypes.byref(pointer), max(int(nbytes), 1))
        if code == HIP_ERROR_OUT_OF_MEMORY:
            free, total = _size(), _size()
            self.lib.hipMemGetInfo(ctypes.byref(free), ctypes.byref(total))
            raise out_of_memory("HIP", nbytes, free.value, total.value)
        self.check(code, f"hipMalloc({nbytes})")
        return pointer.value

    def free(self, pointer: int) -> None:
        if not self.released:
            self.bind()
            self.check(self.lib.hipFree(pointer), "hipFree")

    def zero(self, pointer: int, nbytes: int) -> None:
        self.check(self.lib.hipMemsetD8(pointer, 0, nbytes), "hipMemsetD8")

    def upload(self, pointer: int, host_address: int, nbytes: int) -> None:
        self.bind()
        self.check(self.lib.hipMemcpyHtoD(pointer, host_address, nbytes), "hipMemcpyHtoD")

    def download(self, host_address: int, pointer: int, nbytes: int) -> None:
        self.bind()
        self.check(self.lib.hipMemcpyDtoH(host_address, pointer, nbytes),
                   "hipMemcpyDtoH (or an earlier kernel launch)")

    def copy(self, dst: int, src: int, nbytes: int) -> None:
        self.bind()
        self.check(self.lib.hipMemcpyDtoD(dst, src, nbytes), "hipMemcpyDtoD")

    # ---- modules and launches ----------------------------------------------------------------------------
    def load_module(self, code_object: bytes) -> Any:
        """Load a linked code object (amdgpu_link.py) for this device's processor."""
        self.bind()
        module = _vp()
        image = ctypes.create_string_buffer(code_object, len(code_object))
        self.check(self.lib.hipModuleLoadData(ctypes.byref(module), image), "hipModuleLoadData")
        return module

    def function(self, module: Any, name: str) -> Any:
        function = _vp()
        self.check(self.lib.hipModuleGetFunction(ctypes.byref(function), module, name.encode()),
                   f"hipModuleGetFunction({name})")
        return function

    def unload(self, module: Any) -> None:
        if not self.released:
            self.lib.hipModuleUnload(module)

    def launch_extra(self, params: Any, params_size: Any) -> Any:
        """hipModuleLaunchKernel's `extra` passing the ctypes buffer `params` (its size in the size_t
        `params_size`) as the kernel's whole argument block; the caller keeps both alive."""
        return launch_extra(params, params_size,
                            (_LAUNCH_PARAM_BUFFER_POINTER, _LAUNCH_PARAM_BUFFER_SIZE, _LAUNCH_PARAM_END))

    def launch(self, function: Any, blocks: int, threads: int, params: bytes, stream: Any = None) -> None:
        """Launch `function` on `blocks` x `threads` with `params` as its whole argument block."""
        size = _size(len(params))
        buffer = ctypes.create_string_buffer(params, len(params))
        extra = self.launch_extra(buffer, size)
        self.check(self.launch_function(function, blocks, 1, 1, threads, 1, 1, 0, stream, None, extra),
                   "hipModuleLaunchKernel")

    # ---- streams and events ------------------------------------------------------------------------------
    def stream(self) -> Any:
        stream = _vp()
        self.check(self.lib.hipStreamCreate(ctypes.byref(stream)), "hipStreamCreate")
        return stream

    def synchronize_stream(self, stream: Any) -> None:
        self.check(self.lib.hipStreamSynchronize(stream), "hipStreamSynchronize")

    def destroy_stream(self, stream: Any) -> None:
        self.lib.hipStreamDestroy(stream)

    def event(self) -> Any:
        event = _vp()
        self.check(self.lib.hipEventCreate(ctypes.byref(event)), "hipEventCreate")
        return event

    def record(self, event: Any, stream: Any = None) -> None:
        self.check(self.lib.hipEventRecord(event, stream), "hipEventRecord")

    def elapsed_ms(self, start: Any, end: Any) -> float:
        self.check(self.lib.hipEventSynchronize(end), "hipEventSynchronize")
        ms = ctypes.c_float()
        self.check(self.lib.hipEventElapsedTime(ctypes.byref(ms), start, end), "hipEventElapsedTime")
        return ms.value

    def destroy_event(self, event: Any) -> None:
        self.lib.hipEventDestroy(event)


def _compute_units(ordinal: int, topology: Path | None = None) -> int:
    """Compute units of the ordinal-th GPU node (simd_count / simd_per_cu), 1 where unknown."""
    gpus = []
    topology = KFD_TOPOLOGY if topology is None else topology
    nodes = sorted(topology.glob("*/properties"), key=lambda p: int(p.parent.name)) if topology.is_dir() else []
    for properties in nodes:
        fields = dict(line.partition(" ")[::2] for line in properties.read_text().splitlines())
        if int(fields.get("gfx_target_version", "0") or 0):
            gpus.append(int(fields.get("simd_count", "0") or 0) // max(1, int(fields.get("simd_per_cu", "1") or 1)))
    return max(1, gpus[ordinal]) if ordinal < len(gpus) else 1


_DRIVERS: dict[int, Driver] = {}
_DRIVER_LOCK = threading.Lock()


def driver(ordinal: int = 0) -> Driver:
    """The process's HIP binding to device `ordinal` (counted among those HIP_VISIBLE_DEVICES leaves visible),
    created on first use; raises HipError where none works."""
    # one device binding per device and process
    return bound_driver(_DRIVERS, _DRIVER_LOCK, ordinal, load_library, Driver, HipError)


def probe(ordinal: int = 0) -> tuple[DeviceInfo | None, str]:
    """(device `ordinal`'s description, '') when HIP works here with an AMD GPU, else (None, why not). Never
    raises."""
    return probe_device(driver, ordinal)
