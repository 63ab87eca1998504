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
NOT_BUILT = (Arch.amdgpu, Arch.opengl, Arch.gles, Arch.dx11, Arch.cc)
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


def _wgpu_selection(arch: Arch, adapter: AdapterInfo) -> Selection:
    def make(options: Any) -> Any:
        from wgkern.backends.wgsl.runtime import WgslBackend
        return _construct(WgslBackend, options, adapter.handle)
    return Selection(arch, make, adapter.summary)


def _cpu_selection() -> Selection:
    def make(options: Any) -> Any:
        from wgkern.backends.llvm.cpu import CpuBackend
        return _construct(CpuBackend, options)
    return Selection(Arch.cpu, make, "LLVM CPU (llvmlite JIT)")


def cuda_available() -> tuple[bool, str]:
    """(True, device summary) where the CUDA driver works here, else (False, why not). Never raises."""
    from wgkern.backends.llvm import cuda_driver
    info, reason = cuda_driver.probe()
    return (True, info.summary) if info is not None else (False, reason)


def _cuda_selection(summary: str) -> Selection:
    def make(options: Any) -> Any:
        from wgkern.backends.llvm.cuda import CudaBackend
        return _construct(CudaBackend, options)
    return Selection(Arch.cuda, make, summary)


def _construct(backend_class: Any, options: Any, *args: Any) -> Any:
    """Build a backend, passing the wk.init options it declares (`debug=...`) by keyword."""
    import inspect
    accepted = inspect.signature(backend_class).parameters
    kwargs = {name: getattr(options, name) for name in ("debug", "fast_math", "threads", "device_memory_limit",
                                                         "offline_cache", "webgpu_profile")
              if name in accepted and options is not None}
    return backend_class(*args, **kwargs)


def _pick_adapter(arch: Arch, adapters: list[AdapterInfo]) -> AdapterInfo | None:
    """The best adapter for a wgpu arch: discrete, then integrated GPUs, then CPU adapters (lavapipe; not
    for wk.gpu). Never OpenGL: wgpu falls back to it silently and it lacks f64, int64 and atomics."""
    pool = [a for a in adapters if a.backend_type != "OpenGL"]
    if arch == Arch.gpu:
        pool = [a for a in pool if a.is_real_gpu]
    elif arch in _BACKEND_TYPE_OF:
        pool = [a for a in pool if a.backend_type == _BACKEND_TYPE_OF[arch]]
    pool.sort(key=lambda a: {"DiscreteGPU": 0, "IntegratedGPU": 1}.get(a.adapter_type, 2))
    return pool[0] if pool else None


def select(arch: Any = None, gpu_fallback_note: Callable[[str], None] | None = None) -> Selection:
    """Resolve `wk.init(arch=...)`: an explicit arch, else WK_ARCH, else the best real GPU, else CPU.
    `wk.gpu` on a machine without a GPU gives the CPU after `gpu_fallback_note(why)` (default: a line on
    stderr)."""
    requested = parse_arch(arch)
    if requested is None:
        requested = parse_arch(os.environ.get("WK_ARCH") or None)
        if requested is None:
            adapters, _ = list_wgpu_adapters()
            best = _pick_adapter(Arch.gpu, adapters)
            if best is not None:
                return _wgpu_selection(_arch_of(best), best)
            ok, detail = cuda_available()
            return _cuda_selection(detail) if ok else _cpu_selection()
    if requested == Arch.cpu:
        return _cpu_selection()
    if requested == Arch.cuda:
        ok, detail = cuda_available()
        if ok:
            return _cuda_selection(detail)
        adapters, reason = list_wgpu_adapters()
        raise ArchUnavailableError(f"wk.cuda needs an NVIDIA GPU and its driver: {detail}; "
                                   + _found_text(adapters, reason))
    if requested in NOT_BUILT:
        adapters, reason = list_wgpu_adapters()
        raise ArchUnavailableError(f"{requested!r} is not built in this version of wgkern (its backends: wk.cpu, "
                                   "wk.cuda, and wk.vulkan / wk.metal / wk.dx12 through wgpu); "
                                   + _found_text(adapters, reason))
    adapters, reason = list_wgpu_adapters()
    best = _pick_adapter(requested, adapters)
    if best is None and requested == Arch.gpu:
        ok, detail = cuda_available()
        if ok:
            return _cuda_selection(detail)
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
    return _wgpu_selection(report, best)


def _arch_of(adapter: AdapterInfo) -> Arch:
    return _ARCH_OF_BACKEND_TYPE.get(adapter.backend_type, Arch.webgpu)


def describe_available() -> list[str]:
    """Human-readable lines for `python -m wgkern info`."""
    adapters, reason = list_wgpu_adapters()
    lines = [f"wgpu adapter: {a.summary} [{a.backend_type}, {a.adapter_type}]" for a in adapters]
    if reason:
        lines.append(f"wgpu: {reason}")
    ok, detail = cuda_available()
    lines.append(f"cuda: {detail}" if ok else f"cuda: unavailable ({detail})")
    lines.append("cpu: LLVM CPU backend (llvmlite)")
    return lines
