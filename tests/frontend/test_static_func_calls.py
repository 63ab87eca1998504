"""wk.func calls made by Python code while a kernel compiles: `wk.static(wk.grouped(self.stencil_range()))`, where
a method func returns `wk.ndrange(3, 3, 3)` (Genesis's MPM particle-to-grid stencil), is inlined at that point
as in Taichi and Quadrants; `wk.ndrange` with compile-time bounds is a value a func can return."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk


def test_method_func_returning_ndrange_unrolls_in_static_grouped(arch):
    @wk.data_oriented
    class Grid:
        def __init__(self):
            self.weights = wk.field(wk.f32, shape=(3, 3, 3))
            self.total = wk.field(wk.f32, shape=4)

        @wk.func
        def stencil_range(self):
            return wk.ndrange(3, 3, 3)

        @wk.kernel
        def scatter(self):
            for p in range(4):
                s = 0.0
                for offset in wk.static(wk.grouped(self.stencil_range())):
                    self.weights[offset] = offset[0] * 9 + offset[1] * 3 + offset[2]
                    s += offset.cast(wk.f32).sum() * (p + 1)
                self.total[p] = s

    grid = Grid()
    grid.scatter()
    np.testing.assert_array_equal(grid.weights.to_numpy().ravel(), np.arange(27, dtype=np.float32))
    # the index sums over the 27 offsets are 27 * 3 = 81, times (p + 1): small integers, exact in f32
    np.testing.assert_array_equal(grid.total.to_numpy(), 81.0 * np.arange(1, 5, dtype=np.float32))


def test_func_called_in_static_gets_runtime_and_template_arguments(arch):
    out = wk.field(wk.f32, shape=(3, 2))

    @wk.func
    def offsets():
        return wk.ndrange((1, 4), 2)

    @wk.func
    def scaled(v, k: wk.template()):
        return v * k

    @wk.kernel
    def fill(a: wk.f32):
        for i, j in wk.static(offsets()):
            b = a + j
            out[i - 1, j] = wk.static(scaled(b, i))

    fill(0.5)
    i, j = np.meshgrid(np.arange(1, 4), np.arange(2), indexing="ij")
    np.testing.assert_array_equal(out.to_numpy(), ((0.5 + j) * i).astype(np.float32))   # exact: halves times ints


def test_func_called_from_python_outside_a_kernel_is_an_error():
    @wk.func
    def stencil_range():
        return wk.ndrange(3, 3)

    with pytest.raises(wk.WkError, match="wk.func 'stencil_range' can only be called from inside a @wk.kernel"):
        stencil_range()


def test_static_func_call_with_wrong_arguments_names_the_func(arch):
    out = wk.field(wk.i32, shape=9)

    @wk.func
    def stencil_range(n: wk.template()):
        return wk.ndrange(n, n)

    @wk.kernel
    def fill():
        for i, j in wk.static(stencil_range()):
            out[i * 3 + j] = 1

    with pytest.raises(wk.CompileError, match="wrong arguments in the call to wk.func 'stencil_range': Missing "
                                              "argument 'n'"):
        fill()



def test_ndrange_with_runtime_bounds_outside_a_loop_header_is_an_error():
    out = wk.field(wk.i32, shape=9)

    @wk.kernel
    def count(n: wk.i32):
        r = wk.ndrange(n, 3)
        out[0] = n

    @wk.kernel
    def count_from(n: wk.i32):
        r = wk.ndrange((1, n), 3)
        out[0] = n

    for kernel in (count, count_from):
        with pytest.raises(wk.CompileError, match=r"wk.ndrange\(\) with run-time bounds can only be used as the "
                                                  "iterable of a for loop"):
            kernel(3)
