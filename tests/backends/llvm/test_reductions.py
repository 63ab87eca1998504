"""Chunk-local reductions (backends/reductions.py): which atomics qualify, exact results for every op
from many workers, and one atomic per chunk in the generated code."""
from __future__ import annotations

import re

import numpy as np
import pytest

from wgkern.backends.reductions import chunk_reductions, identity
from wgkern.ir import nodes as ir
from wgkern.ir.ops import AtomicOpKind as A
from wgkern.ir.ops import BinaryOpKind as B
from wgkern.lang import types as T

from ._kernels import const, ndarray_args, ndarray_slot, range_task, run, shape_of

N = 1 << 18


def reduce_kernel(op: A, dtype: T.DataType, value_of, slots: int = 1, also=None) -> ir.OffloadedKernel:
    """acc[i % slots] op= value_of(i) with constant indices (one atomic per slot), the results unused."""
    acc = ndarray_slot("acc", dtype, 1, 0)
    src = ndarray_slot("src", T.i32, 1, 1)

    def body(b, i):
        value = value_of(b, i, dtype)
        for k in range(slots):
            b.atomic(op, b.global_ptr(acc, [b.const(k, T.i32)]), value)
        if also is not None:
            also(b, i, acc)

    return ir.OffloadedKernel("reduce", ndarray_args([acc, src]), [acc, src],
                              [range_task(const(0), shape_of(src), body)])


def scrambled(b, i, dtype):
    return b.cast(b.binary(B.MOD, b.mul(i, b.const(7919, T.i32)), b.const(10007, T.i32)), dtype)


VALUES = (np.arange(N) * 7919) % 10007


def test_constant_address_atomics_with_unused_results_become_chunk_registers() -> None:
    kernel = reduce_kernel(A.ADD, T.f32, scrambled, slots=2)
    plan = chunk_reductions(kernel.tasks[0])
    assert len(plan) == 2 and len(set(map(id, plan.values()))) == 2


def test_a_container_read_in_the_same_task_keeps_its_atomics() -> None:
    read_back = lambda b, i, acc: b.global_load(b.global_ptr(acc, [b.const(0, T.i32)]))  # noqa: E731
    assert chunk_reductions(reduce_kernel(A.ADD, T.f32, scrambled, also=read_back).tasks[0]) == {}


def test_per_index_addresses_and_used_results_keep_their_atomics() -> None:
    acc = ndarray_slot("acc", T.i32, 1, 0)

    def body(b, i):
        b.atomic(A.ADD, b.global_ptr(acc, [b.binary(B.MOD, i, b.const(4, T.i32))]), b.const(1, T.i32))
    per_index = range_task(const(0), const(16), body)
    assert chunk_reductions(per_index) == {}

    def used(b, i):
        old = b.atomic(A.ADD, b.global_ptr(acc, [b.const(0, T.i32)]), b.const(1, T.i32))
        b.global_store(b.global_ptr(acc, [b.const(1, T.i32)]), old)
    assert chunk_reductions(range_task(const(0), const(16), used)) == {}


@pytest.mark.parametrize("dtype", [T.i32, T.u32, T.i64, T.f32, T.f64], ids=str)
def test_sums_are_exact_from_many_workers(backend, dtype: T.DataType) -> None:
    small = lambda b, i, dtype: b.cast(b.binary(B.MOD, i, b.const(3, T.i32)), dtype)  # noqa: E731
    acc, _ = run(backend, backend.compile(reduce_kernel(A.ADD, dtype, small, slots=2)),
                 [np.full(2, 5), np.zeros(N)])
    # exact in every dtype: all partial sums are integers below 2^24
    assert list(acc) == [5 + (np.arange(N) % 3).sum()] * 2


@pytest.mark.parametrize("dtype", [T.i32, T.f32], ids=str)
def test_sub_min_max(backend, dtype: T.DataType) -> None:
    small = lambda b, i, dtype: b.cast(b.binary(B.MOD, i, b.const(3, T.i32)), dtype)  # noqa: E731
    acc, _ = run(backend, backend.compile(reduce_kernel(A.SUB, dtype, small)), [np.full(1, 7), np.zeros(N)])
    assert acc[0] == 7 - (np.arange(N) % 3).sum()
    acc, _ = run(backend, backend.compile(reduce_kernel(A.MAX, dtype, scrambled)), [np.full(1, -3), np.zeros(N)])
    assert acc[0] == VALUES.max()
    acc, _ = run(backend, backend.compile(reduce_kernel(A.MIN, dtype, scrambled)), [np.full(1, 99999), np.zeros(N)])
    assert acc[0] == VALUES.min()
    acc, _ = run(backend, backend.compile(reduce_kernel(A.MIN, dtype, scrambled)), [np.full(1, -1), np.zeros(N)])
    assert acc[0] == -1      # the register's identity never leaks into the result


@pytest.mark.parametrize("op", [A.AND, A.OR, A.XOR], ids=lambda o: o.value)
def test_bitwise(backend, op: A) -> None:
    bit_of = lambda b, i, dtype: b.binary(B.SHL, b.const(1, dtype), b.cast(  # noqa: E731
        b.binary(B.MOD, i, b.const(31, T.i32)), dtype))
    start = {A.AND: 0x7FFF_FFFF, A.OR: 0, A.XOR: 0}[op]
    n = 31 * 1000 + 5                       # bits 0..4 toggled once more than the others
    acc, _ = run(backend, backend.compile(reduce_kernel(op, T.u32, bit_of)), [np.full(1, start), np.zeros(n)])
    bits = np.uint32(1) << (np.arange(n) % 31).astype(np.uint32)
    expected = {A.AND: np.bitwise_and.reduce(bits) & start, A.OR: np.bitwise_or.reduce(bits),
                A.XOR: np.bitwise_xor.reduce(bits)}[op]
    assert acc[0] == expected


def test_identities() -> None:
    assert identity(A.ADD, T.f32) == 0 and identity(A.AND, T.u8) == 0xFF and identity(A.AND, T.i32) == -1
    assert identity(A.MIN, T.i16) == 32767 and identity(A.MAX, T.u32) == 0
    assert identity(A.MAX, T.f64) == float("-inf")


def test_one_atomic_per_chunk_in_the_generated_code(backend) -> None:
    compiled = backend.compile(reduce_kernel(A.ADD, T.f32, scrambled))
    task = next(line for line in compiled.source().split("\ndefine") if "%lo" in line.splitlines()[0])
    assert len(re.findall(r"\batomicrmw\b", task)) == 1
    exit_block = task[task.index("\nexit:"):]
    assert "atomicrmw fadd" in exit_block


@pytest.mark.parametrize("dtype", [T.i32, T.u64, T.f32, T.f64], ids=str)
def test_products_from_many_workers(backend, dtype: T.DataType) -> None:
    """atomic_mul has no atomicrmw: each chunk multiplies in its register and flushes through one cmpxchg loop."""
    two_sometimes = lambda b, i, dtype: b.cast(b.select(  # noqa: E731
        b.binary(B.CMP_EQ, b.binary(B.MOD, i, b.const(N // 16, T.i32)), b.const(0, T.i32)),
        b.const(2, T.i32), b.const(1, T.i32)), dtype)
    compiled = backend.compile(reduce_kernel(A.MUL, dtype, two_sometimes))
    acc, _ = run(backend, compiled, [np.full(1, 3), np.zeros(N)])
    assert acc[0] == 3 * 2 ** 16
    assert identity(A.MUL, dtype) == 1
    assert "cmpxchg" in compiled.source() and "atomicrmw" not in compiled.source()


@pytest.mark.parametrize("block_dim", [256, 100], ids=["full-warps", "partial-warps"])
def test_register_reductions_are_exact_on_every_arch(arch, block_dim: int) -> None:
    """`x[None] op= v` in a parallel loop on every arch; block_dim=100 leaves the last warp of each GPU block
    partial (4 of 32 lanes, 36 of a 64-lane wave), whose combine must take only the launched lanes. Values are
    small integers, so every sum is exact in f32 in any order (below 101 * 10007 < 2^24) and results compare
    exactly."""
    import wgkern as wk
    n = 10007
    values = (np.arange(n) * 7919) % 101
    x = wk.field(wk.f32, shape=n)
    x.from_numpy(values.astype(np.float32))
    total, wide = wk.field(wk.f32, shape=()), wk.field(wk.f64, shape=())
    largest, smallest = wk.field(wk.i32, shape=()), wk.field(wk.i32, shape=())
    smallest[None] = 1 << 30

    @wk.kernel
    def reduce():
        wk.loop_config(block_dim=block_dim)
        for i in x:
            total[None] += x[i]
            wide[None] += wk.f64(x[i]) * 0.5
            wk.atomic_max(largest[None], wk.i32(x[i]) * 3 - i)
            wk.atomic_min(smallest[None], i * 2 - wk.i32(x[i]))

    reduce()
    index = np.arange(n)
    assert total[None] == values.sum() and wide[None] == values.sum() * 0.5
    assert largest[None] == (values * 3 - index).max() and smallest[None] == (index * 2 - values).min()
