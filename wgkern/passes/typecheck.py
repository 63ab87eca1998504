"""Typecheck: makes every statement's dtypes agree with docs/internals.md, or reports the user's type error.

Exists because the frontend (and passes that build IR by hand) may leave mixed operand dtypes, non-u1
conditions or stored values of another dtype. Repairs insert Casts right before the statement (Taichi's
promotion rules, lang/types.py); mistakes no cast can fix (bit ops on floats, `//` on bools, float indices)
raise CompileError at the statement's source location. Works on KernelIR and OffloadedKernel."""
from __future__ import annotations

from typing import Callable

from wgkern.errors import CompileError, InternalCompilerError
from wgkern.ir import nodes as ir
from wgkern.ir.ops import (BOOL_ONLY_UNARY, COMPARISONS, FLOAT_ONLY_BINARY, FLOAT_ONLY_UNARY, INT_ONLY_ATOMIC,
                           INT_ONLY_BINARY, INT_ONLY_UNARY, BinaryOpKind, UnaryOpKind)
from wgkern.ir.verifier import BOOL_BINARY
from wgkern import dtypes as T
from wgkern.passes.analysis import kernel_blocks

NAME = "typecheck"

_SHIFTS = (BinaryOpKind.SHL, BinaryOpKind.SHR)
_OP_SPELLING = {
    BinaryOpKind.BIT_AND: "&", BinaryOpKind.BIT_OR: "|", BinaryOpKind.BIT_XOR: "^", BinaryOpKind.SHL: "<<",
    BinaryOpKind.SHR: ">>", BinaryOpKind.FLOORDIV: "//", BinaryOpKind.MOD: "%", UnaryOpKind.BIT_NOT: "~",
}
_NO_BOOL_OPERANDS = frozenset({BinaryOpKind.FLOORDIV, BinaryOpKind.MOD})


class _Repairer:
    """Walks blocks in order; `pending` collects casts to insert before the statement being checked."""

    def __init__(self) -> None:
        self.pending: list[ir.Stmt] = []

    def cast(self, value: ir.Stmt, dtype: T.DataType, at: ir.Stmt) -> ir.Stmt:
        if value.dtype == dtype:
            return value
        if value.dtype is None:
            raise InternalCompilerError(f"{type(value).__name__} used as a value", at.loc)
        cast = ir.Cast(operand=value, dtype=dtype, loc=at.loc)
        self.pending.append(cast)
        return cast

    def run_block(self, block: ir.Block) -> None:
        out: list[ir.Stmt] = []
        for stmt in block.stmts:
            rule = _RULES.get(type(stmt))
            if rule is not None:
                rule(self, stmt)
            out.extend(self.pending)
            self.pending = []
            out.append(stmt)
            for child in stmt.blocks():
                self.run_block(child)
        block.stmts = out


def _name(op: object) -> str:
    return _OP_SPELLING.get(op, getattr(op, "value", str(op)))


def _default_float_for(*dtypes: T.DataType) -> T.DataType:
    widest = [t for t in dtypes if t.is_float]
    return max(widest, key=lambda t: t.bits) if widest else T.DEFAULT_FLOAT


def _binary(r: _Repairer, s: ir.BinaryOp) -> None:
    lhs, rhs = s.lhs.dtype, s.rhs.dtype
    if s.op in INT_ONLY_BINARY and (lhs.is_float or rhs.is_float):
        raise CompileError(f"`{_name(s.op)}` needs integer operands, got {lhs.name} and {rhs.name}", s.loc)
    if s.op in _NO_BOOL_OPERANDS and lhs.is_bool and rhs.is_bool:
        raise CompileError(f"`{_name(s.op)}` is not defined on u1 (bool) operands; cast them to an int", s.loc)
    if s.op in _SHIFTS:
        if lhs.is_bool:
            raise CompileError(f"`{_name(s.op)}` needs an integer left operand, got u1", s.loc)
        s.rhs = r.cast(s.rhs, lhs, s)
        s.dtype = lhs
        return
    common = T.promote(lhs, rhs)
    if s.op in FLOAT_ONLY_BINARY and not common.is_float:
        common = _default_float_for(lhs, rhs)
    if common.is_bool and s.op not in BOOL_BINARY:
        common = T.i32     # True + True == 2, as in Python
    s.lhs = r.cast(s.lhs, common, s)
    s.rhs = r.cast(s.rhs, common, s)
    s.dtype = T.u1 if s.op in COMPARISONS else common


def _unary(r: _Repairer, s: ir.UnaryOp) -> None:
    t = s.operand.dtype
    if s.op in INT_ONLY_UNARY and not t.is_int:
        raise CompileError(f"`{_name(s.op)}` needs an integer operand, got {t.name}: it takes integral inputs only"
                           + (" (use `not` for bools)" if t.is_bool else ""), s.loc)
    if s.op in BOOL_ONLY_UNARY:
        target = T.u1
    elif s.op in FLOAT_ONLY_UNARY and not t.is_float:
        target = T.DEFAULT_FLOAT
    elif t.is_bool:
        target = T.i32
    else:
        target = t
    s.operand = r.cast(s.operand, target, s)
    s.dtype = target


def _select(r: _Repairer, s: ir.TernarySelect) -> None:
    s.cond = r.cast(s.cond, T.u1, s)
    common = T.promote(s.true_value.dtype, s.false_value.dtype)
    s.true_value = r.cast(s.true_value, common, s)
    s.false_value = r.cast(s.false_value, common, s)
    s.dtype = common


def _const(r: _Repairer, s: ir.Const) -> None:
    """A constant holds the Python type of its dtype (float, bool, or an int wrapped into range)."""
    if s.dtype.is_float:
        s.value = float(s.value)
    elif s.dtype.is_bool:
        s.value = bool(s.value)
    else:
        s.value = T.wrap_int(int(s.value), s.dtype)


def _cast(r: _Repairer, s: ir.Cast) -> None:
    if s.bitcast and s.operand.dtype.bits != s.dtype.bits:
        raise CompileError(f"bit_cast from {s.operand.dtype.name} to {s.dtype.name} changes the width", s.loc)


def _local_store(r: _Repairer, s: ir.LocalStore) -> None:
    s.value = r.cast(s.value, s.alloca.dtype, s)


def _local_load(r: _Repairer, s: ir.LocalLoad) -> None:
    s.dtype = s.alloca.dtype


def _global_ptr(r: _Repairer, s: ir.GlobalPtr) -> None:
    if len(s.indices) != s.container.ndim:
        raise CompileError(f"{s.container.name} takes {s.container.ndim} indices, got {len(s.indices)}", s.loc)
    for index in s.indices:
        if not (index.dtype.is_int or index.dtype.is_bool):
            raise CompileError(f"index into {s.container.name} must be an integer, got {index.dtype.name}", s.loc)
    s.indices = [r.cast(index, T.i32, s) for index in s.indices]
    s.dtype = s.container.dtype


def _global_load(r: _Repairer, s: ir.GlobalLoad) -> None:
    s.dtype = s.ptr.dtype


def _global_store(r: _Repairer, s: ir.GlobalStore) -> None:
    s.value = r.cast(s.value, s.ptr.dtype, s)


def _atomic(r: _Repairer, s: ir.AtomicOp) -> None:
    if s.op in INT_ONLY_ATOMIC and s.ptr.dtype.is_float:
        raise CompileError(f"atomic_{s.op.value} needs an integer destination, got {s.ptr.dtype.name}", s.loc)
    s.value = r.cast(s.value, s.ptr.dtype, s)
    if s.expected is not None:
        s.expected = r.cast(s.expected, s.ptr.dtype, s)
    s.dtype = s.ptr.dtype


def _range_for(r: _Repairer, s: ir.RangeFor) -> None:
    for name in ("begin", "end"):
        bound = getattr(s, name)
        if bound.dtype.is_float:
            raise CompileError(f"range() bounds must be integers, got {bound.dtype.name}", s.loc)
        setattr(s, name, r.cast(bound, T.i32, s))


def _if(r: _Repairer, s: ir.If) -> None:
    s.cond = r.cast(s.cond, T.u1, s)


_RULES: dict[type, Callable[[_Repairer, ir.Stmt], None]] = {
    ir.Const: _const,
    ir.BinaryOp: _binary,
    ir.UnaryOp: _unary,
    ir.TernarySelect: _select,
    ir.Cast: _cast,
    ir.LocalStore: _local_store,
    ir.LocalLoad: _local_load,
    ir.GlobalPtr: _global_ptr,
    ir.GlobalLoad: _global_load,
    ir.GlobalStore: _global_store,
    ir.AtomicOp: _atomic,
    ir.RangeFor: _range_for,
    ir.If: _if,
    ir.LoopIndex: lambda r, s: setattr(s, "dtype", T.i32),
    ir.ShapeOf: lambda r, s: setattr(s, "dtype", T.i32),
}


def run(kernel: ir.KernelIR | ir.OffloadedKernel) -> ir.KernelIR | ir.OffloadedKernel:
    """Repair dtypes in place and return the kernel. A range task's loop bounds live in `bounds`, so casts
    for them are appended there."""
    repairer = _Repairer()
    for block in kernel_blocks(kernel):
        repairer.run_block(block)
    if isinstance(kernel, ir.OffloadedKernel):
        for task in kernel.tasks:
            if task.loop is not None:
                _range_for(repairer, task.loop)
                task.bounds.stmts.extend(repairer.pending)
                repairer.pending = []
    return kernel
