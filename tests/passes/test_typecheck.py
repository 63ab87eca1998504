"""Dtype repairs and user type errors (wgkern/passes/typecheck.py)."""
from __future__ import annotations

import pytest

from wgkern.errors import CompileError, SourceLoc
from wgkern.ir import nodes as ir
from wgkern.ir.builder import IRBuilder
from wgkern.ir.ops import AtomicOpKind, BinaryOpKind, UnaryOpKind
from wgkern.ir.verifier import verify
from wgkern.lang import types as T
from wgkern.passes import typecheck

X = ir.ContainerSlot(name="x", kind="field", dtype=T.f32, ndim=1, shape=(4,))
LOC = SourceLoc("user.py", 3, 8, "    y = a & b")


def kernel(block: ir.Block) -> ir.KernelIR:
    return ir.KernelIR("k", [], [X], block)


def test_mixed_binary_operands_get_casts():
    b = IRBuilder()
    i, f = b.const(1, T.i32), b.const(2.0, T.f32)
    add = b.insert(ir.BinaryOp(op=BinaryOpKind.ADD, lhs=i, rhs=f, dtype=None))
    k = typecheck.run(kernel(b.block))
    verify(k)
    assert isinstance(add.lhs, ir.Cast) and add.lhs.dtype == T.f32 and add.lhs.operand is i
    assert add.rhs is f and add.dtype == T.f32
    assert k.body.stmts.index(add.lhs) < k.body.stmts.index(add)


def test_comparison_result_is_u1_and_if_condition_is_cast():
    b = IRBuilder()
    a = b.const(3, T.i32)
    cmp = b.insert(ir.BinaryOp(op=BinaryOpKind.CMP_LT, lhs=a, rhs=b.const(4, T.i64), dtype=T.i32))
    branch = b.insert(ir.If(cond=a, then_block=ir.Block(), else_block=ir.Block()))
    typecheck.run(kernel(b.block))
    assert cmp.dtype == T.u1 and cmp.lhs.dtype == T.i64
    assert isinstance(branch.cond, ir.Cast) and branch.cond.dtype == T.u1


def test_stored_values_are_converted_to_the_destination():
    b = IRBuilder()
    local = b.alloca(T.i32)
    store = b.insert(ir.LocalStore(alloca=local, value=b.const(1.5, T.f32)))
    ptr = b.global_ptr(X, [b.const(0, T.i32)])
    gstore = b.insert(ir.GlobalStore(ptr=ptr, value=b.const(1, T.i32)))
    atomic = b.insert(ir.AtomicOp(op=AtomicOpKind.ADD, ptr=ptr, value=b.const(1, T.i32), dtype=T.i32))
    k = typecheck.run(kernel(b.block))
    verify(k)
    assert store.value.dtype == T.i32 and gstore.value.dtype == T.f32 and atomic.dtype == T.f32


def test_indices_and_loop_bounds_become_i32():
    b = IRBuilder()
    idx = b.const(1, T.i64)
    ptr = b.insert(ir.GlobalPtr(container=X, indices=[idx], dtype=T.f32))
    loop = b.insert(ir.RangeFor(begin=b.const(0, T.u8), end=b.const(3, T.i64), body=ir.Block()))
    verify(typecheck.run(kernel(b.block)))
    assert ptr.indices[0].dtype == T.i32 and loop.begin.dtype == T.i32 and loop.end.dtype == T.i32


def test_bool_arithmetic_is_done_in_i32():
    b = IRBuilder()
    t = b.const(True, T.u1)
    add = b.insert(ir.BinaryOp(op=BinaryOpKind.ADD, lhs=t, rhs=t, dtype=T.u1))
    neg = b.insert(ir.UnaryOp(op=UnaryOpKind.NEG, operand=t, dtype=T.u1))
    verify(typecheck.run(kernel(b.block)))
    assert add.dtype == T.i32 and neg.dtype == T.i32


def test_float_only_ops_on_ints_use_the_default_float():
    b = IRBuilder()
    i = b.const(2, T.i32)
    div = b.insert(ir.BinaryOp(op=BinaryOpKind.DIV, lhs=i, rhs=i, dtype=T.i32))
    sin = b.insert(ir.UnaryOp(op=UnaryOpKind.SIN, operand=i, dtype=T.i32))
    verify(typecheck.run(kernel(b.block)))
    assert div.dtype == T.f32 and sin.dtype == T.f32


def test_repairs_happen_inside_nested_blocks_and_tasks():
    b = IRBuilder()
    loop = b.range_for(b.const(0, T.i32), b.const(4, T.i32))
    with b.at(loop.body):
        i = b.loop_index(loop)
        b.insert(ir.GlobalStore(ptr=b.global_ptr(X, [i]), value=i))
    verify(typecheck.run(kernel(b.block)))


@pytest.mark.parametrize("op, lhs, rhs, message", [
    (BinaryOpKind.BIT_AND, T.f32, T.f32, "`&` needs integer operands"),
    (BinaryOpKind.SHL, T.i32, T.f32, "`<<` needs integer operands"),
    (BinaryOpKind.FLOORDIV, T.u1, T.u1, "`//` is not defined on u1"),
    (BinaryOpKind.MOD, T.u1, T.u1, "`%` is not defined on u1"),
    (BinaryOpKind.SHR, T.u1, T.i32, "`>>` needs an integer left operand"),
])
def test_user_type_errors_name_the_source_line(op, lhs, rhs, message):
    b = IRBuilder(loc=LOC)
    a, c = b.const(1, lhs), b.const(1, rhs)
    b.insert(ir.BinaryOp(op=op, lhs=a, rhs=c, dtype=lhs))
    with pytest.raises(CompileError, match=message) as info:
        typecheck.run(kernel(b.block))
    assert info.value.lineno == 3 and "user.py:3:9" in str(info.value)


def test_other_user_type_errors():
    b = IRBuilder(loc=LOC)
    b.insert(ir.UnaryOp(op=UnaryOpKind.BIT_NOT, operand=b.const(1.0, T.f32), dtype=T.f32))
    with pytest.raises(CompileError, match="`~` needs an integer"):
        typecheck.run(kernel(b.block))
    b = IRBuilder(loc=LOC)
    b.insert(ir.GlobalPtr(container=X, indices=[b.const(0.0, T.f32)], dtype=T.f32))
    with pytest.raises(CompileError, match="must be an integer"):
        typecheck.run(kernel(b.block))
    b = IRBuilder(loc=LOC)
    b.insert(ir.RangeFor(begin=b.const(0.0, T.f32), end=b.const(3, T.i32), body=ir.Block()))
    with pytest.raises(CompileError, match="range\\(\\) bounds must be integers"):
        typecheck.run(kernel(b.block))
    b = IRBuilder(loc=LOC)
    ptr = b.global_ptr(X, [b.const(0, T.i32)])
    b.insert(ir.AtomicOp(op=AtomicOpKind.OR, ptr=ptr, value=b.const(1.0, T.f32), dtype=T.f32))
    with pytest.raises(CompileError, match="atomic_or needs an integer destination"):
        typecheck.run(kernel(b.block))


def test_constants_hold_the_python_type_of_their_dtype():
    f = ir.Const(value=1, dtype=T.f32)
    t = ir.Const(value=1, dtype=T.u1)
    w = ir.Const(value=-1, dtype=T.u8)
    verify(typecheck.run(kernel(ir.Block([f, t, w]))))
    assert f.value == 1.0 and isinstance(f.value, float) and t.value is True and w.value == 255
