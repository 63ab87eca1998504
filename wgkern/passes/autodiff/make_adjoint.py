"""Reverse-mode transform of one unit body: forward replay followed by the adjoint code in reverse order.

The replay is the forward body without its global stores and atomics (replay semantics: `.grad` recomputes
from globals and never re-executes primal effects). The adjoint of each statement is emitted walking the body
backwards; a primal value the adjoint needs is referenced directly when it is defined at the unit's top level
and recomputed in place otherwise (BackupSSA by recomputation: pure ops, global loads and stack tops are all
recomputable because stack states in reverse match the forward ones). Per-op derivatives live in rules.py."""
from __future__ import annotations

import copy
from typing import Callable

from wgkern.errors import AutodiffError, InternalCompilerError
from wgkern.ir import nodes as ir
from wgkern.ir.builder import IRBuilder
from wgkern.ir.ops import AtomicOpKind, BinaryOpKind
from wgkern import dtypes as T
from wgkern.passes.autodiff import rules
from wgkern.passes.autodiff.activity import has_adjoint_work

_RECOMPUTABLE = (ir.Const, ir.ArgLoad, ir.ShapeOf, ir.UnaryOp, ir.BinaryOp, ir.Cast, ir.TernarySelect,
                 ir.GlobalPtr, ir.GlobalLoad, ir.AdStackLoadTop)


def _walk_blocks(block: ir.Block):
    yield block
    for stmt in block.stmts:
        for child in stmt.blocks():
            yield from _walk_blocks(child)


class AdjointEmitter:
    """Builds the adjoint of `body` (one adjoint unit) and appends it after the replay."""

    def __init__(self, body: ir.Block, unit_loop: ir.RangeFor | None, active: set[ir.Stmt],
                 grad_slot: Callable[[ir.ContainerSlot], ir.ContainerSlot | None],
                 plain_slots: set[ir.ContainerSlot], exit_checks: dict[ir.While, ir.If],
                 trips: dict[ir.While, ir.AdStackAlloca], saved: dict[ir.Stmt, ir.AdStackAlloca],
                 derivative_inputs: dict[ir.Stmt, ir.Stmt]):
        self.body = body
        self.unit_loop = unit_loop
        self.active = active
        self.grad_slot = grad_slot
        self.has_adjoint = lambda slot: grad_slot(slot) is not None
        self.plain_slots = plain_slots
        self.exit_checks = exit_checks
        self.trips = trips
        self.saved = saved
        self.derivative_inputs = derivative_inputs      # cached op -> its saved derivative or result
        self.unpopped_stacks = set(trips.values()) | set(saved.values())
        # where each saved value is popped: at its own reverse position, a cached op's derivative at its op's
        owner = {value: op for op, value in derivative_inputs.items()}
        self.pop_at = {owner.get(value, value): stack for value, stack in saved.items()}
        self.top_level = set(body.stmts)
        self.def_block: dict[ir.Stmt, ir.Block] = {}
        for block in _walk_blocks(body):
            for stmt in block.stmts:
                self.def_block[stmt] = block
        self.reverse_of: dict[ir.Block, ir.Block] = {}
        self.adjoint_var: dict[ir.Stmt, ir.Alloca] = {}
        self.loop_map: dict[ir.RangeFor, ir.RangeFor] = {}
        self.memo: dict[ir.Stmt, ir.Stmt] = {}
        self.b = IRBuilder()
        # Reversed loops being emitted, outermost first: (loop, the block holding it). Adjoints to an address
        # that no enclosing loop changes accumulate in a register and are flushed with one atomic after the
        # outermost loop (register accumulation for loop-invariant addresses).
        self.reverse_loops: list[tuple[ir.RangeFor, ir.Block]] = []
        self.register_sums: dict[ir.RangeFor, dict[tuple, tuple[ir.Alloca, ir.GlobalPtr]]] = {}

    # ---- driver --------------------------------------------------------------------------------------
    def run(self) -> ir.Stmt | None:
        """Append the adjoint sweep to the replay; returns the sweep's first statement (None when empty)."""
        reverse = ir.Block()
        self.emit_reverse(self.body.stmts, self.body, reverse)
        _strip_primal_effects(self.body)
        self.body.stmts.extend(reverse.stmts)
        return reverse.stmts[0] if reverse.stmts else None

    def emit_reverse(self, stmts: list[ir.Stmt], forward: ir.Block, reverse: ir.Block) -> None:
        self.reverse_of[forward] = reverse
        saved_block = self.b.block
        self.b.block = reverse
        self.memo = {}
        for stmt in reversed(stmts):
            with self.b.located(stmt.loc):
                method = getattr(self, "reverse_" + type(stmt).__name__, None)
                if method is None:
                    raise InternalCompilerError(f"no adjoint rule for {type(stmt).__name__}", stmt.loc)
                method(stmt)
                saved_stack = self.pop_at.get(stmt)
                if saved_stack is not None:
                    self._pop(saved_stack)
        self.b.block = saved_block
        self.memo = {}

    # ---- adjoint variables ----------------------------------------------------------------------------
    def adjoint(self, stmt: ir.Stmt) -> ir.Stmt | None:
        var = self.adjoint_var.get(stmt)
        return None if var is None else self.b.load(var)

    def _adjoint_var(self, stmt: ir.Stmt) -> ir.Alloca:
        var = self.adjoint_var.get(stmt)
        if var is None:
            home = self.reverse_of[self.def_block[stmt]]
            var = ir.Alloca(dtype=stmt.dtype, name="adj", loc=stmt.loc)
            home.stmts.insert(0, var)
            self.adjoint_var[stmt] = var
        return var

    def accumulate(self, stmt: ir.Stmt, value: ir.Stmt) -> None:
        if stmt not in self.active:
            return
        var = self._adjoint_var(stmt)
        self.b.store(var, self.b.add(self.b.load(var), self.b.cast(value, stmt.dtype)))

    # ---- primal values at the current reverse point --------------------------------------------------
    def primal(self, stmt: ir.Stmt) -> ir.Stmt:
        if stmt in self.top_level:
            return stmt
        cached = self.memo.get(stmt)
        if cached is not None:
            return cached
        if stmt in self.saved:
            new: ir.Stmt = ir.AdStackLoadTop(stack=self.saved[stmt], dtype=stmt.dtype, loc=stmt.loc)
        elif isinstance(stmt, ir.LoopIndex):
            loop = stmt.loop if stmt.loop is self.unit_loop else self.loop_map.get(stmt.loop)
            if loop is None:
                raise InternalCompilerError("loop index used outside its reversed loop", stmt.loc)
            new = ir.LoopIndex(loop=loop, dtype=T.i32, loc=stmt.loc)
        elif isinstance(stmt, _RECOMPUTABLE):
            new = copy.copy(stmt)
            if isinstance(stmt, ir.GlobalPtr):
                new.indices = [self.primal(i) for i in stmt.indices]
            else:
                new.replace_operands({o: self.primal(o) for o in stmt.operands()
                                      if not isinstance(o, (ir.AdStackAlloca,))})
        else:
            raise InternalCompilerError(f"primal value of {type(stmt).__name__} is not recomputable here",
                                        stmt.loc)
        self.b.insert(new)
        self.memo[stmt] = new
        return new

    def _pop(self, stack: ir.AdStackAlloca) -> None:
        self.b.insert(ir.AdStackPop(stack=stack))
        self.memo = {}

    # ---- statements without adjoints ---------------------------------------------------------------------
    def _nothing(self, stmt: ir.Stmt) -> None:
        return None

    reverse_Const = reverse_ArgLoad = reverse_ShapeOf = reverse_LoopIndex = _nothing
    reverse_GlobalPtr = reverse_RandomValue = reverse_Alloca = reverse_AdStackAlloca = _nothing
    reverse_Break = reverse_Continue = reverse_AdStackOverflowed = reverse_Print = reverse_AssertFail = _nothing

    # ---- locals and stacks --------------------------------------------------------------------------------
    def reverse_LocalLoad(self, stmt: ir.LocalLoad) -> None:
        g = self.adjoint(stmt) if stmt in self.active else None
        if g is not None:
            self.accumulate(stmt.alloca, g)

    def reverse_LocalStore(self, stmt: ir.LocalStore) -> None:
        if stmt.alloca not in self.active:
            return
        var = self._adjoint_var(stmt.alloca)
        self.accumulate(stmt.value, self.b.load(var))
        self.b.store(var, self.b.const(0.0, stmt.alloca.dtype))

    def reverse_AdStackPush(self, stmt: ir.AdStackPush) -> None:
        if stmt.stack in self.unpopped_stacks:
            return  # trip counts: popped after the reversed While; saved values: after their own adjoint
        if stmt.stack in self.active and stmt.value in self.active:
            top_adjoint = self.b.insert(ir.AdStackLoadTopAdj(stack=stmt.stack, dtype=stmt.stack.dtype))
            self.accumulate(stmt.value, top_adjoint)
        self._pop(stmt.stack)

    def reverse_AdStackLoadTop(self, stmt: ir.AdStackLoadTop) -> None:
        g = self.adjoint(stmt) if stmt in self.active else None
        if g is not None:
            self.b.insert(ir.AdStackAccAdjoint(stack=stmt.stack, value=g))

    # ---- arithmetic ---------------------------------------------------------------------------------------
    def _rule_inputs(self, reads: str, named: tuple[tuple[str, ir.Stmt], ...]) -> tuple[ir.Stmt, ...]:
        """The primal values a rule reads, recomputed here; the others as their forward statements (a rule
        only takes their dtype)."""
        return tuple(self.primal(value) if name in reads else value for name, value in named)

    def reverse_UnaryOp(self, stmt: ir.UnaryOp) -> None:
        g = self.adjoint(stmt) if stmt in self.active else None
        if g is None or stmt.operand not in self.active:
            return
        rule = rules.unary_derivative(stmt)
        if stmt in self.derivative_inputs:
            saved = self.primal(self.derivative_inputs[stmt])
            # a saved derivative is used as it is; a saved result goes through the rule (which reads only it)
            derivative = saved if stmt.op in rules.READS_OPERAND_ONLY else rule(self.b, stmt.operand, saved)
        else:
            derivative = rule(self.b, *self._rule_inputs(rules.unary_reads(stmt),
                                                         (("x", stmt.operand), ("y", stmt))))
        self.accumulate(stmt.operand, self.b.mul(g, derivative))

    def reverse_BinaryOp(self, stmt: ir.BinaryOp) -> None:
        g = self.adjoint(stmt) if stmt in self.active else None
        if g is None:
            return
        lhs_rule, rhs_rule = rules.binary_derivative(stmt)
        reads = rules.binary_reads(stmt, stmt.lhs in self.active, stmt.rhs in self.active)
        operands = self._rule_inputs(reads, (("l", stmt.lhs), ("r", stmt.rhs), ("y", stmt)))
        if stmt.lhs in self.active:
            self.accumulate(stmt.lhs, self.b.mul(g, lhs_rule(self.b, *operands)))
        if stmt.rhs in self.active:
            self.accumulate(stmt.rhs, self.b.mul(g, rhs_rule(self.b, *operands)))

    def reverse_Cast(self, stmt: ir.Cast) -> None:
        g = self.adjoint(stmt) if stmt in self.active else None
        if g is not None and stmt.operand in self.active and not stmt.bitcast:
            self.accumulate(stmt.operand, self.b.cast(g, stmt.operand.dtype))

    def reverse_TernarySelect(self, stmt: ir.TernarySelect) -> None:
        g = self.adjoint(stmt) if stmt in self.active else None
        if g is None:
            return
        cond = self.primal(stmt.cond)
        zero = self.b.const(0.0, stmt.dtype)
        if stmt.true_value in self.active:
            self.accumulate(stmt.true_value, self.b.select(cond, g, zero))
        if stmt.false_value in self.active:
            self.accumulate(stmt.false_value, self.b.select(cond, zero, g))

    # ---- globals ----------------------------------------------------------------------------------------
    def _grad_ptr(self, ptr: ir.GlobalPtr, slot: ir.ContainerSlot) -> ir.GlobalPtr:
        indices = [self.primal(i) for i in ptr.indices]
        return self.b.insert(ir.GlobalPtr(container=slot, indices=indices, dtype=slot.dtype))

    def reverse_GlobalLoad(self, stmt: ir.GlobalLoad) -> None:
        g = self.adjoint(stmt) if stmt in self.active else None
        slot = self.grad_slot(stmt.ptr.container)
        if g is None or slot is None:
            return
        if slot not in self.plain_slots and self.reverse_loops and \
                all(i in self.top_level for i in stmt.ptr.indices):
            self._accumulate_in_register(slot, stmt.ptr, g)
            return
        ptr = self._grad_ptr(stmt.ptr, slot)
        if slot in self.plain_slots:
            self.b.global_store(ptr, self.b.add(self.b.global_load(ptr), g))
        else:
            self.b.atomic(AtomicOpKind.ADD, ptr, g)

    def _accumulate_in_register(self, slot: ir.ContainerSlot, ptr: ir.GlobalPtr, g: ir.Stmt) -> None:
        outer_loop, holder = self.reverse_loops[0]
        sums = self.register_sums.setdefault(outer_loop, {})
        key = (id(slot), tuple(id(i) for i in ptr.indices))
        found = sums.get(key)
        if found is None:
            register = ir.Alloca(dtype=slot.dtype, name="adj_sum", loc=ptr.loc)
            holder.stmts.insert(holder.stmts.index(outer_loop), register)
            target = ir.GlobalPtr(container=slot, indices=list(ptr.indices), dtype=slot.dtype, loc=ptr.loc)
            found = sums[key] = (register, target)
        register = found[0]
        self.b.store(register, self.b.add(self.b.load(register), g))

    def _enter_reverse_loop(self, loop: ir.RangeFor) -> None:
        self.reverse_loops.append((loop, self.b.block))

    def _leave_reverse_loop(self, loop: ir.RangeFor) -> None:
        self.reverse_loops.pop()
        for register, target in self.register_sums.pop(loop, {}).values():
            self.b.insert(target)
            self.b.atomic(AtomicOpKind.ADD, target, self.b.load(register))

    def reverse_GlobalStore(self, stmt: ir.GlobalStore) -> None:
        slot = self.grad_slot(stmt.ptr.container)
        if slot is None:
            return
        ptr = self._grad_ptr(stmt.ptr, slot)
        g = self.b.global_load(ptr)
        self.b.global_store(ptr, self.b.const(0.0, slot.dtype))
        self.accumulate(stmt.value, g)

    def reverse_AtomicOp(self, stmt: ir.AtomicOp) -> None:
        slot = self.grad_slot(stmt.ptr.container)
        if slot is None or stmt.value not in self.active:
            return
        g = self.b.global_load(self._grad_ptr(stmt.ptr, slot))
        if stmt.op in (AtomicOpKind.MIN, AtomicOpKind.MAX):
            # the element's gradient goes to the value that ended up in it (to each, where several are equal),
            # found by reading the element back: the forward launch left the extreme there; the element keeps
            # its gradient, for the value it held before the launch (Taichi gives it to every value instead)
            extreme = self.b.global_load(self._primal_ptr(stmt.ptr))
            won = self.b.binary(BinaryOpKind.CMP_EQ, extreme, self.primal(stmt.value))
            self.accumulate(stmt.value, self.b.select(won, g, self.b.const(0.0, slot.dtype)))
            return
        if stmt.op not in (AtomicOpKind.ADD, AtomicOpKind.SUB):
            raise AutodiffError(f"atomic_{stmt.op.value} cannot be differentiated", stmt.loc)
        self.accumulate(stmt.value, g if stmt.op is AtomicOpKind.ADD else self.b.neg(g))

    def _primal_ptr(self, ptr: ir.GlobalPtr) -> ir.GlobalPtr:
        indices = [self.primal(i) for i in ptr.indices]
        return self.b.insert(ir.GlobalPtr(container=ptr.container, indices=indices, dtype=ptr.dtype))

    # ---- control flow -------------------------------------------------------------------------------------
    def reverse_If(self, stmt: ir.If) -> None:
        if not has_adjoint_work(stmt, self.active, self.has_adjoint):
            return
        cond = self.primal(stmt.cond)
        new = self.b.insert(ir.If(cond=cond, then_block=ir.Block(), else_block=ir.Block()))
        self.emit_reverse(stmt.then_block.stmts, stmt.then_block, new.then_block)
        self.emit_reverse(stmt.else_block.stmts, stmt.else_block, new.else_block)
        self.memo = {}

    def reverse_RangeFor(self, stmt: ir.RangeFor) -> None:
        if not has_adjoint_work(stmt, self.active, self.has_adjoint):
            return
        new = self.b.insert(ir.RangeFor(begin=self.primal(stmt.begin), end=self.primal(stmt.end),
                                        body=ir.Block(), reversed=not stmt.reversed, name=stmt.name))
        self.loop_map[stmt] = new
        self._enter_reverse_loop(new)
        self.emit_reverse(stmt.body.stmts, stmt.body, new.body)
        self._leave_reverse_loop(new)
        self.memo = {}

    def reverse_While(self, stmt: ir.While) -> None:
        trip = self.trips[stmt]
        count = self.b.insert(ir.AdStackLoadTop(stack=trip, dtype=T.i32))
        new = self.b.insert(ir.RangeFor(begin=self.b.const(0, T.i32), end=count, body=ir.Block(),
                                        reversed=True))
        exit_check = self.exit_checks[stmt]
        replayed = [s for s in stmt.body.stmts if s is not exit_check]
        self._enter_reverse_loop(new)
        self.emit_reverse(replayed, stmt.body, new.body)
        self._leave_reverse_loop(new)
        self._pop(trip)


def _strip_primal_effects(block: ir.Block) -> None:
    """Remove global stores, atomics and prints from the replay (they already happened in the forward launch)."""
    used = _used_values(block)
    out = []
    for stmt in block.stmts:
        if isinstance(stmt, (ir.GlobalStore, ir.Print, ir.AssertFail)):     # they happened in the forward launch
            continue
        if isinstance(stmt, ir.AtomicOp):
            if stmt in used:
                raise AutodiffError("a kernel that uses the value returned by an atomic cannot be "
                                    "differentiated (the atomic is not replayed)", stmt.loc)
            continue
        for child in stmt.blocks():
            _strip_primal_effects(child)
        out.append(stmt)
    block.stmts = out


def _used_values(block: ir.Block) -> set[ir.Stmt]:
    used: set[ir.Stmt] = set()
    for inner in _walk_blocks(block):
        for stmt in inner.stmts:
            used.update(stmt.operands())
    return used


__all__ = ["AdjointEmitter", "BinaryOpKind"]
