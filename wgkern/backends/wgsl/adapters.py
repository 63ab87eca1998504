"""wgpu adapter enumeration and selection, and the one process-wide cache of the WGSL backend.

`find_adapter(kind)` picks an adapter for 'vulkan', 'metal', 'dx12', 'webgpu' (any, CPU adapters included) or
'gpu' (a real GPU only), and never silently the OpenGL adapter (wgpu's fallback when Vulkan is missing).
`device_for(adapter)` creates the device once per adapter per process: creating one costs ~0.5 s, so tests
and repeated wk.init/wk.reset share it. That cache (`_PROCESS_CACHE`) is the backend's only global state."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wgkern.backends.wgsl import ffi_types
from wgkern.errors import ArchUnavailableError

_BACKEND_TYPE = {"vulkan": "Vulkan", "metal": "Metal", "dx12": "D3D12"}
_REAL_GPU = ("DiscreteGPU", "IntegratedGPU")
_TYPE_RANK = {"DiscreteGPU": 0, "IntegratedGPU": 1}

# Features requested when the adapter has them (PLATFORM.md 1.1); the codegen checks what it gets.
WANTED_FEATURES = (
    "shader-f64", "shader-int64", "shader-f16", "shader-float32-atomic", "timestamp-query",
    "shader-int64-atomic-all-ops", "shader-int64-atomic-min-max", "subgroup", "subgroup-barrier",
)
# Limits requested at the adapter's maximum (wgpu-py already does this; named so the intent is visible).
WANTED_LIMITS = (
    "max-storage-buffer-binding-size", "max-buffer-size", "max-storage-buffers-per-shader-stage",
    "max-compute-workgroups-per-dimension", "max-dynamic-storage-buffers-per-pipeline-layout",
)

# webgpu_profile="baseline": what every WebGPU implementation guarantees (the WebGPU spec's default limits, no
# optional feature), so a program tried on any machine is known to fit Metal, D3D12 and browsers.
WEBGPU_PROFILES = ("baseline",)
WEBGPU_DEFAULT_LIMITS = {
    "max-texture-dimension-1d": 8192, "max-texture-dimension-2d": 8192, "max-texture-dimension-3d": 2048,
    "max-texture-array-layers": 256, "max-bind-groups": 4, "max-bind-groups-plus-vertex-buffers": 24,
    "max-bindings-per-bind-group": 1000, "max-dynamic-uniform-buffers-per-pipeline-layout": 8,
    "max-dynamic-storage-buffers-per-pipeline-layout": 4, "max-sampled-textures-per-shader-stage": 16,
    "max-samplers-per-shader-stage": 16, "max-storage-buffers-per-shader-stage": 8,
    "max-storage-textures-per-shader-stage": 4, "max-uniform-buffers-per-shader-stage": 12,
    "max-uniform-buffer-binding-size": 65536, "max-storage-buffer-binding-size": 134217728,
    "min-uniform-buffer-offset-alignment": 256, "min-storage-buffer-offset-alignment": 256,
    "max-vertex-buffers": 8, "max-buffer-size": 268435456, "max-vertex-attributes": 16,
    "max-vertex-buffer-array-stride": 2048, "max-inter-stage-shader-variables": 16, "max-color-attachments": 8,
    "max-color-attachment-bytes-per-sample": 32, "max-compute-workgroup-storage-size": 16384,
    "max-compute-invocations-per-workgroup": 256, "max-compute-workgroup-size-x": 256,
    "max-compute-workgroup-size-y": 256, "max-compute-workgroup-size-z": 64,
    "max-compute-workgroups-per-dimension": 65535,
}


@dataclass(slots=True)
class _ProcessCache:
    """Adapters (enumerated once) and one device per adapter. Never cleared: wgpu devices are not cheap to
    recreate, and wk.reset must not pay 0.5 s."""
    adapters: list[Any] | None = None
    devices: dict[tuple[int, str | None], Any] = field(default_factory=dict)


_PROCESS_CACHE = _ProcessCache()


def quiet_wayland() -> None:
    """libwayland prints a harmless error on each adapter probe without XDG_RUNTIME_DIR (PLATFORM.md 1.6),
    which headless machines do not set: give the process a private one before wgpu looks."""
    import os
    import tempfile
    current = os.environ.get("XDG_RUNTIME_DIR")
    if not current or not os.path.isdir(current):
        os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="wk-xdg-")


def enumerate_adapters() -> list[Any]:
    """Every wgpu adapter (wgpu GPUAdapter objects, with .summary and .info), enumerated once per process."""
    if _PROCESS_CACHE.adapters is None:
        quiet_wayland()
        import wgpu
        ffi_types.prepare()
        _PROCESS_CACHE.adapters = list(wgpu.gpu.enumerate_adapters_sync())
    return _PROCESS_CACHE.adapters


def _describe(adapter: Any) -> str:
    info = adapter.info
    return f"{adapter.summary} [{info.get('backend_type', '?')}, {info.get('adapter_type', '?')}]"


def matching(kind: str, adapters: list[Any]) -> list[Any]:
    """Adapters acceptable for `kind`, best first (discrete, integrated, then CPU); OpenGL never."""
    if kind not in (*_BACKEND_TYPE, "webgpu", "gpu"):
        raise ValueError(f"unknown WGSL adapter kind {kind!r}; expected vulkan, metal, dx12, webgpu or gpu")
    pool = [a for a in adapters if a.info.get("backend_type") != "OpenGL"]
    if kind in _BACKEND_TYPE:
        pool = [a for a in pool if a.info.get("backend_type") == _BACKEND_TYPE[kind]]
    elif kind == "gpu":
        pool = [a for a in pool if a.info.get("adapter_type") in _REAL_GPU]
    return sorted(pool, key=lambda a: _TYPE_RANK.get(a.info.get("adapter_type"), 2))


def find_adapter(kind: str = "webgpu", adapters: list[Any] | None = None) -> Any:
    """The best adapter for `kind`; raises ArchUnavailableError naming every adapter that was found."""
    found = enumerate_adapters() if adapters is None else adapters
    pool = matching(kind, found)
    if pool:
        return pool[0]
    listed = "; ".join(_describe(a) for a in found) or "no wgpu adapters"
    want = {"gpu": "a real (discrete or integrated) GPU", "webgpu": "any non-OpenGL wgpu adapter"}.get(
        kind, f"a {_BACKEND_TYPE.get(kind)} adapter")
    raise ArchUnavailableError(f"WGSL backend needs {want}; found: {listed}. The OpenGL adapter is never used "
                               "(it has no f64, int64 or atomic features); install a Vulkan driver "
                               "(mesa-vulkan-drivers gives lavapipe)")


def check_profile(profile: str | None) -> str | None:
    if profile is not None and profile not in WEBGPU_PROFILES:
        raise ValueError(f"webgpu_profile={profile!r}: expected None or one of {', '.join(map(repr, WEBGPU_PROFILES))}")
    return profile


def device_for(adapter: Any, profile: str | None = None) -> Any:
    """The process-wide device of `adapter`, created on first use: with the features and limits we use, or under
    `profile="baseline"` with no optional feature and WebGPU's default limits (one device per profile)."""
    key = (id(adapter), check_profile(profile))
    device = _PROCESS_CACHE.devices.get(key)
    if device is None:
        if profile == "baseline":
            features: list[str] = []
            limits = {name: value for name, value in WEBGPU_DEFAULT_LIMITS.items() if name in adapter.limits}
        else:
            features = [f for f in WANTED_FEATURES if f in adapter.features]
            limits = {name: adapter.limits[name] for name in WANTED_LIMITS if name in adapter.limits}
        device = adapter.request_device_sync(required_features=features, required_limits=limits)
        _PROCESS_CACHE.devices[key] = device
    return device
