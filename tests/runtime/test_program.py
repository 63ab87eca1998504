"""The Program: init/reset/sync/stats, option checks, and that host access syncs only after launches."""
from __future__ import annotations

import pytest

import wgkern as wk
from wgkern.runtime import program as program_module

STAT_KEYS = {"kernel_compiles", "cache_hits", "launches", "max_reducer_dispatches", "sizer_host_evals",
             "adstack_heap_bytes", "adstack_heap_grows", "adstack_reruns"}


def test_stats_keys_and_reset(fake_program):
    stats = wk.stats()
    assert set(stats) == STAT_KEYS and all(v == 0 for v in stats.values())
    fake_program.stats.launches = 3
    fake_program.stats.adstack_heap_bytes = 64
    assert wk.stats(reset=True)["launches"] == 3
    after = wk.stats()
    assert after["launches"] == 0 and after["adstack_heap_bytes"] == 64
    assert fake_program.backend.runtime_stats is fake_program.stats


def test_stats_before_init():
    wk.reset()
    assert set(wk.stats()) == STAT_KEYS


def test_sync_and_host_access(fake_program):
    backend = fake_program.backend
    wk.sync()
    assert backend.syncs == 1
    a = wk.field(wk.f32, shape=2)
    a.to_numpy()
    assert backend.syncs == 1          # nothing launched: no sync needed
    fake_program.pending_work = True
    a.to_numpy()
    a.to_numpy()
    assert backend.syncs == 2


def test_reset_and_reinit(fake_program):
    backend = fake_program.backend
    wk.reset()
    assert backend.shut and program_module.current() is None
    wk.reset()                          # idempotent
    wk.sync()                           # no program: a no-op


def test_init_option_checks():
    with pytest.raises(TypeError, match="bogus"):
        wk.init(arch=wk.cpu, bogus=1)
    with pytest.raises(ValueError):
        wk.init(arch=wk.cpu, ad_stack_size=-1)
    with pytest.raises(ValueError, match="unknown arch"):
        wk.init(arch="tpu")
    with pytest.raises(wk.ArchUnavailableError):
        wk.init(arch=wk.amdgpu)


def test_public_names():
    for name in ("init", "reset", "sync", "stats", "field", "ndarray", "kernel", "func", "template", "types",
                 "Vector", "Matrix", "math", "ad", "f16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16",
                 "u32", "u64", "u1", "cpu", "cuda", "amdgpu", "vulkan", "metal", "dx12", "webgpu", "gpu",
                 "sin", "atomic_add", "cast", "select", "static", "ndrange", "random", "loop_config",
                 "WkError", "CompileError", "AutodiffError", "ArgumentError", "AdStackOverflowError",
                 "SizingError", "OutOfMemoryError", "ArchUnavailableError", "DeviceLostError"):
        assert hasattr(wk, name), name
    assert set(wk.__all__) <= set(dir(wk))
    assert wk.math.vec3 == wk.types.vector(3, wk.f32)
    assert hasattr(wk.ad, "Tape") and hasattr(wk.ad, "clear_all_gradients")


def test_import_is_light_and_fast():
    """`import wgkern` loads neither wgpu nor llvmlite (they come at wk.init). Its time is a benchmark
    (`python -m wgkern bench --only import`), not a timed test."""
    import subprocess
    import sys
    code = "import sys, wgkern; print([m for m in sys.modules if m.split('.')[0] in ('wgpu', 'llvmlite')])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_total_compilation_time_grows_with_compiles_only(arch):
    """Taichi's `prog.get_total_compilation_time()` (smoke_taichi_gpu prints it every iteration): seconds spent
    compiling, which a cached launch does not add to and a kernel's `.grad` compile does."""
    program = program_module.current()
    assert program.get_total_compilation_time() == 0.0
    x = wk.field(wk.f32, shape=8, needs_grad=True)
    y = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def total():
        for i in x:
            y[None] += x[i] ** 2

    total()
    first = program.get_total_compilation_time()
    assert first > 0.0
    total()
    assert program.get_total_compilation_time() == first
    total.grad()
    assert program.get_total_compilation_time() > first
