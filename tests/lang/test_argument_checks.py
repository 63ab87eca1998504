"""Each argument value's check (lang/argument_checks.py): scalars, ndarrays and integer ranges, and containers from
an earlier wk.init, every ArgumentError naming the parameter."""
from __future__ import annotations

import re

import numpy as np
import pytest

import wgkern as wk
from tests.lang.argument_kernels import spec_of, scalars, arrays, templates


def test_scalar_errors_name_the_parameter(fake_program):
    with pytest.raises(wk.ArgumentError, match="parameter 'n'.*float"):
        spec_of(scalars, 1, 2.5, True, 1.0, 1)
    # Quadrants' phrase (the position of the argument, its Python type and the dtype) is part of the message
    with pytest.raises(wk.ArgumentError, match=r"Argument \(1,\) \(type=<class 'float'>\) cannot be converted "
                                               r"into required type i32"):
        spec_of(scalars, 1, 2.5, True, 1.0, 1)
    with pytest.raises(wk.ArgumentError, match="parameter 'a'.*str"):
        spec_of(scalars, "x", 2, True, 1.0, 1)
    # an int out of the dtype's range is an error (Taichi and Quadrants pass it wrapped: 2**40 as 0)
    with pytest.raises(wk.ArgumentError, match=r"parameter 'n' is wk.i32 but got 1099511627776, out of its range "
                                               r"\(wk.i32 holds -2147483648..2147483647\)"):
        spec_of(scalars, 1, 2**40, True, 1.0, 1)
    with pytest.raises(wk.ArgumentError, match=r"parameter 'k' is wk.i32 but got np.int64\(2147483648\)"):
        spec_of(scalars, 1, 2, True, 1.0, np.int64(2**31))
    with pytest.raises(wk.ArgumentError, match="scalars"):
        spec_of(scalars, 1, 2)
    with pytest.raises(wk.ArgumentError):
        spec_of(scalars, 1, 2, True, 1.0, 1, 5)
    with pytest.raises(TypeError):      # ArgumentError is also a TypeError
        spec_of(scalars, 1, 2, True, 1.0, 1, extra=3)


def test_ndarray_errors_carry_quadrants_phrases(fake_program):
    b = np.zeros(4, np.int32)
    v = wk.ndarray(wk.types.vector(3, wk.f32), shape=5)
    with pytest.raises(wk.ArgumentError, match=re.escape("Invalid value for argument a - required array has "
                                                         "dtype=wk.f32")):
        spec_of(arrays, np.zeros((2, 2), np.float64), b, v)
    with pytest.raises(wk.ArgumentError, match=re.escape("Invalid type for argument a, got 1.5")):
        spec_of(arrays, 1.5, b, v)
    with pytest.raises(wk.ArgumentError, match=re.escape("Invalid value for argument v - required "
                                                         "element_shape=(3,), array with element shape of (2,)")):
        spec_of(arrays, wk.ndarray(wk.f32, shape=(2, 2)), b, np.zeros((5, 2), np.float32))
    with pytest.raises(wk.ArgumentError, match=re.escape("Invalid value for argument a - required array has ndim=2, "
                                                         "array with 4 dimensions is provided")):
        spec_of(arrays, np.zeros((2, 2, 2, 2), np.float32), b, v)
    with pytest.raises(wk.ArgumentError, match=re.escape("Invalid value for argument v - required array has ndim=1 "
                                                         "element_dim=1, array with 3 dimensions is provided")):
        spec_of(arrays, wk.ndarray(wk.f32, shape=(2, 2)), b, np.zeros((5, 2, 2), np.float32))


def test_ndarray_errors(fake_program):
    b = np.zeros(4, np.int32)
    v = wk.ndarray(wk.types.vector(3, wk.f32), shape=5)
    with pytest.raises(wk.ArgumentError, match="parameter 'a'.*dtype wk.f32, got wk.f64"):
        spec_of(arrays, wk.ndarray(wk.f64, shape=(2, 2)), b, v)
    with pytest.raises(ValueError, match="parameter 'a'.*ndim=2"):        # Quadrants raises ValueError there
        spec_of(arrays, wk.ndarray(wk.f32, shape=4), b, v)
    with pytest.raises(TypeError, match="parameter 'a'.*ndim=2"):         # and ArgumentError is a TypeError
        spec_of(arrays, wk.ndarray(wk.f32, shape=4), b, v)
    with pytest.raises(wk.ArgumentError, match="parameter 'v'.*elements of shape"):
        spec_of(arrays, np.zeros((2, 2), np.float32), b, np.zeros((5, 2), np.float32))
    with pytest.raises(wk.ArgumentError, match="parameter 'v'.*expects elements"):
        spec_of(arrays, np.zeros((2, 2), np.float32), b, wk.ndarray(wk.types.vector(2, wk.f32), shape=5))
    with pytest.raises(wk.ArgumentError, match="parameter 'b'.*field"):
        spec_of(arrays, np.zeros((2, 2), np.float32), wk.field(wk.f32, shape=3), v)
    with pytest.raises(wk.ArgumentError, match="parameter 'b'.*list"):
        spec_of(arrays, np.zeros((2, 2), np.float32), [1, 2], v)
    with pytest.raises(wk.ArgumentError, match="parameter 'b'.*not supported"):
        spec_of(arrays, np.zeros((2, 2), np.float32), np.zeros(2, np.complex64), v)


def test_stale_containers_are_rejected(fake_program):
    from wgkern.runtime import program as program_module
    a = wk.ndarray(wk.f32, shape=(2, 2), name="old")
    f = wk.field(wk.f32, shape=2, name="oldfield")
    selection_backend = type(fake_program.backend)(fake_program.backend.host_views)
    from wgkern.runtime.arch import Arch, Selection
    program_module.start(Selection(Arch.cpu, lambda _options: selection_backend, "fake 2"))
    with pytest.raises(wk.ArgumentError, match="parameter 'a'.*'old'.*wk.reset"):
        spec_of(arrays, a, np.zeros(1, np.int32), wk.ndarray(wk.types.vector(3, wk.f32), shape=1))
    with pytest.raises(wk.ArgumentError, match="parameter 'f'.*oldfield"):
        spec_of(templates, f, 1, 2)


@wk.kernel
def every_int(a: wk.i8, b: wk.i16, c: wk.i32, d: wk.i64, e: wk.u8, f: wk.u16, g: wk.u32, h: wk.u64):
    pass


INT_PARAMS = [("a", wk.i8), ("b", wk.i16), ("c", wk.i32), ("d", wk.i64), ("e", wk.u8), ("f", wk.u16),
              ("g", wk.u32), ("h", wk.u64)]


@pytest.mark.parametrize("position", range(8))
def test_integer_scalars_take_exactly_their_range(fake_program, position):
    name, dtype = INT_PARAMS[position]
    low = -(1 << (dtype.bits - 1)) if dtype.is_signed else 0
    high = (1 << (dtype.bits - 1)) - 1 if dtype.is_signed else (1 << dtype.bits) - 1
    args = [0] * 8
    for good in (low, high, np.array(high, dtype.np_dtype)[()], True):
        args[position] = good
        assert spec_of(every_int, *args).values[position] == int(good)
    for bad in (low - 1, high + 1, np.int64(low) - 1 if dtype.bits < 64 else np.uint64(2**64 - 1) if
                dtype.is_signed else np.int64(-1)):
        args[position] = bad
        with pytest.raises(wk.ArgumentError, match=rf"parameter '{name}' is {dtype!r} but got .*{int(bad)}\)?, "
                                                   rf"out of its range \({dtype!r} holds {low}..{high}\)"):
            spec_of(every_int, *args)


@wk.kernel
def int_vector_arg(v: wk.types.vector(2, wk.u8)):
    pass


def test_integer_vector_components_are_checked(fake_program):
    assert spec_of(int_vector_arg, [0, 255]).values[1:] == [0, 255]
    assert spec_of(int_vector_arg, np.array([True, False])).values[1:] == [1, 0]
    for bad, shown in (([1, 256], "256"), (np.array([-1, 2], np.int64), "-1"), ([1, 2**70], str(2**70))):
        with pytest.raises(wk.ArgumentError, match=rf"parameter 'v' has wk.u8 components but got {shown}, out of "
                                                   r"their range \(wk.u8 holds 0..255\)"):
            spec_of(int_vector_arg, bad)
    with pytest.raises(wk.ArgumentError, match="parameter 'v' has wk.u8 components but got float64 values"):
        spec_of(int_vector_arg, [1.5, 2.0])        # numpy's cast would truncate 1.5 to 1


INT_PAIR = wk.types.struct(n=wk.i16, v=wk.types.vector(2, wk.i8))


@wk.kernel
def int_struct_arg(p: INT_PAIR):
    pass


def test_integer_struct_members_are_checked(fake_program):
    assert spec_of(int_struct_arg, INT_PAIR(n=-2**15, v=[-128, 127])).values[1:] == [-2**15, -128, 127]
    with pytest.raises(wk.ArgumentError, match=r"parameter 'p.n' is wk.i16 but got 32768, out of its range"):
        spec_of(int_struct_arg, INT_PAIR(n=2**15))
    with pytest.raises(wk.ArgumentError, match=r"parameter 'p': struct .*member 'v' has wk.i8 components but got "
                                               r"128, out of their range \(wk.i8 holds -128..127\)"):
        spec_of(int_struct_arg, {"v": [0, 128]})
    with pytest.raises(wk.ArgumentError, match=r"member 'v' has wk.i8 components but got 300"):
        INT_PAIR(v=np.array([300, 0]))              # numpy's assignment would wrap 300 to 44
