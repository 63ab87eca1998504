"""Read/write sets and effect facts (wgkern/passes/analysis.py)."""
from __future__ import annotations

from wgkern.ir import nodes as ir
from wgkern.ir.builder import IRBuilder
from wgkern.ir.ops import AtomicOpKind
from wgkern.lang import types as T
from wgkern.passes import analysis, offload

A = ir.ContainerSlot(name="a", kind="field", dtype=T.f32, ndim=1, shape=(4,))
B = ir.ContainerSlot(name="b", kind="field", dtype=T.f32, ndim=1, shape=(4,))
C = ir.ContainerSlot(name="c", kind="ndarray", dtype=T.i32, ndim=1, arg_index=0)
D = ir.ContainerSlot(name="d", kind="field", dtype=T.f32, ndim=1, shape=(4,))


def _kernel() -> ir.KernelIR:
    b = IRBuilder()
    loop = b.range_for(b.const(0, T.i32), b.insert(ir.ShapeOf(container=D, axis=0, dtype=T.i32)))
    with b.at(loop.body):
        i = b.loop_index(loop)
        value = b.global_load(b.global_ptr(A, [i]))
        branch = b.if_(b.const(True, T.u1))
        with b.at(branch.then_block):
            b.global_store(b.global_ptr(B, [i]), value)
        b.atomic(AtomicOpKind.ADD, b.global_ptr(C, [i]), b.const(1, T.i32))
    return ir.KernelIR("k", [ir.ArgSpec(name="c", kind="ndarray", dtype=T.i32, ndim=1)], [A, B, C, D], b.block)


def test_read_and_written_slots_of_a_kernel_and_its_offloaded_form():
    kernel = _kernel()
    assert analysis.written_slots(kernel) == {B, C}
    assert analysis.read_slots(kernel) == {A, C}     # atomics read; shapes are not data
    offloaded = offload.run(_kernel())
    assert analysis.written_slots(offloaded) == {B, C}
    assert analysis.read_slots(offloaded) == {A, C}


def test_effects():
    b = IRBuilder()
    local = b.alloca(T.i32)
    store = b.store(local, b.const(1, T.i32))
    random = b.insert(ir.RandomValue(dtype=T.f32))
    assert analysis.has_effects(store) and analysis.has_effects(random)
    assert not analysis.has_global_effects(b.block)
    b.global_store(b.global_ptr(A, [b.const(0, T.i32)]), b.const(0.0, T.f32))
    assert analysis.has_global_effects(b.block)
    assert not analysis.has_effects(ir.If(cond=local, then_block=ir.Block(), else_block=ir.Block()))
    assert analysis.stored_allocas(b.block) == {local}
