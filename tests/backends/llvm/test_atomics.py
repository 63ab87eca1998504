"""Atomics on the CPU backend (backends/llvm/atomics.py): with one thread (`cpu_max_num_threads=1`, as Genesis
runs), range tasks run on the launching thread without the worker pool and atomics are plain read-modify-writes,
with the results of the same kernel in the task's index order."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk

N, BINS = 64, 8


def _scatter_kernel():
    counts = wk.field(wk.i32, BINS)

    @wk.kernel
    def scatter(values: wk.types.NDArray[wk.f32, 1], hist: wk.types.NDArray[wk.f32, 1],
                olds: wk.types.NDArray[wk.f32, 1]):
        for i in values:
            olds[i] = wk.atomic_add(hist[i % BINS], values[i])
            counts[i % BINS] += 1
            hist[(i + 1) % BINS] -= 0.5

    return scatter, counts


def _arrays() -> tuple[np.ndarray, wk.Ndarray, wk.Ndarray, wk.Ndarray]:
    # multiples of 1/4 below 16: every partial sum is exact in f32, whatever the order
    host = (np.random.default_rng(5).integers(0, 64, N) / 4).astype(np.float32)
    values, hist, olds = wk.ndarray(wk.f32, N), wk.ndarray(wk.f32, BINS), wk.ndarray(wk.f32, N)
    values.from_numpy(host)
    return host, values, hist, olds


def _in_index_order(host: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    hist, olds = np.zeros(BINS, np.float32), np.zeros(N, np.float32)
    for i in range(N):
        olds[i] = hist[i % BINS]
        hist[i % BINS] += host[i]
        hist[(i + 1) % BINS] -= np.float32(0.5)
    return hist, olds


@pytest.mark.parametrize("threads", [1, 2])
def test_scatter_results_and_where_atomics_stay(threads: int):
    wk.reset()
    wk.init(arch=wk.cpu, cpu_max_num_threads=threads)
    try:
        scatter, counts = _scatter_kernel()
        host, values, hist, olds = _arrays()
        scatter(values, hist, olds)
        expected_hist, expected_olds = _in_index_order(host)
        np.testing.assert_array_equal(hist.to_numpy(), expected_hist)
        np.testing.assert_array_equal(counts.to_numpy(), np.full(BINS, N // BINS))
        source = scatter.source()
        if threads == 1:
            np.testing.assert_array_equal(olds.to_numpy(), expected_olds)   # one thread: index order
            assert "atomicrmw" not in source and "cmpxchg" not in source and "wk_parallel_for" not in source
        else:
            assert "atomicrmw fadd" in source and "atomicrmw fsub" in source and "wk_parallel_for" in source
    finally:
        wk.reset()


def test_one_thread_skips_an_empty_range():
    wk.reset()
    wk.init(arch=wk.cpu, cpu_max_num_threads=1)
    try:
        total = wk.field(wk.f32, ())

        @wk.kernel
        def add_range(begin: wk.i32, end: wk.i32):
            for i in range(begin, end):
                total[None] += wk.cast(i, wk.f32)

        add_range(5, 5)
        add_range(7, 3)
        assert total[None] == 0.0
        add_range(3, 7)
        assert total[None] == 3.0 + 4.0 + 5.0 + 6.0
    finally:
        wk.reset()
