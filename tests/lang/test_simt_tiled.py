"""Quadrants 1.3's subgroup names on the arches with simt (`gpu`: Vulkan through lavapipe here, CUDA under
WK_ARCH=cuda): `ballot`, the `*_tiled` reductions, scans and votes, and `segmented_reduce_*_tiled`, each against a
numpy model of groups of 2**log2_size consecutive invocations; and the same program's output on Quadrants."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from tests.quadrants_compare import run_program

N = 64


def groups(values: np.ndarray, size: int) -> np.ndarray:
    return values.reshape(-1, size)


def segmented(values: np.ndarray, heads: np.ndarray, size: int, combine) -> np.ndarray:
    out = values.copy()
    for k in range(len(values)):
        if k % size and not heads[k]:
            out[k] = combine(out[k - 1], values[k])
    return out


def inputs():
    rng = np.random.default_rng(7)
    values = rng.integers(-50, 50, N).astype(np.int32)
    heads = (rng.random(N) < 0.3).astype(np.int32)
    return values, heads


def test_tiled_reductions_scans_votes_and_ballot(gpu):
    values, heads = inputs()
    x = wk.field(wk.i32, shape=N)
    head = wk.field(wk.i32, shape=N)
    out = wk.field(wk.i32, shape=(N, 10))
    ballots = wk.field(wk.u64, shape=N)
    size_field = wk.field(wk.i32, shape=())

    @wk.kernel
    def k():
        wk.loop_config(block_dim=32)
        for i in range(N):
            v = x[i]
            out[i, 0] = wk.simt.subgroup.reduce_all_add_tiled(v, 2)
            out[i, 1] = wk.simt.subgroup.reduce_add_tiled(v, 2)
            out[i, 2] = wk.simt.subgroup.reduce_all_min_tiled(v, 3)
            out[i, 3] = wk.simt.subgroup.exclusive_min_tiled(v, 3)
            out[i, 4] = wk.simt.subgroup.exclusive_max_tiled(v, 1)
            out[i, 5] = wk.simt.subgroup.inclusive_xor_tiled(v, 3)
            out[i, 6] = wk.simt.subgroup.segmented_reduce_add_tiled(v, head[i], 3)
            out[i, 7] = wk.simt.subgroup.segmented_reduce_max_tiled(v, head_flag=head[i], log2_size=2)
            out[i, 8] = wk.simt.subgroup.any_true_tiled(predicate=v > 40, log2_size=3)
            out[i, 9] = wk.simt.subgroup.all_equal_tiled(v // 100, 2)
            ballots[i] = wk.simt.subgroup.ballot(v % 3 == 0)
            size_field[None] = wk.simt.subgroup.group_size()

    x.from_numpy(values)
    head.from_numpy(heads)
    k()
    got = out.to_numpy()
    subgroup = int(size_field[None])
    assert subgroup >= 8                   # the checks below use groups of up to 8 invocations

    def per_group(size, reduce):
        return np.repeat(reduce(groups(values, size), axis=1), size)

    np.testing.assert_array_equal(got[:, 0], per_group(4, np.sum))
    np.testing.assert_array_equal(got[::4, 1], groups(values, 4).sum(axis=1))       # valid on each group's first
    np.testing.assert_array_equal(got[:, 2], per_group(8, np.min))
    lanes8 = np.arange(N) % 8
    running_min = np.minimum.accumulate(groups(values, 8), axis=1).ravel()
    np.testing.assert_array_equal(got[:, 3], np.where(lanes8 == 0, 2**31 - 1, np.roll(running_min, 1)))
    np.testing.assert_array_equal(got[:, 4], np.where(np.arange(N) % 2 == 0, -2**31, np.roll(values, 1)))
    np.testing.assert_array_equal(got[:, 5], np.bitwise_xor.accumulate(groups(values, 8), axis=1).ravel())
    np.testing.assert_array_equal(got[:, 6], segmented(values, heads, 8, np.add))
    np.testing.assert_array_equal(got[:, 7], segmented(values, heads, 4, np.maximum))
    np.testing.assert_array_equal(got[:, 8], per_group(8, lambda g, axis: np.any(g > 40, axis=axis)))
    np.testing.assert_array_equal(got[:, 9], per_group(4, lambda g, axis: np.all(g // 100 == g[:, :1] // 100,
                                                                                 axis=axis)))
    bits = (values % 3 == 0).reshape(-1, subgroup)
    expected = [sum(1 << lane for lane in range(subgroup) if row[lane]) for row in bits]
    assert ballots.to_numpy().tolist() == list(np.repeat(expected, subgroup))


def test_tiled_float_scans_take_infinite_identities(gpu):
    values = np.linspace(-4.0, 4.0, N).astype(np.float32)[::-1].copy()
    heads = (np.arange(N) % 5 == 0).astype(np.int32)
    x = wk.field(wk.f32, shape=N)
    head = wk.field(wk.i32, shape=N)
    out = wk.field(wk.f32, shape=(N, 3))

    @wk.kernel
    def k():
        for i in range(N):
            out[i, 0] = wk.simt.subgroup.exclusive_max_tiled(x[i], 2)
            out[i, 1] = wk.simt.subgroup.exclusive_min_tiled(x[i], 2)
            out[i, 2] = wk.simt.subgroup.segmented_reduce_min_tiled(x[i], head[i], 3)

    x.from_numpy(values)
    head.from_numpy(heads)
    k()
    got = out.to_numpy()
    first = np.arange(N) % 4 == 0
    running_max = np.maximum.accumulate(groups(values, 4), axis=1).ravel()
    running_min = np.minimum.accumulate(groups(values, 4), axis=1).ravel()
    np.testing.assert_array_equal(got[:, 0], np.where(first, -np.inf, np.roll(running_max, 1)))
    np.testing.assert_array_equal(got[:, 1], np.where(first, np.inf, np.roll(running_min, 1)))
    np.testing.assert_array_equal(got[:, 2], segmented(values, heads, 8, np.minimum))


def test_tiled_errors_name_the_call(gpu):
    x = wk.field(wk.i32, shape=N)

    @wk.kernel
    def runtime_size(s: wk.i32):
        for i in range(N):
            x[i] = wk.simt.subgroup.reduce_all_add_tiled(x[i], s)

    @wk.kernel
    def missing_flag():
        for i in range(N):
            x[i] = wk.simt.subgroup.segmented_reduce_add_tiled(x[i], 3)

    with pytest.raises(wk.CompileError, match=r"reduce_all_add_tiled\(\): log2_size must be a compile-time int"):
        runtime_size(2)
    with pytest.raises(wk.CompileError, match=r"segmented_reduce_add_tiled\(\) takes \(value, head_flag, log2_size\)"):
        missing_flag()


def test_the_cpu_refuses_them_by_name(arch):
    if arch != wk.cpu:
        pytest.skip("the CPU's refusal")
    x = wk.field(wk.i32, shape=4)

    @wk.kernel
    def k():
        for i in range(4):
            x[i] = wk.simt.subgroup.reduce_all_add_tiled(x[i], 1)

    with pytest.raises(wk.CompileError, match="subgroup"):
        k()


PROGRAM = """
import numpy as np
import {module} as qd
qd.init(arch=qd.vulkan)
n = 64
rng = np.random.default_rng(3)
x = qd.field(qd.i32, shape=n)
head = qd.field(qd.i32, shape=n)
out = qd.field(qd.i32, shape=(n, 6))
bal = qd.field(qd.u64, shape=n)
x.from_numpy(rng.integers(-20, 20, n).astype(np.int32))
head.from_numpy((rng.random(n) < 0.3).astype(np.int32))

@qd.kernel
def k():
    qd.loop_config(block_dim=32)
    for i in range(n):
        v = x[i]
        out[i, 0] = qd.simt.subgroup.reduce_all_max_tiled(v, 3)
        out[i, 1] = qd.simt.subgroup.inclusive_add_tiled(v, 2)
        out[i, 2] = qd.simt.subgroup.exclusive_add_tiled(v, 3)
        out[i, 3] = qd.simt.subgroup.segmented_reduce_add_tiled(v, head[i], 3)
        out[i, 4] = qd.simt.subgroup.segmented_reduce_min_tiled(v, head[i], 2)
        out[i, 5] = qd.simt.subgroup.all_true_tiled(qd.cast(v > -15, qd.i32), 2)
        bal[i] = qd.simt.subgroup.ballot(qd.cast(v > 0, qd.i32))

k()
print(out.to_numpy().tolist())
print(bal.to_numpy().tolist())
"""


def test_same_program_as_quadrants_on_vulkan(gpu, tmp_path):
    if gpu != wk.vulkan:
        pytest.skip("Quadrants runs this program on Vulkan")
    pytest.importorskip("quadrants")
    assert run_program(tmp_path, PROGRAM, "wgkern") == run_program(tmp_path, PROGRAM, "quadrants")
