"""wk.simt statements as simplify and DCE see them: a barrier is an ordering point (no load of a shared array is
merged across it) and a side effect (never dropped); subgroup exchanges are never merged, even when equal."""
from __future__ import annotations

from wgkern.ir import nodes as ir
from wgkern.ir.builder import IRBuilder
from wgkern.ir.visitor import walk
from wgkern.lang import types as T
from wgkern.passes import simplify
from wgkern.passes.analysis import first_simt_use, read_slots, written_slots

SHARED = ir.ContainerSlot(name="shared1", kind="shared", dtype=T.i32, ndim=1, shape=(4,))
OUT = ir.ContainerSlot(name="out", kind="field", dtype=T.i32, ndim=1, shape=(8,))


def _count(block: ir.Block, kind: type) -> int:
    return sum(isinstance(stmt, kind) for stmt in walk(block))


def _kernel(body: ir.Block) -> ir.KernelIR:
    return ir.KernelIR("k", [], [OUT], body)


def test_a_barrier_keeps_both_loads_of_a_shared_element():
    b = IRBuilder()
    zero = b.const(0, T.i32)
    first = b.global_load(b.global_ptr(SHARED, [zero]))
    b.insert(ir.SimtOp(op="block.sync"))
    second = b.global_load(b.global_ptr(SHARED, [zero]))
    b.global_store(b.global_ptr(OUT, [zero]), first)
    b.global_store(b.global_ptr(OUT, [b.const(1, T.i32)]), second)
    body = simplify.run(_kernel(b.block)).body
    assert _count(body, ir.GlobalLoad) == 2
    assert _count(body, ir.SimtOp) == 1


def test_without_a_barrier_the_loads_merge():
    """The control for the test above: the same two loads with nothing between them are one."""
    b = IRBuilder()
    zero = b.const(0, T.i32)
    first = b.global_load(b.global_ptr(SHARED, [zero]))
    second = b.global_load(b.global_ptr(SHARED, [zero]))
    b.global_store(b.global_ptr(OUT, [zero]), first)
    b.global_store(b.global_ptr(OUT, [b.const(1, T.i32)]), second)
    body = simplify.run(_kernel(b.block)).body
    assert _count(body, ir.GlobalLoad) == 1


def test_a_store_is_not_forwarded_across_a_barrier():
    b = IRBuilder()
    zero = b.const(0, T.i32)
    b.global_store(b.global_ptr(SHARED, [zero]), b.const(7, T.i32))
    b.insert(ir.SimtOp(op="block.sync"))
    loaded = b.global_load(b.global_ptr(SHARED, [zero]))
    b.global_store(b.global_ptr(OUT, [zero]), loaded)
    body = simplify.run(_kernel(b.block)).body
    assert _count(body, ir.GlobalLoad) == 1      # another thread may have written the element


def test_barriers_and_unused_exchanges_are_kept_and_not_merged():
    b = IRBuilder()
    value = b.const(3, T.i32)
    b.insert(ir.SimtOp(op="block.sync"))
    b.insert(ir.SimtOp(op="block.sync"))
    one = b.insert(ir.SimtOp(op="subgroup.reduce_add", args=[value], dtype=T.i32))
    two = b.insert(ir.SimtOp(op="subgroup.reduce_add", args=[value], dtype=T.i32))
    b.insert(ir.SimtOp(op="subgroup.shuffle", args=[value, value], dtype=T.i32))     # unused: still runs
    b.global_store(b.global_ptr(OUT, [b.const(0, T.i32)]), one)
    b.global_store(b.global_ptr(OUT, [b.const(1, T.i32)]), two)
    body = simplify.run(_kernel(b.block)).body
    assert [s.op for s in walk(body) if isinstance(s, ir.SimtOp)] == [
        "block.sync", "block.sync", "subgroup.reduce_add", "subgroup.reduce_add", "subgroup.shuffle"]


def test_shared_arrays_are_not_launch_containers():
    b = IRBuilder()
    zero = b.const(0, T.i32)
    b.global_store(b.global_ptr(SHARED, [zero]), b.global_load(b.global_ptr(OUT, [zero])))
    kernel = _kernel(b.block)
    assert written_slots(kernel) == set() and read_slots(kernel) == {OUT}
    assert isinstance(first_simt_use(kernel.body), ir.GlobalPtr)
