"""Containers bound as several windows (backends/wgsl/split.py).

Most tests here lower the backend's binding limit to a few KiB (`small_windows`): every window is then a real
binding of a few KiB, so the window lowering (loads, stores, every atomic form, f16 pairs, reverse kernels and
their adstacks) runs on small containers. tests/lang/test_big_containers.py runs containers past the device's
own limit."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from wgkern.backends.wgsl import split
from wgkern.backends.wgsl.runtime import WgslBuffer, WgslCompiledKernel
from wgkern.errors import DeviceFeatureError
from wgkern.lang import types as T
from wgkern.runtime import program as program_module

from tests.backends.wgsl._kernels import kernel, range_task, slot

WINDOW = 1024          # bytes per window in these tests: 256 f32 elements


def lower_binding_limit(backend, monkeypatch, nbytes: int) -> None:
    """The backend treats `nbytes` as its binding limit (the device's own is larger, so each window of that
    size is a valid binding)."""
    monkeypatch.setattr(backend, "max_binding", nbytes)
    monkeypatch.setattr(backend, "window_bytes", split.chunk_bytes(nbytes))


@pytest.fixture
def small_windows(monkeypatch):
    """wk.init on Vulkan with the backend's binding limit lowered to WINDOW bytes."""
    try:
        wk.init(arch=wk.vulkan)
    except wk.ArchUnavailableError as exc:
        pytest.skip(str(exc))
    backend = program_module.current().backend
    lower_binding_limit(backend, monkeypatch, WINDOW)
    try:
        yield backend
    finally:
        wk.reset()


def test_window_geometry() -> None:
    assert split.chunk_bytes(128 << 20) == 128 << 20
    assert split.chunk_bytes((1 << 31) - 1) == 1 << 30
    assert split.window_count(1000, 1024, 1024) == 1 and split.window_count(1028, 1024, 1024) == 2
    handle = WgslBuffer(object(), 2500, 2500)
    assert split.windows(handle, 1024, 1024) == [(0, 1024), (1024, 1024), (2048, 452)]
    assert split.windows(handle, 4096, 4096) == [(0, 2500)]


def test_a_container_within_one_binding_compiles_as_before(backend) -> None:
    """Windows cost nothing where they are not needed: the same WGSL as a plan without them."""
    data = slot("data", T.f32, (64,))

    def body(b, i):
        p = b.global_ptr(data, [i])
        b.global_store(p, b.add(b.global_load(p), b.const(1.0, T.f32)))

    ir_kernel = kernel("inc", [data], [range_task("t", lambda b: b.const(0, T.i32), lambda b: b.const(64, T.i32),
                                                  body)])
    plain = backend.compile(ir_kernel).source()
    assert "switch" not in plain and "window" not in plain
    split_source = WgslCompiledKernel(backend, ir_kernel, (3,)).source()
    assert split_source.count("var<storage, read_write> c0_data_") == 3 and "switch" in split_source


def test_saxpy_atomics_and_fill_across_windows(small_windows) -> None:
    """One kernel per container pair, so that each fits the 8 storage bindings of the baseline profile."""
    n = 500                                    # 2000 bytes: 2 windows of 256 elements
    x = wk.ndarray(wk.f32, shape=n)
    y = wk.field(wk.f32, shape=n)
    counts = wk.field(wk.i32, shape=n)
    maxima = wk.field(wk.i32, shape=n)

    @wk.kernel
    def saxpy(a: wk.f32, x: wk.types.ndarray()):
        for i in y:
            y[i] = a * x[i] + y[i]

    @wk.kernel
    def scatter():
        for i in counts:
            counts[n - 1 - i // 2] += 1

    @wk.kernel
    def top():
        for i in maxima:
            wk.atomic_max(maxima[i // 3], i)

    values = np.arange(n, dtype=np.float32)
    x.from_numpy(values)
    y.fill(1.0)
    saxpy(2.0, x)
    scatter()
    top()
    np.testing.assert_array_equal(y.to_numpy(), 2 * values + 1)     # exact: small integers
    expected = np.zeros(n, np.int64)
    np.add.at(expected, n - 1 - np.arange(n) // 2, 1)
    np.testing.assert_array_equal(counts.to_numpy(), expected)
    highest = np.zeros(n, np.int64)
    np.maximum.at(highest, np.arange(n) // 3, np.arange(n))
    np.testing.assert_array_equal(maxima.to_numpy(), highest)
    assert small_windows.split_buffers == 4


def test_float_atomics_f16_and_f64_across_windows(small_windows) -> None:
    n = 600
    total = wk.field(wk.f32, shape=n)
    low = wk.field(wk.f32, shape=n)
    wide = wk.field(wk.f64, shape=n)
    half = wk.field(wk.f16, shape=n)

    @wk.kernel
    def scatter():
        for i in range(2 * n):
            total[i % n] += 0.5                # atomic add (native or through compare-exchange)
            wk.atomic_min(low[i % n], -float(i))
            wide[i // 2] += 0.25
            half[i // 2] += wk.f16(1.0)        # f16 pairs in u32 words: a compare-exchange helper per window

    scatter()
    np.testing.assert_array_equal(total.to_numpy(), np.full(n, 1.0, np.float32))
    np.testing.assert_array_equal(low.to_numpy(), -(np.arange(n) + n).astype(np.float32))
    np.testing.assert_array_equal(wide.to_numpy(), np.full(n, 0.5))
    np.testing.assert_array_equal(half.to_numpy(), np.full(n, 2.0, np.float16))


def test_reverse_kernel_with_a_dynamic_loop_across_windows(small_windows, monkeypatch) -> None:
    """y = x * 2^(i % 3) through a loop whose trip count is known only at run time (an adstack); the
    gradient is 2^(i % 3), exact in f32. Windows of 1 MiB: one workgroup's adstacks need more than WINDOW."""
    lower_binding_limit(small_windows, monkeypatch, 1 << 20)
    n = 600_000                                # 2.4 MB: 3 windows
    x = wk.field(wk.f32, shape=n, needs_grad=True)
    y = wk.field(wk.f32, shape=n, needs_grad=True)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def forward():
        for i in x:
            v = x[i]
            for _ in range(i % 3):
                v = v * 2.0
            y[i] = v
            loss[None] += v

    x.from_numpy(np.linspace(-1, 1, n, dtype=np.float32))
    with wk.ad.Tape(loss=loss):
        forward()
    np.testing.assert_array_equal(x.grad.to_numpy(), (2.0 ** (np.arange(n) % 3)).astype(np.float32))
    np.testing.assert_array_equal(y.to_numpy(), x.to_numpy() * 2.0 ** (np.arange(n) % 3))
    assert small_windows.split_buffers == 4        # x, y and their gradients


def test_out_of_range_accesses_are_dropped_across_windows(small_windows) -> None:
    n = 600
    x = wk.field(wk.f32, shape=n)

    @wk.kernel
    def poke(k: wk.i32) -> wk.f32:
        x[k] = 5.0
        return x[k] + x[n - 1]

    assert poke(n + 7) == 0.0 and poke(-3) == 0.0
    assert poke(n - 1) == 10.0 and poke(300) == 10.0
    expected = np.zeros(n, np.float32)
    expected[[300, n - 1]] = 5.0
    np.testing.assert_array_equal(x.to_numpy(), expected)


def test_too_many_windows_for_the_device_names_the_container(small_windows) -> None:
    limit = int(small_windows.limits["max-storage-buffers-per-shader-stage"])
    big = wk.ndarray(wk.f32, shape=limit * WINDOW // 4)      # `limit` windows, with the ring: one too many

    @wk.kernel
    def touch(big: wk.types.ndarray()):
        for i in big:
            big[i] = 1.0

    with pytest.raises(DeviceFeatureError, match=rf"kernel 'touch' needs {limit + 1} storage buffer bindings .* "
                                                 rf"container\(s\) 'big' \({limit} windows\)"):
        touch(big)


def test_the_split_saxpy_benchmark_measures_a_split_field(small_windows, monkeypatch) -> None:
    from wgkern.bench_workloads import bench_split_saxpy
    lower_binding_limit(small_windows, monkeypatch, 1 << 16)
    row = bench_split_saxpy(wk, 5)
    assert row.name == "split_saxpy" and row.value > 0 and not row.error
    assert "binding limit 65536 B" in row.detail
    assert small_windows.split_buffers == 2        # the 5/4 pair: two windows each
