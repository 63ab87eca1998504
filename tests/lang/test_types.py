"""Vector and matrix type objects (lang/types.py): Taichi's / Quadrants' introspection methods."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import wgkern as wk


def test_element_type_and_shape_of_ndarray_element_types(arch):
    vectors = wk.ndarray(wk.types.vector(3, wk.i32), shape=(4, 4))
    matrices = wk.ndarray(wk.types.matrix(3, 4, float), shape=(2,))
    assert vectors.element_type.element_type() == wk.i32
    assert vectors.element_type.shape() == [3]
    assert matrices.element_type.element_type() == wk.f32
    assert matrices.element_type.shape() == [3, 4]
    assert wk.math.vec2.shape() == [2] and wk.math.mat3.element_type() == wk.f32


@dataclasses.dataclass
class NdarrayPair:
    a: wk.types.ndarray[wk.i32, 1]
    b: wk.types.ndarray[wk.f32, 2]


def test_types_ndarray_is_called_or_subscripted(arch):
    # Quadrants writes the annotation either way (dataclass members too): ndarray(...) or ndarray[dtype, ndim]
    assert wk.types.ndarray[wk.i32, 1] == wk.types.NDArray[wk.i32, 1] == wk.types.ndarray(wk.i32, 1)
    assert isinstance(wk.types.ndarray(), wk.types.ndarray)
    assert not isinstance(wk.template(), wk.types.ndarray)
    assert wk.types.ndarray(wk.f32, field_dim=2) == wk.types.ndarray(wk.f32, 2)     # Taichi's older name
    with pytest.raises(TypeError, match="dim"):           # an unknown keyword was ignored (the ndim unchecked)
        wk.types.ndarray(wk.f32, dim=2)

    @wk.kernel
    def fill(p: NdarrayPair, v: wk.types.ndarray[wk.i32, 1]):
        for i in p.a:
            p.a[i] = v[i] + p.b.shape[1]

    a, v = wk.ndarray(wk.i32, shape=4), np.arange(4, dtype=np.int32)
    fill(NdarrayPair(a, wk.ndarray(wk.f32, shape=(2, 3))), v)
    assert list(a.to_numpy()) == [3, 4, 5, 6]


def test_ndarray_boundary_clamp_clamps_indices(arch):
    # Taichi's wk.types.ndarray(boundary="clamp"): array indices clamp into the extent; a matrix element's
    # (row, column) clamps as one row-major position, as Quadrants does (test_ndarray_oob_clamp).
    @wk.kernel
    def read(x: wk.types.ndarray(boundary="clamp"), i: wk.i32) -> wk.f32:
        return x[i]

    @wk.kernel
    def read_element(x: wk.types.ndarray(boundary="clamp"), i: wk.i32, j: wk.i32) -> wk.f32:
        return x[1, 2][i, j]

    x = wk.ndarray(wk.f32, shape=3)
    x.from_numpy(np.array([0.0, 1.0, 2.0], np.float32))
    assert [read(x, k) for k in (-2, -1, 0, 2, 3, 4)] == [0.0, 0.0, 0.0, 2.0, 2.0, 2.0]
    m = wk.ndarray(wk.math.mat2, shape=(3, 3))
    m[1, 2] = [[1, 2], [2, 3]]
    assert [read_element(m, i, j) for i, j in ((-1, 0), (1, -1), (2, 0), (1, 2))] == [1.0, 2.0, 3.0, 3.0]
    with pytest.raises(ValueError, match="boundary"):
        wk.types.ndarray(boundary="wrap")
