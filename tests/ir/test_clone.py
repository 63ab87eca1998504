"""Deep copies with operand remapping (wgkern/ir/clone.py)."""
from __future__ import annotations

from wgkern.ir import nodes as ir
from wgkern.ir.builder import IRBuilder
from wgkern.ir.clone import clone_block, clone_stmt
from wgkern.ir.ops import BinaryOpKind
from wgkern.ir.printer import format_block
from wgkern.ir.verifier import verify
from wgkern.ir.visitor import walk
from wgkern.lang import types as T

X = ir.ContainerSlot(name="x", kind="field", dtype=T.f32, ndim=1, shape=(8,))


def _body() -> tuple[ir.Block, ir.Stmt]:
    b = IRBuilder()
    outside = b.const(2.0, T.f32)
    acc = b.alloca(T.f32, "acc")
    loop = b.range_for(b.const(0, T.i32), b.const(8, T.i32))
    with b.at(loop.body):
        i = b.loop_index(loop)
        value = b.global_load(b.global_ptr(X, [i]))
        b.store(acc, b.add(b.load(acc), b.mul(value, outside)))
        branch = b.if_(b.binary(BinaryOpKind.CMP_GT, value, outside))
        with b.at(branch.then_block):
            b.insert(ir.Break())
    return b.block, loop


def test_clone_is_deep_and_prints_the_same():
    block, _ = _body()
    value_map: dict = {}
    copy = clone_block(block, value_map)
    assert format_block(copy) == format_block(block)
    originals = {id(s) for s in walk(block)}
    assert not any(id(s) in originals for s in walk(copy))
    assert all(value_map[s] is not s for s in walk(block))
    assert len(value_map) == len(list(walk(block)))


def test_operands_point_into_the_copy():
    block, loop = _body()
    value_map: dict = {}
    copy = clone_block(block, value_map)
    new_loop = value_map[loop]
    index = next(s for s in walk(copy) if isinstance(s, ir.LoopIndex))
    assert index.loop is new_loop
    store = next(s for s in walk(copy) if isinstance(s, ir.LocalStore))
    assert store.alloca is value_map[block.stmts[1]]
    verify(ir.KernelIR("k", [], [X], copy))


def test_mutating_the_copy_leaves_the_original_alone():
    block, loop = _body()
    before = format_block(block)
    value_map: dict = {}
    copy = clone_block(block, value_map)
    ptr = next(s for s in walk(copy) if isinstance(s, ir.GlobalPtr))
    ptr.indices.append(ptr.indices[0])
    value_map[loop].body.stmts.clear()
    assert format_block(block) == before


def test_operands_outside_the_copied_region_are_kept_or_remapped_by_the_caller():
    b = IRBuilder()
    outside = b.const(1, T.i32)
    inner = IRBuilder()
    use = inner.add(outside, outside)
    kept = clone_stmt(use, {})
    assert kept.lhs is outside
    replacement = ir.Const(value=5, dtype=T.i32)
    remapped = clone_stmt(use, {outside: replacement})
    assert remapped.lhs is replacement and remapped.rhs is replacement


def test_clone_remaps_the_expected_value_of_a_compare_and_swap():
    from wgkern.ir.ops import AtomicOpKind
    counter = ir.ContainerSlot(name="n", kind="field", dtype=T.i32, ndim=1, shape=(4,))
    b = IRBuilder()
    ptr = b.global_ptr(counter, [b.const(0, T.i32)])
    expected = b.const(3, T.i32)
    b.atomic(AtomicOpKind.CAS, ptr, b.const(7, T.i32), expected)
    b.atomic(AtomicOpKind.MUL, ptr, b.const(2, T.i32))
    value_map: dict[ir.Stmt, ir.Stmt] = {}
    copy = clone_block(b.block, value_map)
    cas, mul = copy.stmts[-3], copy.stmts[-1]
    assert cas.expected is value_map[expected] and cas.expected is not expected
    assert mul.expected is None and mul.operands() == [copy.stmts[1], copy.stmts[-2]]
