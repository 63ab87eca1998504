"""Splitting kernels into tasks (wgkern/passes/offload.py)."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from wgkern.errors import CompileError
from wgkern.ir import nodes as ir
from wgkern.ir.builder import IRBuilder
from wgkern.ir.host_eval import evaluate_bounds
from wgkern.ir.ops import AtomicOpKind
from wgkern.ir.verifier import verify
from wgkern.ir.visitor import walk
from wgkern.lang import types as T
from wgkern.passes import offload, simplify

X = ir.ContainerSlot(name="x", kind="field", dtype=T.f32, ndim=1, shape=(8,))
N = ir.ContainerSlot(name="n", kind="field", dtype=T.i32, ndim=0, shape=())
ARGS = [ir.ArgSpec(name="m", kind="scalar", dtype=T.i32)]


def kernel(b: IRBuilder) -> ir.KernelIR:
    return ir.KernelIR("k", ARGS, [X, N], b.block)


def offloaded(b: IRBuilder) -> ir.OffloadedKernel:
    result = offload.run(kernel(b))
    verify(result)
    return result


def fill_x(b: IRBuilder, end: ir.Stmt, value: ir.Stmt | None = None) -> ir.RangeFor:
    loop = b.range_for(b.const(0, T.i32), end)
    with b.at(loop.body):
        i = b.loop_index(loop)
        b.global_store(b.global_ptr(X, [i]), value if value is not None else b.cast(i, T.f32))
    return loop


def temps(kernel: ir.OffloadedKernel) -> list[ir.ContainerSlot]:
    return [slot for slot in kernel.containers if slot.kind == "temp"]


def test_top_level_loop_becomes_a_parallel_range_task():
    b = IRBuilder()
    m = b.insert(ir.ArgLoad(arg_index=0, dtype=T.i32))
    fill_x(b, b.add(m, b.const(1, T.i32)))
    result = offloaded(b)
    [task] = result.tasks
    assert task.kind == "range" and task.loop.parallel and task.body is task.loop.body
    assert [type(s) for s in task.bounds.stmts] == [ir.Const, ir.ArgLoad, ir.Const, ir.BinaryOp]
    assert evaluate_bounds(task, [6], {}) == (0, 7)


def test_serial_runs_between_loops_become_serial_tasks_in_order():
    b = IRBuilder()
    b.global_store(b.global_ptr(N, []), b.const(3, T.i32))
    fill_x(b, b.const(8, T.i32))
    b.atomic(AtomicOpKind.ADD, b.global_ptr(N, []), b.const(1, T.i32))
    result = offloaded(b)
    assert [t.kind for t in result.tasks] == ["serial", "range", "serial"]
    assert len({t.name for t in result.tasks}) == 3


def test_serial_code_without_effects_is_dropped():
    b = IRBuilder()
    local = b.alloca(T.i32)
    b.store(local, b.const(4, T.i32))
    b.mul(b.load(local), b.const(2, T.i32))
    fill_x(b, b.const(8, T.i32))
    assert [t.kind for t in offloaded(b).tasks] == ["range"]


def test_pure_values_are_cloned_into_each_task_that_uses_them():
    b = IRBuilder()
    m = b.insert(ir.ArgLoad(arg_index=0, dtype=T.i32))
    scale = b.cast(b.mul(m, b.const(2, T.i32)), T.f32)
    b.global_store(b.global_ptr(X, [b.const(0, T.i32)]), scale)
    fill_x(b, b.const(8, T.i32), scale)
    result = offloaded(b)
    serial, ranged = result.tasks
    assert any(isinstance(s, ir.ArgLoad) for s in serial.body.stmts)
    assert any(isinstance(s, ir.ArgLoad) for s in ranged.body.stmts)
    assert temps(result) == []


def test_top_level_local_shared_by_tasks_becomes_a_temp():
    b = IRBuilder()
    total = b.alloca(T.f32, "total")
    b.store(total, b.const(1.0, T.f32))
    loop = b.range_for(b.const(0, T.i32), b.const(8, T.i32))
    with b.at(loop.body):
        b.store(total, b.add(b.load(total), b.const(1.0, T.f32)))
    b.global_store(b.global_ptr(X, [b.const(0, T.i32)]), b.load(total))
    result = offloaded(b)
    [temp] = temps(result)
    assert temp.shape == (1,) and temp.dtype == T.f32 and temp.name.startswith("total")
    assert not any(isinstance(s, (ir.Alloca, ir.LocalLoad, ir.LocalStore))
                   for task in result.tasks for s in walk(task.body))
    first = result.tasks[0].body.stmts
    zero_store = next(s for s in first if isinstance(s, ir.GlobalStore))
    assert zero_store.ptr.container is temp and zero_store.value.value == 0.0   # reset every launch


def test_local_used_by_one_task_stays_local():
    b = IRBuilder()
    loop = b.range_for(b.const(0, T.i32), b.const(8, T.i32))
    with b.at(loop.body):
        local = b.alloca(T.f32)
        b.store(local, b.const(2.0, T.f32))
        b.global_store(b.global_ptr(X, [b.loop_index(loop)]), b.load(local))
    result = offloaded(b)
    assert temps(result) == []
    assert any(isinstance(s, ir.Alloca) for s in walk(result.tasks[0].body))


def test_global_load_bound_is_evaluated_in_the_bounds():
    b = IRBuilder()
    count = b.global_load(b.global_ptr(N, []))
    fill_x(b, count)
    result = offloaded(b)
    [task] = result.tasks
    assert any(isinstance(s, ir.GlobalLoad) for s in task.bounds.stmts)
    assert evaluate_bounds(task, [0], {}) is None
    assert temps(result) == []


def test_global_load_bound_after_a_write_goes_through_a_temp():
    b = IRBuilder()
    ptr = b.global_ptr(N, [])
    count = b.global_load(ptr)
    b.global_store(ptr, b.const(0, T.i32))   # the loop must still see the old value
    fill_x(b, count)
    result = offloaded(b)
    [temp] = temps(result)
    serial, ranged = result.tasks
    assert any(isinstance(s, ir.GlobalStore) and s.ptr.container is temp for s in serial.body.stmts)
    loads = [s for s in ranged.bounds.stmts if isinstance(s, ir.GlobalLoad)]
    assert [load.ptr.container for load in loads] == [temp]


def test_value_read_in_serial_code_and_used_in_a_loop_body_is_spilled():
    b = IRBuilder()
    first = b.global_load(b.global_ptr(X, [b.const(0, T.i32)]))
    fill_x(b, b.const(8, T.i32), first)
    result = offloaded(b)
    assert len(temps(result)) == 1
    assert [t.kind for t in result.tasks] == ["serial", "range"]


def test_serialized_loop_stays_in_serial_code():
    b = IRBuilder()
    loop = fill_x(b, b.const(8, T.i32))
    loop.serialize = True
    [task] = offloaded(b).tasks
    assert task.kind == "serial"


def test_code_after_a_top_level_return_is_dropped():
    b = IRBuilder()
    b.global_store(b.global_ptr(N, []), b.const(1, T.i32))
    b.insert(ir.Return())
    fill_x(b, b.const(8, T.i32))
    result = offloaded(b)
    assert [t.kind for t in result.tasks] == ["serial"]


def test_huge_constant_range_is_a_compile_error():
    b = IRBuilder()
    loop = b.range_for(b.const(-2 ** 31, T.i32), b.const(1, T.i32))
    with b.at(loop.body):
        b.global_store(b.global_ptr(X, [b.const(0, T.i32)]), b.const(1.0, T.f32))
    with pytest.raises(CompileError, match="too long"):
        offload.run(kernel(b))


def test_break_in_a_parallel_loop_is_a_compile_error():
    b = IRBuilder()
    loop = fill_x(b, b.const(8, T.i32))
    with b.at(loop.body):
        branch = b.if_(b.const(True, T.u1))
        with b.at(branch.then_block):
            b.insert(ir.Break())
    with pytest.raises(CompileError, match="break"):
        offload.run(kernel(b))


def test_break_in_a_nested_loop_is_fine():
    b = IRBuilder()
    loop = fill_x(b, b.const(8, T.i32))
    with b.at(loop.body):
        inner = b.while_()
        with b.at(inner.body):
            b.insert(ir.Break())
    offloaded(b)


def test_offload_leaves_the_input_kernel_untouched():
    b = IRBuilder()
    count = b.global_load(b.global_ptr(N, []))
    fill_x(b, count)
    original = kernel(b)
    before = [id(s) for s in walk(original.body)]
    offload.run(original)
    assert [id(s) for s in walk(original.body)] == before
    assert not original.body.stmts[-1].parallel


def test_offloaded_kernel_computes_what_the_serial_kernel_does(interpret):
    b = IRBuilder()
    m = b.insert(ir.ArgLoad(arg_index=0, dtype=T.i32))
    total = b.alloca(T.i32, "total")
    b.store(total, b.global_load(b.global_ptr(N, [])))
    loop = b.range_for(b.const(0, T.i32), m)
    with b.at(loop.body):
        i = b.loop_index(loop)
        b.global_store(b.global_ptr(X, [i]), b.cast(b.add(i, b.load(total)), T.f32))
    b.store(total, b.add(b.load(total), m))
    b.global_store(b.global_ptr(N, []), b.load(total))
    source = kernel(b)
    arrays = [np.zeros(8, np.float32), np.array(5, np.int32)]
    expected = interpret(source, arrays, [6])
    result = simplify.run(offload.run(source))
    verify(result)
    got = interpret(result, arrays, [6])
    np.testing.assert_array_equal(expected[0], got[0])
    np.testing.assert_array_equal(expected[1], got[1])
    assert int(got[1]) == 11


def test_bound_read_before_a_write_keeps_its_old_value_when_run(interpret):
    b = IRBuilder()
    ptr = b.global_ptr(N, [])
    count = b.global_load(ptr)
    b.global_store(ptr, b.const(2, T.i32))
    fill_x(b, count)
    source = kernel(b)
    arrays = [np.zeros(8, np.float32), np.array(5, np.int32)]
    expected = interpret(source, arrays)
    result = offload.run(source)
    verify(result)
    got = interpret(result, arrays)
    np.testing.assert_array_equal(expected[0], got[0])
    assert list(got[0]) == [0, 1, 2, 3, 4, 0, 0, 0]


def test_dynamic_component_stores_to_a_shared_local_vector_do_not_race(arch):
    # Quadrants' test_local_matrix_non_constant_index: each thread of the parallel loop sets its own component
    # of a kernel-scope vector; a store that rewrote the other components too lost the other threads' values.
    @wk.kernel
    def fill() -> wk.types.vector(3, wk.i32):
        tmp = wk.Vector([1, 2, 3])
        for i in range(3):
            vec = wk.Vector([4, 5, 6])
            for j in range(3):
                vec[tmp[i] % 3] += vec[j]
            tmp[i] = vec[tmp[i] % 3]
        return tmp

    @wk.kernel
    def spread(n: wk.i32) -> wk.types.vector(8, wk.i32):
        out = wk.Vector([0] * 8)
        for i in range(n):
            out[i] = i * i + 1
        return out

    assert fill().tolist() == [24, 30, 19]
    assert spread(8).tolist() == [i * i + 1 for i in range(8)]
    assert spread(5).tolist() == [i * i + 1 for i in range(5)] + [0, 0, 0]


def test_dynamic_component_stores_of_a_wider_value_to_a_shared_local_vector_do_not_race(arch):
    # A bitonic-sort program fills a kernel-scope f32 vector from an f64 ndarray in a parallel loop; the f64
    # value made the element store a cast of an f64 select, which the shared-local rewrite did not recognise
    # as a one-component store (on the GPU every thread then wrote all components: [0, 0, 0, 2]).
    wide = wk.field(wk.f64, 4)
    out = wk.field(wk.f32, 4)

    @wk.kernel
    def gather():
        v = wk.Vector.zero(wk.f32, 4)
        for i in range(4):
            v[i] = wide[i]
        for i in range(4):
            out[i] = v[i]

    @wk.kernel
    def truncate() -> wk.types.vector(4, wk.i32):
        v = wk.Vector([0, 0, 0, 0])
        for i in range(4):
            v[i] = i + 0.75
        return v

    wide.from_numpy(np.array([0.5, 0.25, 0.125, 2.0]))
    gather()
    assert out.to_numpy().tolist() == [0.5, 0.25, 0.125, 2.0]
    assert truncate().tolist() == [0, 1, 2, 3]


# ---- host loops (graph_do_while) ----------------------------------------------------------------------------

def host_loop(b: IRBuilder, body) -> ir.While:
    """`while wk.graph_do_while(n): body` as the frontend builds it: the body, then `if n[()] == 0: break`."""
    loop = b.while_()
    loop.host_counter = N
    with b.at(loop.body):
        body(b)
        done = b.binary(ir.BinaryOpKind.CMP_EQ, b.global_load(b.global_ptr(N, [])), b.const(0, T.i32))
        with b.at(b.if_(done).then_block):
            b.insert(ir.Break())
    return loop


def test_top_level_host_loop_body_becomes_tasks_the_launch_repeats():
    b = IRBuilder()
    fill_x(b, b.const(8, T.i32))                                   # task 0, once

    def body(b):
        fill_x(b, b.const(8, T.i32))                               # task 1: parallel, repeated
        b.global_store(b.global_ptr(N, []), b.binary(ir.BinaryOpKind.SUB, b.global_load(b.global_ptr(N, [])),
                                                     b.const(1, T.i32)))          # task 2: serial, repeated
    host_loop(b, body)
    fill_x(b, b.const(4, T.i32))                                   # task 3, once
    result = offloaded(b)
    assert [t.kind for t in result.tasks] == ["range", "range", "serial", "range"]
    assert result.host_loops == (ir.HostLoop(1, 3, N, result.host_loops[0].loc),)
    assert not any(isinstance(s, ir.While) for t in result.tasks for s in walk(t.body))


def test_nested_host_loops_and_loops_not_at_top_level():
    b = IRBuilder()

    def inner(b):
        fill_x(b, b.const(8, T.i32))

    def outer(b):
        fill_x(b, b.const(2, T.i32))
        host_loop(b, inner)
    host_loop(b, outer)
    result = offloaded(b)
    assert [(h.first, h.stop) for h in result.host_loops] == [(0, 2), (1, 2)]     # outer loop first
    b = IRBuilder()
    serial = b.range_for(b.const(0, T.i32), b.const(2, T.i32), serialize=True)
    with b.at(serial.body):
        host_loop(b, inner)                  # not at top level: stays a loop in kernel code
    result = offloaded(b)
    assert result.host_loops == () and any(isinstance(s, ir.While) for t in result.tasks for s in walk(t.body))


def test_host_loop_whose_body_does_nothing_is_an_error():
    b = IRBuilder()
    host_loop(b, lambda b: None)
    with pytest.raises(CompileError, match="graph_do_while loop's body does nothing"):
        offloaded(b)
