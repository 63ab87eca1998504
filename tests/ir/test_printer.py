"""Text form of the IR (wgkern/ir/printer.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

import wgkern as wk
from wgkern.errors import SourceLoc
from wgkern.ir import nodes as ir
from wgkern.ir.builder import IRBuilder
from wgkern.ir.ops import AtomicOpKind, BinaryOpKind, UnaryOpKind
from wgkern.ir.printer import describe, format_block, format_kernel
from wgkern.lang import types as T

X = ir.ContainerSlot(name="x", kind="field", dtype=T.f32, ndim=1, shape=(8,))


def _loop_kernel() -> ir.KernelIR:
    b = IRBuilder()
    loop = b.range_for(b.const(0, T.i32), b.const(8, T.i32))
    with b.at(loop.body):
        i = b.loop_index(loop)
        ptr = b.global_ptr(X, [i])
        value = b.global_load(ptr)
        cond = b.binary(BinaryOpKind.CMP_GT, value, b.const(0.5, T.f32))
        branch = b.if_(cond)
        with b.at(branch.then_block):
            b.global_store(ptr, b.add(value, value))
        with b.at(branch.else_block):
            b.atomic(AtomicOpKind.ADD, ptr, b.const(1.0, T.f32))
    return ir.KernelIR("k", [], [X], b.block)


def test_binary_op_line_form():
    b = IRBuilder()
    s = b.add(b.const(1.0, T.f32), b.const(2.0, T.f32))
    text = format_block(b.block)
    assert text.splitlines() == ["%0 = const 1.0 : f32", "%1 = const 2.0 : f32", "%2 = add %0 %1 : f32"]
    assert describe(s).startswith("%0 = add %?Const@")    # alone, operands are not named


def test_nested_blocks_are_indented_and_else_is_labelled():
    text = format_kernel(_loop_kernel())
    lines = text.splitlines()
    assert lines[0] == "kernel k()"
    assert "  container 0 x: field f32[ndim=1] shape=(8,)" in lines
    assert "  %2 = for %0 .. %1 {" in lines
    assert "    %3 = loop_index %2 : i32" in lines
    assert "    if %7 {" in lines
    assert "    } else {" in lines
    assert any(line.startswith("      gstore %4 <- ") for line in lines)
    assert any("atomic_add %4" in line for line in lines)


def test_locations_are_trailing_comments_when_asked():
    b = IRBuilder(loc=SourceLoc("demo.py", 12, 4, "x = 1"))
    b.const(1, T.i32)
    kernel = ir.KernelIR("k", [], [], b.block)
    assert "# demo.py:12:5" in format_kernel(kernel, with_locs=True)
    assert "#" not in format_kernel(kernel)


def test_bool_constants_and_casts():
    b = IRBuilder()
    c = b.const(True, T.u1)
    b.insert(ir.Cast(operand=c, dtype=T.i32))
    b.insert(ir.Cast(operand=b.const(1.0, T.f32), dtype=T.i32, bitcast=True))
    text = format_block(b.block)
    assert "%0 = const true : u1" in text
    assert "%1 = cast %0 : i32" in text
    assert "bitcast %2 : i32" in text


def test_offloaded_kernel_prints_tasks_bounds_and_loop():
    bounds = ir.Block()
    begin = bounds.append(ir.Const(value=0, dtype=T.i32))
    end = bounds.append(ir.Const(value=4, dtype=T.i32))
    loop = ir.RangeFor(begin=begin, end=end, body=ir.Block(), parallel=True)
    task = ir.Task("k_t0_range", "range", bounds, loop, loop.body)
    kernel = ir.OffloadedKernel("k", [], [X], [task])
    text = format_kernel(kernel)
    assert "task k_t0_range range {" in text
    assert "  bounds:" in text
    assert "  %2 = for %0 .. %1 parallel {" in text


@dataclass(eq=False, slots=True, kw_only=True)
class _FancyStmt(ir.Stmt):
    """A statement class the printer has no specific form for."""
    OPERANDS: ClassVar[tuple[str, ...]] = ("value",)
    BLOCKS: ClassVar[tuple[str, ...]] = ("body",)
    value: ir.Stmt
    body: ir.Block
    depth: int = 3


def test_unknown_statement_classes_print_generically():
    b = IRBuilder()
    c = b.const(2, T.i32)
    fancy = b.insert(_FancyStmt(value=c, body=ir.Block(), depth=5, dtype=T.i32))
    with b.at(fancy.body):
        b.const(7, T.i32)
    text = format_block(b.block)
    assert "%1 = _FancyStmt %0 depth=5 : i32 {" in text
    assert "  %2 = const 7 : i32" in text


def test_reference_to_unprinted_statement_is_visible():
    outside = ir.Const(value=1, dtype=T.i32)
    block = ir.Block([ir.UnaryOp(op=UnaryOpKind.NEG, operand=outside, dtype=T.i32)])
    assert "%?Const@" in format_block(block)


def test_compare_and_swap_prints_expected_then_desired():
    b = IRBuilder()
    counter = ir.ContainerSlot(name="n", kind="field", dtype=T.i32, ndim=1, shape=(4,))
    ptr = b.global_ptr(counter, [b.const(0, T.i32)])
    b.atomic(AtomicOpKind.CAS, ptr, b.const(7, T.i32), b.const(3, T.i32))
    b.atomic(AtomicOpKind.EXCHANGE, ptr, b.const(5, T.i32))
    lines = format_block(b.block).splitlines()
    assert lines[4] == "%4 = atomic_cas %1 %3 %2 : i32"         # ptr, expected (3), desired (7)
    assert lines[6] == "%6 = atomic_exchange %1 %5 : i32"


@dataclass
class State:
    """A plain dataclass of ndarrays as a kernel argument (as Genesis passes its solver state)."""
    pos: wk.types.ndarray(dtype=wk.f32, ndim=1)


def test_a_kernel_taking_a_dataclass_of_ndarrays_dumps_with_the_class_name(arch, tmp_path, monkeypatch):
    """WK_DUMP_IR prints a struct argument by its class (Genesis passes plain dataclasses of ndarrays)."""
    @wk.kernel
    def move(state: State):
        for i in range(state.pos.shape[0]):
            state.pos[i] += 1.0

    monkeypatch.setenv("WK_DUMP_IR", str(tmp_path))
    state = State(pos=wk.ndarray(wk.f32, shape=3))
    move(state)
    np.testing.assert_array_equal(state.pos.to_numpy(), [1.0, 1.0, 1.0])
    frontend = next(tmp_path.glob("move.00.frontend.ir")).read_text()
    assert frontend.splitlines()[0].startswith("kernel move(state: ") and "State" in frontend.splitlines()[0]
