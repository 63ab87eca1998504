"""Folding, identities, CSE, forwarding and dead code removal (wgkern/passes/simplify.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from wgkern.ir import nodes as ir
from wgkern.ir.builder import IRBuilder
from wgkern.ir.ops import AtomicOpKind, BinaryOpKind as B
from wgkern.ir.printer import format_kernel
from wgkern.ir.verifier import verify
from wgkern.ir.visitor import walk
from wgkern.lang import types as T
from wgkern.passes import simplify

SINKS = {t: ir.ContainerSlot(name=f"sink_{t.name}", kind="field", dtype=t, ndim=1, shape=(8,))
         for t in (T.f32, T.f64, T.i32, T.u32, T.u1)}
A = ir.ContainerSlot(name="a", kind="field", dtype=T.f32, ndim=1, shape=(8,))
ARGS = [ir.ArgSpec(name="n", kind="scalar", dtype=T.i32), ir.ArgSpec(name="s", kind="scalar", dtype=T.f32)]


class Kit:
    """An IRBuilder plus `sink(value)`: keeps a value alive by storing it, and finds it again afterwards."""

    def __init__(self) -> None:
        self.b = IRBuilder()
        self.stores: list[ir.GlobalStore] = []

    def sink(self, value: ir.Stmt, slot: int = 0) -> None:
        ptr = self.b.global_ptr(SINKS[value.dtype], [self.b.const(slot, T.i32)])
        self.stores.append(self.b.global_store(ptr, value))

    def arg(self, index: int) -> ir.Stmt:
        return self.b.insert(ir.ArgLoad(arg_index=index, dtype=ARGS[index].dtype))

    def kernel(self) -> ir.KernelIR:
        return ir.KernelIR("k", ARGS, [A, *SINKS.values()], self.b.block)

    def run(self) -> ir.KernelIR:
        kernel = simplify.run(self.kernel())
        verify(kernel)
        return kernel

    def sunk(self, index: int = 0) -> ir.Stmt:
        return self.stores[index].value


def const_value(stmt: ir.Stmt):
    assert isinstance(stmt, ir.Const), stmt
    return stmt.value


def count(kernel: ir.KernelIR, cls: type) -> int:
    return sum(isinstance(s, cls) for s in walk(kernel.body))


# ---- folding ---------------------------------------------------------------------------------------------------

def test_integer_folding_uses_the_documented_semantics():
    k = Kit()
    b = k.b
    k.sink(b.binary(B.FLOORDIV, b.const(-7, T.i32), b.const(2, T.i32)), 0)
    k.sink(b.binary(B.MOD, b.const(-7, T.i32), b.const(0, T.i32)), 1)
    k.sink(b.add(b.const(2 ** 31 - 1, T.i32), b.const(1, T.i32)), 2)
    k.sink(b.binary(B.SHL, b.const(1, T.i32), b.const(33, T.i32)), 3)
    k.run()
    assert [const_value(k.sunk(i)) for i in range(4)] == [-4, 0, -2 ** 31, 2]


def test_float_folding_rounds_to_f32():
    k = Kit()
    k.sink(k.b.div(k.b.const(1.0, T.f32), k.b.const(3.0, T.f32)))
    k.run()
    assert const_value(k.sunk()) == float(np.float32(1) / np.float32(3))


def test_transcendentals_and_float_mod_are_not_folded():
    k = Kit()
    k.sink(k.b.sin(k.b.const(1.0, T.f32)), 0)
    k.sink(k.b.binary(B.MOD, k.b.const(5.0, T.f32), k.b.const(3.0, T.f32)), 1)
    k.run()
    assert isinstance(k.sunk(0), ir.UnaryOp)
    assert isinstance(k.sunk(1), ir.BinaryOp)


def test_casts_of_constants_fold():
    k = Kit()
    k.sink(k.b.insert(ir.Cast(operand=k.b.const(-3.7, T.f32), dtype=T.i32)), 0)
    k.sink(k.b.insert(ir.Cast(operand=k.b.const(-1, T.i32), dtype=T.u32)), 1)
    k.run()
    assert const_value(k.sunk(0)) == -3 and const_value(k.sunk(1)) == 2 ** 32 - 1


def test_field_shapes_fold_but_ndarray_shapes_do_not():
    nd = ir.ContainerSlot(name="nd", kind="ndarray", dtype=T.f32, ndim=1, arg_index=0)
    k = Kit()
    k.sink(k.b.insert(ir.ShapeOf(container=A, axis=0, dtype=T.i32)), 0)
    k.sink(k.b.insert(ir.ShapeOf(container=nd, axis=0, dtype=T.i32)), 1)
    kernel = ir.KernelIR("k", [ir.ArgSpec(name="nd", kind="ndarray", dtype=T.f32, ndim=1)],
                         [A, nd, *SINKS.values()], k.b.block)
    simplify.run(kernel)
    assert const_value(k.sunk(0)) == 8 and isinstance(k.sunk(1), ir.ShapeOf)


# ---- identities ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("op, const, dtype, const_on_left", [
    (B.ADD, 0, T.i32, False), (B.ADD, 0, T.i32, True), (B.SUB, 0, T.i32, False), (B.MUL, 1, T.i32, True),
    (B.MUL, 1.0, T.f32, False), (B.DIV, 1.0, T.f32, False), (B.FLOORDIV, 1, T.i32, False),
    (B.BIT_OR, 0, T.u32, False), (B.BIT_XOR, 0, T.i32, True), (B.BIT_AND, -1, T.i32, False),
    (B.SHL, 0, T.i32, False), (B.SUB, 0.0, T.f32, False), (B.ADD, -0.0, T.f32, False),
])
def test_exact_identities_return_the_operand(op, const, dtype, const_on_left):
    k = Kit()
    x = k.arg(0) if dtype == T.i32 else k.b.cast(k.arg(0), dtype)
    c = k.b.const(const, dtype)
    k.sink(k.b.insert(ir.BinaryOp(op=op, lhs=c if const_on_left else x, rhs=x if const_on_left else c,
                                  dtype=dtype)))
    k.run()
    assert k.sunk() is x


@pytest.mark.parametrize("op, const", [(B.ADD, 0.0), (B.MUL, 0.0), (B.SUB, -0.0)])
def test_float_rules_that_are_not_exact_are_not_applied(op, const):
    # -0.0 + 0.0 == +0.0, 0 * inf == nan, -0.0 - (-0.0) == +0.0: none may become `x` or `0`
    k = Kit()
    x = k.arg(1)
    k.sink(k.b.binary(op, x, k.b.const(const, T.f32)))
    k.run()
    assert isinstance(k.sunk(), ir.BinaryOp)


def test_integer_times_zero_and_self_differences_fold():
    k = Kit()
    x = k.arg(0)
    k.sink(k.b.mul(x, k.b.const(0, T.i32)), 0)
    k.sink(k.b.sub(x, x), 1)
    k.sink(k.b.binary(B.BIT_XOR, x, x), 2)
    k.sink(k.b.binary(B.MOD, x, k.b.const(1, T.i32)), 3)
    k.sink(k.b.binary(B.CMP_EQ, x, x), 4)
    k.run()
    assert [const_value(k.sunk(i)) for i in range(4)] == [0, 0, 0, 0]
    assert const_value(k.sunk(4)) is True


def test_float_self_comparison_is_not_folded():
    k = Kit()
    x = k.arg(1)
    k.sink(k.b.binary(B.CMP_EQ, x, x))     # NaN == NaN is False
    k.run()
    assert isinstance(k.sunk(), ir.BinaryOp)


def test_double_negation_and_same_type_cast_disappear():
    k = Kit()
    x = k.arg(1)
    k.sink(k.b.neg(k.b.neg(x)), 0)
    k.sink(k.b.insert(ir.Cast(operand=x, dtype=T.f32)), 1)
    k.run()
    assert k.sunk(0) is x and k.sunk(1) is x


def test_bool_identities():
    k = Kit()
    c = k.b.binary(B.CMP_LT, k.arg(0), k.b.const(3, T.i32))
    k.sink(k.b.binary(B.BIT_AND, c, k.b.const(True, T.u1)), 0)
    k.sink(k.b.binary(B.BIT_OR, c, k.b.const(True, T.u1)), 1)
    k.sink(k.b.binary(B.BIT_AND, k.b.const(False, T.u1), c), 2)
    k.run()
    assert k.sunk(0) is c and const_value(k.sunk(1)) is True and const_value(k.sunk(2)) is False


def test_select_with_constant_condition():
    k = Kit()
    x, y = k.arg(0), k.b.const(5, T.i32)
    k.sink(k.b.select(k.b.const(False, T.u1), x, y))
    k.run()
    assert const_value(k.sunk()) == 5


# ---- control flow ------------------------------------------------------------------------------------------

def test_if_with_constant_condition_is_inlined():
    k = Kit()
    branch = k.b.if_(k.b.binary(B.CMP_LT, k.b.const(1, T.i32), k.b.const(2, T.i32)))
    with k.b.at(branch.then_block):
        k.sink(k.arg(0), 0)
    with k.b.at(branch.else_block):
        k.sink(k.b.const(9, T.i32), 1)
    kernel = k.run()
    assert count(kernel, ir.If) == 0 and count(kernel, ir.GlobalStore) == 1


def test_empty_constant_range_and_effect_free_loops_are_dropped():
    k = Kit()
    never = k.b.range_for(k.b.const(5, T.i32), k.b.const(5, T.i32))
    with k.b.at(never.body):
        k.sink(k.b.const(1, T.i32))
    pure = k.b.range_for(k.b.const(0, T.i32), k.arg(0))
    with k.b.at(pure.body):
        k.b.add(k.b.loop_index(pure), k.b.const(1, T.i32))
    kernel = k.run()
    assert count(kernel, ir.RangeFor) == 0 and count(kernel, ir.GlobalStore) == 0


def test_loops_with_effects_and_while_loops_are_kept():
    k = Kit()
    loop = k.b.range_for(k.b.const(0, T.i32), k.arg(0))
    with k.b.at(loop.body):
        k.sink(k.b.loop_index(loop))
    spin = k.b.while_()
    with k.b.at(spin.body):
        k.b.const(1, T.i32)
    kernel = k.run()
    assert count(kernel, ir.RangeFor) == 1 and count(kernel, ir.While) == 1


# ---- CSE -----------------------------------------------------------------------------------------------------

def test_cse_merges_pure_values_in_dominating_scopes():
    k = Kit()
    x = k.arg(0)
    outer = k.b.add(x, k.b.const(1, T.i32))
    branch = k.b.if_(k.b.binary(B.CMP_LT, x, k.b.const(0, T.i32)))
    with k.b.at(branch.then_block):
        k.sink(k.b.add(x, k.b.const(1, T.i32)), 0)
    k.sink(outer, 1)
    k.run()
    assert k.sunk(0) is outer


def test_cse_does_not_merge_across_sibling_blocks():
    k = Kit()
    x = k.arg(0)
    branch = k.b.if_(k.b.binary(B.CMP_LT, x, k.b.const(0, T.i32)))
    with k.b.at(branch.then_block):
        first = k.b.mul(x, x)
        k.sink(first, 0)
    with k.b.at(branch.else_block):
        k.sink(k.b.mul(x, x), 1)
    kernel = k.run()
    assert k.sunk(1) is not first
    verify(kernel)


def test_random_values_are_never_merged_or_dropped():
    k = Kit()
    r1 = k.b.insert(ir.RandomValue(dtype=T.f32, site=1))
    k.b.insert(ir.RandomValue(dtype=T.f32, site=1))    # unused: still advances the per-thread counter
    k.sink(r1, 0)
    kernel = k.run()
    assert count(kernel, ir.RandomValue) == 2


def test_global_loads_merge_until_a_store_or_atomic():
    k = Kit()
    ptr = k.b.global_ptr(A, [k.b.const(0, T.i32)])
    first = k.b.global_load(ptr)
    k.sink(k.b.global_load(k.b.global_ptr(A, [k.b.const(0, T.i32)])), 0)
    other = k.b.global_ptr(A, [k.arg(0)])
    k.b.atomic(AtomicOpKind.ADD, other, k.b.const(1.0, T.f32))
    k.sink(k.b.global_load(ptr), 1)
    k.sink(first, 2)
    kernel = k.run()
    assert k.sunk(0) is first
    assert k.sunk(1) is not first and isinstance(k.sunk(1), ir.GlobalLoad)
    assert count(kernel, ir.GlobalLoad) == 2


def test_global_store_forwards_to_a_load_of_the_same_pointer_only():
    k = Kit()
    ptr = k.b.global_ptr(A, [k.b.const(3, T.i32)])
    value = k.b.mul(k.arg(1), k.arg(1))
    k.b.global_store(ptr, value)
    k.sink(k.b.global_load(ptr), 0)
    k.b.global_store(k.b.global_ptr(A, [k.arg(0)]), k.b.const(0.0, T.f32))   # a[n] may alias a[3]
    k.sink(k.b.global_load(ptr), 1)
    k.run()
    assert k.sunk(0) is value
    assert isinstance(k.sunk(1), ir.GlobalLoad)


def test_a_store_that_may_be_out_of_range_forwards_nothing():
    """a[n] = v with n unknown may be dropped (out of range), and a load of a[n] then reads 0, not v."""
    k = Kit()
    ptr = k.b.global_ptr(A, [k.arg(0)])
    k.b.global_store(ptr, k.b.mul(k.arg(1), k.arg(1)))
    k.sink(k.b.global_load(ptr), 0)
    k.run()
    assert isinstance(k.sunk(0), ir.GlobalLoad)


def test_loads_inside_a_loop_that_writes_are_not_merged_with_loads_before_it():
    k = Kit()
    ptr = k.b.global_ptr(A, [k.b.const(0, T.i32)])
    before = k.b.global_load(ptr)
    loop = k.b.range_for(k.b.const(0, T.i32), k.arg(0))
    with k.b.at(loop.body):
        inside = k.b.global_load(ptr)
        k.b.global_store(ptr, k.b.add(inside, before))
    kernel = k.run()
    assert count(kernel, ir.GlobalLoad) == 2


# ---- locals ---------------------------------------------------------------------------------------------------

def test_store_to_load_forwarding_within_a_block_and_into_ifs():
    k = Kit()
    local = k.b.alloca(T.i32)
    x = k.arg(0)
    k.b.store(local, x)
    k.sink(k.b.load(local), 0)
    branch = k.b.if_(k.b.binary(B.CMP_LT, x, k.b.const(0, T.i32)))
    with k.b.at(branch.then_block):
        k.sink(k.b.load(local), 1)
        k.b.store(local, k.b.const(4, T.i32))
    k.sink(k.b.load(local), 2)
    kernel = k.run()
    assert k.sunk(0) is x and k.sunk(1) is x
    assert isinstance(k.sunk(2), ir.LocalLoad)    # the if may have stored
    verify(kernel)


def test_loop_carried_locals_are_not_forwarded_into_the_loop():
    k = Kit()
    acc = k.b.alloca(T.i32)
    k.b.store(acc, k.b.const(1, T.i32))
    loop = k.b.range_for(k.b.const(0, T.i32), k.arg(0))
    with k.b.at(loop.body):
        k.b.store(acc, k.b.mul(k.b.load(acc), k.b.const(2, T.i32)))
    k.sink(k.b.load(acc))
    kernel = k.run()
    assert count(kernel, ir.LocalLoad) == 2 and count(kernel, ir.LocalStore) == 2


def test_locals_never_read_are_removed_with_their_stores():
    k = Kit()
    local = k.b.alloca(T.f32)
    k.b.store(local, k.arg(1))
    k.sink(k.arg(0))
    kernel = k.run()
    assert count(kernel, ir.Alloca) == 0 and count(kernel, ir.LocalStore) == 0


# ---- dead code and whole-kernel behaviour ---------------------------------------------------------------------

def test_unused_pure_values_and_loads_are_removed_but_atomics_stay():
    k = Kit()
    k.b.mul(k.arg(0), k.b.const(3, T.i32))
    k.b.global_load(k.b.global_ptr(A, [k.b.const(1, T.i32)]))
    k.b.atomic(AtomicOpKind.ADD, k.b.global_ptr(A, [k.b.const(2, T.i32)]), k.b.const(1.0, T.f32))
    kernel = k.run()
    assert [type(s) for s in kernel.body.stmts] == [ir.Const, ir.Const, ir.GlobalPtr, ir.AtomicOp]


def _dead_code_removed(build) -> list[type]:
    """The statement classes left of what `build(kit)` made, after dead-code removal alone (no forward walk, so
    nothing is forwarded or folded first): each case below frees a statement only once another is removed."""
    k = Kit()
    build(k)
    assert simplify._remove_dead([k.b.block], [])
    assert not simplify._remove_dead([k.b.block], [])        # nothing dead left
    verify(k.kernel())
    return [type(s) for s in walk(k.b.block)]


def test_dead_code_removal_follows_a_removed_load_to_its_local():
    def build(k):
        local = k.b.alloca(T.i32)
        k.b.store(local, k.arg(0))
        k.b.load(local)                        # unused: once it is gone, nothing reads the local
    assert _dead_code_removed(build) == []


def test_dead_code_removal_drops_an_if_whose_only_effect_was_a_dead_store():
    def build(k):
        local = k.b.alloca(T.i32)              # never read
        branch = k.b.if_(k.b.binary(B.CMP_LT, k.arg(0), k.b.const(3, T.i32)))
        with k.b.at(branch.then_block):
            k.b.store(local, k.b.const(1, T.i32))
    assert _dead_code_removed(build) == []


def test_dead_code_removal_drops_a_while_left_with_its_break_only():
    def build(k):
        loop = k.b.while_()
        with k.b.at(loop.body):
            k.b.add(k.arg(0), k.b.const(1, T.i32))      # unused
            k.b.insert(ir.Break())
    assert _dead_code_removed(build) == []


def test_dead_code_removal_frees_what_a_dropped_if_used_inside():
    def build(k):
        outer = k.b.mul(k.arg(0), k.b.const(5, T.i32))      # used only inside the dead `if`
        branch = k.b.if_(k.b.binary(B.CMP_LT, k.arg(0), k.b.const(3, T.i32)))
        with k.b.at(branch.then_block):
            k.b.add(outer, k.b.const(1, T.i32))
        k.sink(k.arg(1))
    assert _dead_code_removed(build) == [ir.ArgLoad, ir.Const, ir.GlobalPtr, ir.GlobalStore]


def test_simplify_is_idempotent():
    k = Kit()
    x = k.arg(0)
    loop = k.b.range_for(k.b.const(0, T.i32), x)
    with k.b.at(loop.body):
        i = k.b.loop_index(loop)
        k.b.global_store(k.b.global_ptr(A, [i]), k.b.mul(k.b.cast(i, T.f32), k.b.const(1.0, T.f32)))
    once = format_kernel(k.run())
    assert format_kernel(simplify.run(k.kernel())) == once


def test_simplified_kernel_computes_the_same(interpret):
    k = Kit()
    x = k.arg(0)
    acc = k.b.alloca(T.i32)
    loop = k.b.range_for(k.b.const(0, T.i32), k.b.const(8, T.i32))
    with k.b.at(loop.body):
        i = k.b.loop_index(loop)
        k.b.store(acc, k.b.add(k.b.load(acc), k.b.binary(B.FLOORDIV, k.b.sub(i, k.b.const(4, T.i32)), x)))
        ptr = k.b.global_ptr(SINKS[T.i32], [i])
        k.b.global_store(ptr, k.b.add(k.b.load(acc), k.b.binary(B.MOD, i, k.b.const(-3, T.i32))))
        k.b.global_store(ptr, k.b.add(k.b.global_load(ptr), k.b.mul(i, k.b.const(0, T.i32))))
    original = k.kernel()
    arrays = [np.zeros(s.shape, s.dtype.np_dtype) for s in original.containers]
    expected = interpret(original, arrays, [-3, 0.0])
    simplified = k.run()
    got = interpret(simplified, arrays, [-3, 0.0])
    for e, g in zip(expected, got):
        np.testing.assert_array_equal(e, g)


def test_load_of_a_fresh_local_reads_zero_even_inside_a_loop():
    k = Kit()
    loop = k.b.range_for(k.b.const(0, T.i32), k.arg(0))
    with k.b.at(loop.body):
        local = k.b.alloca(T.i32)          # zero again in every iteration
        k.sink(k.b.load(local), 0)
        k.b.store(local, k.b.loop_index(loop))
    kernel = k.run()
    assert const_value(k.sunk(0)) == 0
    assert count(kernel, ir.Alloca) == 0


def test_outer_local_is_not_zero_inside_a_loop_that_stores_it():
    k = Kit()
    local = k.b.alloca(T.i32)
    loop = k.b.range_for(k.b.const(0, T.i32), k.arg(0))
    with k.b.at(loop.body):
        k.sink(k.b.load(local), 0)
        k.b.store(local, k.b.loop_index(loop))
    k.run()
    assert isinstance(k.sunk(0), ir.LocalLoad)


@dataclass(eq=False, slots=True, kw_only=True)
class _FancyStmt(ir.Stmt):
    """A statement class simplify knows nothing about (as autodiff's are)."""
    OPERANDS: ClassVar[tuple[str, ...]] = ("value",)
    BLOCKS: ClassVar[tuple[str, ...]] = ("body",)
    value: ir.Stmt
    body: ir.Block


def test_unknown_statements_are_kept_and_block_memory_forwarding():
    k = Kit()
    ptr = k.b.global_ptr(A, [k.b.const(0, T.i32)])
    first = k.b.global_load(ptr)
    k.b.insert(_FancyStmt(value=first, body=ir.Block(), dtype=None))
    k.sink(k.b.global_load(ptr))
    kernel = k.run()
    assert count(kernel, _FancyStmt) == 1
    assert k.sunk() is not first


def test_constants_are_hoisted_and_merged_across_sibling_blocks():
    k = Kit()
    branch = k.b.if_(k.b.binary(B.CMP_LT, k.arg(0), k.b.const(0, T.i32)))
    with k.b.at(branch.then_block):
        k.sink(k.b.const(0.5, T.f32), 0)
    with k.b.at(branch.else_block):
        k.sink(k.b.const(0.5, T.f32), 0)
    kernel = k.run()
    halves = [s for s in walk(kernel.body) if isinstance(s, ir.Const) and s.value == 0.5]
    assert len(halves) == 1 and halves[0] in kernel.body.stmts
