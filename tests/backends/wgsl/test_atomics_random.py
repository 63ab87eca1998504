"""Atomics from many threads (native int, native f32 add, compare-exchange for float min/max, f64 and wrapping
narrow ints) and wk.random's exact counter-based stream, WGSL on lavapipe."""
from __future__ import annotations

import functools
import operator

import numpy as np
import pytest

from wgkern.ir import nodes as ir
from wgkern.ir.ops import AtomicOpKind
from wgkern.lang import types as T

from ._kernels import interpret, kernel, range_task, run, slot

N = 20000


def atomic_kernel(dtype: T.DataType, ops: list[AtomicOpKind], n: int = N) -> ir.OffloadedKernel:
    """acc[k] (op_k)= value(i) for every i; old[i] = the old value returned by the first op."""
    acc = slot("acc", dtype, (len(ops),))
    old = slot("old", dtype, (n,))

    def body(b, i):
        value = b.cast(b.binary(ir.BinaryOpKind.MOD, i, b.const(97, T.i32)), dtype)
        if dtype.is_float:
            value = b.mul(value, b.const(0.5, dtype))
        for k, op in enumerate(ops):
            previous = b.atomic(op, b.global_ptr(acc, [b.const(k, T.i32)]), value)
            if k == 0:
                b.global_store(b.global_ptr(old, [i]), previous)

    task = range_task("atomics", lambda b: b.const(0, T.i32), lambda b: b.const(n, T.i32), body)
    return kernel(f"atomics_{dtype.name}", [acc, old], [task])


def expected(dtype: T.DataType, ops: list[AtomicOpKind], start: np.ndarray, n: int = N) -> np.ndarray:
    values = (np.arange(n) % 97).astype(np.float64 if dtype.is_float else np.int64)
    if dtype.is_float:
        values = values * 0.5
    combine = {AtomicOpKind.ADD: lambda s: s + values.sum(), AtomicOpKind.SUB: lambda s: s - values.sum(),
               AtomicOpKind.MIN: lambda s: min(s, values.min()), AtomicOpKind.MAX: lambda s: max(s, values.max()),
               AtomicOpKind.AND: lambda s: functools.reduce(operator.and_, map(int, values), int(s)),
               AtomicOpKind.OR: lambda s: functools.reduce(operator.or_, map(int, values), int(s)),
               AtomicOpKind.XOR: lambda s: functools.reduce(operator.xor, map(int, values), int(s))}
    out = [combine[op](start[k].item()) for k, op in enumerate(ops)]
    if dtype.is_float:
        return np.array(out).astype(dtype.np_dtype)
    return np.array([T.wrap_int(int(v), dtype) for v in out], dtype=object).astype(dtype.np_dtype)


INT_OPS = [op for op in AtomicOpKind if op not in (AtomicOpKind.MUL, AtomicOpKind.EXCHANGE, AtomicOpKind.CAS)]
FLOAT_OPS = [AtomicOpKind.ADD, AtomicOpKind.SUB, AtomicOpKind.MIN, AtomicOpKind.MAX]
CASES = [(T.i32, INT_OPS), (T.u32, INT_OPS), (T.i64, INT_OPS), (T.u64, INT_OPS), (T.i8, INT_OPS),
         (T.u16, INT_OPS), (T.f32, [AtomicOpKind.ADD, AtomicOpKind.SUB]),   # native atomic<f32> where offered
         (T.f32, FLOAT_OPS), (T.f64, FLOAT_OPS)]


@pytest.mark.parametrize("dtype,ops", CASES, ids=[f"{d.name}-{len(o)}" for d, o in CASES])
def test_atomics_from_many_threads(backend, dtype: T.DataType, ops: list[AtomicOpKind]) -> None:
    k = atomic_kernel(dtype, ops)
    start = np.array([3 if op in (AtomicOpKind.ADD, AtomicOpKind.SUB, AtomicOpKind.OR, AtomicOpKind.XOR)
                      else (50 if op is AtomicOpKind.MIN else (-1 if op is AtomicOpKind.AND else 5))
                      for op in ops], dtype=object)
    start = np.array([T.wrap_int(int(v), dtype) if not dtype.is_float else float(v) for v in start],
                     dtype=object).astype(dtype.np_dtype)
    got_acc, got_old = run(backend, k, [start, np.zeros(N, dtype.np_dtype)])
    want = expected(dtype, ops, start)
    if dtype.is_float:
        np.testing.assert_allclose(got_acc, want, rtol=1e-6)
    else:
        np.testing.assert_array_equal(got_acc, want)
    # the returned old values of the first op are distinct partial results: the start value appears once
    assert np.count_nonzero(got_old == start[0]) >= 1


def test_atomic_counter_hands_out_unique_slots(backend) -> None:
    """idx = atomic_add(counter, 1); out[idx] = i  ->  out is a permutation of 0..n-1."""
    n = 50000
    counter = slot("counter", T.i32, (1,))
    out = slot("out", T.i32, (n,))

    def body(b, i):
        index = b.atomic(AtomicOpKind.ADD, b.global_ptr(counter, [b.const(0, T.i32)]), b.const(1, T.i32))
        b.global_store(b.global_ptr(out, [index]), i)

    k = kernel("counter", [counter, out], [range_task("t", lambda b: b.const(0, T.i32),
                                                      lambda b: b.const(n, T.i32), body)])
    got_counter, got_out = run(backend, k, [np.zeros(1, np.int32), np.full(n, -1, np.int32)])
    assert got_counter[0] == n
    np.testing.assert_array_equal(np.sort(got_out), np.arange(n))


def test_atomic_load_store_mix(backend) -> None:
    """Plain loads and stores of a container that is also touched atomically go through atomicLoad/Store."""
    data = slot("data", T.f32, (4,))

    def body(b, i):
        b.atomic(AtomicOpKind.MAX, b.global_ptr(data, [b.const(0, T.i32)]), b.cast(i, T.f32))
        first = b.binary(ir.BinaryOpKind.CMP_EQ, i, b.const(0, T.i32))
        branch = b.if_(first)
        with b.at(branch.then_block):
            b.global_store(b.global_ptr(data, [b.const(1, T.i32)]),
                           b.add(b.global_load(b.global_ptr(data, [b.const(2, T.i32)])), b.const(1.0, T.f32)))

    k = kernel("mix", [data], [range_task("t", lambda b: b.const(0, T.i32), lambda b: b.const(100, T.i32), body)])
    got = run(backend, k, [np.array([0, 0, 41.5, 0], np.float32)])[0]
    np.testing.assert_array_equal(got, [99, 42.5, 41.5, 0])


RANDOM_DTYPES = [T.f32, T.f64, T.f16, T.i32, T.u32, T.i8, T.u16, T.i64, T.u64, T.u1]


@pytest.mark.parametrize("dtype", RANDOM_DTYPES, ids=lambda d: d.name)
def test_random_matches_the_reference_stream(backend, dtype: T.DataType) -> None:
    n = 1000
    out = slot("out", dtype, (3, n))

    def body(b, i):
        for site in range(2):
            b.global_store(b.global_ptr(out, [b.const(site, T.i32), i]),
                           b.insert(ir.RandomValue(dtype=dtype, site=site + 5)))
        inner = b.range_for(b.const(0, T.i32), b.const(3, T.i32))     # counter advances inside loops
        with b.at(inner.body):
            b.global_store(b.global_ptr(out, [b.const(2, T.i32), i]), b.insert(ir.RandomValue(dtype=dtype, site=9)))

    k = kernel("rand", [out], [range_task("t", lambda b: b.const(0, T.i32), lambda b: b.const(n, T.i32), body)])
    arrays = [np.zeros((3, n), dtype.np_dtype)]
    want = interpret(k, arrays, launch_id=3, seed=1234)[0]
    got = run(backend, k, arrays, launch_id=3, seed=1234)[0]
    np.testing.assert_array_equal(got, want)
    if dtype.is_float:
        assert got.min() >= 0 and got.max() <= 1 and got[0].std() > 0.2


def test_float_atomic_declarations(backend) -> None:
    """add/sub alone use native atomic<f32> when the device offers it; min/max force the u32 bits CAS loop."""
    native = backend.compile(atomic_kernel(T.f32, [AtomicOpKind.ADD, AtomicOpKind.SUB])).source()
    cas = backend.compile(atomic_kernel(T.f32, FLOAT_OPS)).source()
    if "shader-float32-atomic" in backend.features:
        assert "array<atomic<f32>>" in native and "atomicAdd(&c0_acc" in native
    assert "array<atomic<u32>>" in cas and "atomicCompareExchangeWeak" in cas


def _per_thread_kernel(dtype: T.DataType, n: int, slots: int, update) -> ir.OffloadedKernel:
    """old[i] = update(b, acc[i % slots], i): acc is touched only atomically."""
    acc = slot("acc", dtype, (slots,))
    old = slot("old", dtype, (n,))

    def body(b, i):
        ptr = b.global_ptr(acc, [b.binary(ir.BinaryOpKind.MOD, i, b.const(slots, T.i32))])
        b.global_store(b.global_ptr(old, [i]), update(b, ptr, i))

    task = range_task("t", lambda b: b.const(0, T.i32), lambda b: b.const(n, T.i32), body)
    return kernel(f"per_thread_{dtype.name}", [acc, old], [task])


@pytest.mark.parametrize("dtype", [T.i32, T.u32, T.i64, T.u64, T.i8, T.f32, T.f64], ids=str)
@pytest.mark.parametrize("with_mul", [False, True], ids=["exchange", "exchange+mul"])
def test_exchange_hands_each_thread_its_predecessor(backend, dtype: T.DataType, with_mul: bool) -> None:
    """old[i] = exchange(acc, i + 1): the old values and the final value are 0..n once each. With a mul on the
    same container a float is declared as u32/u64 bits (atomicExchange on the bits), else native."""
    n = 100 if dtype == T.i8 else 20000

    def update(b, ptr, i):
        if with_mul:
            b.atomic(AtomicOpKind.MUL, ptr, b.const(1, dtype))
        return b.atomic(AtomicOpKind.EXCHANGE, ptr, b.cast(b.add(i, b.const(1, T.i32)), dtype))

    k = _per_thread_kernel(dtype, n, 1, update)
    got_acc, got_old = run(backend, k, [np.zeros(1, dtype.np_dtype), np.zeros(n, dtype.np_dtype)])
    np.testing.assert_array_equal(np.sort(np.concatenate([got_old, got_acc]).astype(np.int64)), np.arange(n + 1))
    source = backend.compile(k).source()
    assert "atomicExchange(" in source
    if dtype == T.f32 and not with_mul and "shader-float32-atomic" in backend.features:
        assert "array<atomic<f32>>" in source
    if dtype.is_float and with_mul:
        assert f"array<atomic<u{dtype.bits}>>" in source


@pytest.mark.parametrize("dtype", [T.i32, T.u32, T.i64, T.u16, T.f32, T.f64], ids=str)
def test_mul_compare_exchange_loop_returns_every_partial_product(backend, dtype: T.DataType) -> None:
    """A few threads double the element, the rest multiply by 1: the doubling threads see each power once."""
    n, doublings = 20000, 15

    def update(b, ptr, i):
        doubles = b.binary(ir.BinaryOpKind.CMP_EQ, b.binary(ir.BinaryOpKind.MOD, i, b.const(n // doublings + 1, T.i32)),
                           b.const(0, T.i32))
        return b.atomic(AtomicOpKind.MUL, ptr, b.cast(b.select(doubles, b.const(2, T.i32), b.const(1, T.i32)), dtype))

    k = _per_thread_kernel(dtype, n, 1, update)
    got_acc, got_old = run(backend, k, [np.ones(1, dtype.np_dtype), np.zeros(n, dtype.np_dtype)])
    assert got_acc[0] == 2 ** doublings
    doubling = np.arange(n) % (n // doublings + 1) == 0
    assert sorted(got_old[doubling].tolist()) == [2 ** k for k in range(doublings)]
    source = backend.compile(k).source()
    assert "(old * v)" in source and "atomicCompareExchangeWeak" in source


def test_mul_of_narrow_ints_wraps(backend) -> None:
    k = _per_thread_kernel(T.i8, 7, 1, lambda b, ptr, i: b.atomic(AtomicOpKind.MUL, ptr, b.const(3, T.i8)))
    got_acc, _ = run(backend, k, [np.ones(1, np.int8), np.zeros(7, np.int8)])
    assert got_acc[0] == np.int8(np.int64(3 ** 7).astype(np.int8))


@pytest.mark.parametrize("dtype", [T.i32, T.u32, T.i64, T.u64, T.i8, T.u1], ids=str)
def test_cas_claims_each_slot_once(backend, dtype: T.DataType) -> None:
    """old[i] = cas(acc[i % 64], 0, 1): one thread per slot sees 0; a strong CAS (a spurious failure of
    atomicCompareExchangeWeak is retried), so no slot is left unclaimed."""
    n, slots = 20000, 64
    k = _per_thread_kernel(dtype, n, slots,
                           lambda b, ptr, i: b.atomic(AtomicOpKind.CAS, ptr, b.const(1, dtype), b.const(0, dtype)))
    got_acc, got_old = run(backend, k, [np.zeros(slots, dtype.np_dtype), np.full(n, 1, dtype.np_dtype)])
    assert got_acc.astype(np.int64).tolist() == [1] * slots
    assert np.count_nonzero(got_old.astype(np.int64) == 0) == slots
    want_acc, want_old = interpret(k, [np.zeros(slots, dtype.np_dtype), np.full(n, 1, dtype.np_dtype)])
    assert np.count_nonzero(want_old.astype(np.int64) == 0) == slots and want_acc.astype(np.int64).sum() == slots
    assert "atomicCompareExchangeWeak" in backend.compile(k).source()


def test_int64_atomic_ops_name_the_missing_feature(backend) -> None:
    from wgkern.backends.wgsl.bindings import slot_element
    from wgkern.errors import UNKNOWN_LOC, CompileError
    u64 = slot("x", T.u64, (1,))
    for op in (AtomicOpKind.MUL, AtomicOpKind.EXCHANGE, AtomicOpKind.CAS):
        with pytest.raises(CompileError, match="shader-int64-atomic-all-ops"):
            slot_element(u64, ({op}, UNKNOWN_LOC), frozenset({"shader-int64"}), "test adapter")


def test_f16_atomics_on_neighbouring_halves_from_many_threads(backend) -> None:
    """f16 atomics (no 16-bit atomics in WGSL: a compare-exchange on the word holding two halves) from 20000
    threads into five neighbouring elements, so every word is fought over from both halves; sums stay exactly
    representable in f16, max/min/sub and plain stores to other elements of the same container alongside."""
    if "shader-f16" not in backend.features:
        pytest.skip("the adapter has no shader-f16")
    n = 6000
    acc = slot("acc", T.f16, (5,))
    out = slot("out", T.f16, (n,))

    def body(b, i):
        k = b.binary(ir.BinaryOpKind.MOD, i, b.const(5, T.i32))
        small = b.cast(b.binary(ir.BinaryOpKind.MOD, i, b.const(3, T.i32)), T.f16)      # 0, 1 or 2
        op = [AtomicOpKind.ADD, AtomicOpKind.SUB, AtomicOpKind.MAX, AtomicOpKind.MIN, AtomicOpKind.EXCHANGE]
        # element k gets op[k]: the five ops land on the two halves of the same words
        for slot_k, atomic_op in enumerate(op):
            guard = b.if_(b.binary(ir.BinaryOpKind.CMP_EQ, k, b.const(slot_k, T.i32)))
            with b.at(guard.then_block):
                value = b.cast(b.binary(ir.BinaryOpKind.MOD, i, b.const(1000, T.i32)), T.f16) \
                    if atomic_op in (AtomicOpKind.MAX, AtomicOpKind.MIN) else \
                    (b.const(7.0, T.f16) if atomic_op is AtomicOpKind.EXCHANGE else small)
                b.atomic(atomic_op, b.global_ptr(acc, [b.const(slot_k, T.i32)]), value)
        b.global_store(b.global_ptr(out, [i]), small)

    k = kernel("f16_atomics", [acc, out], [range_task("t", lambda b: b.const(0, T.i32),
                                                       lambda b: b.const(n, T.i32), body)])
    start = np.array([1.0, 2000.0, -5.0, 5000.0, 0.0], np.float16)
    got_acc, got_out = run(backend, k, [start, np.zeros(n, np.float16)])
    idx = np.arange(n)
    smalls = (idx % 3).astype(np.float64)
    want = [1.0 + smalls[idx % 5 == 0].sum(), 2000.0 - smalls[idx % 5 == 1].sum(),
            max(-5.0, (idx[idx % 5 == 2] % 1000).max()), min(5000.0, (idx[idx % 5 == 3] % 1000).min()), 7.0]
    assert max(abs(w) for w in want) < 2048         # every partial sum is an integer f16 holds exactly
    np.testing.assert_array_equal(got_acc, np.array(want, np.float16))
    np.testing.assert_array_equal(got_out, smalls.astype(np.float16))
