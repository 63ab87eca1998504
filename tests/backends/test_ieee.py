"""IEEE float results on every arch (backends/wgsl/exact.py for the WGSL drivers' algebra): infinities and NaNs
propagate through `a - a`, `a * 0` and the like as on Taichi's CPU backend, with fast math on or off; with
`fast_math=False` constants are not reassociated either, so finite results round as numpy's do."""
from __future__ import annotations

import math

import numpy as np
import pytest

import wgkern as wk

INF, NAN = math.inf, math.nan


def _run(arch, fast_math: bool, dtype, a: float, b: float) -> tuple[np.ndarray, np.ndarray]:
    wk.init(arch=arch, fast_math=fast_math)
    out = wk.field(dtype, shape=13)
    flags = wk.field(wk.i32, shape=4)
    stored = wk.field(dtype, shape=2)

    @wk.kernel
    def ops(a: dtype, b: dtype, zero: dtype):
        out[0] = wk.cast(a - a, dtype)          # a kernel argument (dtype named: a closure cell for the annotations)
        out[1] = stored[0] - stored[0]          # a field value
        out[2] = a + (-a)
        out[3] = a * 0.0
        out[4] = 0.0 * stored[0]
        out[5] = a * zero                       # inf * 0 with the zero known only at run time
        out[6] = a - b                          # inf - inf
        out[7] = zero / zero                    # 0 / 0
        out[8] = wk.min(a, 1.0)                 # Taichi's min/max ignore a NaN operand
        out[9] = wk.max(stored[1], 1.0)
        out[10] = a * b - b * a
        out[11] = (b + a) - a                   # 1 + inf - inf
        out[12] = (-a) * 0.0
        flags[0] = wk.cast(a == a, wk.i32)
        flags[1] = wk.cast(a != a, wk.i32)
        flags[2] = wk.cast(stored[1] == stored[1], wk.i32)
        flags[3] = wk.cast(stored[1] != stored[1], wk.i32)

    stored.from_numpy(np.array([a, a], dtype.np_dtype))
    ops(a, b, 0.0)
    return out.to_numpy(), flags.to_numpy()


def _expected(a: float, b: float, np_type) -> tuple[list[float], list[int]]:
    a, b, zero, one = np_type(a), np_type(b), np_type(0.0), np_type(1.0)
    with np.errstate(all="ignore"):
        values = [a - a, a - a, a + (-a), a * zero, zero * a, a * zero, a - b, zero / zero, np.fmin(a, one),
                  np.fmax(a, one), a * b - b * a, (b + a) - a, (-a) * zero]
    same = int(a == a)
    return values, [same, 1 - same, same, 1 - same]


@pytest.mark.parametrize("fast_math", [False, True], ids=["exact", "fast_math"])
@pytest.mark.parametrize("a, b", [(INF, 1.0), (-INF, INF), (NAN, 2.0), (3.0, INF), (-2.5, 0.5)])
def test_infinities_and_nans_propagate(arch, fast_math, a, b):
    values, flags = _run(arch, fast_math, wk.f32, a, b)
    expected, expected_flags = _expected(a, b, np.float32)
    if fast_math:      # fast math may reassociate (b + a) - a into b (LLVM on the CPU does)
        values, expected = np.delete(values, 11), np.delete(np.array(expected, np.float32), 11)
    # bit for bit, but any NaN for a NaN (payloads are not specified): the signs of zeros count
    np.testing.assert_array_equal(np.signbit(values) | np.isnan(values), np.signbit(expected) | np.isnan(expected))
    np.testing.assert_array_equal(values, np.array(expected, np.float32))
    assert flags.tolist() == expected_flags


def test_f64_infinities_and_nans_propagate(arch):
    values, flags = _run(arch, False, wk.f64, INF, 1.0)
    expected, expected_flags = _expected(INF, 1.0, np.float64)
    np.testing.assert_array_equal(values, np.array(expected, np.float64))
    assert flags.tolist() == expected_flags


def test_exact_floats_round_each_operation_as_written(arch):
    """fast_math=False: no constant reassociation or cancellation of the driver's own; each result is numpy's
    f32 result of the same operations in the same order (bit for bit: every one is correctly rounded)."""
    wk.init(arch=arch, fast_math=False)
    x = wk.field(wk.f32, shape=64)
    out = wk.field(wk.f32, shape=(4, 64))

    @wk.kernel
    def sums():
        for i in x:
            out[0, i] = (x[i] + 0.1) + 0.7
            out[1, i] = (x[i] * 3.1) * 0.7
            out[2, i] = (x[i] + 1.0) - 1.0
            out[3, i] = x[i] + 0.0

    host = np.random.default_rng(1).uniform(-1, 1, 64).astype(np.float32)
    host[:3] = [1e-8, -0.0, 2.0 ** -24]
    x.from_numpy(host)
    sums()
    f = np.float32
    expected = np.stack([(host + f(0.1)) + f(0.7), (host * f(3.1)) * f(0.7), (host + f(1.0)) - f(1.0),
                         host + f(0.0)])
    result = out.to_numpy()
    np.testing.assert_array_equal(result, expected)
    assert not np.signbit(result[3, 1])              # -0.0 + 0.0 is +0.0
