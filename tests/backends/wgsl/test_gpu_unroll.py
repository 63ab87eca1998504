"""GPU_UNROLL (backends/wgsl/control_flow.py): innermost range loops with small bodies run several copies of
the body per trip on GPU adapters. lavapipe is a CPU adapter, so the tests turn the feature on for its backend
and check the copies' results against closed forms and against the same kernels without it, on every arch."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from wgkern.backends.wgsl.shader_common import GPU_UNROLL, GPU_UNROLL_COPIES
from wgkern.runtime import program as program_module

MARK = "GPU_UNROLL: loads of several iterations in flight"


@pytest.fixture
def unrolling(arch, monkeypatch):
    """The arch's backend with GPU_UNROLL on where it compiles WGSL; True there."""
    backend = program_module.current().backend
    if backend.name != "wgsl":
        return False
    monkeypatch.setattr(backend, "features", backend.features | {GPU_UNROLL})
    return True


THREADS = 80     # more indices than llvmpipe's serial idiom (LLVMPIPE_FEW_INDICES), whose loops unroll anyway
TRIPS = (0, 1, GPU_UNROLL_COPIES - 1, GPU_UNROLL_COPIES, GPU_UNROLL_COPIES + 1, 2 * GPU_UNROLL_COPIES + 3, 100)


def test_dynamic_trip_counts_run_every_iteration_once(arch, unrolling):
    n = 128
    src = wk.field(wk.i32, shape=n)
    out = wk.field(wk.i32, shape=THREADS)
    hits = wk.field(wk.i32, shape=n)
    src.from_numpy((np.arange(n, dtype=np.int32) * 7) % 13)

    @wk.kernel
    def sums(begin: wk.i32, end: wk.i32):
        for t in out:
            acc = 0
            for j in range(begin, end):
                scaled = src[j] * (t + 1)       # a local of the body, declared again in every copy
                if scaled % 2 == 0:
                    acc += scaled
                else:
                    acc -= 1
                wk.atomic_add(hits[j], 1)
            out[t] = acc

    for begin, trips in [(0, m) for m in TRIPS] + [(5, 9), (100, 28), (-3, 0)]:
        hits.fill(0)
        sums(begin, begin + trips)
        values = ((np.arange(begin, begin + trips) * 7) % 13)[None, :] * np.arange(1, THREADS + 1)[:, None]
        want = np.where(values % 2 == 0, values, -1).sum(axis=1)
        np.testing.assert_array_equal(out.to_numpy(), want)
        want_hits = np.zeros(n, np.int32)
        want_hits[begin:begin + trips] = THREADS
        np.testing.assert_array_equal(hits.to_numpy(), want_hits)
    assert (MARK in sums.source(arch)) == unrolling


def test_bounds_near_the_end_of_i32(arch, unrolling):
    """The count of indices left is taken unsigned: a range ending at 2^31 - 1 neither overflows nor stops early."""
    out = wk.field(wk.i64, shape=THREADS)

    @wk.kernel
    def top(begin: wk.i32, end: wk.i32):
        for t in out:
            acc = wk.i64(0)
            for j in range(begin, end):
                acc += wk.i64(j) - wk.i64(begin) + t
            out[t] = acc

    big = 2 ** 31 - 1
    for trips in TRIPS[:6]:
        top(big - trips, big)
        np.testing.assert_array_equal(out.to_numpy(), [trips * (trips - 1) // 2 + t * trips for t in range(THREADS)])


def test_f32_sums_equal_the_single_copy_loop(arch, unrolling, monkeypatch):
    """The copies run the iterations in their order: an f32 accumulation is the same number, bit for bit,
    as the loop compiled as one copy on the same device (nbody's shape: three loads, a root, three sums)."""
    n = 257
    rng = np.random.default_rng(3)
    px, py, pz = (wk.field(wk.f32, shape=n) for _ in range(3))
    for f in (px, py, pz):
        f.from_numpy(rng.random(n, dtype=np.float32))

    def make():
        acc = wk.field(wk.f32, shape=(n, 3))

        @wk.kernel
        def nbody():
            for i in px:
                sx = 0.0
                sy = 0.0
                sz = 0.0
                for j in range(n):
                    dx = px[j] - px[i]
                    dy = py[j] - py[i]
                    dz = pz[j] - pz[i]
                    r2 = dx * dx + dy * dy + dz * dz + 1e-2
                    inv = 1.0 / (r2 * wk.sqrt(r2))
                    sx += dx * inv
                    sy += dy * inv
                    sz += dz * inv
                acc[i, 0] = sx
                acc[i, 1] = sy
                acc[i, 2] = sz
        nbody()
        return nbody, acc.to_numpy()

    kernel, copied = make()
    assert (MARK in kernel.source(arch)) == unrolling
    if unrolling:
        backend = program_module.current().backend
        monkeypatch.setattr(backend, "features", backend.features - {GPU_UNROLL})
    single, once = make()
    assert MARK not in single.source(arch)
    np.testing.assert_array_equal(copied, once)
    p = np.stack([px.to_numpy(), py.to_numpy(), pz.to_numpy()], 1).astype(np.float64)
    d = p[None, :, :] - p[:, None, :]
    r2 = (d ** 2).sum(-1) + np.float32(1e-2)
    # each term is within a few f32 ulps (sqrt, division, fast math) and |sum| <= sum |terms|: 1e-5 of the
    # sum of magnitudes bounds 257 such terms' rounding with room
    want = (d / (r2 * np.sqrt(r2))[:, :, None]).sum(1)
    bound = 1e-5 * (np.abs(d) / (r2 * np.sqrt(r2))[:, :, None]).sum(1)
    assert np.all(np.abs(copied - want) <= bound)


def test_loops_that_stay_one_copy(arch, unrolling):
    """A loop with its own break or continue, an outer loop, a loop of a few compile-time iterations and a
    loop with a barrier-free body larger than the limit keep one copy; the innermost loop of a nest is copied."""
    n = 64
    a = wk.field(wk.i32, shape=n)
    out = wk.field(wk.i32, shape=THREADS)
    a.from_numpy(np.arange(n, dtype=np.int32))

    @wk.kernel
    def leaves(m: wk.i32):
        for t in out:
            acc = 0
            for j in range(m):
                if a[j] > 40:
                    break
                if a[j] % 3 == 0:
                    continue
                acc += a[j]
            out[t] = acc

    @wk.kernel
    def nest(m: wk.i32):
        for t in out:
            acc = 0
            for j in range(m):
                for k in range(m):
                    acc += a[j] * a[k]
            out[t] = acc

    @wk.kernel
    def short():
        for t in out:
            acc = 0
            for j in range(5):
                acc += a[j]
            out[t] = acc

    leaves(n)
    assert out.to_numpy().tolist() == [sum(v for v in range(41) if v % 3)] * THREADS
    nest(20)
    assert out.to_numpy().tolist() == [sum(range(20)) ** 2] * THREADS
    short()
    assert out.to_numpy().tolist() == [10] * THREADS
    assert MARK not in leaves.source(arch) and MARK not in short.source(arch)
    assert nest.source(arch).count(MARK) == (1 if unrolling else 0)


def test_gpu_adapters_get_the_feature():
    """Only adapters that are not the CPU get GPU_UNROLL (lavapipe's JIT would pay for copies it gains
    nothing from)."""
    import inspect
    from wgkern.backends.wgsl import runtime
    source = inspect.getsource(runtime.WgslBackend.__init__)
    assert "features.add(GPU_UNROLL)" in source
    try:
        backend = program_module.current().backend
    except Exception:
        return
    if getattr(backend, "name", "") == "wgsl":
        cpu = backend.adapter.info.get("adapter_type") == "CPU"
        assert (GPU_UNROLL in backend.features) is (not cpu)
