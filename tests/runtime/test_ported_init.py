"""`wk.init` under a ported toolkit's conventions (runtime/ported_init.py, set by `wgkern.provide`): Taichi's
and Quadrants' arch choice and CPU fallback with a warning, their keyword checks and defaults, their environment
variables; wgkern's own rules untouched when no toolkit is provided."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from wgkern.compat import toolkit
from wgkern.runtime import ported_init
from wgkern.runtime.program import current


@pytest.fixture(params=["taichi", "quadrants"])
def conventions(request, monkeypatch):
    for variable in ("WK_ARCH", "TI_ARCH", "QD_ARCH", "TI_DEFAULT_FP", "QD_DEFAULT_FP", "TI_DEFAULT_IP",
                     "QD_DEFAULT_IP"):
        monkeypatch.delenv(variable, raising=False)
    kit = toolkit(request.param)
    ported_init.use(kit.init)
    try:
        yield kit.init
    finally:
        ported_init.use(None)
        wk.reset()


def test_missing_arch_falls_back_to_the_cpu_with_a_warning(conventions, capsys):
    wk.init(arch=wk.amdgpu)
    assert current().arch == wk.cpu
    err = capsys.readouterr().err
    assert err.startswith(f"[W] {conventions.caller}: Arch=wk.amdgpu is not supported, falling back to CPU "
                          "(wk.amdgpu needs an AMD GPU, ROCm's HIP runtime and ld.lld")
    wk.init(arch=wk.amdgpu, log_level=wk.ERROR)       # the original prints no warning at this level
    assert current().arch == wk.cpu and capsys.readouterr().err == ""
    with pytest.raises(wk.ArchUnavailableError, match="wk.amdgpu needs an AMD GPU") as info:
        wk.init(arch=wk.amdgpu, enable_fallback=False)
    assert isinstance(info.value, RuntimeError)         # the original raises RuntimeError


def test_first_available_arch_of_a_list(conventions, capsys):
    wk.init(arch=[wk.amdgpu, wk.cpu])
    assert current().arch == wk.cpu and capsys.readouterr().err == ""
    wk.init(arch=(wk.amdgpu, wk.opengl))
    assert current().arch == wk.cpu
    assert "Arch=wk.amdgpu, wk.opengl is not supported, falling back to CPU" in capsys.readouterr().err
    with pytest.raises(wk.ArchUnavailableError, match=r"none of the arches \[wk.amdgpu, wk.opengl\] is available"):
        wk.init(arch=[wk.amdgpu, wk.opengl], enable_fallback=False)


def test_no_arch_is_the_cpu_unless_the_environment_names_one(conventions, monkeypatch):
    wk.init()
    assert current().arch == wk.cpu
    from tests.conftest import _vulkan_available
    if not _vulkan_available()[0]:
        pytest.skip("no Vulkan adapter to name")
    monkeypatch.setenv(f"{conventions.env_prefix}_ARCH", "vulkan")
    wk.init()
    assert current().arch == wk.vulkan
    wk.init(arch=wk.cpu)                                # the call's arch wins over the variable
    assert current().arch == wk.cpu
    monkeypatch.delenv(f"{conventions.env_prefix}_ARCH")
    monkeypatch.setenv("WK_ARCH", "vulkan")             # wgkern's own variable still chooses
    wk.init()
    assert current().arch == wk.vulkan


def test_keywords_are_checked_as_the_original_checks_them(conventions):
    with pytest.raises(KeyError, match=rf"Unrecognized keyword argument\(s\) for {conventions.caller}: bogus, "
                                       "other"):
        wk.init(arch=wk.cpu, bogus=1, other=2)
    with pytest.raises(KeyError, match="'default_up' is always the unsigned type of 'default_ip'"):
        wk.init(arch=wk.cpu, default_up=wk.u64)
    # the original's tuning options are accepted and change nothing here
    wk.init(arch=wk.cpu, unrolling_limit=8, gdb_trigger=False, print_full_traceback=True, opt_level=2,
            device_memory_fraction=0.5, num_compile_threads=2, make_thread_local=False)
    # each toolkit's own: Taichi 1.7 has use_llvm, Quadrants 1.3 src_ll_cache
    own, other = ("use_llvm", "src_ll_cache") if conventions.caller == "ti.init" else ("src_ll_cache", "use_llvm")
    wk.init(arch=wk.cpu, **{own: True})
    with pytest.raises(KeyError, match=rf"for {conventions.caller}: {other}"):
        wk.init(arch=wk.cpu, **{other: True})


def test_defaults_and_variables_of_the_original(conventions, monkeypatch):
    wk.init(arch=wk.cpu)
    assert current().options.short_circuit_operators is True      # Taichi's and Quadrants' default
    wk.init(arch=wk.cpu, short_circuit_operators=False)
    assert current().options.short_circuit_operators is False
    monkeypatch.setenv(f"{conventions.env_prefix}_DEFAULT_FP", "64")
    monkeypatch.setenv(f"{conventions.env_prefix}_DEFAULT_IP", "64")
    wk.init(arch=wk.cpu)
    assert wk.field(float, shape=1).dtype == wk.f64 and wk.field(int, shape=1).dtype == wk.i64
    wk.init(arch=wk.cpu, default_fp=wk.f32)             # the call's dtype wins over the variable
    assert wk.field(float, shape=1).dtype == wk.f32 and wk.field(int, shape=1).dtype == wk.i64
    monkeypatch.setenv(f"{conventions.env_prefix}_DEFAULT_FP", "16")
    with pytest.raises(ValueError, match=f"Invalid {conventions.env_prefix}_DEFAULT_FP=16, should be 32 or 64"):
        wk.init(arch=wk.cpu)
    monkeypatch.delenv(f"{conventions.env_prefix}_DEFAULT_FP")
    wk.init(arch=wk.cpu, require_version="1.7.0")
    with pytest.raises(wk.WkError, match="this program requires Taichi 9.0.0"):
        wk.init(arch=wk.cpu, require_version="9.0.0")


def test_debug_and_memory_options_act_as_in_the_original(arch, conventions):
    wk.init(arch=arch, debug=True, device_memory_GB=0.001, random_seed=7)
    x = wk.field(wk.f32, shape=4)

    @wk.kernel
    def poke(i: wk.i32):
        x[i] = 1.0

    with pytest.raises(wk.BoundsCheckError, match=r"kernel poke: index out of range for x of shape \(4,\)"):
        poke(9)
    if arch == wk.cpu:     # device_memory_GB caps GPU memory only, as in the original
        big = wk.field(wk.f32, shape=1 << 20)
        big.fill(2.0)
        assert float(np.asarray(big.to_numpy()).sum()) == 2.0 * (1 << 20)


def test_plain_wgkern_keeps_its_own_rules(monkeypatch):
    assert ported_init.current() is None
    monkeypatch.delenv("WK_ARCH", raising=False)
    with pytest.raises(wk.ArchUnavailableError, match="wk.amdgpu needs an AMD GPU"):
        wk.init(arch=wk.amdgpu)
    with pytest.raises(TypeError, match="wk.init\\(\\) got unexpected keyword arguments: bogus"):
        wk.init(arch=wk.cpu, bogus=1)
    wk.init(arch=wk.cpu)
    assert current().options.short_circuit_operators is False
    wk.reset()


def test_gpu_without_a_gpu_warns_as_any_missing_arch(conventions, capsys, monkeypatch):
    from wgkern.runtime import arch as arch_module
    monkeypatch.setattr(arch_module, "list_wgpu_adapters", lambda: ([], "no adapters in this test"))
    monkeypatch.setattr(arch_module, "cuda_available", lambda device=None: (False, "no CUDA in this test"))
    wk.init(arch=wk.gpu)
    assert current().arch == wk.cpu
    assert capsys.readouterr().err == (f"[W] {conventions.caller}: Arch=wk.gpu is not supported, falling back to "
                                       "CPU (no GPU found (no wgpu adapters))\n")
    wk.init(arch=wk.gpu, log_level="error")
    assert capsys.readouterr().err == ""
    with pytest.raises(wk.ArchUnavailableError, match=r"wk.gpu: no GPU found"):
        wk.init(arch=wk.gpu, enable_fallback=False)
    ported_init.use(None)                 # plain wgkern: its own line, and wk.gpu always falls back
    wk.init(arch=wk.gpu, enable_fallback=False)
    assert current().arch == wk.cpu
    assert "wk.init(arch=wk.gpu): no GPU found (no wgpu adapters); running on wk.cpu" in capsys.readouterr().err
