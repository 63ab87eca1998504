"""wk.algorithms.sort (radix_sort.py), Quadrants' composable radix sort called at the top level of a kernel:
every key dtype against numpy's stable argsort, values moved with their keys, a partial end_bit, counts read
on the device (one compiled kernel for every count), and the errors of bad parameters."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from wgkern.algorithms import sort, sort_scratch_slots

DTYPES = {"u32": (wk.u32, np.uint32), "i32": (wk.i32, np.int32), "f32": (wk.f32, np.float32),
          "u64": (wk.u64, np.uint64), "i64": (wk.i64, np.int64), "f64": (wk.f64, np.float64)}


@wk.kernel
def sort_pairs(keys: wk.types.ndarray(), tmp_keys: wk.types.ndarray(), values: wk.types.ndarray(),
               tmp_values: wk.types.ndarray(), scratch: wk.types.ndarray(), n: wk.types.ndarray(),
               key_dtype: wk.template(), end_bit: wk.template(), depth: wk.template()):
    sort(keys, tmp_keys, values, tmp_values, scratch, n, key_dtype, True, end_bit, depth)


@wk.kernel
def sort_keys(keys: wk.types.ndarray(), tmp_keys: wk.types.ndarray(), scratch: wk.types.ndarray(),
              n: wk.types.ndarray(), key_dtype: wk.template(), end_bit: wk.template(), depth: wk.template()):
    sort(keys, tmp_keys, keys, tmp_keys, scratch, n, key_dtype, False, end_bit, depth)


def random_keys(np_dtype: np.dtype, size: int, rng: np.random.Generator) -> np.ndarray:
    if np.issubdtype(np_dtype, np.floating):
        keys = (rng.standard_normal(size) * 1e3).astype(np_dtype)
        keys[: size // 10] = 0.5                           # ties: the sort must keep their order
        keys[size // 10] = -0.0
        return keys
    info = np.iinfo(np_dtype)
    keys = rng.integers(info.min, info.max, size=size, dtype=np_dtype, endpoint=True)
    keys[: size // 10] = keys[size // 2]
    return keys


def containers(keys: np.ndarray, depth: int, count: int):
    dtype = DTYPES[{np.dtype(v[1]): k for k, v in DTYPES.items()}[keys.dtype]][0]
    made = {"keys": wk.ndarray(dtype, keys.size), "tmp_keys": wk.ndarray(dtype, keys.size),
            "values": wk.ndarray(wk.i32, keys.size), "tmp_values": wk.ndarray(wk.i32, keys.size),
            "scratch": wk.ndarray(wk.u32, sort_scratch_slots(keys.size, depth)), "n": wk.ndarray(wk.i32, ())}
    made["keys"].from_numpy(keys)
    made["values"].from_numpy(np.arange(keys.size, dtype=np.int32))
    made["n"][()] = count
    return made, dtype


@pytest.mark.parametrize("name", list(DTYPES))
def test_sorts_like_numpy_stable_argsort(arch, name):
    np_dtype = DTYPES[name][1]
    if arch == wk.vulkan and np_dtype in (np.float64,) and not wk.is_extension_supported(arch, wk.extension.data64):
        pytest.skip("no 64-bit types on this device")
    rng = np.random.default_rng(7)
    keys = random_keys(np.dtype(np_dtype), 1500, rng)
    count = 1300                                           # the tail past n stays as it was
    made, dtype = containers(keys, 2, count)
    sort_pairs(made["keys"], made["tmp_keys"], made["values"], made["tmp_values"], made["scratch"], made["n"],
               dtype, 8 * np.dtype(np_dtype).itemsize, 2)
    order = np.argsort(keys[:count], kind="stable")
    np.testing.assert_array_equal(made["keys"].to_numpy()[:count], keys[:count][order])
    np.testing.assert_array_equal(made["values"].to_numpy()[:count], order)
    np.testing.assert_array_equal(made["keys"].to_numpy()[count:], keys[count:])


def test_low_bits_only_and_count_read_on_the_device(arch):
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 2**32, size=700, dtype=np.uint32)
    made, dtype = containers(keys, 2, 700)
    compiles = None
    for count in (700, 1, 0, 513):                         # one compiled kernel: n is read on the device
        made["keys"].from_numpy(keys)
        made["n"][()] = count
        sort_keys(made["keys"], made["tmp_keys"], made["scratch"], made["n"], dtype, 16, 2)
        compiles = wk.stats()["kernel_compiles"] if compiles is None else compiles
        order = np.argsort(keys[:count] & 0xFFFF, kind="stable")
        np.testing.assert_array_equal(made["keys"].to_numpy()[:count], keys[:count][order])
    assert wk.stats()["kernel_compiles"] == compiles


def test_depth_one_and_scratch_sizes(arch):
    assert sort_scratch_slots(256, 1) == 256
    assert sort_scratch_slots(257, 2) == 512 + 2
    assert sort_scratch_slots(70000) == sort_scratch_slots(70000, 3)
    keys = np.arange(200, 0, -1).astype(np.int32)
    made, dtype = containers(keys, 1, 200)
    sort_keys(made["keys"], made["tmp_keys"], made["scratch"], made["n"], dtype, 32, 1)
    np.testing.assert_array_equal(made["keys"].to_numpy(), np.arange(1, 201, dtype=np.int32))


@pytest.mark.parametrize("end_bit, depth, message", [
    (8, 1, r"end_bit=8\): sort a positive multiple of 16 bits"),
    (48, 1, r"at most the 32 bits of"),
    (32, 0, r"log256_max_n=0\): give the scan depth"),
])
def test_bad_parameters(arch, end_bit, depth, message):
    made, dtype = containers(np.zeros(4, np.uint32), 1, 4)
    with pytest.raises(wk.WkError, match=message):
        sort_keys(made["keys"], made["tmp_keys"], made["scratch"], made["n"], dtype, end_bit, depth)


@wk.func
def sort_through_a_func(keys: wk.template(), tmp_keys: wk.template(), scratch: wk.template(), n: wk.template()):
    sort(keys, tmp_keys, keys, tmp_keys, scratch, n, wk.i32, False, 32, 1)


@wk.kernel
def sort_in_a_loop(keys: wk.types.ndarray(), tmp_keys: wk.types.ndarray(), scratch: wk.types.ndarray(),
                   n: wk.types.ndarray()):
    for _ in range(2):
        sort(keys, tmp_keys, keys, tmp_keys, scratch, n, wk.i32, False, 32, 1)


@wk.kernel
def sort_under_an_if(keys: wk.types.ndarray(), tmp_keys: wk.types.ndarray(), scratch: wk.types.ndarray(),
                     n: wk.types.ndarray()):
    if n[()] > 1:
        sort_through_a_func(keys, tmp_keys, scratch, n)


@wk.kernel
def sort_at_top_level_through_a_func(keys: wk.types.ndarray(), tmp_keys: wk.types.ndarray(),
                                     scratch: wk.types.ndarray(), n: wk.types.ndarray()):
    sort_through_a_func(keys, tmp_keys, scratch, n)


def test_the_sort_is_called_at_the_top_level(arch):
    keys = np.array([5, -3, 9, 0, -3, 2], np.int32)
    made, _ = containers(keys, 1, keys.size)
    arguments = (made["keys"], made["tmp_keys"], made["scratch"], made["n"])
    for kernel in (sort_in_a_loop, sort_under_an_if):
        with pytest.raises(wk.CompileError, match=r"wk\.func 'sort' must be called at the top level of a kernel"):
            kernel(*arguments)
    sort_at_top_level_through_a_func(*arguments)
    np.testing.assert_array_equal(made["keys"].to_numpy(), np.sort(keys))
