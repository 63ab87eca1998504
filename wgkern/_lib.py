"""`ti._lib.core.with_vulkan()` and its siblings, which some Taichi programs call to pick an arch: here they say
whether that arch can be initialised on this machine (a wgpu adapter of its kind, a CUDA driver and GPU, an AMD
GPU with ROCm's HIP runtime)."""
from __future__ import annotations

from types import SimpleNamespace


def _available(arch_name: str) -> bool:
    from wgkern.errors import ArchUnavailableError
    from wgkern.runtime.arch import select
    try:
        select(arch_name)
    except ArchUnavailableError:
        return False
    return True


core = SimpleNamespace(
    with_vulkan=lambda: _available("vulkan"), with_metal=lambda: _available("metal"),
    with_dx12=lambda: _available("dx12"), with_cuda=lambda: _available("cuda"), with_amdgpu=lambda: _available("amdgpu"),
    with_opengl=lambda: False, with_gles=lambda: False, with_dx11=lambda: False,
    GGUI_AVAILABLE=True,          # wk.ui draws off-screen everywhere
)
