"""Forward-mode autodiff: OffloadedKernel -> the kernel `wk.ad.FwdMode` launches, which computes the primal
and, alongside, the tangent (`.dual`) of every value that depends on a field with `needs_dual=True`.

Each task is copied and every statement that carries a tangent gets one, computed right after it in the same
block from the tangents of its operands, with the derivative rules of rules.py (shared with reverse mode):
a load of a field with a dual also loads the dual; a float local with a tangent has a tangent local beside it;
a store to a field with a dual also stores the value's tangent (zero for a value without one: overwriting a
value overwrites its tangent); `+=`/`-=` atomics accumulate tangents atomically. No stacks are needed: the
tangent flows with the computation, through loops of any trip count. What cannot be differentiated exactly
(min/max/mul/exchange/cas atomics on a field with a dual, or reading back the old value of an atomic on one)
raises `wk.AutodiffError` naming the line, so no wrong tangent is produced silently."""
from __future__ import annotations

from typing import Callable

from wgkern.errors import AutodiffError
from wgkern.ir import nodes as ir
from wgkern.ir.builder import IRBuilder
from wgkern.ir.visitor import walk
from wgkern.ir.ops import AtomicOpKind
from wgkern.passes.autodiff import _clone_task, rules
from wgkern.passes.autodiff.checks import refuse_non_differentiable
from wgkern.passes.autodiff.activity import active_values
from wgkern.passes.autodiff.derived_slots import DerivedSlots

NAME = "forward_ad"


def _uses(body: ir.Block) -> set[ir.Stmt]:
    used: set[ir.Stmt] = set()
    for stmt in walk(body):
        used.update(stmt.operands())
    return used


class TangentEmitter:
    """Rewrites one task body in place: after each statement, its tangent (see the module docstring)."""

    def __init__(self, body: ir.Block, dual_slot: Callable[[ir.ContainerSlot], ir.ContainerSlot | None]):
        self.body = body
        self.dual_slot = dual_slot
        self.active = active_values(body, lambda slot: dual_slot(slot) is not None)
        self.used = _uses(body)
        self.tangent: dict[ir.Stmt, ir.Stmt] = {}
        self.tangent_local: dict[ir.Alloca, ir.Alloca] = {}
        self.b = IRBuilder()

    def run(self) -> None:
        self.rewrite(self.body)

    def rewrite(self, block: ir.Block) -> None:
        original = block.stmts
        block.stmts = []
        for stmt in original:
            for child in stmt.blocks():
                self.rewrite(child)
            block.stmts.append(stmt)
            self.b.block = block
            with self.b.located(stmt.loc):
                method = getattr(self, "tangent_" + type(stmt).__name__, None)
                if method is not None:
                    method(stmt)

    def of(self, stmt: ir.Stmt) -> ir.Stmt | None:
        """The tangent of `stmt` where it has one (None: zero)."""
        return self.tangent.get(stmt)

    def _set(self, stmt: ir.Stmt, value: ir.Stmt | None) -> None:
        if value is not None:
            self.tangent[stmt] = value

    def _or_zero(self, stmt: ir.Stmt, dtype) -> ir.Stmt:
        tangent = self.of(stmt)
        return self.b.cast(tangent, dtype) if tangent is not None else self.b.const(0.0, dtype)

    # ---- values -------------------------------------------------------------------------------------------
    def tangent_GlobalLoad(self, stmt: ir.GlobalLoad) -> None:
        dual = self.dual_slot(stmt.ptr.container)
        if dual is not None and stmt in self.active:
            self._set(stmt, self.b.global_load(self.b.global_ptr(dual, list(stmt.ptr.indices))))

    def tangent_Alloca(self, stmt: ir.Alloca) -> None:
        if stmt in self.active and stmt.dtype.is_float:
            self.tangent_local[stmt] = self.b.alloca(stmt.dtype, (stmt.name or "v") + "_dual")

    def tangent_LocalLoad(self, stmt: ir.LocalLoad) -> None:
        local = self.tangent_local.get(stmt.alloca)
        if local is not None:
            self._set(stmt, self.b.load(local))

    def tangent_UnaryOp(self, stmt: ir.UnaryOp) -> None:
        x = self.of(stmt.operand)
        if x is None or stmt not in self.active:
            return
        derivative = rules.unary_derivative(stmt)(self.b, stmt.operand, stmt)
        self._set(stmt, self.b.mul(derivative, x))

    def tangent_BinaryOp(self, stmt: ir.BinaryOp) -> None:
        if stmt not in self.active or not stmt.dtype.is_float:
            return
        lhs_rule, rhs_rule = rules.binary_derivative(stmt)
        total = None
        for operand, rule in ((stmt.lhs, lhs_rule), (stmt.rhs, rhs_rule)):
            tangent = self.of(operand)
            if tangent is None:
                continue
            term = self.b.mul(rule(self.b, stmt.lhs, stmt.rhs, stmt), tangent)
            total = term if total is None else self.b.add(total, term)
        self._set(stmt, total)

    def tangent_Cast(self, stmt: ir.Cast) -> None:
        x = self.of(stmt.operand)
        if x is not None and stmt.dtype.is_float and not stmt.bitcast:
            self._set(stmt, self.b.cast(x, stmt.dtype))

    def tangent_TernarySelect(self, stmt: ir.TernarySelect) -> None:
        if stmt not in self.active or (self.of(stmt.true_value) is None and self.of(stmt.false_value) is None):
            return
        self._set(stmt, self.b.select(stmt.cond, self._or_zero(stmt.true_value, stmt.dtype),
                                      self._or_zero(stmt.false_value, stmt.dtype)))

    # ---- effects ------------------------------------------------------------------------------------------
    def tangent_LocalStore(self, stmt: ir.LocalStore) -> None:
        local = self.tangent_local.get(stmt.alloca)
        if local is not None:
            self.b.store(local, self._or_zero(stmt.value, stmt.alloca.dtype))

    def tangent_GlobalStore(self, stmt: ir.GlobalStore) -> None:
        dual = self.dual_slot(stmt.ptr.container)
        if dual is not None:
            self.b.global_store(self.b.global_ptr(dual, list(stmt.ptr.indices)),
                                self._or_zero(stmt.value, dual.dtype))

    def tangent_AtomicOp(self, stmt: ir.AtomicOp) -> None:
        dual = self.dual_slot(stmt.ptr.container)
        if dual is None:
            return
        if stmt in self.used:
            raise AutodiffError("forward mode cannot give the tangent of the value an atomic operation returns "
                                f"on '{stmt.ptr.container.name}', which has a dual", stmt.loc)
        if stmt.op not in (AtomicOpKind.ADD, AtomicOpKind.SUB):
            raise AutodiffError(f"forward mode of atomic {stmt.op.value} on '{stmt.ptr.container.name}' (which "
                                "has a dual) is not supported: only += and -= carry tangents", stmt.loc)
        tangent = self.of(stmt.value)
        if tangent is not None:
            self.b.atomic(stmt.op, self.b.global_ptr(dual, list(stmt.ptr.indices)), self.b.cast(tangent, dual.dtype))


def make_forward_mode_kernel(kernel: ir.OffloadedKernel) -> ir.OffloadedKernel:
    dual_slot = DerivedSlots(kernel, "dual")
    tasks = []
    for task in kernel.tasks:
        copy = _clone_task(task)
        TangentEmitter(copy.body, dual_slot).run()
        copy.name = task.name + "_fwd"
        tasks.append(copy)
    return ir.OffloadedKernel(kernel.name + "_fwd", kernel.args, dual_slot.containers, tasks, kernel.loc,
                              kernel.returns)


def run(kernel: ir.OffloadedKernel) -> ir.OffloadedKernel:
    if not isinstance(kernel, ir.OffloadedKernel):
        raise AutodiffError("forward-mode autodiff runs on offloaded kernels", kernel.loc)
    refuse_non_differentiable(kernel)
    return make_forward_mode_kernel(kernel)
