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


@pytest.mark.parametrize("key_offset, value_offset", [(-3, 0), (128, -23333)])
def test_sort_and_prefix_sum_of_fields_with_offsets(arch, key_offset, value_offset):
    # Quadrants' test_sort_with_offset: a field declared with offset=... is sorted over its own indices (the
    # kernels read from index 0, leaving the first elements unsorted and writing past the field's end)
    n = 300
    keys = wk.field(wk.f32, shape=n, offset=key_offset)
    values = wk.field(wk.i32, shape=n, offset=value_offset)
    a = np.random.default_rng(n).normal(size=n).astype(np.float32)
    keys.from_numpy(a)
    values.from_numpy(np.arange(n, dtype=np.int32))
    wk.algorithms.parallel_sort(keys, values)
    np.testing.assert_array_equal(keys.to_numpy(), np.sort(a))
    np.testing.assert_array_equal(a[values.to_numpy()], keys.to_numpy())
    x = wk.field(wk.i32, shape=n, offset=key_offset)
    b = np.random.default_rng(n + 1).integers(-5, 9, n).astype(np.int32)
    x.from_numpy(b)
    wk.algorithms.PrefixSumExecutor(n).run(x)
    np.testing.assert_array_equal(x.to_numpy(), np.cumsum(b))
    with pytest.raises(NotImplementedError, match="starts at -3|starts at 128"):
        wk.algorithms.device_reduce_add(x, out=wk.field(wk.i32, shape=1))
    with pytest.raises(NotImplementedError, match="starts at"):
        wk.algorithms.device_radix_sort(x, tmp_keys=wk.field(wk.i32, shape=n, offset=key_offset))


def test_algorithms_name_bad_arguments(arch):
    with pytest.raises(wk.WkError, match="keys must be a 1-D field"):
        wk.algorithms.parallel_sort(wk.field(wk.f32, shape=(2, 2)))
    with pytest.raises(wk.WkError, match="values has 3 elements, keys 4"):
        wk.algorithms.parallel_sort(wk.field(wk.f32, shape=4), wk.field(wk.f32, shape=3))
    with pytest.raises(wk.WkError, match="1-D field of scalars"):
        wk.algorithms.PrefixSumExecutor(4).run(wk.Vector.field(2, wk.f32, shape=4))


DEVICE_SIZES = [1, 7, 256, 257, 1025]
IDENTITIES = {"min": {"i32": 2**31 - 1, "u32": 2**32 - 1, "f32": float("inf")},
              "max": {"i32": -(2**31), "u32": 0, "f32": float("-inf")}}


def _device_input(dtype_name: str, n: int) -> np.ndarray:
    rng = np.random.default_rng(n)
    if dtype_name == "f32":
        return rng.uniform(-4.0, 4.0, size=n).astype(np.float32)
    if dtype_name == "u32":
        return rng.integers(0, 1000, size=n, dtype=np.uint32)
    return rng.integers(-1000, 1000, size=n, dtype=np.int32)


@pytest.mark.parametrize("n", DEVICE_SIZES)
@pytest.mark.parametrize("dtype_name", ["i32", "u32", "f32"])
def test_device_reduce_and_exclusive_scan(arch, dtype_name, n):
    dtype = getattr(wk, dtype_name)
    host = _device_input(dtype_name, n)
    data = wk.field(dtype, shape=n)
    data.from_numpy(host)
    total = wk.ndarray(dtype, shape=1)
    wk.algorithms.device_reduce_add(data, out=total)
    np.testing.assert_allclose(total.to_numpy()[0], host.astype(np.float64).sum(), rtol=1e-5, atol=1e-4)
    for op, reduce_np in (("min", np.minimum), ("max", np.maximum)):
        identity = IDENTITIES[op][dtype_name]
        getattr(wk.algorithms, f"device_reduce_{op}")(data, identity, out=total)
        assert total.to_numpy()[0] == reduce_np.reduce(host)
        scanned = wk.field(dtype, shape=n)
        getattr(wk.algorithms, f"device_exclusive_scan_{op}")(data, identity, out=scanned)
        expected = np.concatenate([[identity], reduce_np.accumulate(host)[:-1]]).astype(host.dtype)
        np.testing.assert_array_equal(scanned.to_numpy(), expected)
    sums = wk.ndarray(dtype, shape=n)
    wk.algorithms.device_exclusive_scan_add(data, out=sums)
    expected = np.concatenate([[0], np.cumsum(host.astype(np.float64))[:-1]])
    if dtype_name == "f32":
        np.testing.assert_allclose(sums.to_numpy(), expected, rtol=1e-4, atol=1e-3)
    else:
        np.testing.assert_array_equal(sums.to_numpy().astype(np.int64), expected.astype(np.int64))


def test_device_algorithms_check_their_arguments(arch):
    data = wk.field(wk.i32, shape=4)
    with pytest.raises(TypeError, match="out is"):
        wk.algorithms.device_reduce_add(data, out=wk.field(wk.f32, shape=1))
    with pytest.raises(NotImplementedError, match="i32, u32 and f32"):
        wk.algorithms.device_reduce_add(wk.field(wk.i64, shape=4), out=wk.field(wk.i64, shape=1))
    with pytest.raises(ValueError, match="in-place"):
        wk.algorithms.device_exclusive_scan_add(data, out=data)
    with pytest.raises(TypeError, match="shape"):
        wk.algorithms.device_exclusive_scan_add(data, out=wk.field(wk.i32, shape=8))
    with pytest.raises(TypeError):
        wk.algorithms.device_reduce_min(data, out=wk.field(wk.i32, shape=1))


@pytest.mark.parametrize("n", [1, 7, 257, 1025])
def test_device_select_packs_flagged_elements_in_order(arch, n):
    host = _device_input("f32", n)
    flags_host = (np.random.default_rng(n + 1).random(n) < 0.3).astype(np.int32)
    data = wk.field(wk.f32, shape=n)
    data.from_numpy(host)
    flags = wk.ndarray(wk.i32, shape=n)
    flags.from_numpy(flags_host)
    out = wk.field(wk.f32, shape=n)
    count = wk.field(wk.i32, shape=1)
    wk.algorithms.device_select(data, flags, out=out, num_out=count)
    expected = host[flags_host != 0]
    assert count[0] == expected.size
    np.testing.assert_array_equal(out.to_numpy()[:expected.size], expected)
    if n > 1:
        with pytest.raises(ValueError, match="needs"):
            wk.algorithms.device_select(data, flags, out=wk.field(wk.f32, shape=n - 1), num_out=count)
    with pytest.raises(TypeError, match="integers"):
        wk.algorithms.device_select(data, wk.field(wk.f32, shape=n), out=out, num_out=count)


@pytest.mark.parametrize("dtype_name,n", [("u32", 1025), ("i32", 7), ("i32", 300), ("f32", 2049)])
def test_device_radix_sort_is_stable_and_carries_values(arch, dtype_name, n):
    dtype = getattr(wk, dtype_name)
    rng = np.random.default_rng(n)
    if dtype_name == "u32":
        host = rng.integers(0, 2 ** 32, size=n, dtype=np.uint32)
    elif dtype_name == "i32":
        host = rng.integers(-50, 50, size=n, dtype=np.int32) * 40_000_000       # repeats, both signs
    else:
        host = rng.standard_normal(n).astype(np.float32) * 1e3
        host[:5] = [0.0, np.inf, -np.inf, 1e-30, -1e-30]
    keys, tmp_keys = wk.field(dtype, shape=n), wk.ndarray(dtype, shape=n)
    values, tmp_values = wk.field(wk.i32, shape=n), wk.field(wk.i32, shape=n)
    keys.from_numpy(host)
    values.from_numpy(np.arange(n, dtype=np.int32))
    wk.algorithms.device_radix_sort(keys, tmp_keys=tmp_keys, values=values, tmp_values=tmp_values)
    order = np.argsort(host, kind="stable")
    assert np.array_equal(keys.to_numpy(), host[order])
    assert np.array_equal(values.to_numpy(), order.astype(np.int32))


def test_device_radix_sort_checks_its_arguments(arch):
    keys = wk.field(wk.i32, shape=8)
    with pytest.raises(TypeError):
        wk.algorithms.device_radix_sort(keys, tmp_keys=wk.field(wk.u32, shape=8))
    with pytest.raises(TypeError):
        wk.algorithms.device_radix_sort(keys, tmp_keys=wk.field(wk.i32, shape=4))
    with pytest.raises(ValueError):
        wk.algorithms.device_radix_sort(keys, tmp_keys=keys)
    with pytest.raises(NotImplementedError):
        wk.algorithms.device_radix_sort(wk.field(wk.i64, shape=8), tmp_keys=wk.field(wk.i64, shape=8))
    with pytest.raises(ValueError):
        wk.algorithms.device_radix_sort(keys, tmp_keys=wk.field(wk.i32, shape=8), values=wk.field(wk.i32, shape=8))
    with pytest.raises(ValueError):
        wk.algorithms.device_radix_sort(keys, tmp_keys=wk.field(wk.i32, shape=8), end_bit=8)
    low = wk.field(wk.u32, shape=4)
    low.from_numpy(np.array([0x1FF, 0x100, 0x2FE, 0x001], np.uint32))
    wk.algorithms.device_radix_sort(low, tmp_keys=wk.field(wk.u32, shape=4), end_bit=16)
    assert low.to_numpy().tolist() == [0x001, 0x100, 0x1FF, 0x2FE]
