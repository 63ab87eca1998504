"""`wk.tensor` / `wk.Tensor` / `wk.Backend` (lang/tensor.py, Quadrants' names) and Taichi's ndarray class names."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import wgkern as wk


def test_tensor_makes_fields_and_ndarrays(arch):
    field = wk.tensor(wk.f32, (4,), backend=wk.Backend.FIELD, needs_grad=True)
    array = wk.tensor(wk.i32, shape=(2, 3), layout=(1, 0))
    vectors = wk.tensor(wk.types.vector(3, wk.f32), 5)
    assert isinstance(field, wk.Field) and field.grad is not None and isinstance(array, wk.Ndarray)
    assert all(isinstance(t, wk.Tensor) for t in (field, array, vectors)) and not isinstance(np.zeros(2), wk.Tensor)
    assert isinstance(array, wk.ScalarNdarray) and isinstance(vectors, wk.VectorNdarray)
    assert not isinstance(vectors, wk.MatrixNdarray) and isinstance(wk.Matrix.ndarray(2, 2, wk.f32, 3),
                                                                     wk.MatrixNdarray)

    @wk.kernel
    def fill(a: wk.types.ndarray()):
        for i, j in a:
            a[i, j] = i * 10 + j               # indexed by the shape asked for, whatever the layout

    fill(array)
    np.testing.assert_array_equal(array.to_numpy(), [[0, 1, 2], [10, 11, 12]])
    with pytest.raises(ValueError, match="permutation of range\\(2\\)"):
        wk.tensor(wk.f32, (2, 3), layout=(0, 0))
    with pytest.raises(ValueError, match="backend='field' is not a valid wk.Backend"):
        wk.tensor(wk.f32, 3, backend="field")


def test_tensor_factories_take_int_backends_and_only_portable_keywords(arch):
    # Quadrants' Backend is an IntEnum: 0 and 1 name the backends; the factories take only the keywords both
    # backends understand, so a program does not work on one backend and fail on the other
    assert issubclass(wk.Backend, int) and wk.Backend.FIELD == 0 and int(wk.Backend.NDARRAY) == 1
    assert isinstance(wk.tensor(wk.f32, 3, backend=0), wk.Field)
    assert isinstance(wk.Vector.tensor(2, wk.f32, 3, backend=1), wk.VectorNdarray)
    assert isinstance(wk.Matrix.tensor(2, 2, wk.f32, 3, backend=wk.Backend.FIELD, needs_grad=True).grad, wk.Field)
    for bad in (42, True, "field", None):
        with pytest.raises(ValueError, match=f"backend={bad!r} is not a valid wk.Backend"):
            wk.tensor(wk.f32, 3, backend=bad)
    with pytest.raises(TypeError, match=r"wk.tensor\(\) got unexpected keyword argument\(s\) \['offset'\]"):
        wk.tensor(wk.f32, (4, 5), backend=wk.Backend.FIELD, offset=(1, 1))
    with pytest.raises(TypeError, match=r"does not accept order=; pass layout="):
        wk.tensor(wk.f32, (4, 5), order="ji")
    with pytest.raises(TypeError, match=r"wk.Vector.tensor\(...\) does not accept order= \(or layout=\)"):
        wk.Vector.tensor(3, wk.f32, 4, order="ji")
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['layout'\]"):
        wk.Matrix.tensor(2, 2, wk.f32, 4, layout=(0,))
    with pytest.raises(TypeError, match="layout= is not supported with vector or matrix dtypes"):
        wk.tensor(wk.types.vector(3, wk.f32), 4, layout=(0,))
    existing = wk.ndarray(wk.f32, 3)
    with pytest.raises(TypeError, match="allocates a new container.*wk.wrap"):
        wk.tensor(existing, 3)


def test_ndarray_annotation_with_subscripts(arch):
    # Quadrants' spelling: wk.types.NDArray[dtype, ndim]
    @wk.kernel
    def lcg(n: int, steps: int, a: wk.types.NDArray[wk.i32, 1]) -> None:
        for i in range(n):
            x = a[i]
            for _ in range(steps):
                x = (1664525 * x + 1013904223) % 2147483647
            a[i] = x

    a = wk.ndarray(wk.int32, (4,))
    lcg(4, 10, a)
    assert a.to_numpy().tolist() == [1126063397] * 4            # what Quadrants prints for its example
    assert wk.types.NDArray[wk.f32, 2] == wk.types.ndarray(wk.f32, 2)
    assert wk.types.NDArray[...] == wk.types.ndarray()
    with pytest.raises(wk.ArgumentError, match="ndim"):
        lcg(4, 1, wk.ndarray(wk.i32, (2, 2)))


@dataclasses.dataclass(frozen=True)
class State:
    positions: wk.Tensor
    scale: float


def test_tensor_wrapper_of_a_field_or_an_ndarray(arch):
    # Quadrants' qd.Tensor(x) wrapper: the container itself, in kernel arguments and dataclass members
    @wk.kernel
    def scaled_copy(state: State, out: wk.Tensor):
        for i in range(4):
            out[i] = state.positions[i] * state.scale

    source = wk.field(wk.f32, shape=4)
    source.from_numpy(np.arange(4, dtype=np.float32))
    wrapped = wk.Tensor(source)
    assert wrapped is source and isinstance(wrapped, wk.Tensor)
    into_ndarray = wk.Tensor(wk.ndarray(wk.f32, shape=4))
    into_field = wk.Tensor(wk.field(wk.f32, shape=4))
    scaled_copy(State(positions=wrapped, scale=2.0), into_ndarray)
    scaled_copy(State(positions=into_ndarray, scale=0.5), into_field)
    np.testing.assert_allclose(into_ndarray.to_numpy(), [0, 2, 4, 6])
    np.testing.assert_allclose(into_field.to_numpy(), [0, 1, 2, 3])
    with pytest.raises(TypeError, match="wraps a field or an ndarray"):
        wk.Tensor(np.zeros(4))


def test_vector_and_matrix_tensors(arch):
    # Quadrants' qd.Vector.tensor / qd.Matrix.tensor / qd.VectorTensor / qd.MatrixTensor / qd.wrap (its test_api)
    vectors = wk.Vector.tensor(3, wk.f32, 4)
    matrices = wk.Matrix.tensor(2, 2, wk.i32, (2, 3), backend=wk.Backend.FIELD)
    assert isinstance(vectors, wk.VectorNdarray) and vectors.shape == (4,) and vectors.element_shape == (3,)
    assert isinstance(matrices, wk.Field) and matrices.shape == (2, 3) and matrices.element_shape == (2, 2)
    assert isinstance(vectors, wk.VectorTensor) and not isinstance(vectors, wk.MatrixTensor)
    assert isinstance(matrices, wk.MatrixTensor) and isinstance(matrices, wk.Tensor)
    assert wk.VectorTensor(vectors) is vectors and wk.MatrixTensor(matrices) is matrices
    assert wk.wrap(matrices) is matrices
    with pytest.raises(TypeError, match="of vectors"):
        wk.VectorTensor(matrices)

    @wk.kernel
    def fill(v: wk.VectorTensor, m: wk.MatrixTensor):
        for i in v:
            v[i] = wk.Vector([i, 2 * i, 3 * i])
        for i, j in m:
            m[i, j] = wk.Matrix([[i, j], [i + j, i * j]])

    fill(vectors, matrices)
    np.testing.assert_array_equal(vectors.to_numpy()[:, 1], [0, 2, 4, 6])
    assert matrices[1, 2].tolist() == [[1, 2], [3, 2]]


def test_layout_is_reported_back(arch):
    """`x.layout`: the permutation given to wk.tensor, None for the identity or none given (Quadrants'
    Field.layout / Ndarray.layout), on either backend, on the gradient, and after a pickle round trip."""
    import pickle
    for backend in (wk.Backend.FIELD, wk.Backend.NDARRAY):
        tagged = wk.tensor(wk.f32, (2, 3, 4), backend=backend, layout=[2, 0, 1], needs_grad=True)
        assert tagged.layout == (2, 0, 1) and tagged.grad.layout == (2, 0, 1)
        assert all(type(a) is int for a in tagged.layout)
        assert wk.tensor(wk.f32, (2, 3), backend=backend, layout=(0, 1)).layout is None
        assert wk.tensor(wk.f32, (2, 3), backend=backend).layout is None
        assert wk.field(wk.f32, 3).layout is None and wk.ndarray(wk.f32, 3).layout is None
        tagged.from_numpy(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
        copy = pickle.loads(pickle.dumps(tagged))
        assert copy.layout == (2, 0, 1)
        np.testing.assert_array_equal(copy.to_numpy(), tagged.to_numpy())
