"""CPU buffers (backends/llvm/cpu.py): aligned and zeroed; a ported program that writes one element past a
field's end or reads before its start (Taichi's memory pool absorbs that) neither crashes the process nor
changes another field: such accesses are dropped (backends/llvm/bounds.py)."""
from __future__ import annotations

import numpy as np

import wgkern as wk
from wgkern.backends.llvm.cpu import ALIGNMENT, aligned_bytes


def test_buffers_are_aligned_and_zeroed():
    for nbytes in (0, 1, 8, 100, 4096, 1 << 20):
        array, address = aligned_bytes(nbytes)
        assert address % ALIGNMENT == 0 and array.size == max(nbytes, 1) and not array.any()


def test_writes_past_the_end_are_dropped(arch):
    rows, cols = 50, 8
    history = wk.field(wk.f32, shape=(rows, cols))
    best = wk.field(wk.f32, shape=rows)
    other = wk.field(wk.f32, shape=64)
    other.fill(3.0)

    @wk.kernel
    def record(steps: wk.i32):
        for t in range(1, steps + 1):            # the example's off-by-one: writes row `rows`
            best[t] = t
            for j in range(cols):
                history[t, j] = t

    @wk.kernel
    def stencil():
        for i in best:                            # reads best[-1] and best[rows], writes history[-1, 0]
            history[i - 1, 0] = best[i - 1] * 0.0 + best[(i + 1) % (rows + 1)] * 0.0 + 7.0

    record(rows)
    assert best.to_numpy().tolist() == list(range(rows))     # best[rows] = rows was dropped
    want = np.arange(rows, dtype=np.float32)[:, None].repeat(cols, axis=1)
    np.testing.assert_array_equal(history.to_numpy(), want)
    stencil()
    want[:rows - 1, 0] = 7.0                                  # history[-1, 0] was dropped
    np.testing.assert_array_equal(history.to_numpy(), want)
    assert np.all(other.to_numpy() == 3.0)
