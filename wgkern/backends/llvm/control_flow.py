"""LLVM IR for control flow: if, counted range loops (forward and reversed), while, break, continue, return, and
the loop index of an enclosing range."""
from __future__ import annotations

from wgkern.errors import InternalCompilerError
from wgkern.ir import nodes as ir


class ControlFlowLowering:
    """FunctionEmitter's rules for control flow."""

    # ---- control flow ------------------------------------------------------------------------------------
    def visit_If(self, stmt: ir.If) -> None:
        then_label, else_label, merge = self.label("then"), self.label("else"), self.label("endif")
        self.cond_branch(self.value(stmt.cond), then_label, else_label)
        self.start_block(then_label)
        self.visit_block(stmt.then_block)
        self.branch(merge)
        self.start_block(else_label)
        self.visit_block(stmt.else_block)
        self.branch(merge)
        self.start_block(merge)

    def visit_RangeFor(self, stmt: ir.RangeFor) -> None:
        begin, end = self.value(stmt.begin), self.value(stmt.end)
        self.emit_counted_loop(stmt, begin, end, stmt.reversed, stmt.body)

    def emit_counted_loop(self, loop: ir.RangeFor, begin: str, end: str, reverse: bool, body: ir.Block) -> None:
        """`for i in [begin, end)` (or end-1 down to begin) with the index in an alloca (mem2reg makes it SSA)."""
        slot = self.entry_op("alloca i32", "idx")
        self.loop_slots[loop] = slot
        cond, body_label, latch, done = (self.label(h) for h in ("for.cond", "for.body", "for.latch", "for.end"))
        first = self.op(f"sub i32 {end}, 1") if reverse else begin
        self.emit(f"store i32 {first}, ptr {slot}")
        if reverse:
            empty = self.op(f"icmp sle i32 {end}, {begin}")
            self.cond_branch(empty, done, cond)
        else:
            self.branch(cond)
        self.start_block(cond)
        current = self.op(f"load i32, ptr {slot}")
        keep_going = self.op(f"icmp sge i32 {current}, {begin}" if reverse else f"icmp slt i32 {current}, {end}")
        self.cond_branch(keep_going, body_label, done)
        self.start_block(body_label)
        self.loops.append((latch, done))
        self.visit_block(body)
        self.loops.pop()
        self.branch(latch)
        self.start_block(latch)
        current = self.op(f"load i32, ptr {slot}")
        step = self.op(f"sub i32 {current}, 1" if reverse else f"add nsw i32 {current}, 1")
        self.emit(f"store i32 {step}, ptr {slot}")
        self.branch(cond)
        self.start_block(done)

    def visit_LoopIndex(self, stmt: ir.LoopIndex) -> None:
        slot = self.loop_slots.get(stmt.loop)
        if slot is None:
            raise InternalCompilerError("LoopIndex outside its loop", stmt.loc)
        self.values[stmt] = self.op(f"load i32, ptr {slot}")

    def visit_While(self, stmt: ir.While) -> None:
        head, done = self.label("while.body"), self.label("while.end")
        self.branch(head)
        self.start_block(head)
        self.loops.append((head, done))
        self.visit_block(stmt.body)
        self.loops.pop()
        self.branch(head)
        self.start_block(done)

    def visit_Break(self, stmt: ir.Break) -> None:
        if not self.loops:
            raise InternalCompilerError("break outside a loop", stmt.loc)
        self.branch(self.loops[-1][1])

    def visit_Continue(self, stmt: ir.Continue) -> None:
        if not self.loops:
            raise InternalCompilerError("continue outside a loop", stmt.loc)
        self.branch(self.loops[-1][0])

    def visit_Return(self, stmt: ir.Return) -> None:
        self.branch(self.return_label)
