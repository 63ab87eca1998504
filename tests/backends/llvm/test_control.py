"""Control flow, ranges, shapes and task sequencing: RangeFor (incl. reversed, begin > 0, empty), While with
Break/Continue, If, Return, locals, ndarray shapes at launch, static field shapes, bounds read from memory."""
from __future__ import annotations

import numpy as np
import pytest

from wgkern.backends.base import LaunchArgs
from wgkern.ir import nodes as ir
from wgkern.ir.ops import BinaryOpKind as B
from wgkern.lang import types as T

from ._kernels import (const, elementwise, field_slot, ndarray_args, ndarray_slot, range_task, run, serial_task,
                       shape_of)


def kernel_of(slots, tasks, scalars=(), name="k"):
    return ir.OffloadedKernel(name, ndarray_args(slots, list(scalars)), slots, tasks)


def test_range_with_begin_and_end_from_scalars(backend) -> None:
    out = ndarray_slot("out", T.i32)

    def body(b, i):
        b.global_store(b.global_ptr(out, [i]), b.add(i, b.const(100, T.i32)))

    task = range_task(lambda b: b.insert(ir.ArgLoad(arg_index=1, dtype=T.i32)),
                      lambda b: b.insert(ir.ArgLoad(arg_index=2, dtype=T.i32)), body)
    compiled = backend.compile(kernel_of([out], [task], [T.i32, T.i32]))
    got = run(backend, compiled, [np.full(10, -1, np.int32)], scalars=[3, 7])[0]
    assert got.tolist() == [-1, -1, -1, 103, 104, 105, 106, -1, -1, -1]
    for begin, end in [(5, 5), (7, 2), (-3, -10)]:
        got = run(backend, compiled, [np.full(10, -1, np.int32)], scalars=[begin, end])[0]
        assert (got == -1).all()


def test_large_parallel_range_all_indices_once(backend) -> None:
    n = 1 << 21
    kernel = elementwise([T.i32], T.i32, lambda b, x: b.add(x, b.const(1, T.i32)))
    got = run(backend, backend.compile(kernel), [np.arange(n, dtype=np.int32), np.zeros(n, np.int32)])[1]
    np.testing.assert_array_equal(got, np.arange(1, n + 1, dtype=np.int32))


@pytest.mark.parametrize("reverse", [False, True])
def test_serial_loop_order(backend, reverse: bool) -> None:
    """A serial task appends loop indices in order: out[k] = index of the k-th iteration."""
    out = ndarray_slot("out", T.i32)

    def body(b):
        counter = b.alloca(T.i32)
        loop = b.range_for(b.const(2, T.i32), b.const(9, T.i32), reversed=reverse)
        with b.at(loop.body):
            k = b.load(counter)
            b.global_store(b.global_ptr(out, [k]), b.loop_index(loop))
            b.store(counter, b.add(k, b.const(1, T.i32)))

    got = run(backend, backend.compile(kernel_of([out], [serial_task(body)])), [np.zeros(7, np.int32)])[0]
    assert got.tolist() == (list(range(8, 1, -1)) if reverse else list(range(2, 9)))


def test_nested_loops_and_locals(backend) -> None:
    """out[i] = sum_{j<i} sum_{k<j} 1 (triangular nested loops; locals zeroed at their declaration)."""
    out = ndarray_slot("out", T.i32)

    def body(b, i):
        total = b.alloca(T.i32)
        outer = b.range_for(b.const(0, T.i32), i)
        with b.at(outer.body):
            inner = b.range_for(b.const(0, T.i32), b.loop_index(outer))
            with b.at(inner.body):
                b.store(total, b.add(b.load(total), b.const(1, T.i32)))
        b.global_store(b.global_ptr(out, [i]), b.load(total))

    got = run(backend, backend.compile(kernel_of([out], [range_task(const(0), shape_of(out), body)])),
              [np.zeros(50, np.int32)])[0]
    assert got.tolist() == [i * (i - 1) // 2 for i in range(50)]


def test_while_break_continue(backend) -> None:
    """Collatz steps with while/break, and a sum of odd j < i via continue."""
    steps = ndarray_slot("steps", T.i32, 1, 0)
    odd = ndarray_slot("odd", T.i32, 1, 1)

    def body(b, i):
        x = b.alloca(T.i32)
        count = b.alloca(T.i32)
        b.store(x, b.add(i, b.const(1, T.i32)))
        loop = b.while_()
        with b.at(loop.body):
            stop = b.if_(b.binary(B.CMP_LE, b.load(x), b.const(1, T.i32)))
            with b.at(stop.then_block):
                b.insert(ir.Break())
            even = b.if_(b.binary(B.CMP_EQ, b.binary(B.MOD, b.load(x), b.const(2, T.i32)), b.const(0, T.i32)))
            with b.at(even.then_block):
                b.store(x, b.binary(B.FLOORDIV, b.load(x), b.const(2, T.i32)))
            with b.at(even.else_block):
                b.store(x, b.add(b.mul(b.load(x), b.const(3, T.i32)), b.const(1, T.i32)))
            b.store(count, b.add(b.load(count), b.const(1, T.i32)))
        b.global_store(b.global_ptr(steps, [i]), b.load(count))
        total = b.alloca(T.i32)
        loop = b.range_for(b.const(0, T.i32), i)
        with b.at(loop.body):
            j = b.loop_index(loop)
            skip = b.if_(b.binary(B.CMP_EQ, b.binary(B.MOD, j, b.const(2, T.i32)), b.const(0, T.i32)))
            with b.at(skip.then_block):
                b.insert(ir.Continue())
            b.store(total, b.add(b.load(total), j))
        b.global_store(b.global_ptr(odd, [i]), b.load(total))

    def collatz(n):
        count = 0
        while n > 1:
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            count += 1
        return count

    kernel = kernel_of([steps, odd], [range_task(const(0), shape_of(steps), body)])
    got_steps, got_odd = run(backend, backend.compile(kernel), [np.zeros(40, np.int32), np.zeros(40, np.int32)])
    assert got_steps.tolist() == [collatz(i + 1) for i in range(40)]
    assert got_odd.tolist() == [sum(j for j in range(i) if j % 2) for i in range(40)]


def test_return_in_range_and_serial_tasks(backend) -> None:
    out = ndarray_slot("out", T.i32)

    def body(b, i):
        early = b.if_(b.binary(B.CMP_LT, i, b.const(3, T.i32)))
        with b.at(early.then_block):
            b.insert(ir.Return())
        b.global_store(b.global_ptr(out, [i]), b.const(1, T.i32))

    def serial(b):
        b.global_store(b.global_ptr(out, [b.const(0, T.i32)]), b.const(5, T.i32))
        b.insert(ir.Return())
        b.global_store(b.global_ptr(out, [b.const(1, T.i32)]), b.const(6, T.i32))

    kernel = kernel_of([out], [range_task(const(0), shape_of(out), body), serial_task(serial)])
    got = run(backend, backend.compile(kernel), [np.zeros(6, np.int32)])[0]
    assert got.tolist() == [5, 0, 0, 1, 1, 1]


def test_ndarray_shapes_come_from_launch(backend) -> None:
    """One compiled kernel, 2-D ndarrays of different shapes: out[i, j] = i * 100 + j over ShapeOf axes."""
    out = ndarray_slot("out", T.i32, 2)

    def body(b, i):
        cols = b.insert(ir.ShapeOf(container=out, axis=1, dtype=T.i32))
        loop = b.range_for(b.const(0, T.i32), cols)
        with b.at(loop.body):
            j = b.loop_index(loop)
            b.global_store(b.global_ptr(out, [i, j]), b.add(b.mul(i, b.const(100, T.i32)), j))

    compiled = backend.compile(kernel_of([out], [range_task(const(0), shape_of(out), body)]))
    for shape in [(3, 5), (7, 2), (1, 1), (0, 4)]:
        got = run(backend, compiled, [np.zeros(shape, np.int32)])[0]
        rows, cols = np.indices(shape)
        np.testing.assert_array_equal(got, rows * 100 + cols)


def test_static_field_shape_3d(backend) -> None:
    """A field slot with a static shape (strides are constants); out[i, j, k] = i*100 + j*10 + k."""
    shape = (4, 3, 5)
    field = field_slot("f", T.f64, shape)

    def body(b, i):
        for j in range(shape[1]):
            for k in range(shape[2]):
                value = b.cast(b.add(b.mul(i, b.const(100, T.i32)), b.const(j * 10 + k, T.i32)), T.f64)
                b.global_store(b.global_ptr(field, [i, b.const(j, T.i32), b.const(k, T.i32)]), value)

    kernel = ir.OffloadedKernel("static", [], [field], [range_task(const(0), const(shape[0]), body)])
    got = run(backend, backend.compile(kernel), [np.zeros(shape)])[0]
    i, j, k = np.indices(shape)
    np.testing.assert_array_equal(got, i * 100 + j * 10 + k)


def test_tasks_run_in_order_through_temp_slot(backend) -> None:
    """Task 0 (serial) writes a temp; task 1's bounds read it from memory; task 2 reads task 1's output."""
    temp = ir.ContainerSlot(name="tmp", kind="temp", dtype=T.i32, ndim=1, shape=(1,))
    out = ndarray_slot("out", T.i32, 1, 0)
    zero = lambda b: b.const(0, T.i32)  # noqa: E731

    def first(b):
        b.global_store(b.global_ptr(temp, [zero(b)]), b.const(6, T.i32))

    def second(b, i):
        b.global_store(b.global_ptr(out, [i]), b.mul(i, i))

    def third(b, i):
        ptr = b.global_ptr(out, [i])
        b.global_store(ptr, b.add(b.global_load(ptr), b.const(1, T.i32)))

    bounds_end = lambda b: b.global_load(b.global_ptr(temp, [zero(b)]))  # noqa: E731
    tasks = [serial_task(first), range_task(const(0), bounds_end, second), range_task(const(0), bounds_end, third)]
    kernel = ir.OffloadedKernel("seq", ndarray_args([out]), [out, temp], tasks)
    compiled = backend.compile(kernel)
    temp_buffer = backend.allocate(4)
    out_buffer = backend.allocate(40)
    compiled.launch(LaunchArgs([None], [out_buffer, temp_buffer], [(10,), (1,)]))
    got = backend.host_view(out_buffer, np.int32, (10,))
    assert got.tolist() == [i * i + 1 for i in range(6)] + [0] * 4


def test_bool_storage_and_scalar_args(backend) -> None:
    """u1 is one byte in memory; scalar arguments of several dtypes reach the kernel."""
    flags = ndarray_slot("flags", T.u1, 1, 0)
    out = ndarray_slot("out", T.f64, 1, 1)

    def body(b, i):
        flag = b.global_load(b.global_ptr(flags, [i]))
        scale = b.insert(ir.ArgLoad(arg_index=2, dtype=T.f64))
        shift = b.insert(ir.ArgLoad(arg_index=3, dtype=T.i8))
        on = b.insert(ir.ArgLoad(arg_index=4, dtype=T.u1))
        value = b.select(b.binary(B.BIT_AND, flag, on), b.mul(scale, b.cast(i, T.f64)), b.cast(shift, T.f64))
        b.global_store(b.global_ptr(out, [i]), value)
        b.global_store(b.global_ptr(flags, [i]), b.unary(ir.UnaryOpKind.LOGICAL_NOT, flag))

    kernel = kernel_of([flags, out], [range_task(const(0), shape_of(flags), body)], [T.f64, T.i8, T.u1])
    flags_in = np.array([True, False, True, True])
    got_flags, got = run(backend, backend.compile(kernel), [flags_in, np.zeros(4)], scalars=[0.5, -3, True])
    assert got.tolist() == [0.0, -3.0, 1.0, 1.5]
    assert got_flags.tolist() == [False, True, False, False]
    assert got_flags.view(np.uint8).tolist() == [0, 1, 0, 0]


def test_source_is_llvm_ir(backend) -> None:
    compiled = backend.compile(elementwise([T.f32], T.f32, lambda b, x: b.mul(x, x)))
    assert "define void" in compiled.source() and "wk_parallel_for" in compiled.source()
    assert "vector" in compiled.source(optimized=True) or "<" in compiled.source(optimized=True)


def test_debug_bounds_check_raises_and_touches_nothing() -> None:
    from wgkern.backends.llvm.cpu import BoundsCheckError, CpuBackend
    debug_backend = CpuBackend(debug=True)
    src = ndarray_slot("src", T.i32, 1, 0)
    out = ndarray_slot("out", T.i32, 1, 1)

    def body(b, i):
        shifted = b.add(i, b.insert(ir.ArgLoad(arg_index=2, dtype=T.i32)))
        b.global_store(b.global_ptr(out, [shifted]), b.global_load(b.global_ptr(src, [i])))

    kernel = kernel_of([src, out], [range_task(const(0), shape_of(src), body)], [T.i32])
    compiled = debug_backend.compile(kernel)
    got = run(debug_backend, compiled, [np.arange(8, dtype=np.int32), np.zeros(8, np.int32)], scalars=[0])[1]
    assert got.tolist() == list(range(8))
    for shift in (1, -1, 1 << 30):
        with pytest.raises(BoundsCheckError, match="out of range for out"):
            run(debug_backend, compiled, [np.arange(8, dtype=np.int32), np.zeros(8, np.int32)], scalars=[shift])
    got = run(debug_backend, compiled, [np.arange(8, dtype=np.int32), np.zeros(8, np.int32)], scalars=[0])[1]
    assert got.tolist() == list(range(8))
