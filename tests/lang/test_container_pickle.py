"""Pickling fields and ndarrays (lang/container_pickle.py): contents, kind, element type, shape, a field's offset and
name, and a gradient's values survive; sparse and quantized fields are refused by message."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import wgkern as wk
from wgkern.runtime import program


def _roundtrip(obj):
    return pickle.loads(pickle.dumps(obj))


def _supported(dtype) -> bool:
    return program.current().backend.supports(dtype)


@pytest.mark.parametrize("name", ["f16", "f32", "f64", "i8", "i16", "i32", "i64", "u1", "u8", "u16", "u32", "u64"])
def test_every_dtype_round_trips_exactly(arch, name):
    dtype = getattr(wk, name)
    if not _supported(dtype):
        pytest.skip(f"{name} is not supported on {arch}")
    rng = np.random.default_rng(7)
    if name == "u1":
        values = rng.integers(0, 2, (3, 5)).astype(np.bool_)
    elif dtype.is_float:
        values = rng.uniform(-100, 100, (3, 5)).astype(dtype.np_dtype)
    else:
        info = np.iinfo(dtype.np_dtype)
        values = rng.integers(info.min, info.max, (3, 5), endpoint=True, dtype=dtype.np_dtype)
    for make in (wk.ndarray, wk.field):
        a = make(dtype, (3, 5))
        a.from_numpy(values)
        b = _roundtrip(a)
        assert type(b) is type(a) and b is not a
        assert b.dtype is dtype and b.shape == (3, 5)
        np.testing.assert_array_equal(b.to_numpy(), values)


def test_vectors_matrices_offsets_and_names(arch):
    v = wk.Vector.ndarray(3, wk.f32, shape=(4,))
    v.from_numpy(np.arange(12, dtype=np.float32).reshape(4, 3))
    m = wk.Matrix.field(2, 3, wk.i32, shape=(2, 2), offset=(-1, 5))
    m.from_numpy(np.arange(24, dtype=np.int32).reshape(2, 2, 2, 3))
    column = wk.Matrix.field(3, 1, wk.f32, shape=2)          # to_numpy() drops a field's one column by default
    column.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3, 1))
    velocity = wk.field(wk.f32, shape=3, name="velocity")

    v2, m2, column2, velocity2 = _roundtrip([v, m, column, velocity])
    assert v2.element_shape == (3,) and not v2.is_field
    np.testing.assert_array_equal(v2.to_numpy(), v.to_numpy())
    assert m2.is_field and m2.element_shape == (2, 3) and m2.offset == (-1, 5) and m2[-1, 6][1, 2] == 11
    np.testing.assert_array_equal(m2.to_numpy(), m.to_numpy())
    assert column2.element_shape == (3, 1)
    np.testing.assert_array_equal(column2.to_numpy(keep_dims=True), column.to_numpy(keep_dims=True))
    assert velocity2.name == "velocity"


def test_a_gradient_travels_with_its_values(arch):
    x = wk.field(wk.f32, shape=4, needs_grad=True)
    x.from_numpy(np.array([1, 2, 3, 4], np.float32))
    x.grad.from_numpy(np.array([0.5, -1, 0, 8], np.float32))
    y = wk.ndarray(wk.f32, shape=2)
    x2, y2 = _roundtrip((x, y))
    np.testing.assert_array_equal(x2.grad.to_numpy(), [0.5, -1, 0, 8])
    assert y2.grad is None


def test_an_unpickled_container_lives_in_the_running_program_and_is_usable(arch):
    a = wk.ndarray(wk.i32, shape=8)
    a.from_numpy(np.arange(8, dtype=np.int32))
    blob = pickle.dumps(a)
    wk.reset()
    wk.init(arch=arch)
    b = pickle.loads(blob)

    @wk.kernel
    def double(x: wk.types.ndarray(wk.i32, ndim=1)):
        for i in x:
            x[i] *= 2

    double(b)
    np.testing.assert_array_equal(b.to_numpy(), 2 * np.arange(8))


def test_sparse_and_quantized_fields_are_refused(arch):
    x = wk.field(wk.f32)
    wk.root.pointer(wk.i, 4).dense(wk.i, 4).place(x)
    with pytest.raises(TypeError, match="cannot pickle field 'x': it lives under a sparse pointer node"):
        pickle.dumps(x)
    q = wk.field(wk.types.quant.int(8, True), shape=4)
    with pytest.raises(TypeError, match="cannot pickle field 'q' of a quantized type"):
        pickle.dumps(q)
