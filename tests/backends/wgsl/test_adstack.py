"""Adstacks on WGSL: push/pop/load-top/adjoint accumulation per parallel index against the reference
interpreter (f32, f64, i64 and u1 stacks), heap growth, and overflow reported at sync."""
from __future__ import annotations

import numpy as np
import pytest

from wgkern.backends.wgsl.shader_common import WORKGROUP_SIZE

from wgkern.errors import AdStackOverflowError
from wgkern.ir import nodes as ir
from wgkern.lang import types as T

from ._kernels import (DeviceArrays, count_submits, interpret, kernel, range_task, relaunch_counted_stacks,
                       stack_kernel)


@pytest.mark.parametrize("dtype", [T.f32, T.f64, T.i64, T.i32, T.u1], ids=lambda d: d.name)
def test_stacks_match_the_interpreter(backend, dtype: T.DataType) -> None:
    n, pushes = 300, 6
    k = stack_kernel(dtype, n)
    x = (np.arange(n) % 7 + 1).astype(dtype.np_dtype) if not dtype.is_bool else (np.arange(n) % 2 == 0)
    arrays = [x, np.zeros(n, dtype.np_dtype)]
    want = interpret(k, arrays, [pushes])[1]
    compiled = backend.compile(k)
    device = DeviceArrays(backend, k, arrays)
    args = device.args([pushes])
    args.extra = {"adstack_capacities": [[pushes]]}
    compiled.launch(args)
    np.testing.assert_array_equal(device.read(1), want)
    device.free()


def test_the_heap_is_laid_out_again_when_the_dispatch_or_a_capacity_changes(backend) -> None:
    """A reverse launch reuses the heap layout of the one before only while its capacities and dispatch sizes
    are the same: a wider range (more threads than the last layout has slices for), a narrower one again, and a
    larger capacity each get their own, and every result equals the interpreter's."""
    layouts = relaunch_counted_stacks(backend, lambda compiled: compiled.stack_layout[1])
    assert layouts[1] is layouts[0]                  # the same launch again: the same layout object
    assert layouts[2][2] > layouts[0][2] and layouts[3][2] == layouts[0][2] and layouts[4][2] > layouts[2][2]


def test_overflow_is_reported_at_sync_then_cleared(backend) -> None:
    n = 200
    k = stack_kernel(T.f32, n)
    compiled = backend.compile(k)
    device = DeviceArrays(backend, k, [np.ones(n, np.float32), np.zeros(n, np.float32)])
    args = device.args([5])
    args.extra = {"adstack_capacities": [[3]]}
    compiled.launch(args)
    with pytest.raises(AdStackOverflowError, match="stack 'v'.*capacity 3"):
        backend.sync()
    backend.sync()                                   # reported once
    args.extra = {"adstack_capacities": [[5]]}
    compiled.launch(args)                            # the heap grows for the larger capacity
    want = interpret(k, [np.ones(n, np.float32), np.zeros(n, np.float32)], [5])[1]
    np.testing.assert_array_equal(device.read(1), want)
    device.free()


def test_overflow_is_reported_by_a_read_back_in_one_submit(backend, monkeypatch) -> None:
    """A read-back after an overflowing launch raises too: the flag is copied along with the data (one
    submit); an earlier clean read says nothing about a launch recorded after it."""
    n = 200
    k = stack_kernel(T.f32, n)
    compiled = backend.compile(k)
    device = DeviceArrays(backend, k, [np.ones(n, np.float32), np.zeros(n, np.float32)])
    args = device.args([5])
    args.extra = {"adstack_capacities": [[5]]}
    compiled.launch(args)
    device.read(1)                                   # clean: reads the flag along, consumes it
    args.extra = {"adstack_capacities": [[2]]}
    compiled.launch(args)
    submits = count_submits(backend, monkeypatch)
    with pytest.raises(AdStackOverflowError, match="capacity 2"):
        device.read(1)
    assert len(submits) == 1
    monkeypatch.undo()
    backend.sync()                                   # reported once
    device.free()


def test_dispatch_is_capped_so_the_heap_fits_one_binding(backend, monkeypatch) -> None:
    """A capacity too large for every thread to own a slice caps the threads (the grid-stride loop covers the
    rest) instead of overflowing the binding. A 1 MiB binding limit keeps the test fast."""
    monkeypatch.setattr(backend, "max_binding", 1 << 20)
    n = 5000
    k = stack_kernel(T.f32, n)
    compiled = backend.compile(k)
    arrays = [np.arange(n, dtype=np.float32) % 5, np.zeros(n, np.float32)]
    device = DeviceArrays(backend, k, arrays)
    args = device.args([4])
    capacity = (1 << 20) // 4 // 2 // (WORKGROUP_SIZE * 3)   # slices for 3 workgroups fit; the range needs more
    args.extra = {"adstack_capacities": [[capacity]]}
    compiled.launch(args)
    np.testing.assert_array_equal(device.read(1), interpret(k, arrays, [4])[1])
    device.free()


def test_overflowed_lets_a_while_loop_stop(backend) -> None:
    """`while not overflowed: push` ends after `capacity` pushes; the overflow is still reported at sync."""
    count = ir.ContainerSlot(name="count", kind="field", dtype=T.i32, ndim=1, shape=(64,))

    def body(b, i):
        stack = b.insert(ir.AdStackAlloca(dtype=T.f32, name="w", stack_id=0))
        pushes = b.alloca(T.i32, "pushes")
        spin = b.while_()
        with b.at(spin.body):
            stop = b.if_(b.insert(ir.AdStackOverflowed(dtype=T.u1)))
            with b.at(stop.then_block):
                b.insert(ir.Break())
            b.insert(ir.AdStackPush(stack=stack, value=b.const(1.0, T.f32)))
            b.store(pushes, b.add(b.load(pushes), b.const(1, T.i32)))
        b.global_store(b.global_ptr(count, [i]), b.load(pushes))

    k = kernel("spin", [count], [range_task("t", lambda b: b.const(0, T.i32), lambda b: b.const(64, T.i32), body)])
    compiled = backend.compile(k)
    device = DeviceArrays(backend, k, [np.zeros(64, np.int32)])
    args = device.args()
    args.extra = {"adstack_capacities": [[7]]}
    compiled.launch(args)
    with pytest.raises(AdStackOverflowError, match="capacity 7"):
        backend.sync()
    np.testing.assert_array_equal(device.read(0), np.full(64, 8, np.int32))   # 7 kept + the one dropped
    device.free()
