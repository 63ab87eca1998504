"""`x.dual` of a field declared without a shape (Taichi's placeholders): placed beside its field or taking its
shape when forward mode first uses it."""
from __future__ import annotations

import numpy as np

import wgkern as wk


def _tangent_of_square(x, y) -> np.ndarray:
    @wk.kernel
    def square():
        for i in x:
            y[i] = x[i] * x[i] + 0.5 * x[i]

    with wk.ad.FwdMode(loss=y, param=x, seed=[1.0] * x.shape[0]):
        square()
    return y.dual.to_numpy()


def test_dual_placed_beside_its_field(arch):
    x = wk.field(wk.f32)
    y = wk.field(wk.f32)
    wk.root.dense(wk.i, 4).place(x, x.dual, y, y.dual)
    assert x.dual.shape == (4,) and y.dual.shape == (4,)
    values = np.array([0.5, 1.0, -2.0, 3.0], dtype=np.float32)
    x.from_numpy(values)
    np.testing.assert_allclose(_tangent_of_square(x, y), 2 * values + 0.5, rtol=1e-6)


def test_dual_not_placed_takes_its_field_shape_when_used(arch):
    x = wk.field(wk.f32)
    y = wk.field(wk.f32)
    wk.root.dense(wk.i, 3).place(x, y)
    x.from_numpy(np.array([1.0, 2.0, 4.0], dtype=np.float32))
    np.testing.assert_allclose(_tangent_of_square(x, y), [2.5, 4.5, 8.5], rtol=1e-6)


def test_field_with_a_shape_has_no_dual_unless_asked(arch):
    assert wk.field(wk.f32, shape=3).dual is None
    assert wk.field(wk.f32, shape=3, needs_dual=True).dual.shape == (3,)
    assert wk.field(wk.i32).dual is None
