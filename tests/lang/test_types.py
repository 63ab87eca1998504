"""Vector and matrix type objects (lang/types.py): Taichi's / Quadrants' introspection methods."""
from __future__ import annotations

import wgkern as wk


def test_element_type_and_shape_of_ndarray_element_types(arch):
    vectors = wk.ndarray(wk.types.vector(3, wk.i32), shape=(4, 4))
    matrices = wk.ndarray(wk.types.matrix(3, 4, float), shape=(2,))
    assert vectors.element_type.element_type() == wk.i32
    assert vectors.element_type.shape() == [3]
    assert matrices.element_type.element_type() == wk.f32
    assert matrices.element_type.shape() == [3, 4]
    assert wk.math.vec2.shape() == [2] and wk.math.mat3.element_type() == wk.f32
