"""wk.init's options, Taichi's included (runtime/init_options.py): default dtypes, the device memory limit,
bounds checks, CPU threads, the kernel profiler (wgkern/profiler.py), accepted no-ops, and unknown keywords."""
from __future__ import annotations

import gc
import subprocess
import sys

import numpy as np
import pytest

import wgkern as wk


def test_default_fp_and_ip_type_literals_and_builtins(arch):
    backend_features = getattr(wk.runtime.program.current().backend, "features", None)
    if backend_features is not None and not {"shader-f64", "shader-int64"} <= set(backend_features):
        pytest.skip("the adapter has no f64/i64")
    wk.init(arch=arch, default_fp=wk.f64, default_ip=wk.i64)
    x = wk.field(float, shape=2)
    n = wk.field(int, shape=1)
    assert x.dtype == wk.f64 and n.dtype == wk.i64

    @wk.kernel
    def fill(k: int):
        for i in x:
            x[i] = 0.1 + k + 1 / 3 + i
        n[0] = 2 ** 40 + k

    fill(1)
    np.testing.assert_array_equal(x.to_numpy(), [0.1 + 1 + 1 / 3, 0.1 + 1 + 1 / 3 + 1])
    assert n[0] == 2 ** 40 + 1
    wk.init(arch=arch)                  # the next init is back to f32/i32
    assert wk.field(float, shape=1).dtype == wk.f32 and wk.field(int, shape=1).dtype == wk.i32


def test_math_vector_types_follow_default_fp_and_ip(arch):
    # Taichi's wk.math.vec3 is vector(3, float) (ivec3: int, mat3: matrix(3, 3, float)), so it takes each
    # wk.init's default_fp / default_ip (Quadrants' test_math_module test_vector_types_f64).
    backend_features = getattr(wk.runtime.program.current().backend, "features", None)
    if backend_features is not None and not {"shader-f64", "shader-int64"} <= set(backend_features):
        pytest.skip("the adapter has no f64/i64")
    wk.init(arch=arch, default_fp=wk.f64, default_ip=wk.i64)
    assert wk.math.vec3.dtype == wk.f64 and wk.math.mat2.dtype == wk.f64 and wk.math.ivec4.dtype == wk.i64
    assert wk.math.uvec2.dtype == wk.u64

    @wk.kernel
    def precise() -> wk.f64:
        v = wk.math.vec3(3.14159265358)
        n = wk.math.ivec2(2 ** 40)
        return (v.x - 3.14159265358) + wk.f64(n.y - 2 ** 40)

    assert precise() == 0.0
    wk.init(arch=arch)
    assert wk.math.vec3.dtype == wk.f32 and wk.math.ivec3.dtype == wk.i32 and wk.math.uvec3.dtype == wk.u32


def test_device_memory_limit_is_enforced_and_given_back(arch):
    wk.init(arch=arch, device_memory_limit=1 << 20)
    a = wk.field(wk.f32, shape=100_000)
    b = wk.field(wk.f32, shape=100_000)
    with pytest.raises(wk.OutOfMemoryError, match="allocating 400000 bytes would exceed "
                                                   "wk.init\\(device_memory_limit=1048576\\)"):
        wk.field(wk.f32, shape=100_000)
    del a
    gc.collect()
    c = wk.field(wk.f32, shape=100_000)            # a's bytes came back
    c.fill(1.0)
    b.fill(2.0)
    assert c.to_numpy().sum() == 100_000
    wk.init(arch=arch, device_memory_GB=0.25)
    # Taichi's device_memory_GB sizes a GPU's memory pool: on the CPU (difftaichi's diffmpm3d passes 3.5 with
    # arch=ti.gpu, which runs on the CPU without a GPU) host memory is limited by the machine alone
    expected = None if arch == wk.cpu else 1 << 28
    assert wk.runtime.program.current().backend.budget.limit == expected
    if arch == wk.cpu:
        wk.init(arch=arch, device_memory_GB=0.001)
        big = wk.field(wk.f32, shape=1 << 20)          # 4 MiB, past 0.001 GiB
        big.fill(1.0)
        assert big[(1 << 20) - 1] == 1.0


def test_check_out_of_bound_turns_bounds_checks_on(arch):
    wk.init(arch=arch, check_out_of_bound=True)
    x = wk.field(wk.f32, shape=4)

    @wk.kernel
    def poke(k: wk.i32):
        x[k] = 1.0

    with pytest.raises(wk.BoundsCheckError):
        poke(7)
        wk.sync()


def test_cpu_threads():
    """In a fresh process: the worker pool is process-wide and keeps its size while any CPU backend uses it."""
    code = ("import wgkern as wk; wk.init(arch=wk.cpu, cpu_max_num_threads=1); "
            "print(wk.runtime.program.current().backend.slice_count())")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "1"


def test_kernel_profiler_records_each_kernel(arch, capsys):
    wk.init(arch=arch, kernel_profiler=True)
    x = wk.field(wk.f32, shape=8, needs_grad=True)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def square():
        for i in x:
            loss[None] += x[i] * x[i]

    for _ in range(3):
        square()
    loss.grad[None] = 1.0
    square.grad()
    wk.profiler.print_kernel_profiler_info()
    out = capsys.readouterr().out
    assert "      3 " in out and "square\n" in out and "      1 " in out and "square_grad" in out
    assert wk.profiler.get_kernel_profiler_total_time() > 0
    wk.profiler.clear_kernel_profiler_info()
    assert wk.profiler.get_kernel_profiler_total_time() == 0
    wk.init(arch=arch)
    wk.profiler.print_kernel_profiler_info()
    assert "profiler is off" in capsys.readouterr().out


def test_taichi_options_without_effect_are_accepted_and_others_refused(arch):
    wk.init(arch=arch, packed=True, dynamic_index=True, advanced_optimization=False, log_level=wk.ERROR,
            excepthook=True, print_ir=False, device_memory_fraction=0.5, offline_cache=False)
    # Quadrants programs pass these (the adstack is always on; the rest tune Quadrants' passes)
    wk.init(arch=arch, ad_stack_experimental_enabled=True, cfg_optimization=False, num_compile_threads=4,
            ad_stack_size=0, default_ad_stack_size=64, ad_stack_sparse_threshold_bytes=0, src_ll_cache=True,
            gdb_trigger=False)
    # programs written for Taichi's AOT runtime name the Vulkan API version (ti.init(arch, vk_api_version="1.0"))
    wk.init(arch, vk_api_version="1.0")
    assert wk.lang.impl.current_cfg().arch == arch
    # Taichi's NGP example asks for no CPU fallback: a named arch that exists just starts
    wk.init(arch=arch, enable_fallback=False, offline_cache=True)
    assert wk.lang.impl.current_cfg().arch == arch
    wk.set_logging_level(wk.WARN)
    with pytest.raises(ValueError, match="unknown log level"):
        wk.set_logging_level("loud")
    with pytest.raises(TypeError, match="unexpected keyword arguments: bogus"):
        wk.init(arch=arch, bogus=1)
    with pytest.raises(ValueError, match="default_fp=f16 is not supported"):
        wk.init(arch=arch, default_fp=wk.f16)
    with pytest.raises(ValueError, match="cpu_max_num_threads must be a positive int"):
        wk.init(arch=arch, cpu_max_num_threads=0)


def test_enable_fallback_gives_the_cpu_for_a_missing_arch(capsys):
    """Taichi's examples ask for ti.cuda / ti.metal and Taichi falls back to the CPU where those are missing;
    wk.init does so when enable_fallback=True is passed (its own default stays: ArchUnavailableError)."""
    try:
        with pytest.raises(wk.ArchUnavailableError):
            wk.init(arch=wk.metal)
        wk.init(arch=wk.metal, enable_fallback=True)
        assert wk.lang.impl.current_cfg().arch == wk.cpu
        assert "enable_fallback=True" in capsys.readouterr().err
        x = wk.field(wk.i32, shape=3)

        @wk.kernel
        def fill():
            for i in x:
                x[i] = i + 1

        fill()
        assert x.to_numpy().tolist() == [1, 2, 3]
    finally:
        wk.reset()


def test_kernel_profiler_waits_for_earlier_work_before_timing_a_launch():
    """The time of a launch starts after the work queued before it is done (a slow earlier sync is not
    charged to this kernel), and ends after its own work."""
    import time as time_module
    from wgkern.runtime.kernel_profiler import KernelProfiler
    events = []

    def sync():
        events.append("sync")
        if events.count("sync") == 1:
            time_module.sleep(0.05)          # the earlier work: slow

    profiler = KernelProfiler()
    profiler.time("k", lambda: events.append("launch"), sync)
    assert events == ["sync", "launch", "sync"]
    assert profiler.records["k"].total < 0.04
