"""Argument specialisation: keys, ArgSpecs, template values, and every ArgumentError naming the parameter."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from tests.lang.argument_kernels import spec_of, scalars, arrays, templates, unannotated, vector_arg


def test_scalar_specs(fake_program):
    spec = spec_of(scalars, 1, 2, True, 3.5, 4)
    assert [s.kind for s in spec.arg_specs] == ["scalar"] * 5
    assert [s.dtype for s in spec.arg_specs] == [wk.f32, wk.i32, wk.u1, wk.f32, wk.i32]
    assert spec.values == [1.0, 2, True, 3.5, 4]
    assert spec.key == spec_of(scalars, 9.0, np.int64(7), False, 1, 0).key   # values are not in the key
    assert spec_of(scalars, a=1, n=2, flag=1, x=1.0, k=2).values[0] == 1.0


def test_ndarray_specs(fake_program):
    a = wk.ndarray(wk.f32, shape=(2, 3))
    b = np.zeros((4,), np.int16)
    v = wk.ndarray(wk.types.vector(3, wk.f32), shape=5)
    spec = spec_of(arrays, a, b, v)
    kinds = [(s.kind, s.dtype, s.ndim, s.element_shape) for s in spec.arg_specs]
    assert kinds == [("ndarray", wk.f32, 2, ()), ("ndarray", wk.i16, 1, ()), ("ndarray", wk.f32, 1, (3,))]
    # numpy arrays for vector ndarrays: trailing axes are the element
    spec2 = spec_of(arrays, np.zeros((2, 3), np.float32), b, np.zeros((5, 3), np.float32))
    assert spec2.arg_specs[2].ndim == 1 and spec2.arg_specs[2].element_shape == (3,)
    assert spec.key != spec2.key                       # numpy vs wk.ndarray compile separately
    assert spec_of(arrays, wk.ndarray(wk.f32, shape=(7, 7)), b, v).key == spec.key   # shape not in key


def test_templates(fake_program):
    f = wk.field(wk.f32, shape=3)
    g = wk.field(wk.f32, shape=3)
    spec = spec_of(templates, f, 3, (1, 2.0))
    assert [s.kind for s in spec.arg_specs] == ["template"] * 3
    assert spec.template_values == {0: f, 1: 3, 2: (1, 2.0)}
    assert spec_of(templates, f, 3, (1, 2.0)).key == spec.key
    assert spec_of(templates, g, 3, (1, 2.0)).key != spec.key        # another field: another variant
    assert spec_of(templates, f, 4, (1, 2.0)).key != spec.key
    assert spec_of(templates, f, 3.0, (1, 2.0)).key != spec.key      # 3 and 3.0 differ
    assert spec_of(templates, f, True, (1, 2.0)).key != spec_of(templates, f, 1, (1, 2.0)).key


def test_unannotated_parameters_are_inferred(fake_program):
    f = wk.field(wk.f32, shape=3)
    spec = spec_of(unannotated, 1.5, np.zeros(3, np.float32), f)
    assert [s.kind for s in spec.arg_specs] == ["scalar", "ndarray", "template"]
    assert spec.arg_specs[0].dtype == wk.f32
    assert spec_of(unannotated, 2, f, f).arg_specs[0].dtype == wk.i32


def test_vector_argument_is_passed_as_scalar_components(fake_program):
    spec = spec_of(vector_arg, (1, 2, 3))
    assert spec.arg_specs[0].kind == "template" and spec.arg_specs[0].element_shape == (3,)
    assert spec.arg_specs[0].components == (2, 3, 4)
    assert [(s.name, s.kind, s.dtype) for s in spec.arg_specs[2:]] == [
        ("v[0]", "scalar", wk.f32), ("v[1]", "scalar", wk.f32), ("v[2]", "scalar", wk.f32)]
    assert spec.values[1:] == [2.0, 1.0, 2.0, 3.0]
    assert spec_of(vector_arg, np.array([4, 5, 6])).key == spec.key      # new values: the same variant
    with pytest.raises(wk.ArgumentError, match="parameter 'v'"):
        spec_of(vector_arg, (1, 2))


PAIR = wk.types.struct(a=wk.f32, n=wk.i32, v=wk.math.vec2)


@wk.kernel
def struct_arg(p: PAIR):
    pass


def test_struct_argument_is_passed_as_scalar_components(fake_program):
    spec = spec_of(struct_arg, PAIR(a=1.5, n=4, v=[1, 2]))
    assert spec.arg_specs[0].components == (1, 2, 3, 4) and spec.arg_specs[0].dtype is PAIR
    assert [s.name for s in spec.arg_specs[1:]] == ["p.a", "p.n", "p.v[0]", "p.v[1]"]
    assert spec.values[1:] == [1.5, 4, 1.0, 2.0]
    assert spec_of(struct_arg, {"a": 2.0}).values[1:] == [2.0, 0, 0.0, 0.0]
    with pytest.raises(wk.ArgumentError, match="parameter 'p' expects a wk.types.struct\\(a=wk.f32.*got float"):
        spec_of(struct_arg, 3.0)
    with pytest.raises(wk.ArgumentError, match="parameter 'p': .*has no member 'zz'"):
        spec_of(struct_arg, {"zz": 1})
    with pytest.raises(wk.ArgumentError, match="parameter 'p.n' is wk.i32 but got the float 2.5"):
        spec_of(struct_arg, PAIR(n=2.5))


SPHERE = wk.types.struct(center=wk.math.vec3, radius=float)


@wk.kernel
def sphere_arg(s: SPHERE):
    pass


def test_struct_argument_of_same_member_names_but_other_shapes_is_rejected(fake_program):
    # Quadrants' test_pass_struct_mismatch: a circle (vec2 centre) passed where a sphere (vec3 centre) is
    # expected named the same members, so it was flattened short and failed with an IndexError at launch.
    circle = wk.types.struct(center=wk.math.vec2, radius=float)
    twin = wk.types.struct(center=wk.math.vec3, radius=float)
    with pytest.raises(wk.ArgumentError, match=r"parameter 's' expects a wk.types.struct\(center=wk.types.vector\(3, "
                       r".*got a wk.types.struct\(center=wk.types.vector\(2, wk.f32\).* value whose members have "
                       r"other shapes \(component 2 is 's.center\[2\]' in the parameter, 's.radius' in the value\)"):
        spec_of(sphere_arg, circle(center=wk.math.vec2([1, 2]), radius=2.33))
    assert spec_of(sphere_arg, twin(center=[1, 2, 3], radius=4.0)).values[1:] == [1.0, 2.0, 3.0, 4.0]


OUTER = wk.types.struct(p=PAIR, k=wk.i32)


@wk.kernel
def nested_arg(s: OUTER):
    pass


def test_nested_struct_argument_of_other_shapes_is_rejected_not_truncated(fake_program):
    # A nested member made from another struct type (its `v` a vec3 where PAIR's is a vec2) was flattened
    # to more components than the parameter has and silently cut short: s.k took v's third component and the
    # value's k was dropped.
    other = wk.types.struct(a=wk.f32, n=wk.i32, v=wk.math.vec3)
    assert spec_of(nested_arg, OUTER(p=PAIR(a=1, n=2, v=[3, 4]), k=5)).values[1:] == [1.0, 2, 3.0, 4.0, 5]
    with pytest.raises(wk.ArgumentError, match=r"parameter 's' expects .*whose members have other shapes "
                       r"\(component 4 is 's.k' in the parameter, 's.p.v\[2\]' in the value\)"):
        spec_of(nested_arg, OUTER(p=other(a=1, n=2, v=[1, 2, 3]), k=5))


def test_numpy_array_for_a_vector_annotation_keeps_its_scalar_dtype(arch):
    # Quadrants compiles a `dtype=wk.math.vec3` parameter for a float64 or int32 (n, 3) numpy array (programs
    # pass their float64 positions); a scalar annotation's dtype must still match.
    @wk.kernel
    def first_x(pos: wk.types.ndarray(dtype=wk.math.vec3)) -> wk.f32:
        s = 0.0
        for i in range(pos.shape[0]):
            pos[i].y = 0.5
            s += pos[i].x
        return s

    for dtype in (np.float64, np.int32):
        positions = np.ones((4, 3), dtype=dtype)
        assert first_x(positions) == 4.0
        assert positions[0].tolist() == ([1.0, 0.5, 1.0] if dtype == np.float64 else [1, 0, 1])

    @wk.kernel
    def scalar(a: wk.types.ndarray(dtype=wk.f32, ndim=1)) -> wk.f32:
        return a[0]

    with pytest.raises(wk.ArgumentError, match="dtype"):
        scalar(np.ones(3, dtype=np.float64))


def test_ndarray_element_dim_makes_the_last_axes_elements(arch):
    # Taichi's wk.types.ndarray(element_dim=1): a (3, 3) numpy box is three vec3 rows, so box[2][2] and
    # n[0] * box[0] work (mdapy's periodic-boundary funcs); element_dim=2 gives matrix elements.
    @wk.func
    def wrap(r, box: wk.types.ndarray(element_dim=1)):
        return r[0] / box[0][0] * box[0] + r[1] / box[1][1] * box[1] + r[2] / box[2][2] * box[2]

    @wk.kernel
    def run(pos: wk.types.ndarray(dtype=wk.math.vec3), box: wk.types.ndarray(element_dim=1),
            mats: wk.types.ndarray(element_dim=2), out: wk.types.ndarray()):
        for i in range(pos.shape[0]):
            out[i] = wrap(pos[i], box).norm_sqr() + mats[i][1, 0]

    pos = np.arange(12, dtype=np.float64).reshape(4, 3)
    mats = np.arange(16, dtype=np.float64).reshape(4, 2, 2)
    out = np.zeros(4)
    run(pos, np.diag([2.0, 3.0, 4.0]), mats, out)
    assert np.allclose(out, (pos ** 2).sum(1) + mats[:, 1, 0])
    with pytest.raises(ValueError, match="element_dim"):
        wk.types.ndarray(element_dim=3)


def test_sizeless_vector_and_matrix_ndarray_hints(arch):
    # Quadrants' NDArray[wk.types.matrix(), 1] / NDArray[wk.types.vector(), 1]: any matrix / vector element;
    # each element size compiles its own variant, and the other kind is refused.
    @wk.kernel
    def ones(x: wk.types.NDArray[wk.types.matrix(), 1]):
        for I in wk.grouped(x):
            x[I] = 1.0

    @wk.kernel
    def twos(x: wk.types.NDArray[wk.types.vector(), 1]):
        for I in wk.grouped(x):
            x[I] = 2.0

    m2, m3 = wk.ndarray(wk.math.mat2, 3), wk.ndarray(wk.math.mat3, 3)
    ones(m2)
    ones(m3)
    v3 = wk.ndarray(wk.math.vec3, 3)
    twos(v3)
    assert (m2.to_numpy() == 1).all() and (m3.to_numpy() == 1).all() and (v3.to_numpy() == 2).all()
    with pytest.raises(wk.ArgumentError, match="matrix elements"):
        ones(v3)
    with pytest.raises(wk.ArgumentError, match="vector elements"):
        twos(m2)
    assert wk.types.vector(3).dtype == wk.f32 and wk.types.matrix(2, 2, wk.i32).dtype == wk.i32


def test_ndarray_element_shape_makes_vector_or_matrix_elements(arch):
    # Taichi's wk.types.ndarray(element_shape=(2,)) / (dtype=..., element_shape=(2, 2)): the last axes of a numpy
    # argument are vector or matrix elements
    @wk.kernel
    def shift(a: wk.types.ndarray(element_shape=(2,)), m: wk.types.ndarray(dtype=wk.f32, element_shape=(2, 2))):
        for i in a:
            a[i] += wk.Vector([1, 2])
            m[i] += wk.Matrix([[1, 2], [3, 4]])

    a = np.zeros((3, 2), np.float32)
    m = np.zeros((3, 2, 2), np.float32)
    shift(a, m)
    assert a.tolist() == [[1, 2]] * 3 and m[2].tolist() == [[1, 2], [3, 4]]
    with pytest.raises(ValueError, match="element_shape"):
        wk.types.ndarray(element_shape=(1, 2, 3))


def test_ndarray_annotated_needs_grad_false_gets_no_gradient(arch):
    # Quadrants' ndarray(needs_grad=False): that argument is a constant to the reverse kernel, even when the
    # array passed has a .grad; the other arguments still get theirs (through a dynamic loop here).
    n = 3

    @wk.kernel
    def mix(x: wk.types.ndarray(needs_grad=False), z: wk.types.ndarray(), y: wk.types.ndarray()):
        for i in range(n):
            a = 2.0
            for _ in range(n):
                a += x[i] * z[i]
            y[0] += a

    x = wk.ndarray(wk.f32, shape=n, needs_grad=True)
    z = wk.ndarray(wk.f32, shape=n, needs_grad=True)
    y = wk.ndarray(wk.f32, shape=1, needs_grad=True)
    x.from_numpy(np.array([1.0, 2.0, 3.0], np.float32))
    z.from_numpy(np.array([0.5, 0.25, 2.0], np.float32))
    x.grad.fill(7.0)
    mix(x, z, y)
    y.grad.fill(1.0)
    mix.grad(x, z, y)
    np.testing.assert_array_equal(x.grad.to_numpy(), [7.0, 7.0, 7.0])
    np.testing.assert_allclose(z.grad.to_numpy(), n * x.to_numpy(), rtol=1e-6)
