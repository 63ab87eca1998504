"""`v.get_scalar_field(...)` (lang/scalar_component.py): Taichi's scalar field of one component of a vector or
matrix field, as difftaichi's smoke and diffmpm_benchmark examples use it to place fields component by component
and to update one component of a 0-d vector from the host."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk


def test_a_component_is_a_scalar_field_and_places_per_component(arch):
    """smoke_taichi's `soa(x)`: a recursion that places a scalar field, or each component of a vector field;
    it needs `isinstance(component, ScalarField)` to end."""
    n = 6
    block = wk.root.dense(wk.i, 3)
    v = wk.Vector.field(2, dtype=wk.f32)
    s = wk.field(wk.f32)

    def soa(x):
        if isinstance(x, wk.ScalarField):
            block.dense(wk.jk, n).place(x)
        else:
            for i in range(x.n):
                soa(x.get_scalar_field(i))

    soa(v)
    soa(s)
    component = v.get_scalar_field(1)
    assert isinstance(component, wk.ScalarField) and not isinstance(component, wk.MatrixField)
    assert v.shape == s.shape == component.shape == (3, n, n) and component.dtype == wk.f32

    @wk.kernel
    def fill():
        for t, j, k in v:
            v[t, j, k] = [t + j, 10.0 * k]

    fill()
    expected = 10.0 * np.broadcast_to(np.arange(n, dtype=np.float32), (3, n, n))
    np.testing.assert_array_equal(component.to_numpy(), expected)
    assert component[2, 1, 4] == 40.0 and v.get_scalar_field(0)[2, 1, 4] == 3.0


def test_a_zero_d_component_is_indexed_with_none(arch):
    """diffmpm_benchmark updates its initial velocity one component at a time:
    `init_v.get_scalar_field(0)[None] -= learning_rate * grad[0]`."""
    init_v = wk.Vector.field(2, dtype=wk.f32, shape=())
    init_v[None] = [1.0, 2.0]
    init_v.get_scalar_field(0)[None] -= 0.25
    init_v.get_scalar_field(1)[None] += 4.0
    np.testing.assert_array_equal(init_v.to_numpy(), [0.75, 6.0])
    assert init_v.get_scalar_field(1)[None] == 6.0
    vector = wk.Vector.field(2, dtype=wk.f32, shape=(4, 3)).get_scalar_field(0)
    with pytest.raises(IndexError, match=r"component field 'vector\[0\]' has shape \(4, 3\): index it with 2 "
                                         r"integers, not \[None\]"):
        vector[None]
    with pytest.raises(IndexError, match="index it with 2 integers, not 1 indices"):
        vector[1] = 0.0         # would otherwise name the element (1, 0) of the vector field
    with pytest.raises(IndexError, match=r"index it with \[None\], not 1 indices"):
        init_v.get_scalar_field(0)[0]


def test_kernels_read_and_write_through_a_component(arch):
    """A component field used in a kernel is that component of the field's element, as in Taichi; for a matrix
    field, `get_scalar_field(i, j)` names entry (i, j)."""
    m = wk.Matrix.field(2, 3, dtype=wk.f32, shape=4)
    entry = m.get_scalar_field(1, 2)
    scale = wk.Vector.field(2, dtype=wk.f32, shape=())
    scale[None] = [0.5, 3.0]
    factor = scale.get_scalar_field(1)

    @wk.kernel
    def write():
        for i in range(4):
            entry[i] = i * factor[None]

    @wk.kernel
    def total() -> wk.f32:
        out = 0.0
        for i in range(4):
            out += entry[i]
        return out

    @wk.kernel
    def misindexed():
        entry[0, 1] = 1.0

    write()
    with pytest.raises(wk.CompileError, match=r"component field 'm\[1, 2\]' has shape \(4,\): index it with 1 "
                                              r"indices, not 2"):
        misindexed()
    values = m.to_numpy()
    np.testing.assert_array_equal(values[:, 1, 2], [0.0, 3.0, 6.0, 9.0])
    values[:, 1, 2] = 0.0
    assert not values.any()                      # the other entries stay untouched
    assert total() == 18.0


def test_gradients_flow_through_a_component(arch):
    """loss = sum_i c[i]^2 over component 1 of v: d loss / d v[i] = (0, 2 v[i][1]) exactly (one square and one
    sum of four terms, each exact in f32 for these small integers)."""
    v = wk.Vector.field(2, dtype=wk.f32, shape=4, needs_grad=True)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)
    component = v.get_scalar_field(1)
    v.from_numpy(np.array([[1, 2], [3, 4], [5, 6], [7, 8]], dtype=np.float32))

    @wk.kernel
    def compute():
        for i in range(4):
            loss[None] += component[i] ** 2

    with wk.ad.Tape(loss):
        compute()
    assert loss[None] == 4 + 16 + 36 + 64
    np.testing.assert_array_equal(v.grad.to_numpy(), [[0, 4], [0, 8], [0, 12], [0, 16]])


def test_host_copies_touch_only_the_component(arch):
    v = wk.Vector.field(3, dtype=wk.f32, shape=(2, 2))
    v.fill(1.0)
    component = v.get_scalar_field(2)
    component.from_numpy(np.array([[1, 2], [3, 4]]))
    v.get_scalar_field(0).fill(-1.0)
    np.testing.assert_array_equal(v.to_numpy()[..., 2], [[1, 2], [3, 4]])
    np.testing.assert_array_equal(v.to_numpy()[..., 0], -np.ones((2, 2)))
    np.testing.assert_array_equal(v.to_numpy()[..., 1], np.ones((2, 2)))
    assert component.to_numpy(dtype=wk.f64).dtype == np.float64
    assert str(component) == str(np.array([[1, 2], [3, 4]], dtype=np.float32))
    with pytest.raises(ValueError, match=r"component field '.*\[2\]' has shape \(2, 2\), the array \(4,\)"):
        component.from_numpy(np.zeros(4))
