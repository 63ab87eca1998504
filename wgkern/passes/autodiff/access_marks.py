"""The run-time check of the global data access rule across the launches of a tape (`wk.ad.Tape(validation=True)`
under `wk.init(debug=True)`, Taichi's and Quadrants' adjoint check bits).

A `.grad` kernel replays its forward launch's reads from memory as it is when the reverse pass runs, so an
element a launch on the tape read must not be overwritten (stored to, or accumulated into) afterwards, by the
same launch or a later one: its replay would read the new value and the gradient would be silently wrong.
`mark_accesses` instruments a forward kernel for that: every read of a float field that has a `.grad` sets the
element's mark in a companion i32 field, and every store or atomic to such an element first checks the mark and
fails like a debug `assert` (wk.KernelAssertionError naming the line) when it is set. The marks stay set for the
whole tape (the Tape clears them on entry). What checks.py decides at compile time for one launch, this checks
at run time, across launches too."""
from __future__ import annotations

from typing import Any, Callable

from wgkern.ir import nodes as ir
from wgkern.ir.builder import IRBuilder
from wgkern.ir.ops import BinaryOpKind
from wgkern import dtypes as T


def is_checked(slot: ir.ContainerSlot) -> bool:
    """Containers whose elements get marks: float fields with a gradient (Taichi's fields with adjoints)."""
    return (slot.kind == "field" and not slot.is_grad and slot.dtype.is_float and slot.shape is not None
            and getattr(slot.host, "grad", None) is not None)


def mark_accesses(kernel: ir.OffloadedKernel, mark_field: Callable[[ir.ContainerSlot], Any]) -> ir.OffloadedKernel:
    """Instrument `kernel` in place (see the module docstring); `mark_field(slot)` gives the i32 field, of the
    slot's full shape, that holds the marks of `slot`'s elements."""
    marks: dict[ir.ContainerSlot, ir.ContainerSlot] = {}

    def mark_of(slot: ir.ContainerSlot) -> ir.ContainerSlot:
        if slot not in marks:
            host = mark_field(slot)
            marks[slot] = ir.ContainerSlot(name=f"{slot.name}.access_mark", kind="field", dtype=T.i32,
                                           ndim=slot.ndim, shape=slot.shape, host=host)
        return marks[slot]

    def visit(block: ir.Block) -> None:
        out: list[ir.Stmt] = []
        for stmt in block.stmts:
            for child in stmt.blocks():
                visit(child)
            writes = isinstance(stmt, (ir.GlobalStore, ir.AtomicOp)) and is_checked(stmt.ptr.container)
            if writes:
                b = IRBuilder(ir.Block(), stmt.loc)
                mark = b.global_load(b.global_ptr(mark_of(stmt.ptr.container), stmt.ptr.indices))
                check = b.if_(b.binary(BinaryOpKind.CMP_NE, mark, b.const(0, T.i32)))
                with b.at(check.then_block):
                    b.insert(ir.AssertFail(message=(
                        f"global data access rule violated (wk.ad.Tape(validation=True)): '{stmt.ptr.container.name}' "
                        "is overwritten here after a launch on the tape read it; the reverse pass would replay that "
                        "read with the new value. Keep each step's values in their own elements (another index or "
                        "field)")))
                out.extend(b.block.stmts)
            out.append(stmt)
            if isinstance(stmt, ir.GlobalLoad) and is_checked(stmt.ptr.container):
                b = IRBuilder(ir.Block(), stmt.loc)
                b.global_store(b.global_ptr(mark_of(stmt.ptr.container), stmt.ptr.indices), b.const(1, T.i32))
                out.extend(b.block.stmts)
        block.stmts = out

    for task in kernel.tasks:
        visit(task.body)
    kernel.containers.extend(marks.values())
    return kernel
