"""CUDA's warp-level wk.simt calls (votes, ballot, match, shuffles, active mask), block_dim of a differentiated
loop with adstacks, debug bounds checks on shared arrays, and block_dim on the CPU."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk


@pytest.fixture
def cuda(gpu):
    if gpu != wk.cuda:
        pytest.skip("wk.simt.warp is CUDA's")
    return gpu


def test_warp_votes_ballot_and_matches(cuda):
    full = 0xFFFFFFFF
    x = wk.field(wk.i32, shape=64)
    out = wk.field(wk.u32, shape=(7, 64))

    @wk.kernel
    def votes():
        wk.loop_config(block_dim=64)
        for i in range(64):
            v = x[i]
            out[0, i] = wk.simt.warp.ballot(v & 1)
            out[1, i] = wk.simt.warp.all_nonzero(wk.u32(full), v)
            out[2, i] = wk.simt.warp.any_nonzero(wk.u32(full), v - v % 1000)
            out[3, i] = wk.simt.warp.unique(wk.u32(full), v // 1000)
            out[4, i] = wk.simt.warp.match_any(wk.u32(full), v % 4)
            out[5, i] = wk.simt.warp.match_all(wk.u32(full), v // 1000)
            out[6, i] = wk.simt.warp.active_mask()

    values = np.random.default_rng(8).integers(1, 999, 64).astype(np.int32)
    values[40] = 2000          # warp 1: v // 1000 differs, one v - v % 1000 is nonzero
    x.from_numpy(values)
    votes()
    got = out.to_numpy().astype(np.int64)
    for warp in range(2):
        lanes = slice(warp * 32, warp * 32 + 32)
        v = values[lanes].astype(np.int64)
        assert (got[0, lanes] == sum(int(b) << k for k, b in enumerate(v & 1))).all()
        assert (got[1, lanes] == 1).all()
        assert (got[2, lanes] == warp).all() and (got[3, lanes] == 1 - warp).all()
        for k in range(32):
            assert got[4, warp * 32 + k] == sum(1 << j for j in range(32) if v[j] % 4 == v[k] % 4)
        assert (got[5, lanes] == (0xFFFFFFFF if warp == 0 else 0)).all()
        assert (got[6, lanes] == 0xFFFFFFFF).all()


def test_warp_shuffles(cuda):
    full = 0xFFFFFFFF
    x = wk.field(wk.i32, shape=32)
    f = wk.field(wk.f32, shape=32)
    out = wk.field(wk.i32, shape=(4, 32))
    fout = wk.field(wk.f32, shape=(3, 32))

    @wk.kernel
    def shuffles():
        wk.loop_config(block_dim=32)
        for i in range(32):
            out[0, i] = wk.simt.warp.shfl_sync_i32(wk.u32(full), x[i], 5)
            out[1, i] = wk.simt.warp.shfl_up_i32(wk.u32(full), x[i], 1)
            out[2, i] = wk.simt.warp.shfl_down_i32(wk.u32(full), x[i], 1)
            total = x[i]
            for j in wk.static(range(5)):
                total += wk.simt.warp.shfl_xor_i32(wk.u32(full), total, 1 << j)
            out[3, i] = total
            wk.simt.warp.sync(wk.u32(full))
            fout[0, i] = wk.simt.warp.shfl_sync_f32(wk.u32(full), f[i], 0)
            fout[1, i] = wk.simt.warp.shfl_up_f32(wk.u32(full), f[i], 2)
            fout[2, i] = wk.simt.warp.shfl_down_f32(wk.u32(full), f[i], 2)

    values = np.arange(32, dtype=np.int32) ** 2
    x.from_numpy(values)
    f.from_numpy(values.astype(np.float32) * 0.5)
    shuffles()
    got, fgot = out.to_numpy(), fout.to_numpy()
    np.testing.assert_array_equal(got[0], np.full(32, values[5]))
    np.testing.assert_array_equal(got[1], np.concatenate([values[:1], values[:-1]]))     # lane 0 keeps its own
    np.testing.assert_array_equal(got[2], np.concatenate([values[1:], values[-1:]]))
    np.testing.assert_array_equal(got[3], np.full(32, values.sum()))
    np.testing.assert_array_equal(fgot[0], np.full(32, 0.0))
    np.testing.assert_array_equal(fgot[1], np.concatenate([values[:2], values[:-2]]) * 0.5)
    np.testing.assert_array_equal(fgot[2], np.concatenate([values[2:], values[-2:]]) * 0.5)


def test_active_mask_of_a_half_warp_block(cuda):
    out = wk.field(wk.u32, shape=32)

    @wk.kernel
    def masks():
        wk.loop_config(block_dim=16)
        for i in range(32):
            out[i] = wk.simt.warp.active_mask()

    masks()
    np.testing.assert_array_equal(out.to_numpy(), np.full(32, 0xFFFF))


@pytest.mark.parametrize("block_dim", [32, 1024])
def test_block_dim_of_a_differentiated_loop_with_adstacks(arch, block_dim):
    """loop_config(block_dim=N) without simt on every arch: a reverse kernel's adstack heap holds a slice per
    thread of N-thread blocks."""
    n = 3000
    x = wk.field(wk.f32, shape=n, needs_grad=True)
    trips = wk.field(wk.i32, shape=n)
    y = wk.field(wk.f32, shape=n, needs_grad=True)

    @wk.kernel
    def chain():
        wk.loop_config(block_dim=block_dim)
        for i in range(n):
            v = x[i]
            for _ in range(trips[i]):          # a run-time trip count: v goes on an adstack
                v = wk.sin(v)
            y[i] = v

    values = np.random.default_rng(9).uniform(-1, 1, n).astype(np.float32)
    counts = np.arange(n, dtype=np.int32) % 4
    x.from_numpy(values)
    trips.from_numpy(counts)
    chain()
    y.grad.fill(1.0)
    chain.grad()
    expected = np.ones(n, np.float64)
    v = values.astype(np.float64)
    for step in range(3):
        active = counts > step
        expected[active] *= np.cos(v[active])
        v[active] = np.sin(v[active])
    np.testing.assert_allclose(x.grad.to_numpy(), expected, rtol=1e-4, atol=1e-5)


def test_debug_bounds_checks_cover_shared_arrays(gpu):
    wk.init(arch=gpu, debug=True)
    out = wk.field(wk.f32, shape=64)

    @wk.kernel
    def past_the_end():
        wk.loop_config(block_dim=64)
        for i in range(64):
            shared = wk.simt.block.SharedArray((64,), wk.f32)
            t = wk.simt.block.thread_idx()
            shared[t + 1] = 1.0
            wk.simt.block.sync()
            out[i] = shared[t]

    with pytest.raises(wk.BoundsCheckError, match=r"index out of range for SharedArray1@\d+ of shape \(64,\)") as info:
        past_the_end()
        wk.sync()
    assert "shared[t + 1] = 1.0" in str(info.value)


def test_the_cpu_ignores_block_dim():
    """Taichi's CPU backend takes block_dim as a chunk size; wgkern's CPU backend ignores it, any size."""
    wk.init(arch=wk.cpu)
    try:
        x = wk.field(wk.i32, shape=5000)

        @wk.kernel
        def wide():
            wk.loop_config(block_dim=4096)
            for i in range(5000):
                x[i] = i

        wide()
        np.testing.assert_array_equal(x.to_numpy(), np.arange(5000))
    finally:
        wk.reset()
