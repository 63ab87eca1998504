"""`wk.frexp` (frontend/arith.py, from the bits) against numpy on every arch, and the Quadrants/Taichi hints
that change no result: `assume_in_range`, `volatile_load`, `no_activate`, `with wk.stream_parallel():`,
`@wk.kernel(fastcache=True)`, `@wk.pure`, `@wk.func(is_real_function=True)`."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk


def test_frexp_matches_numpy(arch):
    values = np.array([10.0, -3.0, 0.75, 1.0, 3e38, -1.5e-30, 1e-40, 0.0, -0.0, np.inf, -np.inf], np.float32)
    x = wk.field(wk.f32, shape=len(values))
    mantissa, exponent = wk.field(wk.f32, shape=len(values)), wk.field(wk.i32, shape=len(values))

    @wk.kernel
    def split():
        for i in x:
            m, e = wk.frexp(x[i])
            mantissa[i] = m
            exponent[i] = e

    x.from_numpy(values)
    split()
    m, e = np.frexp(values)
    normal = np.abs(values) >= np.finfo(np.float32).tiny
    normal |= values == 0
    normal |= np.isinf(values)
    # subnormal inputs are exact where the device keeps them (the CPU); a GPU may flush them to zero
    np.testing.assert_array_equal(mantissa.to_numpy()[normal], m[normal])
    np.testing.assert_array_equal(exponent.to_numpy()[normal], e[normal])
    if arch == "cpu":
        np.testing.assert_array_equal(mantissa.to_numpy(), m)
        np.testing.assert_array_equal(exponent.to_numpy(), e)
    assert wk.frexp(10.0) == (0.625, 4)


def test_frexp_of_vectors_and_f64(arch):
    @wk.kernel
    def split(v: wk.types.vector(3, wk.f32)) -> wk.types.vector(3, wk.i32):
        m, e = wk.frexp(v)
        return e

    assert np.asarray(split(np.array([8.0, 0.5, 3.0], np.float32))).tolist() == [4, 0, 2]
    try:
        probe = wk.field(wk.f64, shape=1)
    except wk.WkError:
        pytest.skip("no f64 on this device")

    @wk.kernel
    def split64():
        m, e = wk.frexp(probe[0])
        probe[0] = m + e

    probe[0] = 1e300
    split64()
    m, e = np.frexp(1e300)
    assert probe[0] == m + e


def test_hints_change_nothing(arch):
    a = wk.ndarray(wk.f32, shape=(8,))
    a.fill(1.5)
    marks = wk.field(wk.i32, shape=8)

    @wk.kernel(fastcache=True)
    def total(arr: wk.types.ndarray()) -> wk.f32:
        wk.no_activate(marks)
        s = 0.0
        for i in range(8):
            j = wk.assume_in_range(i, 0, 0, 8)
            s += wk.volatile_load(arr[j])
        for i in range(8):
            marks[i] = i
        return s        # (a kernel with wk.stream_parallel() blocks has only those: test_stream_parallel.py)

    @wk.func(is_real_function=True)
    def twice(v: wk.f32) -> wk.f32:
        return 2.0 * v

    @wk.pure
    @wk.kernel
    def doubled(v: wk.f32) -> wk.f32:
        return twice(v)

    assert total(a) == 12.0 and marks.to_numpy().tolist() == list(range(8))
    assert doubled(2.0) == 4.0
    assert wk.assume_in_range(3, 0, 0, 4) == 3 and wk.volatile_load(2.0) == 2.0
    with wk.stream_parallel():
        pass


def test_other_context_managers_and_checkpoints_are_refused(arch):
    @wk.kernel
    def bad():
        with open("f"):
            pass

    with pytest.raises(wk.CompileError, match=r"except `with wk.stream_parallel\(\):` \(it only supports "
                                              r"qd.stream_parallel\(\) and qd.graph regions\)"):
        bad()

    lock = open

    @wk.kernel
    def not_a_call():
        with lock:
            pass

    with pytest.raises(wk.CompileError, match=r"\(it requires a call expression\)"):
        not_a_call()

    # a checkpoints kernel is refused when it compiles, not when it is declared: a module that declares one and
    # never calls it still imports (as under Quadrants)
    @wk.kernel(checkpoints=True)
    def pausable():
        pass

    with pytest.raises(wk.CompileError, match="checkpoints=True"):
        pausable()
