"""wgkern.algorithms (Taichi's ti.algorithms): parallel_sort and PrefixSumExecutor against numpy, every arch."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk


@pytest.mark.parametrize("n", [1, 2, 7, 100, 1000, 4097])
def test_parallel_sort_sorts_keys_and_carries_values(arch, n):
    keys, values = wk.field(wk.f32, shape=n), wk.field(wk.i32, shape=n)
    a = np.random.default_rng(n).normal(size=n).astype(np.float32)
    a[: n // 3] = a[n // 3: 2 * (n // 3)]            # repeated keys too
    keys.from_numpy(a)
    values.from_numpy(np.arange(n, dtype=np.int32))
    wk.algorithms.parallel_sort(keys, values)
    np.testing.assert_array_equal(keys.to_numpy(), np.sort(a))
    assert sorted(values.to_numpy().tolist()) == list(range(n))
    np.testing.assert_array_equal(a[values.to_numpy()], keys.to_numpy())
    ints = wk.field(wk.i32, shape=n)
    b = np.random.default_rng(n + 1).integers(-50, 50, n).astype(np.int32)
    ints.from_numpy(b)
    wk.algorithms.parallel_sort(ints)
    np.testing.assert_array_equal(ints.to_numpy(), np.sort(b))


@pytest.mark.parametrize("n", [1, 255, 256, 257, 5000])
def test_prefix_sum_is_inclusive_and_in_place(arch, n):
    x = wk.field(wk.i32, shape=n)
    b = np.random.default_rng(n).integers(-5, 9, n).astype(np.int32)
    x.from_numpy(b)
    scan = wk.algorithms.PrefixSumExecutor(n)
    scan.run(x)
    np.testing.assert_array_equal(x.to_numpy(), np.cumsum(b))
    x.from_numpy(b)
    scan.run(x)                                          # reusable
    np.testing.assert_array_equal(x.to_numpy(), np.cumsum(b))
    f = wk.field(wk.f32, shape=n)
    f.fill(0.5)
    wk.algorithms.PrefixSumExecutor(n).run(f)
    np.testing.assert_allclose(f.to_numpy(), 0.5 * np.arange(1, n + 1))


def test_algorithms_name_bad_arguments(arch):
    with pytest.raises(wk.WkError, match="keys must be a 1-D field"):
        wk.algorithms.parallel_sort(wk.field(wk.f32, shape=(2, 2)))
    with pytest.raises(wk.WkError, match="values has 3 elements, keys 4"):
        wk.algorithms.parallel_sort(wk.field(wk.f32, shape=4), wk.field(wk.f32, shape=3))
    with pytest.raises(wk.WkError, match="1-D field of scalars"):
        wk.algorithms.PrefixSumExecutor(4).run(wk.Vector.field(2, wk.f32, shape=4))
