"""The WGSL runtime: 2-D folded and grid-stride dispatch, bounds read from memory, batched launches (with changing
arguments and uploads in between) equal to eager ones, storage round trips, limits, and launch cost."""
from __future__ import annotations

import time

import numpy as np
import pytest

from wgkern.errors import OutOfMemoryError, WkError
from wgkern.ir import nodes as ir
from wgkern.lang import types as T

from ._kernels import DeviceArrays, count_submits, kernel, range_task, run, scalar_arg, serial_task, slot


def _shape0(container):
    return lambda b: b.insert(ir.ShapeOf(container=container, axis=0, dtype=T.i32))


def saxpy_kernel() -> ir.OffloadedKernel:
    """y[i] = a * x[i] + y[i] over ndarrays x (arg 1) and y (arg 2); a is scalar arg 0."""
    x = slot("x", T.f32, None, 1, arg_index=1)
    y = slot("y", T.f32, None, 1, arg_index=2)

    def body(b, i):
        a = b.insert(ir.ArgLoad(arg_index=0, dtype=T.f32))
        py = b.global_ptr(y, [i])
        b.global_store(py, b.add(b.mul(a, b.global_load(b.global_ptr(x, [i]))), b.global_load(py)))

    args = [scalar_arg("a", T.f32), ir.ArgSpec(name="x", kind="ndarray", dtype=T.f32, ndim=1),
            ir.ArgSpec(name="y", kind="ndarray", dtype=T.f32, ndim=1)]
    return kernel("saxpy", [x, y], [range_task("saxpy", lambda b: b.const(0, T.i32), _shape0(x), body)], args)


def test_folded_2d_dispatch(backend) -> None:
    n = 65535 * 64 + 12345          # more than 65535 workgroups of 64
    x = np.arange(n, dtype=np.float32) % 1000
    y = np.ones(n, np.float32)
    out = run(backend, saxpy_kernel(), [x, y], [2.0, None, None])[1]
    np.testing.assert_array_equal(out, 2 * x + 1)


def test_bounds_read_from_memory_use_a_grid_stride_loop(backend) -> None:
    n = 200_000                      # beyond the capped dispatch (1024 workgroups of 64)
    count = slot("count", T.i32, (1,))
    data = slot("data", T.i32, (n,))

    def end(b):
        return b.global_load(b.global_ptr(count, [b.const(0, T.i32)]))

    def body(b, i):
        b.global_store(b.global_ptr(data, [i]), b.mul(i, b.const(3, T.i32)))

    k = kernel("from_memory", [count, data], [range_task("t", lambda b: b.const(5, T.i32), end, body)])
    got = run(backend, k, [np.array([n - 7], np.int32), np.zeros(n, np.int32)])[1]
    want = np.zeros(n, np.int32)
    want[5:n - 7] = np.arange(5, n - 7) * 3
    np.testing.assert_array_equal(got, want)


def test_flat_pipeline_by_default_loop_pipeline_only_for_capped_dispatches(backend) -> None:
    """One shader, two pipelines (override wk_flat): a launch whose workgroups cover its range runs the flat
    one and never makes the loop one; a capped dispatch (bounds read in the shader) makes and runs it."""
    k = saxpy_kernel()
    compiled = backend.compile(k)
    assert "override wk_flat: bool = false;" in compiled.source()
    x = np.arange(3000, dtype=np.float32)
    device = DeviceArrays(backend, k, [x, np.ones(3000, np.float32)])
    compiled.launch(device.args([2.0, None, None], 0, 0))
    np.testing.assert_array_equal(device.read(1), 2.0 * x + 1.0)
    device.free()
    assert compiled.tasks[0].loop is None
    assert compiled.tasks[0].groups([2.0, None, None], [(3000,), (3000,)]) == (12, 1, True)
    assert compiled.tasks[0].groups([2.0, None, None], [(0,), (0,)]) is None

    count, data = slot("count", T.i32, (1,)), slot("data", T.i32, (4096,))
    end = lambda b: b.global_load(b.global_ptr(count, [b.const(0, T.i32)]))  # noqa: E731
    body = lambda b, i: b.global_store(b.global_ptr(data, [i]), i)  # noqa: E731
    k = kernel("from_memory", [count, data], [range_task("t", lambda b: b.const(0, T.i32), end, body)])
    compiled = backend.compile(k)
    device = DeviceArrays(backend, k, [np.array([4000], np.int32), np.zeros(4096, np.int32)])
    compiled.launch(device.args([], 0, 0))
    got = device.read(1)
    device.free()
    np.testing.assert_array_equal(got[:4000], np.arange(4000))
    assert compiled.tasks[0].loop is not None


@pytest.mark.parametrize("begin,end", [(10, 3), (4, 4), (-5, 6)])
def test_reversed_and_empty_ranges(backend, begin: int, end: int) -> None:
    data = slot("data", T.i32, (16,))

    def body(b, i):
        b.global_store(b.global_ptr(data, [b.add(i, b.const(5, T.i32))]), b.add(i, b.const(100, T.i32)))

    lo = lambda b: b.insert(ir.ArgLoad(arg_index=0, dtype=T.i32))    # noqa: E731
    hi = lambda b: b.insert(ir.ArgLoad(arg_index=1, dtype=T.i32))    # noqa: E731
    k = kernel("rev", [data], [range_task("t", lo, hi, body, reversed_=True)],
               [scalar_arg("lo", T.i32), scalar_arg("hi", T.i32)])
    got = run(backend, k, [np.zeros(16, np.int32)], [begin, end])[0]
    want = np.zeros(16, np.int32)
    for i in range(begin, end):
        want[i + 5] = i + 100
    np.testing.assert_array_equal(got, want)


def _accumulate_kernel() -> ir.OffloadedKernel:
    """acc[i] = acc[i] * scale + x[i] + offset  (scale: f32 arg 0, offset: i64 arg 1, flag: u1 arg 2)."""
    x = slot("x", T.f32, (64,))
    acc = slot("acc", T.f32, (64,))

    def body(b, i):
        scale = b.insert(ir.ArgLoad(arg_index=0, dtype=T.f32))
        offset = b.cast(b.insert(ir.ArgLoad(arg_index=1, dtype=T.i64)), T.f32)
        flag = b.insert(ir.ArgLoad(arg_index=2, dtype=T.u1))
        p = b.global_ptr(acc, [i])
        value = b.add(b.add(b.mul(b.global_load(p), scale), b.global_load(b.global_ptr(x, [i]))), offset)
        b.global_store(p, b.select(flag, value, b.unary(ir.UnaryOpKind.NEG, value)))

    args = [scalar_arg("scale", T.f32), scalar_arg("offset", T.i64), scalar_arg("flag", T.u1)]
    return kernel("accumulate", [x, acc], [range_task("t", lambda b: b.const(0, T.i32),
                                                      lambda b: b.const(64, T.i32), body)], args)


def _scenario(backend, eager: bool) -> np.ndarray:
    """Launches with changing scalars, host uploads between them (one into a buffer the pending launches
    read), a device copy and a second kernel; `eager` syncs after every step."""
    compiled = backend.compile(_accumulate_kernel())
    x0 = np.arange(64, dtype=np.float32)
    device = DeviceArrays(backend, compiled.kernel, [x0, np.zeros(64, np.float32)])
    for step in range(20):
        compiled.launch(device.args([1.0 + step * 0.25, step - 10, step % 3 != 0], launch_id=step))
        if eager:
            backend.sync()
        if step % 5 == 4:
            backend.upload(device.buffers[0], (x0 * step).view(np.uint8))   # in use by pending launches
            if eager:
                backend.sync()
    backend.copy(device.buffers[0], device.buffers[1], 64 * 4)
    compiled.launch(device.args([0.5, 1, True], launch_id=99))
    result = np.concatenate([device.read(0), device.read(1)])
    device.free()
    return result


def _scenario_numpy() -> np.ndarray:
    x = np.arange(64, dtype=np.float32)
    acc = np.zeros(64, np.float32)
    for step in range(20):
        value = acc * np.float32(1.0 + step * 0.25) + x + np.float32(step - 10)
        acc = value if step % 3 != 0 else -value
        if step % 5 == 4:
            x = np.arange(64, dtype=np.float32) * step
    x = acc.copy()
    acc = acc * np.float32(0.5) + x + np.float32(1)
    return np.concatenate([x, acc])


def test_batched_launches_equal_eager_ones(backend) -> None:
    batched = _scenario(backend, eager=False)
    eager = _scenario(backend, eager=True)
    np.testing.assert_array_equal(batched, eager)
    np.testing.assert_allclose(batched, _scenario_numpy(), rtol=1e-6)


def test_many_launches_span_several_submits(backend) -> None:
    """More launches than the batch limit; each reads the previous one's result."""
    from wgkern.backends.wgsl import runtime
    compiled = backend.compile(_accumulate_kernel())
    device = DeviceArrays(backend, compiled.kernel, [np.ones(64, np.float32), np.zeros(64, np.float32)])
    submits = backend.stats["submits"]
    limit = backend.batch_limit      # runtime.BATCH_LIMIT_GPU, or _CPU on a CPU adapter
    assert limit in (runtime.BATCH_LIMIT_GPU, runtime.BATCH_LIMIT_CPU)
    for step in range(limit + 100):
        compiled.launch(device.args([1.0, 0, True]))
    np.testing.assert_array_equal(device.read(1), np.full(64, limit + 100, np.float32))
    assert backend.stats["submits"] - submits in (2, 3)
    device.free()


def test_sync_and_read_back_submit_once(backend, monkeypatch) -> None:
    """A sync after launches, and a read-back, each cost one queue submit: the wait (or the copy) is recorded
    after the pending launches, and mapping the result submits nothing more (wgpu-py's plain READ map would)."""
    compiled = backend.compile(_accumulate_kernel())
    device = DeviceArrays(backend, compiled.kernel, [np.ones(64, np.float32), np.zeros(64, np.float32)])
    backend.sync()
    submits = count_submits(backend, monkeypatch)
    for launches in (1, 5):
        submits.clear()
        for _ in range(launches):
            compiled.launch(device.args([1.0, 0, True]))
        backend.sync()
        assert len(submits) == 1
    submits.clear()
    compiled.launch(device.args([1.0, 0, True]))
    np.testing.assert_array_equal(device.read(1), np.full(64, 7, np.float32))
    assert len(submits) == 1
    submits.clear()
    backend.sync()                       # nothing pending: no submit
    assert not submits
    device.free()


def test_serial_task_and_scalar_packing(backend) -> None:
    """Serial task reading every scalar kind from the argument ring (64-bit ones first in the struct)."""
    dtypes = [T.i8, T.f64, T.u32, T.i64, T.f16, T.u1, T.u64, T.f32]
    out = slot("out", T.f64, (len(dtypes),))

    def body(b):
        for k, dtype in enumerate(dtypes):
            b.global_store(b.global_ptr(out, [b.const(k, T.i32)]),
                           b.cast(b.insert(ir.ArgLoad(arg_index=k, dtype=dtype)), T.f64))

    k = kernel("scalars", [out], [serial_task("s", body)], [scalar_arg(f"a{k}", d) for k, d in enumerate(dtypes)])
    values = [-7, 2.5, 4000000000, -(1 << 40), 0.5, True, (1 << 63) + 5, -1.25]
    got = run(backend, k, [np.zeros(len(dtypes))], values)[0]
    np.testing.assert_array_equal(got, [float(np.float64(v)) for v in values[:6]] + [float((1 << 63) + 5), -1.25])
    wrapped = run(backend, k, [np.zeros(len(dtypes))], [300, 0.0, -1, 0, 0.0, 0, -1, 0.0])[0]
    assert wrapped[0] == 44 and wrapped[2] == 4294967295 and wrapped[6] == float(2 ** 64 - 1)


def test_upload_download_round_trip_with_unaligned_ranges(backend) -> None:
    buffer = backend.allocate(10)                       # 5 f16 values: not a multiple of 4 bytes
    values = np.array([1, 2, 3, 4, 5], np.float16)
    backend.upload(buffer, values.view(np.uint8))
    backend.upload(buffer, np.array([9], np.float16).view(np.uint8), offset=6)
    got = np.frombuffer(backend.download(buffer, 10), np.float16)
    np.testing.assert_array_equal(got, [1, 2, 3, 9, 5])
    np.testing.assert_array_equal(np.frombuffer(backend.download(buffer, 4, offset=2), np.float16), [2, 3])
    backend.free(buffer)


def test_narrow_ints_are_widened_in_storage(backend) -> None:
    assert backend.storage_dtype(T.i8) == np.int32 and backend.storage_dtype(T.u1) == np.uint32
    assert backend.storage_dtype(T.f16) == np.float16 and backend.storage_dtype(T.u64) == np.uint64


def test_too_large_a_container_names_both_sizes(backend) -> None:
    limit = backend.max_buffer
    size = limit - limit % 4 + 4                  # a whole number of words past the limit
    # the size rounded up to whole 16-byte units is named too where that is what passes the limit
    with pytest.raises(OutOfMemoryError, match=rf"a container of {size} bytes( \(\d+ in whole 16-byte units\))? "
                                               rf"exceeds this device's max_buffer_size of {limit} bytes"):
        backend.allocate(size)


def test_launch_cost_is_microseconds(backend) -> None:
    """Python cost of one batched launch of a 1-element kernel (printed; a loose bound keeps CI stable)."""
    data = slot("data", T.f32, (1,))

    def body(b, i):
        p = b.global_ptr(data, [i])
        b.global_store(p, b.add(b.global_load(p), b.insert(ir.ArgLoad(arg_index=0, dtype=T.f32))))

    compiled = backend.compile(kernel("tiny", [data], [range_task("t", lambda b: b.const(0, T.i32),
                                                                  lambda b: b.const(1, T.i32), body)],
                                      [scalar_arg("step", T.f32)]))
    device = DeviceArrays(backend, compiled.kernel, [np.zeros(1, np.float32)])
    args = device.args([1.0])
    compiled.launch(args)
    backend.sync()
    count = 2000
    start = time.perf_counter()
    for _ in range(count):
        compiled.launch(args)
    encode = (time.perf_counter() - start) / count
    backend.sync()
    total = (time.perf_counter() - start) / count
    assert device.read(0)[0] == count + 1
    print(f"\nper launch: {encode * 1e6:.1f} us to encode, {total * 1e6:.1f} us including execution")
    assert encode < 300e-6
    device.free()


# ---- gpu_timer (timestamp queries) and the bench details built on it --------------------------------------

def _timed_saxpy(backend, n: int):
    compiled = backend.compile(saxpy_kernel())
    x = np.arange(n, dtype=np.float32) % 100
    device = DeviceArrays(backend, compiled.kernel, [x, np.ones(n, np.float32)])
    return compiled, device, x


def test_gpu_timer_times_the_dispatches_inside_the_block(backend) -> None:
    if not backend.supports_gpu_timer:
        pytest.skip("adapter lacks timestamp-query")
    compiled, device, x = _timed_saxpy(backend, 1 << 20)
    start = time.perf_counter()
    with backend.gpu_timer() as elapsed:
        for _ in range(3):
            compiled.launch(device.args([2.0, None, None]))
    wall = time.perf_counter() - start
    assert 0 < elapsed.seconds <= wall and elapsed.passes == 1      # three launches batched into one pass
    np.testing.assert_array_equal(device.read(1), 1 + 3 * (2 * x))
    device.free()


def test_gpu_timer_spans_several_passes_and_submits(backend, monkeypatch) -> None:
    if not backend.supports_gpu_timer:
        pytest.skip("adapter lacks timestamp-query")
    from wgkern.backends.wgsl import timing
    monkeypatch.setattr(timing, "TIMER_PASSES", 2)      # the third pass needs a fresh submit
    compiled, device, x = _timed_saxpy(backend, 1 << 12)
    submits = backend.stats["submits"]
    with backend.gpu_timer() as elapsed:
        for _ in range(5):
            compiled.launch(device.args([1.0, None, None]))
            backend.upload(device.buffers[0], x.view(np.uint8))    # a copy between launches ends the pass
    assert elapsed.passes == 5 and elapsed.seconds > 0
    assert backend.stats["submits"] - submits >= 3
    np.testing.assert_array_equal(device.read(1), 1 + 5 * x)
    with pytest.raises(WkError, match="cannot nest"):
        with backend.gpu_timer():
            with backend.gpu_timer():
                pass
    assert backend.timer is None
    device.free()


def test_gpu_timer_without_timestamp_queries_is_a_clear_error(backend, monkeypatch) -> None:
    monkeypatch.setattr(backend, "features", backend.features - {"timestamp-query"})
    with pytest.raises(WkError, match="timestamp-query"):
        with backend.gpu_timer():
            pass


def test_bench_gpu_timestamp_detail_and_idle_sync(arch) -> None:
    import wgkern as wk
    from wgkern import bench_workloads
    result = bench_workloads.bench_idle_sync(wk, 5)
    assert result.name == "idle_sync" and result.unit == "us" and result.value > 0
    assert result.reps == bench_workloads.IDLE_SYNC_SAMPLES
    z = wk.field(wk.f32, shape=1 << 16)

    @wk.kernel
    def bump():
        for i in z:
            z[i] += 1.0

    seconds = bench_workloads._gpu_median_seconds(wk, bump, 5)
    backend = wk.runtime.program.current().backend
    wgsl_without_timers = backend.name == "wgsl" and "timestamp-query" not in backend.features
    if arch.value == "cpu" or wgsl_without_timers:
        assert seconds is None          # no device timers (the CPU; a WGSL device without timestamp-query)
    else:
        assert seconds is not None and 0 < seconds < 1
    assert z.to_numpy()[0] == (5 if seconds is not None else 0)


def test_download_into_a_reused_array(backend):
    data = np.arange(1000, dtype=np.uint32)
    buffer = backend.allocate(data.nbytes)
    backend.upload(buffer, data.view(np.uint8), 0)
    out = np.zeros(8000, np.uint8)
    got = backend.download(buffer, 400, 40, out)
    assert got.base is out or got.ctypes.data == out.ctypes.data
    np.testing.assert_array_equal(got.view(np.uint32), data[10:110])
    np.testing.assert_array_equal(backend.download(buffer, 8, 4).view(np.uint32), [1, 2])


@pytest.mark.parametrize("native", [True, False], ids=["native-calls", "public-api"])
def test_launch_recording_paths_give_the_same_results(backend, native) -> None:
    """The batch recorder's direct wgpu-native calls (encoding.py) and its public-API fallback."""
    from wgkern.backends.wgsl.encoding import NativeCommands, PublicCommands
    backend.flush()
    saved = backend.commands
    if native and not isinstance(saved, NativeCommands):
        pytest.skip("this wgpu-py has no native call path")
    backend.commands = NativeCommands(backend.device) if native else PublicCommands(backend.device)
    try:
        x = np.arange(5000, dtype=np.float32)
        out = run(backend, saxpy_kernel(), [x, np.ones(5000, np.float32)], [3.0, None, None])[1]
        np.testing.assert_array_equal(out, 3.0 * x + 1.0)
    finally:
        backend.flush()
        backend.commands = saved
