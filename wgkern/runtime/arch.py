"""Arch constants (`wk.cpu`, `wk.vulkan`, ...) and arch selection: which backend a `wk.init(arch=...)` gets.

Owns the rules of API.md "Initialisation": WK_ARCH, then the best real GPU adapter, else CUDA, else CPU;
`wk.gpu` and `wk.webgpu`; and ArchUnavailableError naming what was found. `wk.gpu` with no GPU runs on the CPU (saying so on
stderr), as Taichi's `ti.gpu` does: ported programs ask for it on every machine. Adapter enumeration lives in
backends/wgsl/adapters.py; the backends themselves are imported only when chosen."""
from __future__ import annotations

import enum
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable

from wgkern.errors import ArchUnavailableError


class Arch(enum.Enum):
    """A compute target family as the user names it."""
    cpu = "cpu"
    cuda = "cuda"
    amdgpu = "amdgpu"
    vulkan = "vulkan"
    metal = "metal"
    dx12 = "dx12"
    webgpu = "webgpu"
    gpu = "gpu"
    # Taichi's other arches, which older programs name: wgkern has no backend for them (never OpenGL: wgpu's
    # GL backend lacks f64, int64 and storage atomics)
    opengl = "opengl"
    gles = "gles"
    dx11 = "dx11"
    cc = "cc"

    def __repr__(self) -> str:
        return f"wk.{self.value}"

    __str__ = __repr__

    @property
    def is_wgpu(self) -> bool:
        return self in WGPU_ARCHES


cpu, cuda, amdgpu, vulkan, metal, dx12, webgpu, gpu = (
    Arch.cpu, Arch.cuda, Arch.amdgpu, Arch.vulkan, Arch.metal, Arch.dx12, Arch.webgpu, Arch.gpu)
opengl, gles, dx11, cc = Arch.opengl, Arch.gles, Arch.dx11, Arch.cc
NOT_BUILT = (Arch.opengl, Arch.gles, Arch.dx11, Arch.cc)
WGPU_ARCHES = (Arch.vulkan, Arch.metal, Arch.dx12, Arch.webgpu)
# wgpu adapter `backend_type` strings for the arches that name one graphics API.
_BACKEND_TYPE_OF = {Arch.vulkan: "Vulkan", Arch.metal: "Metal", Arch.dx12: "D3D12"}
_ARCH_OF_BACKEND_TYPE = {v: k for k, v in _BACKEND_TYPE_OF.items()}
_REAL_GPU_TYPES = ("DiscreteGPU", "IntegratedGPU")


@dataclass(frozen=True, slots=True)
class AdapterInfo:
    """What arch selection needs to know about one wgpu adapter (filled from wgpu's adapter.info)."""
    summary: str
    backend_type: str        # "Vulkan", "Metal", "D3D12", "OpenGL", ...
    adapter_type: str        # "DiscreteGPU", "IntegratedGPU", "CPU", ...
    handle: Any = None       # the wgpu adapter object, passed on to the backend

    @property
    def is_real_gpu(self) -> bool:
        return self.adapter_type in _REAL_GPU_TYPES


@dataclass(frozen=True, slots=True)
class Selection:
    """The outcome of arch selection: the arch the Program reports and how to build its backend
    (`make_backend(options)` gets the wk.init InitOptions)."""
    arch: Arch
    make_backend: Callable[[Any], Any]
    description: str


def parse_arch(value: Any) -> Arch | None:
    """Arch, its name ('vulkan', 'wk.vulkan') or None -> Arch | None; anything else raises ValueError."""
    if value is None or isinstance(value, Arch):
        return value
    if isinstance(value, str):
        name = value.strip().lower().removeprefix("wk.").removeprefix("ti.")
        if name in ("", "auto", "default"):
            return None
        if name == "llvm" or name == "x64" or name == "arm64":
            return Arch.cpu
        try:
            return Arch(name)
        except ValueError:
            pass
    names = ", ".join(a.value for a in Arch)
    raise ValueError(f"unknown arch {value!r}; expected one of: {names}")


def list_wgpu_adapters() -> tuple[list[AdapterInfo], str]:
    """All wgpu adapters, and a reason string when the WGSL backend or wgpu itself is unavailable."""
    try:
        from wgkern.backends.wgsl import adapters as wgsl_adapters
    except ImportError as exc:
        return [], f"WGSL backend not importable ({exc})"
    try:
        found = wgsl_adapters.enumerate_adapters()
    except Exception as exc:  # noqa: BLE001 - any driver failure means 'no adapters'
        return [], f"wgpu adapter enumeration failed ({type(exc).__name__}: {exc})"
    return [_adapter_info(a) for a in found], ""


def _adapter_info(adapter: Any) -> AdapterInfo:
    if isinstance(adapter, AdapterInfo):
        return adapter
    info = getattr(adapter, "info", None) or {}
    summary = getattr(adapter, "summary", None) or info.get("description", "") or str(adapter)
    backend_type = getattr(adapter, "backend_type", None) or info.get("backend_type", "?")
    adapter_type = getattr(adapter, "adapter_type", None) or info.get("adapter_type", "?")
    handle = getattr(adapter, "handle", adapter)
    return AdapterInfo(str(summary), str(backend_type), str(adapter_type), handle)


def _found_text(adapters: list[AdapterInfo], reason: str) -> str:
    parts = [f"{a.summary} [{a.backend_type}, {a.adapter_type}]" for a in adapters]
    text = "found: " + ("; ".join(parts) if parts else "no wgpu adapters")
    if reason:
        text += f" ({reason})"
    return text + "; wk.cpu is always available"


def _wgpu_selection(arch: Arch, adapter: AdapterInfo, device: int | None = None) -> Selection:
    def make(options: Any) -> Any:
        from wgkern.backends.wgsl.runtime import WgslBackend
        return _construct(WgslBackend, options, adapter.handle)
    return Selection(arch, make, adapter.summary + ("" if device is None else f" (device {device})"))


def _cpu_selection() -> Selection:
    def make(options: Any) -> Any:
        from wgkern.backends.llvm.cpu import CpuBackend
        return _construct(CpuBackend, options)
    return Selection(Arch.cpu, make, "LLVM CPU (llvmlite JIT)")


def cuda_available(device: int | None = None) -> tuple[bool, str]:
    """(True, device summary) where the CUDA driver works here (with device `device`), else (False, why not).
    Never raises."""
    from wgkern.backends.llvm import cuda_driver
    info, reason = cuda_driver.probe(device or 0)
    return (True, info.summary) if info is not None else (False, reason)


def _cuda_selection(summary: str, device: int | None = None) -> Selection:
    def make(options: Any) -> Any:
        from wgkern.backends.llvm.cuda import CudaBackend
        return _construct(CudaBackend, options, device=device or 0)
    return Selection(Arch.cuda, make, summary + ("" if device is None else f" (device {device})"))


def _check_cuda_index(device: int | None) -> None:
    """A CUDA ordinal past the devices the driver reports: ValueError listing them (devices.py)."""
    if not device:
        return
    from wgkern.backends.llvm import cuda_driver
    from wgkern.runtime import devices
    names, _ = cuda_driver.list_devices()
    if names and device >= len(names):
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        why = f" (CUDA_VISIBLE_DEVICES={visible!r} leaves these visible)" if visible is not None else ""
        raise devices.out_of_range("wk.cuda", device, names, why)


def amdgpu_available(device: int | None = None) -> tuple[bool, str]:
    """(True, device summary) where an AMD GPU, ROCm's HIP runtime and ld.lld are all here, else (False, what
    is missing). Never raises."""
    from wgkern.backends.llvm import amdgpu_link, hip_driver
    info, reason = hip_driver.probe(device or 0)
    if info is None:
        return False, reason
    if amdgpu_link.find_linker() is None:
        return False, ("no ld.lld to link code objects (install ROCm's, or `pip install 'wgkern[amdgpu]'`, or set "
                       "WK_LLD)")
    return True, info.summary


def _amdgpu_selection(summary: str, device: int | None = None) -> Selection:
    def make(options: Any) -> Any:
        from wgkern.backends.llvm.amdgpu import AmdgpuBackend
        return _construct(AmdgpuBackend, options, device=device or 0)
    return Selection(Arch.amdgpu, make, summary + ("" if device is None else f" (device {device})"))


def _construct(backend_class: Any, options: Any, *args: Any, **fixed: Any) -> Any:
    """Build a backend, passing the wk.init options it declares (`debug=...`) and `fixed` by keyword."""
    import inspect
    accepted = inspect.signature(backend_class).parameters
    kwargs = {name: getattr(options, name) for name in ("debug", "fast_math", "threads", "device_memory_limit",
                                                         "offline_cache", "webgpu_profile")
              if name in accepted and options is not None}
    return backend_class(*args, **kwargs, **fixed)


def _pick_adapter(arch: Arch, adapters: list[AdapterInfo], device: int | None = None) -> AdapterInfo | None:
    """The best adapter for a wgpu arch: discrete, then integrated GPUs, then CPU adapters (lavapipe; not
    for wk.gpu). Never OpenGL: wgpu falls back to it silently and it lacks f64, int64 and atomics. `device`:
    the index among those, after CUDA_VISIBLE_DEVICES (runtime/devices.py); past them, a ValueError."""
    pool = wgpu_devices(arch, adapters)
    if not pool:
        return None
    from wgkern.runtime import devices
    name = repr(arch) if arch != Arch.gpu or device is None else "wk.gpu"
    return devices.pick(name, pool, device, lambda a: f"{a.summary} [{a.backend_type}, {a.adapter_type}]")


def wgpu_devices(arch: Arch, adapters: list[AdapterInfo]) -> list[AdapterInfo]:
    """The adapters of a wgpu arch (or of wk.gpu) in index order: best kind first, then as
    CUDA_VISIBLE_DEVICES orders NVIDIA ones (runtime/devices.py)."""
    from wgkern.runtime import devices
    pool = [a for a in adapters if a.backend_type != "OpenGL"]
    if arch == Arch.gpu:
        pool = [a for a in pool if a.is_real_gpu]
    elif arch in _BACKEND_TYPE_OF:
        pool = [a for a in pool if a.backend_type == _BACKEND_TYPE_OF[arch]]
    visible = devices.apply_cuda_visible(pool)
    return sorted(visible, key=lambda a: {"DiscreteGPU": 0, "IntegratedGPU": 1}.get(a.adapter_type, 2))


AMDGPU_COMPILE = "amdgpu-compile"


def _names_amdgpu_compile(arch: Any) -> bool:
    """`arch` (or WK_ARCH, where arch is None) names the AMDGPU compile-check mode."""
    value = os.environ.get("WK_ARCH") if arch is None else arch
    return isinstance(value, str) and value.strip().lower().removeprefix("wk.") == AMDGPU_COMPILE


def _amdgpu_compile_selection() -> Selection:
    """WK_ARCH=amdgpu-compile: kernels run on the CPU (the arch reported is wk.cpu) and are also built and
    checked for AMDGPU (backends/llvm/amdgpu_compile_check.py); ArchUnavailableError without ld.lld."""
    from wgkern.backends.llvm.amdgpu_compile_check import AmdgpuCompileCheckBackend, require_linker
    require_linker()

    def make(options: Any) -> Any:
        return _construct(AmdgpuCompileCheckBackend, options)
    return Selection(Arch.cpu, make, "LLVM CPU, every kernel also compiled and checked for AMDGPU")


def select(arch: Any = None, gpu_fallback_note: Callable[[str], None] | None = None,
           device: int | None = None) -> Selection:
    """Resolve `wk.init(arch=..., device=...)`: an explicit arch, else WK_ARCH, else the best real GPU, else CPU;
    `device` indexes the devices of that arch (runtime/devices.py; None: the best one). `wk.gpu` on a machine
    without a GPU gives the CPU after `gpu_fallback_note(why)` (default: a line on stderr)."""
    from wgkern.runtime import devices
    device = devices.check_index(device)
    if _names_amdgpu_compile(arch):
        devices.cpu_device(device)
        return _amdgpu_compile_selection()
    requested = parse_arch(arch)
    if requested is None:
        requested = parse_arch(os.environ.get("WK_ARCH") or None)
        if requested is None:
            adapters, _ = list_wgpu_adapters()
            best = _pick_adapter(Arch.gpu, adapters, device)
            if best is not None:
                return _wgpu_selection(_arch_of(best), best, device)
            _check_cuda_index(device)
            ok, detail = cuda_available(device)
            if ok:
                return _cuda_selection(detail, device)
            devices.cpu_device(device)
            return _cpu_selection()
    if requested == Arch.cpu:
        devices.cpu_device(device)
        return _cpu_selection()
    if requested == Arch.cuda:
        _check_cuda_index(device)
        ok, detail = cuda_available(device)
        if ok:
            return _cuda_selection(detail, device)
        adapters, reason = list_wgpu_adapters()
        raise ArchUnavailableError(f"wk.cuda needs an NVIDIA GPU and its driver: {detail}; "
                                   + _found_text(adapters, reason))
    if requested == Arch.amdgpu:
        ok, detail = amdgpu_available(device)
        if ok:
            return _amdgpu_selection(detail, device)
        adapters, reason = list_wgpu_adapters()
        raise ArchUnavailableError(f"wk.amdgpu needs an AMD GPU, ROCm's HIP runtime and ld.lld: {detail}; "
                                   + _found_text(adapters, reason))
    if requested in NOT_BUILT:
        adapters, reason = list_wgpu_adapters()
        raise ArchUnavailableError(f"{requested!r} is not built in this version of wgkern (its backends: wk.cpu, "
                                   "wk.cuda, and wk.vulkan / wk.metal / wk.dx12 through wgpu); "
                                   + _found_text(adapters, reason))
    adapters, reason = list_wgpu_adapters()
    best = _pick_adapter(requested, adapters, device)
    if best is None and requested == Arch.gpu:
        _check_cuda_index(device)
        ok, detail = cuda_available(device)
        if ok:
            return _cuda_selection(detail, device)
        ok, detail = amdgpu_available(device)
        if ok:
            return _amdgpu_selection(detail, device)
        devices.cpu_device(device)
        # Taichi's ti.gpu means "a GPU if there is one": ported programs ask for it everywhere, CI included
        found = ", ".join(f"{a.summary} [{a.backend_type}]" for a in adapters) or "no wgpu adapters"
        if gpu_fallback_note is None:
            print(f"wk.init(arch=wk.gpu): no GPU found ({found}); running on wk.cpu", file=sys.stderr)
        else:
            gpu_fallback_note(f"no GPU found ({found})")
        return _cpu_selection()
    if best is None:
        want = {Arch.gpu: "a discrete or integrated GPU adapter (wgpu)",
                Arch.webgpu: "any non-OpenGL wgpu adapter"}.get(requested, f"a wgpu {_BACKEND_TYPE_OF.get(requested)} adapter")
        raise ArchUnavailableError(f"{requested!r} needs {want}; " + _found_text(adapters, reason))
    report = requested if requested != Arch.gpu else _arch_of(best)
    return _wgpu_selection(report, best, device)


def _arch_of(adapter: AdapterInfo) -> Arch:
    return _ARCH_OF_BACKEND_TYPE.get(adapter.backend_type, Arch.webgpu)


def describe_available() -> list[str]:
    """Human-readable lines for `python -m wgkern info`: each arch's devices with the index
    `wk.init(arch=..., device=i)` takes (runtime/devices.py)."""
    adapters, reason = list_wgpu_adapters()
    lines = []
    for arch in (Arch.vulkan, Arch.metal, Arch.dx12):
        try:
            found = wgpu_devices(arch, adapters)
        except ValueError as exc:           # CUDA_VISIBLE_DEVICES names nothing that can be matched
            lines.append(f"{arch.value}: {exc}")
            continue
        lines += [f"{arch.value} device {i}: {a.summary} [{a.backend_type}, {a.adapter_type}]"
                  for i, a in enumerate(found)]
    lines += [f"wgpu adapter never used: {a.summary} [{a.backend_type}, {a.adapter_type}]"
              for a in adapters if a.backend_type == "OpenGL"]
    if reason:
        lines.append(f"wgpu: {reason}")
    from wgkern.backends.llvm import cuda_driver
    names, why = cuda_driver.list_devices()
    ok, detail = cuda_available() if names else (False, why)
    if ok:
        lines += [f"cuda device {i}: {name}" + (f" - {detail}" if i == 0 else "") for i, name in enumerate(names)]
    else:
        lines.append(f"cuda: unavailable ({detail})")
    ok, detail = amdgpu_available()
    lines.append(f"amdgpu device 0: {detail}" if ok else f"amdgpu: unavailable ({detail})")
    lines.append("cpu device 0: LLVM CPU backend (llvmlite), all cores")
    return lines
