"""Rejections and acceptances of the IR verifier (wgkern/ir/verifier.py)."""
from __future__ import annotations

import pytest

from wgkern.errors import InternalCompilerError, SourceLoc
from wgkern.ir import nodes as ir
from wgkern.ir.builder import IRBuilder
from wgkern.ir.ops import AtomicOpKind, BinaryOpKind, UnaryOpKind
from wgkern.ir.verifier import verify
from wgkern.lang import types as T

X = ir.ContainerSlot(name="x", kind="field", dtype=T.f32, ndim=2, shape=(4, 4))
N = ir.ContainerSlot(name="n", kind="field", dtype=T.i32, ndim=1, shape=(4,))
LOC = SourceLoc("user.py", 7, 2, "y = a + b")


def kernel(block: ir.Block, args: list[ir.ArgSpec] | None = None) -> ir.KernelIR:
    return ir.KernelIR("k", args or [], [X, N], block)


def rejects(kernel_or_offloaded, message: str, **kw) -> InternalCompilerError:
    with pytest.raises(InternalCompilerError, match=message) as info:
        verify(kernel_or_offloaded, **kw)
    return info.value


def test_well_formed_kernel_passes():
    b = IRBuilder()
    loop = b.range_for(b.const(0, T.i32), b.const(4, T.i32))
    with b.at(loop.body):
        i = b.loop_index(loop)
        v = b.global_load(b.global_ptr(X, [i, i]))
        w = b.while_()
        with b.at(w.body):
            branch = b.if_(b.binary(BinaryOpKind.CMP_LT, v, b.const(1.0, T.f32)))
            with b.at(branch.then_block):
                b.insert(ir.Break())
        b.atomic(AtomicOpKind.ADD, b.global_ptr(N, [i]), b.const(1, T.i32))
    verify(kernel(b.block))


def test_use_before_definition_is_rejected_with_location():
    later = ir.Const(value=1, dtype=T.i32)
    use = ir.BinaryOp(op=BinaryOpKind.ADD, lhs=later, rhs=later, dtype=T.i32, loc=LOC)
    error = rejects(kernel(ir.Block([use, later])), "not defined before it")
    assert error.loc == LOC
    assert "user.py:7:3" in str(error)
    assert "add" in str(error)


def test_value_from_a_sibling_block_does_not_dominate():
    b = IRBuilder()
    branch = b.if_(b.const(True, T.u1))
    with b.at(branch.then_block):
        inner = b.const(3, T.i32)
    with b.at(branch.else_block):
        b.add(inner, inner)
    rejects(kernel(b.block), "not defined before it")


def test_value_defined_inside_a_loop_is_invisible_after_it():
    b = IRBuilder()
    loop = b.range_for(b.const(0, T.i32), b.const(4, T.i32))
    with b.at(loop.body):
        inner = b.const(3, T.i32)
    b.add(inner, inner)
    rejects(kernel(b.block), "not defined before it")


def test_loop_index_outside_its_loop():
    b = IRBuilder()
    loop = b.range_for(b.const(0, T.i32), b.const(4, T.i32))
    b.loop_index(loop)
    rejects(kernel(b.block), "loop index outside its loop")


@pytest.mark.parametrize("control", [ir.Break, ir.Continue])
def test_break_and_continue_outside_loops(control):
    rejects(kernel(ir.Block([control()])), "outside any loop")


def test_statement_used_twice_in_the_tree():
    c = ir.Const(value=1, dtype=T.i32)
    rejects(kernel(ir.Block([c, c])), "appears twice")


def test_binary_operand_dtypes_must_agree():
    b = IRBuilder()
    a, c = b.const(1, T.i32), b.const(1.0, T.f32)
    b.insert(ir.BinaryOp(op=BinaryOpKind.ADD, lhs=a, rhs=c, dtype=T.f32))
    rejects(kernel(b.block), "operand dtypes differ")
    verify(kernel(b.block), check_types=False)   # structure alone is fine


def test_comparison_must_produce_u1():
    b = IRBuilder()
    a = b.const(1, T.i32)
    b.insert(ir.BinaryOp(op=BinaryOpKind.CMP_LT, lhs=a, rhs=a, dtype=T.i32))
    rejects(kernel(b.block), "result dtype should be u1")


def test_arithmetic_on_u1_and_bit_ops_on_floats_are_rejected():
    b = IRBuilder()
    t = b.const(True, T.u1)
    b.insert(ir.BinaryOp(op=BinaryOpKind.ADD, lhs=t, rhs=t, dtype=T.u1))
    rejects(kernel(b.block), "does not take u1")
    b = IRBuilder()
    f = b.const(1.0, T.f32)
    b.insert(ir.BinaryOp(op=BinaryOpKind.BIT_AND, lhs=f, rhs=f, dtype=T.f32))
    rejects(kernel(b.block), "needs integer operands")


def test_float_only_unary_on_int():
    b = IRBuilder()
    b.insert(ir.UnaryOp(op=UnaryOpKind.SIN, operand=b.const(1, T.i32), dtype=T.i32))
    rejects(kernel(b.block), "needs a float operand")


def test_global_ptr_index_count_and_dtype():
    b = IRBuilder()
    i = b.const(0, T.i32)
    b.insert(ir.GlobalPtr(container=X, indices=[i], dtype=T.f32))
    rejects(kernel(b.block), "1 indices for x of ndim 2")
    b = IRBuilder()
    j = b.const(0, T.i64)
    b.insert(ir.GlobalPtr(container=X, indices=[j, j], dtype=T.f32))
    rejects(kernel(b.block), "indices must be i32")


def test_container_must_belong_to_the_kernel():
    stranger = ir.ContainerSlot(name="stranger", kind="field", dtype=T.f32, ndim=0, shape=())
    rejects(kernel(ir.Block([ir.GlobalPtr(container=stranger, indices=[], dtype=T.f32)])), "not in the kernel")


def test_if_condition_must_be_u1():
    b = IRBuilder()
    b.insert(ir.If(cond=b.const(1, T.i32), then_block=ir.Block(), else_block=ir.Block()))
    rejects(kernel(b.block), "if condition must be u1")


def test_store_value_dtype_must_match_the_local():
    b = IRBuilder()
    slot = b.alloca(T.f32)
    b.insert(ir.LocalStore(alloca=slot, value=b.const(1, T.i32)))
    rejects(kernel(b.block), "stored value's dtype")


def test_const_value_must_fit_its_dtype():
    rejects(kernel(ir.Block([ir.Const(value=300, dtype=T.u8)])), "is not a u8")


def test_arg_load_must_name_a_scalar_argument():
    block = ir.Block([ir.ArgLoad(arg_index=1, dtype=T.i32)])
    args = [ir.ArgSpec(name="a", kind="scalar", dtype=T.i32)]
    rejects(kernel(block, args), "argument 1 does not exist")


# ---- the offload contract --------------------------------------------------------------------------------------

def _range_task(body_builder=None, bounds_extra=()) -> ir.OffloadedKernel:
    bounds = ir.Block()
    begin = bounds.append(ir.Const(value=0, dtype=T.i32))
    end = bounds.append(ir.Const(value=4, dtype=T.i32))
    for stmt in bounds_extra:
        bounds.append(stmt)
    loop = ir.RangeFor(begin=begin, end=end, body=ir.Block(), parallel=True)
    if body_builder is not None:
        body_builder(loop, begin)
    task = ir.Task("t", "range", bounds, loop, loop.body)
    return ir.OffloadedKernel("k", [], [X, N], [task])


def test_range_task_body_may_use_its_loop_index():
    def body(loop, begin):
        b = IRBuilder(loop.body)
        i = b.loop_index(loop)
        b.global_store(b.global_ptr(N, [i]), i)
    verify(_range_task(body))


def test_range_task_body_must_not_reference_its_bounds():
    def body(loop, begin):
        b = IRBuilder(loop.body)
        b.global_store(b.global_ptr(N, [begin]), begin)
    rejects(_range_task(body), "not defined before it")


def test_bounds_may_not_hold_effects_or_locals():
    rejects(_range_task(bounds_extra=[ir.Alloca(dtype=T.i32)]), "not allowed in a task's bounds")


def test_range_task_loop_must_be_parallel_and_own_the_body():
    offloaded = _range_task()
    offloaded.tasks[0].loop.parallel = False
    rejects(offloaded, "parallel RangeFor")


def test_serial_task_must_be_self_contained_across_tasks():
    first = ir.Block([ir.Const(value=1, dtype=T.i32)])
    b = IRBuilder()
    b.global_store(b.global_ptr(N, [b.const(0, T.i32)]), first.stmts[0])
    tasks = [ir.Task("a", "serial", ir.Block(), None, first), ir.Task("b", "serial", ir.Block(), None, b.block)]
    rejects(ir.OffloadedKernel("k", [], [X, N], tasks), "not defined before it")


def test_serial_task_has_no_bounds():
    task = ir.Task("a", "serial", ir.Block([ir.Const(value=1, dtype=T.i32)]), None, ir.Block())
    rejects(ir.OffloadedKernel("k", [], [], [task]), "no loop and no bounds")


def test_shape_axis_and_float_bit_atomics_are_checked():
    rejects(kernel(ir.Block([ir.ShapeOf(container=N, axis=1, dtype=T.i32)])), "axis 1 out of range")
    b = IRBuilder()
    ptr = b.global_ptr(X, [b.const(0, T.i32), b.const(0, T.i32)])
    b.insert(ir.AtomicOp(op=AtomicOpKind.XOR, ptr=ptr, value=b.const(1.0, T.f32), dtype=T.f32))
    rejects(kernel(b.block), "atomic xor on floats")


def test_select_condition_and_branches():
    b = IRBuilder()
    one = b.const(1, T.i32)
    b.insert(ir.TernarySelect(cond=one, true_value=one, false_value=one, dtype=T.i32))
    rejects(kernel(b.block), "condition must be u1")


def test_compare_and_swap_has_an_expected_value_and_no_other_atomic_does():
    b = IRBuilder()
    ptr = b.global_ptr(N, [b.const(0, T.i32)])
    b.atomic(AtomicOpKind.CAS, ptr, b.const(2, T.i32), b.const(1, T.i32))
    verify(kernel(b.block))                                    # a well-formed CAS: expected is optional, set
    b = IRBuilder()
    ptr = b.global_ptr(N, [b.const(0, T.i32)])
    b.insert(ir.AtomicOp(op=AtomicOpKind.CAS, ptr=ptr, value=b.const(2, T.i32), dtype=T.i32))
    rejects(kernel(b.block), "expected value if and only if it is a compare-and-swap")
    b = IRBuilder()
    ptr = b.global_ptr(N, [b.const(0, T.i32)])
    b.insert(ir.AtomicOp(op=AtomicOpKind.EXCHANGE, ptr=ptr, value=b.const(2, T.i32), expected=b.const(1, T.i32),
                         dtype=T.i32))
    rejects(kernel(b.block), "expected value if and only if it is a compare-and-swap")
    b = IRBuilder()
    ptr = b.global_ptr(N, [b.const(0, T.i32)])
    b.insert(ir.AtomicOp(op=AtomicOpKind.CAS, ptr=ptr, value=b.const(2, T.i32), expected=b.const(1, T.i64),
                         dtype=T.i32))
    rejects(kernel(b.block), "expected value's dtype differs")
    b = IRBuilder()
    ptr = b.global_ptr(X, [b.const(0, T.i32), b.const(0, T.i32)])
    b.atomic(AtomicOpKind.CAS, ptr, b.const(2.0, T.f32), b.const(1.0, T.f32))
    rejects(kernel(b.block), "atomic cas on floats")
