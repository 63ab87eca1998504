"""`with wk.stream_parallel():` blocks (frontend/stream_parallel.py): where a kernel may write them, on every arch."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk

N = 8


def test_stream_blocks_run_in_order(arch):
    a = wk.field(wk.f32, shape=N)

    @wk.kernel
    def two_blocks():
        """A docstring may stand before the blocks."""
        with wk.stream_parallel():
            for i in range(N):
                a[i] = 1.0
        with wk.stream_parallel():
            for i in range(N):
                a[i] += 2.0

    two_blocks()
    np.testing.assert_array_equal(a.to_numpy(), np.full(N, 3.0, np.float32))


def test_stream_blocks_where_quadrants_refuses_them(arch):
    a = wk.field(wk.f32, shape=N)

    @wk.kernel
    def mixed_top_level():
        with wk.stream_parallel():
            for i in range(N):
                a[i] = 1.0
        for i in range(N):
            a[i] = 2.0

    @wk.kernel(graph=True)
    def in_graph_kernel():
        with wk.stream_parallel():
            for i in range(N):
                a[i] = 1.0

    @wk.kernel
    def two_managers():
        with wk.stream_parallel(), wk.stream_parallel():
            for i in range(N):
                a[i] = 1.0

    @wk.func
    def helper():
        with wk.stream_parallel():
            for i in range(N):
                a[i] = 1.0

    @wk.kernel
    def through_func():
        helper()

    with pytest.raises(wk.CompileError, match=r"When using wk.stream_parallel\(\), all top-level statements of the "
                                              r"kernel must be wk.stream_parallel\(\) blocks; line \d+ is a For"):
        mixed_top_level()
    with pytest.raises(wk.CompileError, match=r"not compatible with graph=True kernels"):
        in_graph_kernel()
    with pytest.raises(wk.CompileError, match="only supports a single context manager"):
        two_managers()
    with pytest.raises(wk.CompileError, match=r"can only be used inside @wk.kernel, not @wk.func.*"
                                              r"in wk.func 'helper'"):
        through_func()
    np.testing.assert_array_equal(a.to_numpy(), np.zeros(N, np.float32))   # nothing ran
