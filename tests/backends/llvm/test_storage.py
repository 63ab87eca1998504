"""CPU buffers (backends/llvm/cpu.py): aligned, zeroed, and with a guard zone behind them, so a ported program
that writes one element past a field's end (Taichi's memory pool absorbs that) neither crashes the process nor
changes another field."""
from __future__ import annotations

import numpy as np

import wgkern as wk
from wgkern.backends.llvm.cpu import ALIGNMENT, aligned_bytes, guard_bytes


def test_buffers_are_aligned_zeroed_and_guarded():
    for nbytes in (0, 1, 8, 100, 4096, 1 << 20):
        array, address = aligned_bytes(nbytes)
        assert address % ALIGNMENT == 0 and array.size == max(nbytes, 1) and not array.any()
        assert array.base.size >= array.size + guard_bytes(nbytes)
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

    record(rows)
    assert best.to_numpy()[1:].tolist() == list(range(1, rows))
    assert np.all(other.to_numpy() == 3.0)
