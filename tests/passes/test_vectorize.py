"""Wide memory access (wgkern/passes/vectorize.py): which range tasks the pass rewrites and which containers it
accesses wide, and that a rewritten kernel computes what the scalar one does on the reference interpreter (which
refuses a wide access out of range or unaligned) for every length around the vector width."""
from __future__ import annotations

import numpy as np
import pytest

from wgkern.ir import nodes as ir
from wgkern.ir.interpreter import Interpreter
from wgkern.ir.ops import AtomicOpKind, BinaryOpKind
from wgkern.ir.verifier import verify
from wgkern.ir.visitor import walk
from wgkern.lang import types as T
from wgkern.passes import vectorize

from tests.backends.wgsl._kernels import kernel, range_task, scalar_arg, slot

X = slot("x", T.f32, None, arg_index=1)
Y = slot("y", T.f32, None, arg_index=2)
F = slot("f", T.f32, (8,))
N = slot("n", T.i32, None, arg_index=3)
G = slot("g", T.f32, (4, 4))
ACC = slot("acc", T.f32, (1,))
LENGTHS = [*range(10), 33, 64]


def _zero(b):
    return b.const(0, T.i32)


def _length_of(container):
    return lambda b: b.insert(ir.ShapeOf(container=container, axis=0, dtype=T.i32))


def _saxpy(b, i):
    """y[i] = a * x[i] + y[i]"""
    a = b.insert(ir.ArgLoad(arg_index=0, dtype=T.f32))
    y = b.global_ptr(Y, [i])
    b.global_store(y, b.add(b.mul(a, b.global_load(b.global_ptr(X, [i]))), b.global_load(y)))


def _one_task(body, begin=_zero, end=_length_of(Y), containers=(X, Y), reversed_=False):
    return kernel("k", list(containers), [range_task("t", begin, end, body, reversed_)],
                  [scalar_arg("a", T.f32), ir.ArgSpec(name="x", kind="ndarray", dtype=T.f32, ndim=1),
                   ir.ArgSpec(name="y", kind="ndarray", dtype=T.f32, ndim=1)])


def _wide_names(k: ir.OffloadedKernel) -> list[str]:
    return [slot.name for slot in vectorize.wide_containers(k.tasks[0])]


def _run(k: ir.OffloadedKernel, arrays: list[np.ndarray], a: float = 2.0) -> list[np.ndarray]:
    arrays = [array.copy() for array in arrays]
    Interpreter(k, arrays, [np.float32(a)]).run()
    return arrays


def _same_as_scalar(k: ir.OffloadedKernel, arrays: list[np.ndarray]) -> None:
    wide = vectorize.run(k)
    assert wide is not k and any(isinstance(s, (ir.VectorLoad, ir.VectorStore)) for s in walk(wide.tasks[0].body))
    verify(wide)
    for got, want in zip(_run(wide, arrays), _run(k, arrays)):
        np.testing.assert_array_equal(got, want)      # the same operations on the same values: bit for bit


# ---- which tasks and containers -------------------------------------------------------------------------

def test_saxpy_accesses_both_arrays_wide():
    assert _wide_names(_one_task(_saxpy)) == ["x", "y"]


def test_a_strided_read_stays_scalar_and_the_written_array_is_wide():
    def body(b, i):
        two_i = b.mul(i, b.const(2, T.i32))
        b.global_store(b.global_ptr(Y, [i]), b.global_load(b.global_ptr(X, [two_i])))
    assert _wide_names(_one_task(body)) == ["y"]


@pytest.mark.parametrize("offset", [1, -1])
def test_an_array_written_at_one_index_and_read_at_another_keeps_the_task_scalar(offset):
    def body(b, i):
        shifted = b.add(i, b.const(offset, T.i32))
        b.global_store(b.global_ptr(Y, [i]), b.global_load(b.global_ptr(Y, [shifted])))
    k = _one_task(body)
    assert _wide_names(k) == [] and vectorize.run(k) is k


def test_a_store_at_an_offset_keeps_the_task_scalar():
    def body(b, i):
        b.global_store(b.global_ptr(Y, [b.add(i, b.const(1, T.i32))]), b.global_load(b.global_ptr(X, [i])))
    assert _wide_names(_one_task(body)) == []


def test_a_range_starting_off_a_non_negative_multiple_of_the_width_or_running_backwards_stays_scalar():
    assert _wide_names(_one_task(_saxpy, begin=lambda b: b.const(1, T.i32))) == []
    assert _wide_names(_one_task(_saxpy, begin=lambda b: b.const(8, T.i32))) == ["x", "y"]
    assert _wide_names(_one_task(_saxpy, begin=lambda b: b.const(-4, T.i32))) == []
    assert _wide_names(_one_task(_saxpy, reversed_=True)) == []


def test_two_dimensional_and_non_32_bit_containers_stay_scalar():
    def body(b, i):
        row = b.binary(BinaryOpKind.FLOORDIV, i, b.const(4, T.i32))
        b.global_store(b.global_ptr(G, [row, b.binary(BinaryOpKind.MOD, i, b.const(4, T.i32))]),
                       b.global_load(b.global_ptr(X, [i])))
    assert _wide_names(_one_task(body, containers=(X, Y, G))) == []


def test_an_atomic_reduction_beside_wide_loads():
    def body(b, i):
        b.atomic(AtomicOpKind.ADD, b.global_ptr(ACC, [_zero(b)]), b.global_load(b.global_ptr(X, [i])))
    assert _wide_names(_one_task(body, containers=(X, Y, ACC))) == ["x"]


def test_an_atomic_at_the_loop_index_keeps_that_array_scalar():
    def body(b, i):
        b.atomic(AtomicOpKind.ADD, b.global_ptr(Y, [i]), b.global_load(b.global_ptr(X, [i])))
    assert _wide_names(_one_task(body)) == ["x"]


def test_an_access_under_a_branch_stays_scalar():
    def body(b, i):
        value = b.global_load(b.global_ptr(X, [i]))
        positive = b.binary(BinaryOpKind.CMP_GT, value, b.const(0.0, T.f32))
        branch = b.insert(ir.If(cond=positive, then_block=ir.Block(), else_block=ir.Block()))
        with b.at(branch.then_block):
            b.global_store(b.global_ptr(Y, [i]), value)
    assert _wide_names(_one_task(body)) == ["x"]


@pytest.mark.parametrize("refused", ["break", "random", "return", "inner loop"])
def test_loops_leaving_the_iteration_early_or_per_thread_state_keep_the_task_scalar(refused):
    def body(b, i):
        _saxpy(b, i)
        if refused == "break":
            b.insert(ir.Break())
        elif refused == "random":
            b.insert(ir.RandomValue(dtype=T.f32))
        elif refused == "return":
            b.insert(ir.Return())
        else:
            inner = b.insert(ir.While(body=ir.Block()))
            with b.at(inner.body):
                b.insert(ir.Break())
    assert _wide_names(_one_task(body)) == []


# ---- the rewrite computes what the scalar task does -----------------------------------------------------

@pytest.mark.parametrize("n", LENGTHS)
def test_saxpy_every_length(n):
    x = np.arange(n, dtype=np.float32) * np.float32(0.5)
    y = np.linspace(-1, 1, n, dtype=np.float32)
    _same_as_scalar(_one_task(_saxpy), [x, y])


@pytest.mark.parametrize("n", LENGTHS)
def test_a_range_shorter_or_longer_than_the_arrays(n):
    """`for i in range(n[0])` over an 8-element field and a 6-element ndarray: indices past either end are
    dropped (stores) or read 0 (loads), as in the scalar kernel."""
    def body(b, i):
        b.global_store(b.global_ptr(F, [i]), b.add(b.global_load(b.global_ptr(F, [i])),
                                                   b.global_load(b.global_ptr(Y, [i]))))

    def end(b):
        return b.global_load(b.global_ptr(N, [_zero(b)]))
    k = _one_task(body, end=end, containers=(X, Y, N, F))
    assert sorted(_wide_names(k)) == ["f", "y"]
    arrays = [np.zeros(1, np.float32), np.arange(1, 7, dtype=np.float32), np.array([n], np.int32),
              np.full(8, 10.0, np.float32)]
    _same_as_scalar(k, arrays)


@pytest.mark.parametrize("n", LENGTHS)
def test_strided_reads_a_branch_and_an_atomic_sum(n):
    def body(b, i):
        wrapped = b.binary(BinaryOpKind.MOD, b.mul(i, b.const(3, T.i32)), b.const(max(n, 1), T.i32))
        strided = b.global_load(b.global_ptr(X, [wrapped]))
        value = b.global_load(b.global_ptr(X, [i]))
        b.global_store(b.global_ptr(Y, [i]), b.add(value, strided))
        b.atomic(AtomicOpKind.ADD, b.global_ptr(ACC, [_zero(b)]), value)
        branch = b.insert(ir.If(cond=b.binary(BinaryOpKind.CMP_GT, value, b.const(3.0, T.f32)),
                                then_block=ir.Block(), else_block=ir.Block()))
        with b.at(branch.then_block):
            b.global_store(b.global_ptr(F, [i]), value)      # past F's 8 elements: dropped
    k = _one_task(body, containers=(X, Y, ACC, F))
    x = np.arange(n, dtype=np.float32)     # integers: the atomic sum is exact in any order
    _same_as_scalar(k, [x, np.zeros(n, np.float32), np.zeros(1, np.float32), np.zeros(8, np.float32)])
