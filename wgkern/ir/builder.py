"""IRBuilder: appends statements at an insertion point, with typed helpers that insert casts.

Used by the frontend and by every pass that creates statements (autodiff rules call `b.cos(x)`, `b.mul(a, b)`).
Helpers promote operand dtypes with Taichi's rules (lang/types.py) and carry the builder's current `loc`."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from wgkern.errors import UNKNOWN_LOC, InternalCompilerError, SourceLoc
from wgkern.ir import nodes as ir
from wgkern.ir.ops import COMPARISONS, AtomicOpKind, BinaryOpKind, UnaryOpKind
from wgkern import dtypes as T


class IRBuilder:
    def __init__(self, block: ir.Block | None = None, loc: SourceLoc = UNKNOWN_LOC):
        self.block = block if block is not None else ir.Block()
        self.loc = loc

    # ---- insertion point --------------------------------------------------------------------------------
    def insert(self, stmt: ir.Stmt) -> ir.Stmt:
        if stmt.loc is UNKNOWN_LOC:
            stmt.loc = self.loc
        self.block.stmts.append(stmt)
        return stmt

    @contextmanager
    def at(self, block: ir.Block) -> Iterator[ir.Block]:
        """Append to `block` inside the `with`."""
        saved = self.block
        self.block = block
        try:
            yield block
        finally:
            self.block = saved

    @contextmanager
    def located(self, loc: SourceLoc) -> Iterator[None]:
        saved = self.loc
        self.loc = loc
        try:
            yield
        finally:
            self.loc = saved

    # ---- values -------------------------------------------------------------------------------------------
    def const(self, value: int | float | bool, dtype: T.DataType) -> ir.Const:
        if dtype.is_float:
            value = float(value)
        elif dtype.is_bool:
            value = bool(value)
        else:
            value = T.wrap_int(int(value), dtype)
        return self.insert(ir.Const(value=value, dtype=dtype))

    def cast(self, value: ir.Stmt, dtype: T.DataType) -> ir.Stmt:
        if value.dtype == dtype:
            return value
        if isinstance(value, ir.Const):
            return self.const(value.value, dtype) if not (dtype.is_int and value.dtype.is_float) \
                else self.const(int(value.value), dtype)
        return self.insert(ir.Cast(operand=value, dtype=dtype))

    def unary(self, op: UnaryOpKind, x: ir.Stmt) -> ir.Stmt:
        return self.insert(ir.UnaryOp(op=op, operand=x, dtype=x.dtype))

    def binary(self, op: BinaryOpKind, lhs: ir.Stmt, rhs: ir.Stmt) -> ir.Stmt:
        """Promotes both sides to a common dtype (shifts keep the lhs dtype)."""
        if op in (BinaryOpKind.SHL, BinaryOpKind.SHR):
            result = lhs.dtype
            rhs = self.cast(rhs, lhs.dtype)
        else:
            common = T.promote(lhs.dtype, rhs.dtype)
            lhs = self.cast(lhs, common)
            rhs = self.cast(rhs, common)
            result = T.u1 if op in COMPARISONS else common
        return self.insert(ir.BinaryOp(op=op, lhs=lhs, rhs=rhs, dtype=result))

    def select(self, cond: ir.Stmt, a: ir.Stmt, b: ir.Stmt) -> ir.Stmt:
        common = T.promote(a.dtype, b.dtype) if a.dtype != b.dtype else a.dtype
        cond = self.cast(cond, T.u1)
        return self.insert(ir.TernarySelect(cond=cond, true_value=self.cast(a, common),
                                            false_value=self.cast(b, common), dtype=common))

    # arithmetic shorthands used by passes (autodiff rules)
    def add(self, a: ir.Stmt, b: ir.Stmt) -> ir.Stmt:
        return self.binary(BinaryOpKind.ADD, a, b)

    def sub(self, a: ir.Stmt, b: ir.Stmt) -> ir.Stmt:
        return self.binary(BinaryOpKind.SUB, a, b)

    def mul(self, a: ir.Stmt, b: ir.Stmt) -> ir.Stmt:
        return self.binary(BinaryOpKind.MUL, a, b)

    def div(self, a: ir.Stmt, b: ir.Stmt) -> ir.Stmt:
        return self.binary(BinaryOpKind.DIV, a, b)

    def neg(self, a: ir.Stmt) -> ir.Stmt:
        return self.unary(UnaryOpKind.NEG, a)

    def sin(self, a: ir.Stmt) -> ir.Stmt:
        return self.unary(UnaryOpKind.SIN, a)

    def cos(self, a: ir.Stmt) -> ir.Stmt:
        return self.unary(UnaryOpKind.COS, a)

    # ---- memory ------------------------------------------------------------------------------------------
    def alloca(self, dtype: T.DataType, name: str = "") -> ir.Alloca:
        return self.insert(ir.Alloca(dtype=dtype, name=name))

    def load(self, alloca: ir.Alloca) -> ir.Stmt:
        return self.insert(ir.LocalLoad(alloca=alloca, dtype=alloca.dtype))

    def store(self, alloca: ir.Alloca, value: ir.Stmt) -> ir.Stmt:
        return self.insert(ir.LocalStore(alloca=alloca, value=self.cast(value, alloca.dtype)))

    def global_ptr(self, container: ir.ContainerSlot, indices: list[ir.Stmt]) -> ir.GlobalPtr:
        if len(indices) != container.ndim:
            raise InternalCompilerError(f"{container.name} takes {container.ndim} indices, got {len(indices)}",
                                        self.loc)
        idx = [self.cast(i, T.i32) for i in indices]
        return self.insert(ir.GlobalPtr(container=container, indices=idx, dtype=container.dtype))

    def global_load(self, ptr: ir.GlobalPtr) -> ir.Stmt:
        return self.insert(ir.GlobalLoad(ptr=ptr, dtype=ptr.dtype))

    def global_store(self, ptr: ir.GlobalPtr, value: ir.Stmt) -> ir.Stmt:
        return self.insert(ir.GlobalStore(ptr=ptr, value=self.cast(value, ptr.dtype)))

    def atomic(self, op: AtomicOpKind, ptr: ir.GlobalPtr, value: ir.Stmt, expected: ir.Stmt | None = None
               ) -> ir.Stmt:
        """`expected`: the compared value of a CAS (None for every other op)."""
        if expected is not None:
            expected = self.cast(expected, ptr.dtype)
        return self.insert(ir.AtomicOp(op=op, ptr=ptr, value=self.cast(value, ptr.dtype), expected=expected,
                                       dtype=ptr.dtype))

    # ---- control flow ------------------------------------------------------------------------------------
    def range_for(self, begin: ir.Stmt, end: ir.Stmt, **kw: object) -> ir.RangeFor:
        loop = ir.RangeFor(begin=self.cast(begin, T.i32), end=self.cast(end, T.i32), body=ir.Block(), **kw)
        return self.insert(loop)

    def loop_index(self, loop: ir.RangeFor) -> ir.Stmt:
        return self.insert(ir.LoopIndex(loop=loop, dtype=T.i32))

    def bitcast(self, value: ir.Stmt, dtype: T.DataType) -> ir.Stmt:
        """`value`'s bits read as `dtype` (same width)."""
        return self.insert(ir.Cast(operand=value, dtype=dtype, bitcast=True))

    def if_(self, cond: ir.Stmt) -> ir.If:
        return self.insert(ir.If(cond=self.cast(cond, T.u1), then_block=ir.Block(), else_block=ir.Block()))

    def while_(self) -> ir.While:
        return self.insert(ir.While(body=ir.Block()))
