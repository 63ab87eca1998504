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
