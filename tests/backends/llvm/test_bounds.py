"""Guarded global accesses of the LLVM backends (wgkern/backends/llvm/bounds.py): accesses proven in range get
no guard (saxpy stays vectorised), the others one 64-bit compare. That nothing crashes, and what the accesses
give, is tested on every arch in tests/runtime/test_out_of_range.py."""
from __future__ import annotations

import numpy as np

import wgkern as wk

def _source(kernel, optimized=False) -> str:
    return kernel.last_compiled.compiled.source(optimized=optimized)


def test_accesses_at_the_loop_index_have_no_guard_and_stay_vectorised():
    wk.init(arch=wk.cpu)
    try:
        x = wk.field(wk.f32, shape=4096)
        y = wk.field(wk.f32, shape=4096)

        @wk.kernel
        def saxpy(a: wk.f32):
            for i in x:
                y[i] = a * x[i] + y[i]

        @wk.kernel
        def shifted(a: wk.f32):
            for i in x:
                y[i] = a * x[i + 1] + y[i]

        saxpy(2.0)
        shifted(2.0)
        assert "icmp ult i64" not in _source(saxpy) and "block.cond" not in _source(saxpy)
        assert "load <8 x float>" in _source(saxpy, optimized=True)          # vector loads and stores
        # x[i + 1] is checked at both ends of each block of indices, and per index in the guarded copy only
        source = _source(shifted)
        assert "fast.task.body" in source and source.count("icmp ult i64") == 3
        assert "load <8 x float>" in _source(shifted, optimized=True)
    finally:
        wk.reset()


def test_an_unproven_store_goes_to_the_sink_and_a_load_under_a_branch():
    wk.init(arch=wk.cpu)
    try:
        x = wk.field(wk.i32, shape=8)

        @wk.kernel
        def copy(k: wk.i32):
            for i in x:
                x[i + k] = x[i - k]

        copy(3)
        source = _source(copy)
        assert "@wk.sink = internal global [64 x i8]" in source
        assert source.count("in_range.end") >= 1 and source.count("icmp ult i64") == 2 + 4   # per index, per block
        np.testing.assert_array_equal(x.to_numpy(), np.zeros(8, np.int32))
    finally:
        wk.reset()


def test_the_components_of_a_vector_read_at_an_unproven_index_share_one_check():
    """pos[j] with j read from memory: its three components are checked on j alone (one compare, the same for
    each), so the optimiser runs the three loads under one branch; out-of-range rows still read 0."""
    wk.init(arch=wk.cpu)
    try:
        n = 8
        pos = wk.Vector.ndarray(3, wk.f32, shape=n)
        which = wk.ndarray(wk.i32, shape=n)
        out = wk.ndarray(wk.f32, shape=n)

        @wk.kernel
        def gather(pos: wk.types.ndarray(), which: wk.types.ndarray(), out: wk.types.ndarray()):
            for i in which:
                p = pos[which[i]]
                out[i] = p[0] + 10.0 * p[1] + 100.0 * p[2]

        pos.from_numpy(np.arange(3 * n, dtype=np.float32).reshape(n, 3))
        rows = np.array([0, 7, -1, 8, 3, 2 ** 31 - 1, -2 ** 31, 5], np.int32)
        which.from_numpy(rows)
        gather(pos, which, out)
        table = np.arange(3 * n, dtype=np.float64).reshape(n, 3)
        want = [table[r] @ [1.0, 10.0, 100.0] if 0 <= r < n else 0.0 for r in rows]
        np.testing.assert_array_equal(out.to_numpy(), np.float32(want))
        # one guarded block, hence one value merged with the 0 of a skipped read, in each of the task's two copies
        # of its loop (the copy for blocks where `which[i]` is known inside, and the guarded one); with a check
        # per component each copy merged three
        assert _source(gather, optimized=True).count("phi float") == 2
    finally:
        wk.reset()
