"""Vector and matrix values in Python scope (lang/host_matrix.py): numpy arrays with Taichi's methods, from the
constructors and from reading one element of a vector or matrix field."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk


def test_constructors_give_arrays_with_taichis_methods():
    v = wk.Vector([1.0, 2.0, 2.0])
    assert isinstance(v, np.ndarray) and v.norm() == 3.0 and v.norm_sqr() == 9.0
    assert (v.x, v.y, v.z) == (1.0, 2.0, 2.0) and v.n == 3 and v.m == 1
    np.testing.assert_allclose(v.normalized(), [1 / 3, 2 / 3, 2 / 3], rtol=1e-6)
    assert v.dot(wk.math.vec3(1, 1, 1)) == 5.0
    np.testing.assert_array_equal(v.cross([0.0, 0.0, 1.0]), [2.0, -1.0, 0.0])
    v.z = 4.0
    np.testing.assert_array_equal(v, [1.0, 2.0, 4.0])
    m = wk.Matrix([[1.0, 2.0], [3.0, 4.0]])
    assert m.n == 2 and m.m == 2 and m.determinant() == pytest.approx(-2.0) and m.trace() == 5.0
    np.testing.assert_allclose(m.inverse() @ m, np.eye(2), atol=1e-6)
    np.testing.assert_array_equal(m.transpose(), [[1.0, 3.0], [2.0, 4.0]])
    np.testing.assert_array_equal(wk.Vector([1, 2]).outer_product([3, 4]), [[3, 4], [6, 8]])
    assert type(m.to_numpy()) is np.ndarray and type((m @ v[:2]).norm()) is not wk.lang.host_matrix.HostMatrix
    assert repr(wk.math.vec2(1, 2)) == "array([1., 2.], dtype=float32)"
    with pytest.raises(wk.CompileError, match=r"vec3 only has attributes=\('x', 'y', 'z'\), got=\('w',\)"):
        wk.math.vec3(0, 0, 0).w
    assert wk.Matrix.identity(wk.f32, 3).determinant() == 1.0 and wk.Vector.unit(3, 1).y == 1.0
    assert wk.Vector.unit(3, 1).dtype == np.int32 and wk.Vector.unit(3, 1, dt=wk.f32).dtype == np.float32
    np.testing.assert_allclose(wk.Vector([3.0, 4.0]).normalized(1.0), [0.5, 2 / 3], rtol=1e-6)
    assert wk.Vector([3.0, 4.0]).norm_inv() == pytest.approx(0.2)
    with pytest.raises(wk.WkError, match=r"must be in \[0, 3\)"):
        wk.Vector.unit(3, 3)


def test_field_elements_read_as_vectors(arch):
    v = wk.Vector.field(3, wk.f32, shape=4)
    m = wk.Matrix.field(2, 2, wk.f32, shape=2)
    s = wk.field(wk.f32, shape=2)
    v[1] = [1, 2, 2]
    m[0] = [[1, 2], [3, 4]]
    assert v[1].norm() == 3.0 and v[1].x == 1.0 and m[0].determinant() == pytest.approx(-2.0)
    assert type(v.to_numpy()) is np.ndarray and isinstance(s[0], float)

    @wk.kernel
    def length(a: wk.math.vec3) -> wk.f32:
        return a.norm()

    assert length(v[1] * 2) == pytest.approx(6.0)


def test_component_writes_to_field_elements_store_into_the_field(arch):
    v = wk.Vector.field(3, wk.f32, shape=4)
    m = wk.Matrix.field(2, 2, wk.f32, shape=2)
    g = wk.Vector.field(2, wk.f32, shape=())
    a = wk.Vector.ndarray(3, wk.f32, shape=4)
    s = wk.types.struct(p=wk.math.vec3, m=wk.f32).field(shape=4)
    v[3][1] = 9.0
    v[1].y = 7.0
    m[1][0, 1] = 5.0
    m[0][1][0] = 3.0               # through a row view
    g[None][1] = -9.8
    a[2][1] = 5.0
    s[3].p[2] = 4.0
    copy = v[2] * 2                # arithmetic results are new arrays: writing them leaves the field alone
    copy[0] = 100.0
    np.testing.assert_array_equal(v.to_numpy(), [[0, 0, 0], [0, 7, 0], [0, 0, 0], [0, 9, 0]])
    np.testing.assert_array_equal(m.to_numpy(), [[[0, 0], [3, 0]], [[0, 5], [0, 0]]])
    np.testing.assert_allclose(g.to_numpy(), [0, -9.8], rtol=1e-6)
    np.testing.assert_array_equal(a.to_numpy()[2], [0, 5, 0])
    np.testing.assert_array_equal(s.to_numpy()["p"][3], [0, 0, 4])


def test_dtypes_print_as_taichi_and_repr_names_the_api():
    assert str(wk.f32) == "f32" and f"{wk.i32}" == "i32" and repr(wk.f32) == "wk.f32"
    assert [t.to_string() for t in (wk.u8, wk.i64, wk.f16, wk.u1)] == ["u8", "i64", "f16", "u1"]


def test_integer_matrices_invert_in_float_and_list_their_entries():
    m = wk.Matrix([[1, 2], [3, 4]])
    np.testing.assert_allclose(m.inverse(), [[-2.0, 1.0], [1.5, -0.5]], rtol=1e-6)
    assert m.inverse().dtype == np.float32 and m.determinant() == pytest.approx(-2.0)
    assert m.to_list() == [[1, 2], [3, 4]]
    assert type(m.entries) is np.ndarray and m.entries.dtype == np.int32 and m.entries.tolist() == [[1, 2], [3, 4]]
    assert wk.types.vector(3, wk.f32)([0, 1, 2]).entries.dtype == np.float32
    assert wk.Vector([1.0, 2.0]).to_list() == [1.0, 2.0]


def test_single_letter_rgba_components_on_host_and_as_template_arguments(arch):
    tint = wk.math.vec4(0.25, 0.5, 0.75, 0.8)
    assert (tint.r, tint.g, tint.b, tint.a) == (0.25, 0.5, 0.75, np.float32(0.8))
    tint.a = 0.5
    assert tint.w == 0.5
    out = wk.Vector.field(4, wk.f32, shape=3)

    @wk.func
    def over(color: wk.template(), under: wk.template()):
        color.rgb += (1 - color.a) * under.rgb * under.a
        color.a += (1 - color.a) * under.a

    @wk.kernel
    def composite():
        for i in out:
            color = wk.math.vec4(0.1 * i, 0.0, 0.0, 0.5)
            over(color, tint)          # a Python-scope vector reaches the func as a compile-time value
            out[i] = color

    composite()
    got = out.to_numpy()
    for i in range(3):
        np.testing.assert_allclose(got[i], [0.1 * i + 0.0625, 0.125, 0.1875, 0.75], rtol=1e-6)


def test_python_scope_vectors_and_matrices_are_instances_of_wk_matrix():
    # Quadrants' test_numpy_op_with_matrix: isinstance(np.cos(0) + wk.Vector([1, 2]), wk.Matrix); Taichi's Vector
    # is a Matrix subclass, so a vector is both and a matrix is not a Vector
    v = wk.Vector([1, 2])
    m = wk.Matrix([[1.0, 2.0], [3.0, 4.0]])
    for value in (v, np.cos(0) + v, v + np.float32(1), m, m @ v, wk.math.vec3(1, 2, 3)):
        assert isinstance(value, wk.Matrix)
    assert isinstance(v, wk.Vector) and isinstance(m @ v, wk.Vector) and not isinstance(m, wk.Vector)
    for other in (np.zeros(2), [1, 2], (v * v).sum(), 3.0):
        assert not isinstance(other, wk.Matrix) and not isinstance(other, wk.Vector)


def test_augmented_assignment_makes_a_new_promoted_value(arch):
    """`cam += step` on an integer vector (a ray marcher's camera) gives a float vector, and another name for
    the old value keeps it, as in Taichi; an element read from a field is not written back by `+=`."""
    cam = wk.Vector([0, 0, 0])
    before = cam
    cam += wk.Vector([0.0, 0.5, 0.0]) * 2
    cam -= np.array([0.25, 0.0, 0.0])
    np.testing.assert_allclose(cam, [-0.25, 1.0, 0.0])
    assert cam.dtype.kind == "f" and before.tolist() == [0, 0, 0] and cam.norm() > 0
    m = wk.Matrix([[1, 2], [3, 4]])
    m @= m
    m *= 0.5
    np.testing.assert_allclose(m, [[3.5, 5.0], [7.5, 11.0]])
    f = wk.Vector.field(2, wk.f32, shape=3)
    element = f[1]
    element += 1.0
    assert element.tolist() == [1.0, 1.0] and f.to_numpy()[1].tolist() == [0.0, 0.0]


def test_trace_of_a_matrix_that_is_not_square_is_an_error_naming_its_shape(arch):
    for error in (ValueError, wk.CompileError):           # the same class in Python scope as in a kernel
        with pytest.raises(error, match=r"trace\(\) expected a square matrix, got shape \(3, 2\)"):
            wk.Matrix([[0.1, 3.0], [5.0, 7.0], [1.0, 2.0]]).trace()
    assert wk.Matrix([[0.5, 3.0], [5.0, 7.0]]).trace() == pytest.approx(7.5)
    out = wk.field(wk.f32, shape=())

    @wk.kernel
    def in_a_kernel():
        m = wk.Matrix([[0.1, 3.0], [5.0, 7.0], [1.0, 2.0]])
        out[None] = m.trace()

    for error in (ValueError, wk.CompileError):
        with pytest.raises(error, match=r"trace\(\) expected a square matrix, got shape \(3, 2\)"):
            in_a_kernel()


def test_stpq_swizzles_and_taichis_errors_for_components_a_vector_lacks():
    v = wk.math.vec3(0, 0, 0)
    v.stp += 1
    v.ps = (5, 7)
    assert v.tolist() == [7.0, 1.0, 5.0] and v.s == 7.0 and v.tps.tolist() == [1.0, 5.0, 7.0]
    assert wk.math.vec4(1, 2, 3, 4).qq.tolist() == [4.0, 4.0]
    a = wk.math.vec2(1, 2)
    with pytest.raises(wk.CompileError, match=r"vec2 only has attributes=\('x', 'y'\), got=\('z',\)"):
        a.z = 3
    with pytest.raises(wk.CompileError, match=r"vec2 only has attributes=\('x', 'y'\), got=\('x', 'y', 'z'\)"):
        a.xyz = [1, 2, 3]
    with pytest.raises(wk.CompileError, match=r"vec2 only has attributes=\('s', 't'\), got=\('p',\)"):
        a.p
    with pytest.raises(wk.WkError, match="value len does not match the swizzle pattern=xy"):
        a.xy = [1, 2, 3]
    assert a.tolist() == [1.0, 2.0]


def test_entries_read_in_python_are_python_scalars(arch):
    """Taichi gives a vector element's entries as Python floats and ints (difftaichi prints and sums them);
    numpy's float32 scalars would print as `np.float32(...)` and keep later host arithmetic in f32."""
    v = wk.Vector.field(2, dtype=wk.f32, shape=3)
    m = wk.Matrix.field(2, 2, dtype=wk.f32, shape=())
    iv = wk.Vector.field(3, dtype=wk.i32, shape=())
    v[1] = [0.3, 2.5]
    m[None] = [[1.0, 2.0], [3.0, 4.0]]
    iv[None] = [1, -2, 3]
    element = v[1]
    entries = [element[0], element.x, element.y, m[None][0, 1], m[None][1][0], *element]
    assert all(type(e) is float for e in entries), [type(e) for e in entries]
    assert [type(e) for e in (iv[None][1], iv[None].z, *iv[None])] == [int] * 5
    assert repr([v[1][1], iv[None][1]]) == "[2.5, -2]"
    # the f32 value, widened: host arithmetic on it is then in f64 (as on Taichi's Python floats)
    assert element[0] == float(np.float32(0.3)) and 0.1 * element[0] == 0.1 * float(np.float32(0.3))
    assert isinstance(m[None][0], np.ndarray) and m[None][0].y == 2.0      # rows stay vectors
    element[0] = 4.0                                                         # and writes still store
    assert v[1][0] == 4.0
