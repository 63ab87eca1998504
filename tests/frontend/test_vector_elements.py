"""Vector and matrix elements in kernels: fill, slices beside run-time indices, augmented assignment to swizzles
and slices of field elements, debug checks of run-time indices, too many indices, stpq swizzles."""
from __future__ import annotations

import numpy as np
import pytest
from tests.frontend.helpers import build, run, wk
from tests.frontend.test_vectors import out


def test_fill_sets_every_component_of_a_local_vector_or_matrix(arch):
    # Taichi's in-place m.fill(v) on a local: the scalar converts to the variable's dtype.
    @wk.kernel
    def filled(k: wk.i32) -> wk.types.matrix(2, 3, wk.f32):
        m = wk.Matrix([[0.0 for _ in range(3)] for _ in range(2)])
        m.fill(1.5)
        if k > 0:
            m.fill(k)
        return m

    @wk.kernel
    def filled_ints() -> wk.types.vector(3, wk.i32):
        v = wk.Vector([1, 2, 3])
        v.fill(2.7)
        return v

    assert np.array_equal(filled(0), np.full((2, 3), 1.5, np.float32))
    assert np.array_equal(filled(3), np.full((2, 3), 3.0, np.float32))
    assert filled_ints().tolist() == [2, 2, 2]
    with pytest.raises(wk.CompileError, match="fill"):
        @wk.kernel
        def two_values():
            v = wk.Vector([1, 2])
            v.fill(1, 2)

        two_values()


def test_four_by_four_inverse_and_determinant_and_matrix_one(arch):
    # Taichi inverts and takes determinants of matrices up to 4x4 in kernels (Quadrants' test_mat_inverse_size).
    m = wk.Matrix.field(4, 4, wk.f32, shape=())
    det = wk.field(wk.f32, shape=())
    ones = wk.Matrix.field(2, 3, wk.f32, shape=())
    values = np.array([[i * j + i * 3 + j + 1 + (i == j) * 4 for j in range(4)] for i in range(4)], np.float32)
    m.from_numpy(values)

    @wk.kernel
    def invert():
        det[None] = m[None].determinant()
        m[None] = m[None].inverse()
        ones[None] = wk.Matrix.one(wk.f32, 2, 3)

    invert()
    assert np.allclose(m.to_numpy(), np.linalg.inv(values), atol=1e-5)
    assert det[None] == pytest.approx(np.linalg.det(values), rel=1e-5)
    assert np.array_equal(ones.to_numpy(), np.ones((2, 3), np.float32))


def test_fill_sets_every_component_of_a_vector_element_in_memory(arch):
    # `x[i].b.fill(v)` on a struct field's vector member (Quadrants' test_custom_struct test_struct_fill), and
    # `v[i].fill(v)` on a vector field's element: the scalar converts to the element dtype.
    s = wk.Struct.field({"a": wk.f32, "b": wk.types.vector(3, wk.i32)}, shape=4)
    v = wk.Vector.field(2, wk.f32, shape=4)

    @wk.kernel
    def fill_elements():
        for i in s:
            s[i].a = i + 0.5
            s[i].b.fill(i + 0.5)
            v[i].fill(i * 2.0)

    fill_elements()
    assert s.b.to_numpy().tolist() == [[i] * 3 for i in range(4)]
    assert v.to_numpy().tolist() == [[i * 2.0] * 2 for i in range(4)]


def test_not_of_a_vector_is_element_wise(arch):
    # Taichi: `not m` of a matrix is the element-wise logical not (Quadrants' test_element_wise test_unary).
    y = wk.Matrix.field(3, 2, wk.i32, shape=())
    x = wk.Matrix.field(3, 2, wk.i32, shape=())
    y.from_numpy(np.array([[3, 2], [9, 0], [7, 0]], np.int32))

    @wk.kernel
    def negate():
        x[None] = not y[None]

    negate()
    assert x.to_numpy().tolist() == [[0, 0], [0, 1], [0, 1]]


def test_slices_beside_a_runtime_index_read_and_write_locals_and_field_elements(arch):
    # Taichi's test_matrix_slice: m[:, j] and m[j, 1:] with j a loop variable, on a local matrix and on a field
    # element, read and assigned (values checked against Taichi 1.7)
    r = wk.Vector.field(3, wk.f32, shape=3)
    q = wk.Matrix.field(3, 3, wk.f32, shape=3)
    f = wk.Matrix.field(2, 3, wk.f32, shape=())

    @wk.kernel
    def k():
        m = wk.Matrix([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
        for j in range(3):
            n = wk.Matrix.zero(wk.f32, 3, 3)
            r[j] = m[:, j] + m[j, :] * 10
            for c in range(3):
                n[:, c] = wk.Vector([j, c, 1])
                n[c, 1:] += 100.0
            q[j] = n
            q[j][:, j] = q[j][j, :] * 2
        f[None][:, 1] = [5, 6]
        f[None][1, :] += wk.Vector([1, 1, 1])

    k()
    m = np.arange(1, 10, dtype=np.float32).reshape(3, 3)
    np.testing.assert_array_equal(r.to_numpy(), [m[:, j] + m[j, :] * 10 for j in range(3)])
    for j in range(3):
        n = np.zeros((3, 3), np.float32)
        for c in range(3):
            n[:, c] = [j, c, 1]
            n[c, 1:] += 100.0
        n[:, j] = n[j, :] * 2
        np.testing.assert_array_equal(q.to_numpy()[j], n)
    np.testing.assert_array_equal(f.to_numpy(), [[0, 5, 0], [1, 7, 1]])


def test_augmented_assignment_to_swizzles_and_slices_of_field_elements_is_atomic(arch):
    # `v[i].xy += d` and `m[None][:, j] += d` from many threads: each component is updated atomically, as an
    # element's `+=` is (they were read-modify-writes that lost updates)
    v = wk.Vector.field(3, wk.f32, shape=2)
    m = wk.Matrix.field(2, 2, wk.i32, shape=())

    @wk.kernel
    def k():
        for i in range(1000):
            v[i % 2].xy += wk.Vector([1.0, 2.0])
            v[i % 2].z += 1
            m[None][:, i % 2] += 1
            m[None][1, :] += wk.Vector([i % 2, 1])

    k()
    assert v.to_numpy().tolist() == [[500.0, 1000.0, 500.0]] * 2
    assert m.to_numpy().tolist() == [[500, 500], [1000, 1500]]


def test_debug_checks_run_time_indices_into_local_vectors_and_matrices(arch):
    """wk.init(debug=True): a run-time index outside a local vector or matrix fails the launch naming the
    axis and the line, on reads and writes (Quadrants' test_matrix_oob); the first failed check is the one
    reported, also where an assert on the value read follows. Without debug nothing is checked."""
    wk.init(arch=arch, debug=True)

    @wk.kernel
    def write_vector(i: wk.i32):
        x = wk.Vector([1, 0])
        x[i] = 42
        assert x[i] == 42

    @wk.kernel
    def read_matrix(i: wk.i32, j: wk.i32) -> wk.i32:
        y = wk.Matrix([[1, 1, 1], [2, 2, 2], [3, 3, 3]])
        return y[i, j]

    write_vector(1)
    assert read_matrix(2, 1) == 3
    for i in (2, -1):
        with pytest.raises(wk.KernelAssertionError,
                           match=r"index out of range for a vector of 2 elements \(Out of bound access\): a "
                                 r"run-time index must lie in "
                                 r"0\.\.1") as caught:
            write_vector(i)
            wk.sync()
        assert "x[i] = 42" in str(caught.value)
    for (i, j), axis in [((2, 3), "column"), ((3, 0), "row"), ((-1, 0), "row")]:
        with pytest.raises(wk.KernelAssertionError, match=rf"for a 3x3 matrix \({axis}\)"):
            read_matrix(i, j)
            wk.sync()
    wk.init(arch=arch)

    @wk.kernel
    def unchecked(i: wk.i32) -> wk.i32:
        return wk.Vector([5, 6, 7])[i]

    assert unchecked(1) == 6


def test_too_many_indices_name_the_vector_or_matrix():
    out = wk.field(wk.i32, shape=())

    @wk.kernel
    def two_on_a_vector():
        v = wk.Vector([1, 2, 3, 4])
        out[None] = v[0, 0]

    @wk.kernel
    def three_on_a_matrix():
        m = wk.Matrix([[1, 2], [3, 4]])
        out[None] = m[0, 0, 1]

    with pytest.raises(wk.CompileError, match="a vector of 4 elements takes 1 index, got 2"):
        build(two_on_a_vector)
    with pytest.raises(wk.CompileError, match=r"a 2x2 matrix takes 1 or 2 indices \(a row, or a row and a column\), "
                                              r"got 3"):
        build(three_on_a_matrix)


def test_stpq_swizzles_and_components_a_vector_lacks_in_kernels(arch):
    out = wk.Vector.field(3, wk.f32, shape=2)

    @wk.kernel
    def k():
        v = wk.math.vec3(0, 0, 0)
        v.stp += 1
        v.p = 3
        v.ts = wk.math.vec2(2, 5)
        out[0] = v.tps
        out[1].s = v.p
        out[1].tp = v.ss

    k()
    assert out.to_numpy().tolist() == [[2.0, 3.0, 5.0], [3.0, 5.0, 5.0]]

    @wk.kernel
    def read_z() -> wk.f32:
        b = wk.math.vec2(1, 2)
        return b.z

    @wk.kernel
    def write_xyz():
        b = wk.math.vec2(1, 2)
        b.xyz = [1, 2, 3]

    @wk.kernel
    def field_q() -> wk.f32:
        return out[0].q

    with pytest.raises(wk.CompileError, match=r"vec2 only has attributes=\('x', 'y'\), got=\('z',\)"):
        read_z()
    with pytest.raises(wk.CompileError, match=r"vec2 only has attributes=\('x', 'y'\), got=\('x', 'y', 'z'\)"):
        write_xyz()
    with pytest.raises(wk.CompileError, match=r"vec3 only has attributes=\('p', 's', 't'\), got=\('q',\)"):
        field_q()
