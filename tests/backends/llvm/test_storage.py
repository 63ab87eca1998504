"""CPU buffers (backends/llvm/cpu.py): aligned, zeroed, and with guard zones around them, so a ported program
that writes one element past a field's end or reads before its start (Taichi's memory pool absorbs that)
neither crashes the process nor changes another field."""
from __future__ import annotations

import numpy as np

import wgkern as wk
from wgkern.backends.llvm.cpu import ALIGNMENT, aligned_bytes, guard_bytes


def test_buffers_are_aligned_zeroed_and_guarded():
    for nbytes in (0, 1, 8, 100, 4096, 1 << 20):
        array, address = aligned_bytes(nbytes)
        assert address % ALIGNMENT == 0 and array.size == max(nbytes, 1) and not array.any()
        start = address - array.base.ctypes.data
        assert start >= guard_bytes(nbytes) and array.base.size - start - array.size >= guard_bytes(nbytes)
    assert guard_bytes(8) == 256 and guard_bytes(1 << 30) == 1 << 16


def test_writes_past_the_end_land_in_the_guard(arch):
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
    assert best.to_numpy()[1:].tolist() == list(range(1, rows))
    stencil()
    assert np.all(history.to_numpy()[:rows - 1, 0] == 7.0)
    assert np.all(other.to_numpy() == 3.0)
