"""wk.BufferView (lang/buffer_view.py, frontend/buffer_view.py): Quadrants' window (offset, size) on a 1-D
ndarray, made by slicing on the host and passed to `BufferView[dtype]` parameters as the ndarray plus offset and
size arguments."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from wgkern import BufferView

N = 32


def test_slicing_and_subviews_on_the_host(arch):
    data = wk.ndarray(wk.f32, shape=N)
    view = data[8:24]
    assert isinstance(view, BufferView) and (view.offset, view.size, view.shape) == (8, 16, (16,))
    assert view.get_ndarray() is data and view.dtype == wk.f32
    assert (data[:].size, data[-8:].offset, data[8:].size, data[:100].size) == (N, N - 8, N - 8, N)
    narrower = view.subview(4, 8)
    assert (narrower.offset, narrower.size) == (12, 8) and narrower.get_ndarray() is data
    assert (view[4:12][:4].offset, view[4:12][:4].size) == (12, 4)
    assert isinstance(wk.Vector.ndarray(3, wk.f32, N)[:4], BufferView)
    with pytest.raises(ValueError, match="step=1"):
        data[::2]
    with pytest.raises(ValueError, match="step=1"):
        view[::2]
    with pytest.raises(TypeError, match="takes a slice"):
        view[0]
    with pytest.raises(TypeError, match="1D ndarray"):
        wk.ndarray(wk.f32, shape=(4, 4))[:2]
    with pytest.raises(ValueError, match="subview out of range"):
        data[:16].subview(8, 16)
    for offset, size in ((-1, 8), (0, -1), (16, 32)):
        with pytest.raises(ValueError, match="out of range for an ndarray of length 32"):
            BufferView(data, offset, size)


def test_kernels_index_subview_and_construct_views(arch):
    data = wk.ndarray(wk.f32, shape=N)

    @wk.func
    def put(v: BufferView[wk.f32], i: wk.i32, x: wk.f32):
        v[i] = x

    @wk.kernel
    def fill(v: BufferView[wk.f32], x: wk.f32):
        for i in range(v.size):
            put(v, i, x + v.offset * 0)

    @wk.kernel
    def narrow(v: BufferView):                   # the dtype from the argument
        inner = v.subview(4, 4)
        for i in range(inner.size):
            inner[i] = 9.0
        head = v[:2]
        for i in range(head.shape[0]):
            head[i] = 6.0

    @wk.kernel
    def construct(arr: wk.types.ndarray(wk.f32, ndim=1), offset: wk.i32, size: wk.i32):
        view = BufferView(arr, offset, size)
        for i in range(view.size):
            view[i] = 4.0

    fill(data[8:16], 5.0)
    compiles = wk.stats()["kernel_compiles"]
    fill(data[28:], 1.0)                          # another offset and size: the same compiled kernel
    assert wk.stats()["kernel_compiles"] == compiles
    narrow(data[16:28])
    construct(data, 0, 4)
    expected = np.zeros(N, np.float32)
    expected[8:16], expected[28:], expected[16:18], expected[20:24], expected[:4] = 5, 1, 6, 9, 4
    np.testing.assert_array_equal(data.to_numpy(), expected)

    vectors = wk.Vector.ndarray(2, wk.i32, N)

    @wk.kernel
    def set_vectors(v: BufferView[wk.types.vector(2, wk.i32)]):
        for i in range(v.size):
            v[i] = wk.Vector([i, v.offset])

    set_vectors(vectors[3:5])
    assert vectors[4].tolist() == [1, 3] and vectors[5].tolist() == [0, 0]
    with pytest.raises(wk.ArgumentError, match="expects a wk.BufferView"):
        fill(data, 1.0)
    with pytest.raises(wk.ArgumentError, match="expects dtype wk.f32"):
        fill(wk.ndarray(wk.i32, shape=4)[:2], 1.0)


def test_debug_mode_checks_the_window(arch):
    wk.init(arch=arch, debug=True)
    data = wk.ndarray(wk.f32, shape=N)

    @wk.kernel
    def write(v: BufferView[wk.f32], i: wk.i32):
        v[i] = 1.0

    @wk.kernel
    def sub(v: BufferView[wk.f32], offset: wk.i32):
        s = v.subview(offset, 1)
        s[0] = 2.0

    write(data[:16], 15)
    for bad in (16, -1):
        with pytest.raises(AssertionError, match="BufferView Out Of Range: index outside 'v'"):
            write(data[:16], bad)
            wk.sync()
    with pytest.raises(AssertionError, match="subview Out Of Range"):
        sub(data[:16], 16)
        wk.sync()
    assert data[15] == 1.0

    @wk.kernel
    def construct(arr: wk.types.ndarray(wk.f32, ndim=1), offset: wk.i32):
        view = BufferView(arr, offset, 8)
        view[0] = 3.0

    construct(data, N - 8)
    with pytest.raises(AssertionError, match=r"BufferView Out Of Range: BufferView\(ndarray, offset, size\) exceeds "
                                             r"the ndarray \(BufferView construction out of range\)"):
        construct(data, N - 7)
        wk.sync()
    assert data[N - 8] == 3.0


def test_a_view_slice_with_a_step_is_refused(arch):
    data = wk.ndarray(wk.f32, shape=N)

    @wk.kernel
    def strided(v: BufferView[wk.f32]):
        s = v[::2]
        s[0] = 1.0

    with pytest.raises(wk.CompileError, match="BufferView slices take step=1, got step=2 .*an explicit step is not "
                                              "supported"):
        strided(data[:16])
