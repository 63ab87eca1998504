"""Atomics from many threads (exact counts, old values returned) and counter-based random numbers
(bit-exact wk_hash of docs/internals.md, [0, 1) range, determinism per (seed, launch_id))."""
from __future__ import annotations

import numpy as np
import pytest

from wgkern.ir import nodes as ir
from wgkern.ir.ops import AtomicOpKind as A
from wgkern.ir.ops import BinaryOpKind as B
from wgkern.lang import types as T

from ._kernels import const, ndarray_args, ndarray_slot, range_task, run, serial_task, shape_of

N = 1 << 18


def atomic_kernel(op: A, dtype: T.DataType, value_of=lambda b, i, dtype: b.const(1, dtype)):
    """acc[0] op= value(i) for every i; old[i] = the value acc held before."""
    acc = ndarray_slot("acc", dtype, 1, 0)
    old = ndarray_slot("old", dtype, 1, 1)

    def body(b, i):
        previous = b.atomic(op, b.global_ptr(acc, [b.const(0, T.i32)]), value_of(b, i, dtype))
        b.global_store(b.global_ptr(old, [i]), previous)

    return ir.OffloadedKernel("atomic", ndarray_args([acc, old]), [acc, old],
                              [range_task(const(0), shape_of(old), body)])


@pytest.mark.parametrize("dtype", [T.i32, T.u32, T.i64, T.u64, T.f32, T.f64], ids=str)
def test_atomic_add_counts_exact_and_old_values_unique(backend, dtype: T.DataType) -> None:
    acc, old = run(backend, backend.compile(atomic_kernel(A.ADD, dtype)), [np.zeros(1), np.zeros(N)])
    assert acc[0] == N
    np.testing.assert_array_equal(np.sort(old), np.arange(N))


@pytest.mark.parametrize("dtype", [T.i32, T.f32, T.f16, T.i8], ids=str)
def test_atomic_sub(backend, dtype: T.DataType) -> None:
    n = 1000
    acc, _ = run(backend, backend.compile(atomic_kernel(A.SUB, dtype)), [np.full(1, 100), np.zeros(n)])
    assert acc[0] == (T.wrap_int(100 - n, dtype) if dtype.is_int else 100 - n)


@pytest.mark.parametrize("dtype", [T.i32, T.u16, T.i64, T.f32, T.f64], ids=str)
def test_atomic_min_max(backend, dtype: T.DataType) -> None:
    scramble = lambda b, i, dtype: b.cast(b.binary(B.MOD, b.mul(i, b.const(7919, T.i32)),  # noqa: E731
                                                   b.const(10007, T.i32)), dtype)
    values = (np.arange(N) * 7919) % 10007
    acc, _ = run(backend, backend.compile(atomic_kernel(A.MAX, dtype, scramble)), [np.zeros(1), np.zeros(N)])
    assert acc[0] == values.max()
    acc, _ = run(backend, backend.compile(atomic_kernel(A.MIN, dtype, scramble)), [np.full(1, 99999), np.zeros(N)])
    assert acc[0] == values.min()


@pytest.mark.parametrize("op", [A.AND, A.OR, A.XOR], ids=lambda o: o.value)
def test_atomic_bitwise(backend, op: A) -> None:
    bit_of = lambda b, i, dtype: b.binary(B.SHL, b.const(1, dtype), b.cast(  # noqa: E731
        b.binary(B.MOD, i, b.const(32, T.i32)), dtype))
    start = {A.AND: 0xFFFFFFFF, A.OR: 0, A.XOR: 0}[op]
    acc, _ = run(backend, backend.compile(atomic_kernel(op, T.u32, bit_of)), [np.full(1, start), np.zeros(N)])
    assert acc[0] == {A.AND: 0, A.OR: 0xFFFFFFFF, A.XOR: 0}[op]    # N is a multiple of 64


def test_atomic_float_add_many_threads_into_histogram(backend) -> None:
    bins = ndarray_slot("bins", T.f32, 1, 0)
    data = ndarray_slot("data", T.i32, 1, 1)

    def body(b, i):
        target = b.global_load(b.global_ptr(data, [i]))
        b.atomic(A.ADD, b.global_ptr(bins, [target]), b.const(0.5, T.f32))

    kernel = ir.OffloadedKernel("hist", ndarray_args([bins, data]), [bins, data],
                                [range_task(const(0), shape_of(data), body)])
    values = np.random.default_rng(0).integers(0, 16, 1 << 20).astype(np.int32)
    got = run(backend, backend.compile(kernel), [np.zeros(16, np.float32), values])[0]
    np.testing.assert_array_equal(got, np.bincount(values, minlength=16) * 0.5)


# ---- random numbers ----------------------------------------------------------------------------------------

def mix(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x7FEB352D) & 0xFFFFFFFF
    h ^= h >> 15
    h = (h * 0x846CA68B) & 0xFFFFFFFF
    return h ^ (h >> 16)


def wk_hash(a: int, b: int, c: int, d: int) -> int:
    return mix(mix(mix(mix(a) ^ b) ^ c) ^ d)


def random_kernel(dtype: T.DataType, draws: int = 2, site: int = 3):
    out = ndarray_slot("out", dtype, 2, 0)

    def body(b, i):
        for k in range(draws):
            value = b.insert(ir.RandomValue(dtype=dtype, site=site))
            b.global_store(b.global_ptr(out, [i, b.const(k, T.i32)]), value)

    return ir.OffloadedKernel("rand", ndarray_args([out]), [out], [range_task(const(0), shape_of(out), body)])


def test_random_bits_match_wk_hash(backend) -> None:
    n, draws, site, seed, launch = 1000, 3, 5, 1234, 77
    got = run(backend, backend.compile(random_kernel(T.u32, draws, site)), [np.zeros((n, draws), np.uint32)],
              launch_id=launch, seed=seed)[0]
    expected = [[wk_hash(seed, launch, i, (site << 20) ^ k) for k in range(draws)] for i in range(n)]
    np.testing.assert_array_equal(got, np.array(expected, np.uint32))


@pytest.mark.parametrize("dtype", [T.f16, T.f32, T.f64], ids=str)
def test_random_floats_in_unit_interval_and_deterministic(backend, dtype: T.DataType) -> None:
    compiled = backend.compile(random_kernel(dtype))
    shape = (1 << 16, 2)
    first = run(backend, compiled, [np.zeros(shape)], launch_id=3, seed=9)[0]
    again = run(backend, compiled, [np.zeros(shape)], launch_id=3, seed=9)[0]
    other = run(backend, compiled, [np.zeros(shape)], launch_id=4, seed=9)[0]
    assert first.min() >= 0 and first.max() < 1
    assert abs(float(first.astype(np.float64).mean()) - 0.5) < 0.01
    np.testing.assert_array_equal(first, again)
    assert (first != other).mean() > 0.5
    if dtype != T.f16:
        bits = np.array([[wk_hash(9, 3, i, (3 << 20) ^ k) for k in range(2)] for i in range(8)], np.uint64)
        np.testing.assert_array_equal(first[:8], ((bits >> 8) * 2.0 ** -24).astype(dtype.np_dtype))


def test_random_in_serial_task_and_loop(backend) -> None:
    """Serial task: thread 0, the counter advances per evaluation inside a loop."""
    out = ndarray_slot("out", T.i32, 1, 0)

    def body(b):
        loop = b.range_for(b.const(0, T.i32), b.const(5, T.i32))
        with b.at(loop.body):
            b.global_store(b.global_ptr(out, [b.loop_index(loop)]), b.insert(ir.RandomValue(dtype=T.i32, site=1)))

    kernel = ir.OffloadedKernel("rs", ndarray_args([out]), [out], [serial_task(body)])
    got = run(backend, backend.compile(kernel), [np.zeros(5, np.int32)], launch_id=2, seed=1)[0]
    expected = [T.wrap_int(wk_hash(1, 2, 0, (1 << 20) ^ k), T.i32) for k in range(5)]
    assert got.tolist() == expected


def test_atomic_f16_min_max_and_nan_operands(backend) -> None:
    """Float atomic min/max ignore a NaN operand (as BinaryOp MIN/MAX and Taichi's ti.atomic_min/max)."""
    scramble = lambda b, i, dtype: b.cast(b.binary(B.MOD, i, b.const(1000, T.i32)), dtype)  # noqa: E731
    acc, _ = run(backend, backend.compile(atomic_kernel(A.MAX, T.f16, scramble)), [np.zeros(1), np.zeros(4096)])
    assert acc[0] == 999
    acc, _ = run(backend, backend.compile(atomic_kernel(A.MIN, T.f32, scramble)), [np.full(1, np.nan),
                                                                                    np.zeros(64)])
    assert acc[0] == 0.0


@pytest.mark.parametrize("dtype", [T.i32, T.u32, T.i64, T.u64, T.f32, T.f64], ids=str)
def test_atomic_exchange_hands_each_thread_its_predecessor(backend, dtype: T.DataType) -> None:
    """old[i] = exchange(acc, i + 1): the old values and the final value are 0..N, each exactly once."""
    plus_one = lambda b, i, dtype: b.cast(b.add(i, b.const(1, T.i32)), dtype)  # noqa: E731
    compiled = backend.compile(atomic_kernel(A.EXCHANGE, dtype, plus_one))
    acc, old = run(backend, compiled, [np.zeros(1), np.zeros(N)])
    np.testing.assert_array_equal(np.sort(np.concatenate([old, acc])), np.arange(N + 1))
    assert "atomicrmw xchg" in compiled.source()


@pytest.mark.parametrize("dtype", [T.i32, T.u32, T.i64, T.f32, T.f64], ids=str)
def test_atomic_mul_cmpxchg_loop_returns_every_partial_product(backend, dtype: T.DataType) -> None:
    """30 of the N threads multiply by 2, the rest by 1: the doubling threads see each power 2^0..2^29 once."""
    def factor(b, i, dtype):
        every = b.binary(B.MOD, i, b.const(N // 30 + 1, T.i32))
        doubles = b.binary(B.CMP_EQ, every, b.const(0, T.i32))
        return b.cast(b.select(doubles, b.const(2, T.i32), b.const(1, T.i32)), dtype)

    compiled = backend.compile(atomic_kernel(A.MUL, dtype, factor))
    acc, old = run(backend, compiled, [np.ones(1), np.zeros(N)])
    assert acc[0] == 2 ** 30
    doubling = np.arange(N) % (N // 30 + 1) == 0
    assert sorted(old[doubling].tolist()) == [2 ** k for k in range(30)]
    assert set(old.tolist()) <= {2 ** k for k in range(31)}
    assert "cmpxchg" in compiled.source()


@pytest.mark.parametrize("dtype", [T.i32, T.u32, T.i64, T.u64, T.u1], ids=str)
def test_atomic_cas_claims_each_slot_once(backend, dtype: T.DataType) -> None:
    """old[i] = cas(acc[i % 64], 0, 1): exactly one thread per slot sees 0 (the one that stored the 1)."""
    slots = 64
    acc = ndarray_slot("acc", dtype, 1, 0)
    old = ndarray_slot("old", dtype, 1, 1)

    def body(b, i):
        ptr = b.global_ptr(acc, [b.binary(B.MOD, i, b.const(slots, T.i32))])
        b.global_store(b.global_ptr(old, [i]), b.atomic(A.CAS, ptr, b.const(1, dtype), b.const(0, dtype)))

    kernel = ir.OffloadedKernel("cas", ndarray_args([acc, old]), [acc, old],
                                [range_task(const(0), shape_of(old), body)])
    compiled = backend.compile(kernel)
    got_acc, got_old = run(backend, compiled, [np.zeros(slots), np.full(N, 7)])
    assert got_acc.tolist() == [1] * slots
    assert np.count_nonzero(got_old == 0) == slots and np.count_nonzero(got_old == 1) == N - slots
    assert "cmpxchg" in compiled.source()
