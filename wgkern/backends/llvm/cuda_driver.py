"""The CUDA driver API through ctypes: the small subset the CUDA backend uses, with errors as exceptions.

Only `libcuda.so.1` (installed by the NVIDIA driver) is needed: no toolkit, no compiled extension. Versioned
symbols (`cuMemAlloc_v2`, ...) are used, as cuda.h maps the plain names to them. Every call runs on the
device's primary context, made current on the calling thread first (`Driver.bind()`), as the runtime API
does. Failures raise CudaError naming the call and CUDA's own error name and text; out-of-memory raises
wgkern's OutOfMemoryError with the bytes asked for."""
from __future__ import annotations

import ctypes
import ctypes.util
import sys
import threading
from dataclasses import dataclass
from typing import Any

from wgkern.backends.llvm.gpu_driver import (bound_driver, launch_extra, open_library, out_of_memory, probe_device,
                                             type_functions)
from wgkern.errors import WkError

_P, _vp, _u, _i = ctypes.POINTER, ctypes.c_void_p, ctypes.c_uint, ctypes.c_int
_dptr = ctypes.c_uint64           # CUdeviceptr
_size = ctypes.c_size_t

_SIGNATURES: dict[str, list[Any]] = {
    "cuInit": [_u],
    "cuDriverGetVersion": [_P(_i)],
    "cuDeviceGetCount": [_P(_i)],
    "cuDeviceGet": [_P(_i), _i],
    "cuDeviceGetName": [ctypes.c_char_p, _i, _i],
    "cuDeviceGetAttribute": [_P(_i), _i, _i],
    "cuDeviceTotalMem_v2": [_P(_size), _i],
    "cuDevicePrimaryCtxRetain": [_P(_vp), _i],
    "cuDevicePrimaryCtxRelease_v2": [_i],
    "cuCtxSetCurrent": [_vp],
    "cuCtxSynchronize": [],
    "cuMemAlloc_v2": [_P(_dptr), _size],
    "cuMemFree_v2": [_dptr],
    "cuMemGetInfo_v2": [_P(_size), _P(_size)],
    "cuMemcpyHtoD_v2": [_dptr, _vp, _size],
    "cuMemcpyDtoH_v2": [_vp, _dptr, _size],
    "cuMemcpyDtoD_v2": [_dptr, _dptr, _size],
    "cuMemsetD8_v2": [_dptr, ctypes.c_ubyte, _size],
    "cuModuleLoadDataEx": [_P(_vp), ctypes.c_char_p, _u, _P(_i), _P(_vp)],
    "cuModuleGetFunction": [_P(_vp), _vp, ctypes.c_char_p],
    "cuModuleUnload": [_vp],
    "cuLaunchKernel": [_vp, _u, _u, _u, _u, _u, _u, _u, _vp, _P(_vp), _P(_vp)],
    "cuEventCreate": [_P(_vp), _u],
    "cuEventRecord": [_vp, _vp],
    "cuEventSynchronize": [_vp],
    "cuEventElapsedTime": [_P(ctypes.c_float), _vp, _vp],
    "cuEventDestroy_v2": [_vp],
    "cuGetErrorName": [_i, _P(ctypes.c_char_p)],
    "cuGetErrorString": [_i, _P(ctypes.c_char_p)],
}

CUDA_ERROR_OUT_OF_MEMORY = 2
ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
ATTRIBUTE_MAX_GRID_DIM_X = 5
ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39
_JIT_ERROR_LOG_BUFFER = 5
_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
# cuLaunchKernel's `extra`: the kernel's whole parameter block as one buffer
_LAUNCH_PARAM_END, _LAUNCH_PARAM_BUFFER_POINTER, _LAUNCH_PARAM_BUFFER_SIZE = 0, 1, 2


# What a user can do about the errors a kernel causes (the CUDA context is lost after them).
_HINTS = {
    700: ". A kernel accessed memory outside every buffer: an index out of range? Run with wk.init(debug=True) to "
         "have each access checked and the kernel, container and source line named; this process's CUDA "
         "context is unusable from here on (restart the program)",
    719: ". A kernel failed (an illegal instruction or a trap); this process's CUDA context is unusable from "
         "here on (restart the program)",
}


class CudaError(WkError):
    """A CUDA driver call failed. After an error inside a kernel (an illegal address, say) the CUDA context
    is unusable for the rest of the process, as in every CUDA program."""


def _library_names() -> list[str]:
    if sys.platform == "win32":
        return ["nvcuda.dll"]
    found = ctypes.util.find_library("cuda")
    return ["libcuda.so.1", "libcuda.so"] + ([found] if found else [])


def load_library() -> tuple[Any, str]:
    """(the driver library, '') or (None, why not)."""
    return open_library(_library_names(), "the NVIDIA driver's CUDA library was not found")


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    ordinal: int
    name: str
    compute_capability: tuple[int, int]
    multiprocessors: int
    total_memory: int
    driver_version: int

    @property
    def summary(self) -> str:
        major, minor = self.compute_capability
        return f"{self.name} (sm_{major}{minor}, CUDA driver {self.driver_version // 1000}.{self.driver_version % 1000 // 10})"


class Driver:
    """The driver library with typed functions, bound to one device's primary context."""

    def __init__(self, lib: Any, ordinal: int = 0):
        self.lib = lib
        type_functions(lib, _SIGNATURES, {},
                       lambda name: CudaError(f"the CUDA driver library has no {name}: the driver is too old"))
        self.check(lib.cuInit(0), "cuInit")
        count = _i()
        self.check(lib.cuDeviceGetCount(ctypes.byref(count)), "cuDeviceGetCount")
        if ordinal >= count.value:
            raise CudaError(f"no CUDA device {ordinal}: the driver reports {count.value}")
        device = _i()
        self.check(lib.cuDeviceGet(ctypes.byref(device), ordinal), "cuDeviceGet")
        self.device = device.value
        self.context = _vp()
        self.check(lib.cuDevicePrimaryCtxRetain(ctypes.byref(self.context), self.device), "cuDevicePrimaryCtxRetain")
        self.bound_thread: int | None = None
        self.bind()
        self.info = self._describe(ordinal)
        self.launch_function = lib.cuLaunchKernel
        self.released = False

    # ---- errors ------------------------------------------------------------------------------------------
    def error_text(self, code: int) -> str:
        name, text = ctypes.c_char_p(), ctypes.c_char_p()
        self.lib.cuGetErrorName(code, ctypes.byref(name))
        self.lib.cuGetErrorString(code, ctypes.byref(text))
        return f"{(name.value or b'?').decode()} ({code}): {(text.value or b'').decode()}"

    def check(self, code: int, call: str) -> None:
        if code:
            hint = _HINTS.get(code, "")
            raise CudaError(f"CUDA {call} failed: {self.error_text(code)}{hint}")

    # ---- context and device ------------------------------------------------------------------------------
    def bind(self) -> None:
        """Make the primary context current on this thread (once per thread)."""
        ident = threading.get_ident()
        if self.bound_thread != ident:
            self.check(self.lib.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")
            self.bound_thread = ident

    def _describe(self, ordinal: int) -> DeviceInfo:
        raw = ctypes.create_string_buffer(256)
        self.check(self.lib.cuDeviceGetName(raw, 256, self.device), "cuDeviceGetName")
        total = _size()
        self.check(self.lib.cuDeviceTotalMem_v2(ctypes.byref(total), self.device), "cuDeviceTotalMem")
        version = _i()
        self.check(self.lib.cuDriverGetVersion(ctypes.byref(version)), "cuDriverGetVersion")
        return DeviceInfo(ordinal, raw.value.decode(errors="replace"),
                          (self.attribute(ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                           self.attribute(ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)),
                          self.attribute(ATTRIBUTE_MULTIPROCESSOR_COUNT), total.value, version.value)

    def attribute(self, which: int) -> int:
        value = _i()
        self.check(self.lib.cuDeviceGetAttribute(ctypes.byref(value), which, self.device), "cuDeviceGetAttribute")
        return value.value

    def synchronize(self) -> None:
        self.bind()
        self.check(self.lib.cuCtxSynchronize(), "cuCtxSynchronize (an earlier kernel launch failed)")

    def release(self) -> None:
        if not self.released:
            self.released = True
            self.lib.cuDevicePrimaryCtxRelease_v2(self.device)

    # ---- memory ------------------------------------------------------------------------------------------
    def allocate(self, nbytes: int) -> int:
        self.bind()
        pointer = _dptr()
        code = self.lib.cuMemAlloc_v2(ctypes.byref(pointer), max(int(nbytes), 1))
        if code == CUDA_ERROR_OUT_OF_MEMORY:
            free, total = _size(), _size()
            self.lib.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total))
            raise out_of_memory("CUDA", nbytes, free.value, total.value)
        self.check(code, f"cuMemAlloc({nbytes})")
        return pointer.value

    def free(self, pointer: int) -> None:
        if not self.released:
            self.bind()
            self.check(self.lib.cuMemFree_v2(pointer), "cuMemFree")

    def zero(self, pointer: int, nbytes: int) -> None:
        self.check(self.lib.cuMemsetD8_v2(pointer, 0, nbytes), "cuMemsetD8")

    def upload(self, pointer: int, host_address: int, nbytes: int) -> None:
        """Host -> device, ordered after all earlier launches (the legacy default stream)."""
        self.bind()
        self.check(self.lib.cuMemcpyHtoD_v2(pointer, host_address, nbytes), "cuMemcpyHtoD")

    def download(self, host_address: int, pointer: int, nbytes: int) -> None:
        """Device -> host; returns when the bytes are on the host (after all earlier launches)."""
        self.bind()
        self.check(self.lib.cuMemcpyDtoH_v2(host_address, pointer, nbytes),
                   "cuMemcpyDtoH (or an earlier kernel launch)")

    def copy(self, dst: int, src: int, nbytes: int) -> None:
        self.bind()
        self.check(self.lib.cuMemcpyDtoD_v2(dst, src, nbytes), "cuMemcpyDtoD")

    # ---- modules and launches ----------------------------------------------------------------------------
    def load_module(self, ptx: str) -> Any:
        """Load PTX (the driver JIT-compiles it for this device); a bad module raises with ptxas' log."""
        self.bind()
        log = ctypes.create_string_buffer(16384)
        options = (_i * 2)(_JIT_ERROR_LOG_BUFFER, _JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
        values = (_vp * 2)(ctypes.cast(log, _vp), _vp(len(log)))
        module = _vp()
        code = self.lib.cuModuleLoadDataEx(ctypes.byref(module), ptx.encode() + b"\0", 2, options, values)
        if code:
            raise CudaError(f"CUDA could not load the generated PTX: {self.error_text(code)}\n"
                            f"{log.value.decode(errors='replace')}")
        return module

    def function(self, module: Any, name: str) -> Any:
        function = _vp()
        self.check(self.lib.cuModuleGetFunction(ctypes.byref(function), module, name.encode()),
                   f"cuModuleGetFunction({name})")
        return function

    def unload(self, module: Any) -> None:
        if not self.released:
            self.lib.cuModuleUnload(module)

    def launch_extra(self, params: Any, params_size: Any) -> Any:
        """cuLaunchKernel's `extra` passing the ctypes buffer `params` (its size in the size_t `params_size`) as
        the kernel's whole parameter block; the caller keeps both alive."""
        return launch_extra(params, params_size,
                            (_LAUNCH_PARAM_BUFFER_POINTER, _LAUNCH_PARAM_BUFFER_SIZE, _LAUNCH_PARAM_END))

    def launch(self, function: Any, blocks: int, threads: int, params: bytes) -> None:
        """Launch `function` on `blocks` x `threads` with `params` as its whole parameter block."""
        size = _size(len(params))
        buffer = ctypes.create_string_buffer(params, len(params))
        extra = self.launch_extra(buffer, size)
        self.check(self.lib.cuLaunchKernel(function, blocks, 1, 1, threads, 1, 1, 0, None, None, extra),
                   "cuLaunchKernel")

    # ---- timing ------------------------------------------------------------------------------------------
    def event(self) -> Any:
        event = _vp()
        self.check(self.lib.cuEventCreate(ctypes.byref(event), 0), "cuEventCreate")
        return event

    def record(self, event: Any) -> None:
        self.check(self.lib.cuEventRecord(event, None), "cuEventRecord")

    def elapsed_ms(self, start: Any, end: Any) -> float:
        self.check(self.lib.cuEventSynchronize(end), "cuEventSynchronize")
        ms = ctypes.c_float()
        self.check(self.lib.cuEventElapsedTime(ctypes.byref(ms), start, end), "cuEventElapsedTime")
        return ms.value

    def destroy_event(self, event: Any) -> None:
        self.lib.cuEventDestroy_v2(event)


_DRIVERS: dict[int, Driver] = {}
_DRIVER_LOCK = threading.Lock()


def driver(ordinal: int = 0) -> Driver:
    """The process's binding to device `ordinal` (its primary context), created on first use; raises CudaError
    where none works. The ordinal counts the devices CUDA_VISIBLE_DEVICES leaves visible, as in every CUDA
    program."""
    # one primary context per device and process, as the CUDA runtime keeps
    return bound_driver(_DRIVERS, _DRIVER_LOCK, ordinal, load_library, Driver, CudaError)


def probe(ordinal: int = 0) -> tuple[DeviceInfo | None, str]:
    """(device `ordinal`'s description, '') when CUDA works here, else (None, why not). Never raises."""
    return probe_device(driver, ordinal)


def list_devices() -> tuple[list[str], str]:
    """(the name and PCI bus id of each visible device, by ordinal; '') or ([], why not), without making a
    context on any device. Never raises."""
    lib, reason = load_library()
    if lib is None:
        return [], reason
    try:
        for name, argtypes in (("cuInit", [_u]), ("cuDeviceGetCount", [_P(_i)]), ("cuDeviceGet", [_P(_i), _i]),
                               ("cuDeviceGetName", [ctypes.c_char_p, _i, _i]),
                               ("cuDeviceGetPCIBusId", [ctypes.c_char_p, _i, _i])):
            getattr(lib, name).argtypes = argtypes
            getattr(lib, name).restype = ctypes.c_int
        if lib.cuInit(0):
            return [], "cuInit failed"
        count = _i()
        if lib.cuDeviceGetCount(ctypes.byref(count)):
            return [], "cuDeviceGetCount failed"
        names = []
        for ordinal in range(count.value):
            device, raw, bus = _i(), ctypes.create_string_buffer(256), ctypes.create_string_buffer(32)
            lib.cuDeviceGet(ctypes.byref(device), ordinal)
            lib.cuDeviceGetName(raw, 256, device.value)
            lib.cuDeviceGetPCIBusId(bus, 32, device.value)
            names.append(f"{raw.value.decode(errors='replace')} (PCI {bus.value.decode(errors='replace')})")
        return names, ""
    except Exception as exc:  # noqa: BLE001 - any driver failure means 'no CUDA devices'
        return [], f"{type(exc).__name__}: {exc}"
