"""A tuple of kernel values with a captured wk.Vector (or numpy array) in an arithmetic operation is vector
arithmetic, as in Taichi: `pos = (I + grid_offset) * dx` with `I = (i, j, k)` (Genesis's MPM grid update);
a tuple with a tuple keeps Python's meaning."""
from __future__ import annotations

import numpy as np

import wgkern as wk


def test_index_tuple_plus_captured_vector_is_a_vector(arch):
    grid_offset = wk.Vector([-2, 1, 3])
    scale = np.array([0.5, 0.25, 2.0], dtype=np.float32)
    pos = wk.Vector.field(3, wk.f32, shape=(2, 3, 2))
    back = wk.Vector.field(3, wk.i32, shape=(2, 3, 2))

    @wk.kernel
    def fill():
        for ii, jj, kk in wk.ndrange(2, 3, 2):
            I = (ii, jj, kk)
            pos[ii, jj, kk] = (I + grid_offset) * 0.5 + scale * I
            back[ii, jj, kk] = grid_offset - I

    fill()
    index = np.stack(np.meshgrid(np.arange(2), np.arange(3), np.arange(2), indexing="ij"), axis=-1)
    offset = np.array([-2, 1, 3])
    # small integers and halves/quarters: every f32 operation is exact
    np.testing.assert_array_equal(pos.to_numpy(), ((index + offset) * 0.5 + scale * index).astype(np.float32))
    np.testing.assert_array_equal(back.to_numpy(), offset - index)


def test_tuple_with_tuple_is_still_concatenation(arch):
    out = wk.field(wk.i32, shape=(3, 4))

    @wk.kernel
    def fill():
        for i in range(3):
            both = (i, i + 1) + (i * 2, 7)
            for k in wk.static(range(4)):
                out[i, k] = both[k]

    fill()
    i = np.arange(3)
    np.testing.assert_array_equal(out.to_numpy(), np.stack([i, i + 1, 2 * i, np.full(3, 7)], axis=1))
