"""Packed binding (arena.py, codegen.BindingPlan): kernels touching more containers than the device's storage
bindings run, with atomics and batched launches, against numpy; moved containers keep working everywhere."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from wgkern.errors import CompileError
from wgkern.ir import nodes as ir
from wgkern.ir.ops import AtomicOpKind, BinaryOpKind
from wgkern.lang import types as T

from ._kernels import DeviceArrays, kernel, range_task, scalar_arg, slot

N = 100
PAIRS = 24          # 24 f32 + 24 i32 containers, plus 3 atomic accumulators: 51 in all


def wide_kernel() -> ir.OffloadedKernel:
    """Task 'fill': f[k][i] = s * k + i, g[k][i] = 1000 k + i (plain stores). Task 'reduce': atomically
    acc_f[0] += f[k][i], acc_i[i % 4] += g[k][i] % 7, and g[0][i] atomic-max'ed with f-derived values, so g[0]
    is plain in one task and atomic in the other."""
    fs = [slot(f"f{k}", T.f32, (N,)) for k in range(PAIRS)]
    gs = [slot(f"g{k}", T.i32, (N,)) for k in range(PAIRS)]
    acc_f = slot("acc_f", T.f32, (1,))
    acc_i = slot("acc_i", T.i32, (4,))
    peak = slot("peak", T.f32, (1,))      # f32 atomic max: a compare-exchange loop on atomic<u32> bits

    def fill(b, i):
        s = b.insert(ir.ArgLoad(arg_index=0, dtype=T.f32))
        fi = b.cast(i, T.f32)
        for k, (f, g) in enumerate(zip(fs, gs)):
            b.global_store(b.global_ptr(f, [i]), b.add(b.mul(s, b.const(float(k), T.f32)), fi))
            b.global_store(b.global_ptr(g, [i]), b.add(b.const(1000 * k, T.i32), i))

    def reduce(b, i):
        zero = b.const(0, T.i32)
        bucket = b.insert(ir.BinaryOp(op=BinaryOpKind.MOD, lhs=i, rhs=b.const(4, T.i32), dtype=T.i32))
        for f, g in zip(fs, gs):
            b.atomic(AtomicOpKind.ADD, b.global_ptr(acc_f, [zero]), b.global_load(b.global_ptr(f, [i])))
            seven = b.insert(ir.BinaryOp(op=BinaryOpKind.MOD, lhs=b.global_load(b.global_ptr(g, [i])),
                                         rhs=b.const(7, T.i32), dtype=T.i32))
            b.atomic(AtomicOpKind.ADD, b.global_ptr(acc_i, [bucket]), seven)
            b.atomic(AtomicOpKind.MAX, b.global_ptr(peak, [zero]), b.global_load(b.global_ptr(f, [i])))
        b.atomic(AtomicOpKind.MAX, b.global_ptr(gs[0], [i]), b.cast(b.global_load(b.global_ptr(fs[1], [i])), T.i32))

    bounds = (lambda b: b.const(0, T.i32), lambda b: b.const(N, T.i32))
    return kernel("wide", [*fs, *gs, acc_f, acc_i, peak], [range_task("fill", *bounds, fill),
                                                      range_task("reduce", *bounds, reduce)],
                  [scalar_arg("s", T.f32)])


def wide_expected(scales: list[float]) -> dict[str, np.ndarray]:
    """numpy: the containers after launching wide_kernel once per scale, in order, from zeros."""
    i = np.arange(N)
    acc_f = np.float64(0.0)
    acc_i = np.zeros(4, np.int64)
    peak = np.float32(0.0)
    for s in scales:
        f = [np.float32(s) * np.float32(k) + i.astype(np.float32) for k in range(PAIRS)]
        g = [1000 * k + i for k in range(PAIRS)]
        acc_f += sum(float(x.astype(np.float64).sum()) for x in f)
        for x in g:
            np.add.at(acc_i, i % 4, x % 7)
        g0 = np.maximum(g[0], f[1].astype(np.int32))
        peak = max(peak, max(x.max() for x in f))
    return {"f": np.array(f, np.float32), "g": np.array([g0, *g[1:]], np.int32), "acc_f": acc_f, "acc_i": acc_i, "peak": peak}


def _zeros(k: ir.OffloadedKernel) -> list[np.ndarray]:
    return [np.zeros(c.shape, c.dtype.np_dtype) for c in k.containers]


def _check(device: DeviceArrays, want: dict[str, np.ndarray]) -> None:
    got = [device.read(k) for k in range(2 * PAIRS + 3)]
    np.testing.assert_array_equal(np.array(got[:PAIRS]), want["f"])
    np.testing.assert_array_equal(np.array(got[PAIRS:2 * PAIRS]), want["g"])
    np.testing.assert_allclose(got[-3][0], want["acc_f"], rtol=1e-5)
    np.testing.assert_array_equal(got[-2], want["acc_i"])
    assert got[-1][0] == want["peak"]


def _lavapipe_binding_limit(backend, monkeypatch) -> None:
    """Devices allow from 8 (WebGPU's default) to 500000+ (NVIDIA) storage buffers per stage: test against
    lavapipe's 32 everywhere."""
    monkeypatch.setattr(backend, "limits", {**dict(backend.limits), "max-storage-buffers-per-shader-stage": 32})


def test_fifty_containers_run_packed_batched_and_atomic(backend, monkeypatch) -> None:
    _lavapipe_binding_limit(backend, monkeypatch)
    limit = backend.limits["max-storage-buffers-per-shader-stage"]
    k = wide_kernel()
    assert len(k.containers) + 1 > limit
    compiled = backend.compile(k)
    assert compiled.plan.packed and compiled.plan.bindings <= 5      # f32, i32, atomic f32 (add), f32 bits, atomic i32
    assert "wk_arena" in compiled.source() and "atomicMax(&wk_arena" in compiled.source()
    device = DeviceArrays(backend, k, _zeros(k))
    moves = backend.stats["arena_moves"]
    scales = [0.5, 1.5, -2.0]
    for s in scales:                  # batched: no sync between launches
        compiled.launch(device.args([s]))
    assert backend.stats["arena_moves"] - moves == len(k.containers)   # moved once, on the first launch
    _check(device, wide_expected(scales))
    compiled.launch(device.args([3.0]))                                 # after a sync: nothing moves again
    assert backend.stats["arena_moves"] - moves == len(k.containers)
    _check(device, wide_expected([*scales, 3.0]))
    device.free()


def test_packed_launches_alternating_buffer_sets_are_batched_correctly(backend) -> None:
    k = wide_kernel()
    compiled = backend.compile(k)
    first, second = DeviceArrays(backend, k, _zeros(k)), DeviceArrays(backend, k, _zeros(k))
    for s in (1.0, 2.0):
        compiled.launch(first.args([s]))
        compiled.launch(second.args([-s]))
    _check(first, wide_expected([1.0, 2.0]))
    _check(second, wide_expected([-1.0, -2.0]))
    first.free()
    second.free()


def _saxpy_on(container: ir.ContainerSlot) -> ir.OffloadedKernel:
    def body(b, i):
        p = b.global_ptr(container, [i])
        b.global_store(p, b.add(b.mul(b.global_load(p), b.const(2.0, T.f32)), b.const(1.0, T.f32)))
    return kernel("double", [container], [range_task("t", lambda b: b.const(0, T.i32),
                                                     lambda b: b.const(N, T.i32), body)])


def test_moved_containers_work_in_direct_kernels_copies_and_uploads_and_free_their_arena(backend, monkeypatch) -> None:
    _lavapipe_binding_limit(backend, monkeypatch)
    k = wide_kernel()
    compiled = backend.compile(k)
    device = DeviceArrays(backend, k, _zeros(k))
    live_before = len(backend.live)
    compiled.launch(device.args([1.0]))
    moved = device.buffers[3]
    double = backend.compile(_saxpy_on(k.containers[3]))
    double.launch(type(device.args())([], [moved], [(N,)], 0, 0))      # a direct binding of an arena window
    want = wide_expected([1.0])["f"][3] * 2 + 1
    np.testing.assert_array_equal(device.read(3), want)
    backend.upload(moved, np.full(N, 7, np.float32).view(np.uint8), offset=0)
    backend.upload(moved, np.array([9], np.float32).view(np.uint8), offset=8)
    other = backend.allocate(N * 4)
    backend.copy(other, moved, N * 4)
    got = np.frombuffer(backend.download(other, N * 4), np.float32)
    np.testing.assert_array_equal(got, [7, 7, 9] + [7] * (N - 3))
    backend.free(other)
    assert moved.arena is not None and len(backend.live) > live_before
    device.free()
    backend.sync()
    assert len(backend.live) == live_before - len(k.containers)        # the arenas went with their residents


def test_too_many_element_types_even_packed_is_a_clear_error(backend, monkeypatch) -> None:
    monkeypatch.setattr(backend, "limits", {**dict(backend.limits), "max-storage-buffers-per-shader-stage": 3})
    containers = [slot(f"c{k}", dtype, (4,)) for k, dtype in enumerate((T.f32, T.i32, T.u32, T.f32))]

    def body(b, i):
        for c in containers:
            b.global_store(b.global_ptr(c, [i]), b.cast(i, c.dtype))

    k = kernel("typed", containers, [range_task("t", lambda b: b.const(0, T.i32), lambda b: b.const(4, T.i32), body)])
    with pytest.raises(CompileError, match=r"4 containers of 3 distinct element types.*allows 3"):
        backend.compile(k)


def test_small_binding_limit_packs_and_matches_numpy(backend, monkeypatch) -> None:
    """A device with 4 storage bindings: 6 containers of 2 types still run."""
    monkeypatch.setattr(backend, "limits", {**dict(backend.limits), "max-storage-buffers-per-shader-stage": 4})
    containers = [slot(f"c{k}", T.f32 if k % 2 else T.i32, (N,)) for k in range(6)]

    def body(b, i):
        for k, c in enumerate(containers):
            b.global_store(b.global_ptr(c, [i]), b.cast(b.mul(i, b.const(k + 1, T.i32)), c.dtype))

    k = kernel("six", containers, [range_task("t", lambda b: b.const(0, T.i32), lambda b: b.const(N, T.i32), body)])
    compiled = backend.compile(k)
    assert compiled.plan.packed and compiled.plan.bindings == 2
    device = DeviceArrays(backend, k, _zeros(k))
    compiled.launch(device.args())
    for j in range(6):
        np.testing.assert_array_equal(device.read(j), np.arange(N) * (j + 1))
    device.free()


def test_forty_four_fields_through_the_public_api(arch) -> None:
    n, count = 100, 44
    fields = [wk.field(wk.f32 if k % 2 == 0 else wk.i32, shape=n) for k in range(count)]
    total = wk.field(wk.f32, shape=())
    buckets = wk.field(wk.i32, shape=4)

    @wk.kernel
    def fill(s: wk.f32):
        for i in range(n):
            for k in wk.static(range(count)):
                if wk.static(k % 2 == 0):
                    fields[k][i] = s * k + i
                else:
                    fields[k][i] = k * 1000 + i

    @wk.kernel
    def reduce_all():
        for i in range(n):
            for k in wk.static(range(count)):
                if wk.static(k % 2 == 0):
                    total[None] += fields[k][i]
                else:
                    wk.atomic_add(buckets[i % 4], fields[k][i] % 7)

    fill(0.5)
    reduce_all()
    fill(0.25)
    i = np.arange(n)
    for k in range(count):
        want = np.float32(0.25) * k + i if k % 2 == 0 else k * 1000 + i
        np.testing.assert_array_equal(fields[k].to_numpy(), want)
    assert total[None] == pytest.approx(sum(float((0.5 * k + i).sum()) for k in range(0, count, 2)), rel=1e-5)
    want_buckets = np.zeros(4, np.int64)
    for k in range(1, count, 2):
        np.add.at(want_buckets, i % 4, (k * 1000 + i) % 7)
    np.testing.assert_array_equal(buckets.to_numpy(), want_buckets)


def test_one_buffer_in_an_atomic_and_a_plain_slot_shares_one_arena(backend, monkeypatch) -> None:
    """x and y are the same buffer: x typed atomic, y plain, so two bindings must see one arena."""
    monkeypatch.setattr(backend, "limits", {**dict(backend.limits), "max-storage-buffers-per-shader-stage": 4})
    a, b_ = slot("a", T.i32, (N,)), slot("b", T.i32, (N,))
    x, y = slot("x", T.f32, (N,)), slot("y", T.f32, (N,))

    def body(b, i):
        b.atomic(AtomicOpKind.ADD, b.global_ptr(x, [i]), b.global_load(b.global_ptr(y, [i])))
        b.global_store(b.global_ptr(b_, [i]), b.add(b.global_load(b.global_ptr(a, [i])), i))

    k = kernel("aliased", [a, b_, x, y], [range_task("t", lambda b: b.const(0, T.i32),
                                                      lambda b: b.const(N, T.i32), body)])
    compiled = backend.compile(k)
    assert compiled.plan.packed and compiled.plan.bindings == 3
    values = np.arange(N, dtype=np.float32)
    device = DeviceArrays(backend, k, [np.full(N, 5, np.int32), np.zeros(N, np.int32), values, values])
    shared = device.buffers[2]
    backend.free(device.buffers[3])
    device.buffers[3] = shared
    compiled.launch(device.args())
    np.testing.assert_array_equal(device.read(2), 2 * values)
    np.testing.assert_array_equal(device.read(1), 5 + np.arange(N))
    backend.free(shared)
    device.buffers = device.buffers[:2]
    device.free()


_MOVE_OUT_OF_LAST_ARENA = """
import numpy as np
from wgkern.backends.wgsl import adapters
from wgkern.backends.wgsl.runtime import WgslBackend
backend = WgslBackend(adapters.find_adapter("vulkan"))
small = backend.allocate(64)
backend.upload(small, np.arange(16, dtype=np.float32).view(np.uint8))
first = backend.arenas.gather([small], 1)          # small is the only resident of a new arena
backend.sync()
big = backend.allocate(2 * 1024 * 1024)            # does not fit in the first arena's room
second = backend.arenas.gather([small, big], 1)    # small moves out: the first arena loses its last resident
assert second is not first and small.arena is second
backend.sync()                                     # submits the recorded copy out of the first arena
print(backend.download(small, 64).view(np.float32).tolist())
"""


def test_moving_the_last_resident_out_of_an_arena_keeps_it_until_the_copy_is_submitted(backend) -> None:
    # in a child process: wgpu aborts the process on a submit that reads a destroyed buffer
    import subprocess
    import sys
    result = subprocess.run([sys.executable, "-c", _MOVE_OUT_OF_LAST_ARENA], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split("\n")[0] == str([float(v) for v in range(16)])
