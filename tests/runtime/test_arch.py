"""Arch selection rules (API.md "Initialisation") on made-up adapter lists: WK_ARCH, best real GPU, wk.gpu,
wk.webgpu, per-API arches, and ArchUnavailableError naming what was found."""
from __future__ import annotations

import pytest

import wgkern as wk
from wgkern.runtime import arch as arch_module
from wgkern.runtime.arch import AdapterInfo, Arch, parse_arch, select

LAVAPIPE = AdapterInfo("llvmpipe (LLVM 15) (CPU) via Vulkan", "Vulkan", "CPU", "lvp")
LLVMPIPE_GL = AdapterInfo("llvmpipe via OpenGL", "OpenGL", "CPU", "gl")
DISCRETE = AdapterInfo("NVIDIA H100 via Vulkan", "Vulkan", "DiscreteGPU", "nv")
INTEGRATED = AdapterInfo("Intel UHD via Vulkan", "Vulkan", "IntegratedGPU", "intel")
METAL = AdapterInfo("Apple M2", "Metal", "IntegratedGPU", "m2")


@pytest.fixture
def adapters(monkeypatch):
    found: list[AdapterInfo] = []
    monkeypatch.setattr(arch_module, "list_wgpu_adapters", lambda: (list(found), ""))
    monkeypatch.setattr(arch_module, "cuda_available", lambda device=None: (False, "no CUDA driver in this test"))
    monkeypatch.setattr(arch_module, "amdgpu_available", lambda device=None: (False, "no HIP runtime in this test"))
    monkeypatch.delenv("WK_ARCH", raising=False)
    return found


def test_arch_constants():
    assert wk.cpu is Arch.cpu and wk.vulkan is Arch.vulkan and wk.gpu is Arch.gpu
    assert repr(wk.vulkan) == "wk.vulkan"
    assert parse_arch("vulkan") is Arch.vulkan and parse_arch("wk.cpu") is Arch.cpu and parse_arch(None) is None
    with pytest.raises(ValueError, match="unknown arch"):
        parse_arch("tpu")


def test_default_is_cpu_without_real_gpu(adapters):
    adapters.extend([LAVAPIPE, LLVMPIPE_GL])
    assert select().arch is Arch.cpu


def test_default_prefers_discrete_gpu(adapters):
    adapters.extend([LAVAPIPE, INTEGRATED, DISCRETE])
    chosen = select()
    assert chosen.arch is Arch.vulkan and chosen.description == DISCRETE.summary


def test_wk_arch_env(adapters, monkeypatch):
    adapters.extend([DISCRETE])
    monkeypatch.setenv("WK_ARCH", "cpu")
    assert select().arch is Arch.cpu
    assert select(wk.vulkan).arch is Arch.vulkan      # an explicit arch wins over WK_ARCH


def test_vulkan_takes_lavapipe_not_gl(adapters):
    adapters.extend([LLVMPIPE_GL, LAVAPIPE])
    chosen = select(wk.vulkan)
    assert chosen.arch is Arch.vulkan and chosen.description == LAVAPIPE.summary
    assert select(wk.webgpu).description == LAVAPIPE.summary


def test_gpu_takes_a_real_gpu_else_the_cpu(adapters, capsys):
    adapters.extend([LAVAPIPE])
    assert select(wk.gpu).arch is Arch.cpu          # as Taichi's ti.gpu: not lavapipe, the LLVM CPU backend
    assert "no GPU found (llvmpipe" in capsys.readouterr().err
    adapters.append(METAL)
    assert select(wk.gpu).arch is Arch.metal


def test_missing_backend_type(adapters):
    adapters.extend([LAVAPIPE])
    with pytest.raises(wk.ArchUnavailableError, match="Metal.*found: llvmpipe"):
        select(wk.metal)
    with pytest.raises(wk.ArchUnavailableError, match="D3D12"):
        select("dx12")


def test_amdgpu_needs_hip_and_cuda_needs_a_driver(adapters, monkeypatch):
    monkeypatch.setattr(arch_module, "amdgpu_available", lambda device=None: (False, "no libamdhip64 here"))
    with pytest.raises(wk.ArchUnavailableError, match="wk.amdgpu needs an AMD GPU, ROCm's HIP runtime and ld.lld: "
                                                      "no libamdhip64 here"):
        select(wk.amdgpu)
    monkeypatch.setattr(arch_module, "amdgpu_available", lambda device=None: (True, "Test AMD GPU (gfx90a)"))
    assert select(wk.amdgpu).arch is Arch.amdgpu
    assert select(wk.gpu).arch is Arch.amdgpu              # ti.gpu: no wgpu GPU, no CUDA, an AMD GPU
    monkeypatch.setattr(arch_module, "cuda_available", lambda device=None: (False, "no libcuda here"))
    with pytest.raises(wk.ArchUnavailableError, match="wk.cuda needs an NVIDIA GPU and its driver: no libcuda here"):
        select(wk.cuda)


def test_cuda_is_chosen_when_its_driver_works_and_no_wgpu_gpu_exists(adapters, monkeypatch):
    monkeypatch.setattr(arch_module, "cuda_available", lambda device=None: (True, "Test GPU (sm_90)"))
    monkeypatch.delenv("WK_ARCH", raising=False)
    assert select(wk.cuda).arch is Arch.cuda and select(wk.gpu).arch is Arch.cuda and select().arch is Arch.cuda
    adapters.extend([LAVAPIPE])
    assert select(wk.gpu).arch is Arch.cuda          # lavapipe is no GPU
    monkeypatch.setattr(arch_module, "cuda_available", lambda device=None: (False, "none"))
    assert select().arch is Arch.cpu


def test_no_wgsl_backend(monkeypatch):
    monkeypatch.setattr(arch_module, "list_wgpu_adapters", lambda: ([], "WGSL backend not importable (x)"))
    monkeypatch.setattr(arch_module, "cuda_available", lambda device=None: (False, "no CUDA driver in this test"))
    monkeypatch.delenv("WK_ARCH", raising=False)
    with pytest.raises(wk.ArchUnavailableError, match="not importable"):
        select(wk.vulkan)
    assert select().arch is Arch.cpu


def test_opengl_is_never_chosen(adapters):
    adapters.extend([LLVMPIPE_GL])
    with pytest.raises(wk.ArchUnavailableError, match="OpenGL"):
        select(wk.webgpu)
    assert select().arch is Arch.cpu


def test_taichi_capability_queries_say_what_can_be_initialised(adapters):
    adapters.extend([LAVAPIPE])
    core = wk._lib.core
    assert core.with_vulkan() is True and core.with_metal() is False and core.with_cuda() is False


def test_current_cfg_names_the_running_arch_and_options(arch):
    cfg = wk.lang.impl.current_cfg()
    assert cfg.arch is Arch(arch) and cfg.debug is False and cfg.default_fp is wk.f32
    assert wk._lib.core.GGUI_AVAILABLE


def test_taichi_arches_without_a_backend_and_extension_queries(adapters):
    adapters.extend([LAVAPIPE])
    for arch in (wk.opengl, wk.gles, wk.dx11, wk.cc):
        with pytest.raises(wk.ArchUnavailableError, match="not built in this version of wgkern"):
            select(arch)
    supported = wk.is_extension_supported
    assert supported(wk.cpu, wk.extension.sparse) and supported(wk.vulkan, wk.extension.adstack)
    assert supported(wk.cpu, wk.extension.data64) and supported(wk.cpu, wk.extension.quant)
    assert supported(wk.cuda, wk.extension.sparse) and not supported(wk.amdgpu, wk.extension.sparse)
    assert not supported(wk.cpu, wk.extension.bls)
    with pytest.raises(ValueError, match="wk.extension member"):
        supported(wk.cpu, "sparse")


def test_is_extension_enabled_asks_about_the_running_program(arch):
    # Quadrants' qd.is_extension_enabled(ext): no arch argument, the running program's
    assert wk.is_extension_enabled(wk.extension.sparse) and not wk.is_extension_enabled(wk.extension.bls)
    assert wk.is_extension_enabled(wk.extension.data64) == wk.is_extension_supported(arch, wk.extension.data64)
    wk.reset()
    with pytest.raises(RuntimeError, match="call wk.init"):
        wk.is_extension_enabled(wk.extension.sparse)
