"""Built-in calls in kernel code that make values: casts and bit casts, `len`, random numbers, unary math,
reductions (`sum`, `min`, `max` over a sequence or vector), vector and matrix constructors, raw division."""
from __future__ import annotations

import ast
import builtins
from typing import Any

import numpy as np

from wgkern.errors import CompileError
from wgkern.frontend import arith, intrinsics, vectors
from wgkern.frontend.values import NdarrayRef, VectorValue, describe, is_runtime
from wgkern.ir import nodes as ir
from wgkern.ir.ops import BinaryOpKind, UnaryOpKind
from wgkern.lang import types as T
from wgkern.lang.matrix import Matrix, Vector


# `sum`, `min` and `max` of a sequence in kernel code: the binary operation they fold with.
SEQUENCE_REDUCTIONS = {builtins.sum: BinaryOpKind.ADD, builtins.min: BinaryOpKind.MIN,
                       builtins.max: BinaryOpKind.MAX}


class BuiltinCallMixin:
    """The builder's rules for built-in calls that make values."""

    def reduce_sequence(self, callee: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """`sum([...])`, `max([...])`, `min([...])` over a list of run-time values (Taichi evaluates them as
        Python does, with its operators): folded left to right, `sum` from its start value (0 by default)."""
        items = list(args[0])
        if kwargs.keys() - {"start"} or (callee is not builtins.sum and (len(args) > 1 or kwargs)):
            raise CompileError(f"{describe(callee)}() over run-time values takes one list"
                               + (" and a start value" if callee is builtins.sum else ""))
        if callee is builtins.sum:
            total = args[1] if len(args) > 1 else kwargs.get("start", 0)
            for item in items:
                total = self.binary_op(ast.Add, total, item)
            return total
        if not items:
            raise CompileError(f"{describe(callee)}() of an empty list")
        result = items[0]
        for item in items[1:]:
            result = self.binary_values(SEQUENCE_REDUCTIONS[callee], result, item)
        return result

    def unary_values(self, op: UnaryOpKind, value: Any) -> Any:
        value = self.as_value(value)
        return vectors.unary(self.b, op, value) if isinstance(value, VectorValue) else arith.unary(self.b, op, value)

    def raw_division(self, a: Any, b: Any, remainder: bool) -> Any:
        """`wk.raw_div` / `wk.raw_mod`: C semantics (integer division truncates toward zero, the remainder takes
        the dividend's sign; floats: a / b and fmod)."""
        a, b = self.as_value(a), self.as_value(b)
        dtype = T.promote(a.dtype, b.dtype)
        if dtype.is_float:
            quotient = self.binary_values(BinaryOpKind.DIV, a, b)
            if not remainder:
                return quotient
            truncated = self.select_values(self.binary_values(BinaryOpKind.CMP_LT, quotient, 0.0),
                                           self.unary_values(UnaryOpKind.CEIL, quotient),
                                           self.unary_values(UnaryOpKind.FLOOR, quotient))
            return self.binary_values(BinaryOpKind.SUB, a, self.binary_values(BinaryOpKind.MUL, truncated, b))
        floored = self.binary_values(BinaryOpKind.FLOORDIV, a, b)
        rest = self.binary_values(BinaryOpKind.SUB, a, self.binary_values(BinaryOpKind.MUL, floored, b))
        signs_differ = self.binary_values(BinaryOpKind.CMP_NE, self.binary_values(BinaryOpKind.CMP_LT, a, 0),
                                          self.binary_values(BinaryOpKind.CMP_LT, b, 0))
        inexact = self.binary_values(BinaryOpKind.CMP_NE, rest, 0)
        adjust = self.binary_values(BinaryOpKind.BIT_AND, signs_differ, inexact)
        quotient = self.select_values(adjust, self.binary_values(BinaryOpKind.ADD, floored, 1), floored)
        if not remainder:
            return quotient
        return self.binary_values(BinaryOpKind.SUB, a, self.binary_values(BinaryOpKind.MUL, quotient, b))

    @staticmethod
    def no_kwargs(kwargs: dict[str, Any], name: str) -> None:
        if kwargs:
            raise CompileError(f"'{name}' takes no keyword arguments")

    def _matrix_argument(self, args: list[Any], kwargs: dict[str, Any], message: str) -> Any:
        """The matrix of wk.svd / eig / sym_eig / polar_decompose / make_spd(A[, dtype]): Taichi's optional
        second argument is the dtype to compute in."""
        if not 1 <= len(args) <= 2 or kwargs:
            raise CompileError(message)
        matrix = self.as_value(args[0])
        if len(args) == 2 and isinstance(matrix, VectorValue):
            matrix = vectors.cast(self.b, matrix, self.as_dtype(args[1]))
        return matrix

    @staticmethod
    def one_arg(args: list[Any], kwargs: dict[str, Any], name: str) -> Any:
        if len(args) != 1 or kwargs:
            raise CompileError(f"{name}() takes exactly one argument")
        return args[0]

    def len_of(self, args: list[Any]) -> Any:
        if len(args) != 1:
            raise CompileError("len() takes exactly one argument")
        target = args[0]
        if self.is_container(target):
            if not target.shape:
                raise CompileError(f"len() of the 0-d field '{target.name}'")
            return target.shape[0]
        from wgkern.frontend.values import NdarrayRef
        if isinstance(target, NdarrayRef):
            return self.ndarray_attribute(target, "shape")[0]
        if isinstance(target, VectorValue):
            return target.n
        if is_runtime(target):
            raise CompileError(f"len() of {describe(target)}")
        return len(target)

    def cast_to(self, value: Any, dtype: T.DataType) -> Any:
        value = self.as_value(value)
        if isinstance(value, VectorValue):
            return vectors.cast(self.b, value, dtype)
        return self.b.cast(value, dtype)

    def cast_call(self, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if "dtype" in kwargs:
            args = [*args, kwargs.pop("dtype")]
        if len(args) != 2 or kwargs:
            raise CompileError("wk.cast(value, dtype) takes 2 arguments")
        return self.cast_to(args[0], self.as_dtype(args[1]))

    def bit_cast_call(self, args: list[Any], kwargs: dict[str, Any]) -> ir.Stmt:
        """wk.bit_cast(value, dtype): a scalar's bits read as a dtype of the same width."""
        if "dtype" in kwargs:
            args = [*args, kwargs.pop("dtype")]
        if len(args) != 2 or kwargs:
            raise CompileError("wk.bit_cast(value, dtype) takes 2 arguments")
        dtype = self.as_dtype(args[1])
        value = self.as_value(args[0])
        if isinstance(value, VectorValue):
            raise CompileError("wk.bit_cast takes a scalar value")
        if value.dtype.bits != dtype.bits:
            raise CompileError(f"wk.bit_cast from {value.dtype.name} to {dtype.name} changes the width "
                               f"({value.dtype.bits} -> {dtype.bits} bits)")
        return self.b.bitcast(value, dtype)

    def random_call(self, args: list[Any], kwargs: dict[str, Any]) -> ir.Stmt:
        if len(args) > 1 or set(kwargs) - {"dtype"}:
            raise CompileError("wk.random() takes one optional argument, dtype")
        dtype = self.as_dtype(args[0] if args else kwargs.get("dtype", T.f32))
        if dtype.is_int and dtype.bits == 64:
            # every bit random, as in Taichi (a backend's RandomValue of a 64-bit integer is one 32-bit draw)
            high, low = (self.b.insert(ir.RandomValue(dtype=T.u32, site=self.ctx.next_random_site()))
                         for _ in range(2))
            wide = self.b.binary(BinaryOpKind.BIT_OR,
                                 self.b.binary(BinaryOpKind.SHL, self.b.cast(high, T.u64), self.b.const(32, T.u64)),
                                 self.b.cast(low, T.u64))
            return wide if dtype == T.u64 else self.b.bitcast(wide, dtype)
        if dtype == T.f64:
            return self.random_f64()
        return self.b.insert(ir.RandomValue(dtype=dtype, site=self.ctx.next_random_site()))

    def random_f64(self) -> ir.Stmt:
        """An f64 uniform in [0, 1) with all 53 bits of its mantissa random, as Taichi's (one 32-bit draw leaves
        f64 values on a coarse grid): 27 bits of one draw and 26 of another, (high * 2^26 + low) * 2^-53, exact."""
        high, low = (self.b.insert(ir.RandomValue(dtype=T.u32, site=self.ctx.next_random_site()))
                     for _ in range(2))
        high = self.b.binary(BinaryOpKind.SHR, high, self.b.const(5, T.u32))
        low = self.b.binary(BinaryOpKind.SHR, low, self.b.const(6, T.u32))
        mantissa = self.b.add(self.b.mul(self.b.cast(high, T.f64), self.b.const(2.0 ** 26, T.f64)),
                              self.b.cast(low, T.f64))
        return self.b.mul(mantissa, self.b.const(2.0 ** -53, T.f64))

    def randn_call(self, args: list[Any], kwargs: dict[str, Any]) -> ir.Stmt:
        """Box-Muller: sqrt(-2 log(1 - u1)) cos(2 pi u2), u1 and u2 two uniform draws in [0, 1)."""
        if len(args) > 1 or set(kwargs) - {"dtype"}:
            raise CompileError("wk.randn() takes one optional argument, dtype")
        dtype = self.as_dtype(args[0] if args else kwargs.get("dtype", T.f32))
        if not dtype.is_float:
            raise CompileError(f"wk.randn() gives floats, not {dtype.name}")
        b = self.b
        u1 = b.insert(ir.RandomValue(dtype=dtype, site=self.ctx.next_random_site()))
        u2 = b.insert(ir.RandomValue(dtype=dtype, site=self.ctx.next_random_site()))
        radius = b.unary(UnaryOpKind.SQRT, b.mul(b.const(-2.0, dtype),
                                                 b.unary(UnaryOpKind.LOG, b.sub(b.const(1.0, dtype), u1))))
        angle = b.mul(b.const(2 * np.pi, dtype), u2)
        return b.mul(radius, b.unary(UnaryOpKind.COS, angle))

    def unary_call(self, callee: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        op = intrinsics.UNARY_FUNCTIONS[callee]
        result_dtype = None
        if callee in intrinsics.WITH_RESULT_DTYPE:
            if len(args) == 2:
                result_dtype = args.pop()
            elif "dtype" in kwargs:
                result_dtype = kwargs.pop("dtype")
        if len(args) != 1 or kwargs:
            raise CompileError(f"{describe(callee)} takes one argument, got {len(args)}")
        value = self.as_value(args[0])
        if isinstance(value, VectorValue):
            out: Any = vectors.unary(self.b, op, value)
        else:
            out = arith.unary(self.b, op, value)
        if callee in intrinsics.PYTHON_INT_RESULT:
            result_dtype = T.DEFAULT_INT
        return self.cast_to(out, self.as_dtype(result_dtype)) if result_dtype is not None else out

    def reduction_call(self, op: BinaryOpKind, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if kwargs or not args:
            raise CompileError("min()/max() take one or more positional arguments")
        if len(args) == 1:
            value = self.as_value(args[0])
            if not isinstance(value, VectorValue):
                raise CompileError("min()/max() of a single scalar")
            return vectors.reduce(self.b, op, value.elements)
        out = args[0]
        for arg in args[1:]:
            out = self.binary_values(op, out, arg)
        return out

    # ---- vectors ------------------------------------------------------------------------------------------
    def flatten_args(self, args: list[Any]) -> list[ir.Stmt]:
        flat: list[ir.Stmt] = []
        for arg in args:
            if isinstance(arg, (list, tuple)):
                flat.extend(self.flatten_args(list(arg)))
                continue
            value = self.as_value(arg)
            flat.extend(value.elements if isinstance(value, VectorValue) else [value])
        return flat

    def construct_vector(self, vtype: T.VectorType, args: list[Any]) -> VectorValue:
        flat = self.flatten_args(args)
        if len(flat) == 1:
            flat = flat * vtype.size
        if len(flat) != vtype.size:
            raise CompileError(f"{vtype!r} takes {vtype.size} values (or one to broadcast), got {len(flat)}")
        return VectorValue([self.b.cast(e, vtype.dtype) for e in flat], vtype.n, vtype.m)

    def construct_from_lists(self, is_matrix: bool, args: list[Any], kwargs: dict[str, Any]) -> VectorValue:
        dtype = kwargs.pop("dt", None)
        if len(args) == 2 and dtype is None:
            dtype = args.pop()
        if len(args) != 1 or kwargs or not isinstance(args[0], (list, tuple)):
            raise CompileError("wk.Vector/wk.Matrix take a list of values (and an optional dt)")
        rows = args[0]
        if is_matrix and rows and not any(isinstance(r, (list, tuple)) for r in rows):
            is_matrix = False      # wk.Matrix([a, b]) is a vector, as in Taichi
        if is_matrix:
            if not rows or not all(isinstance(r, (list, tuple)) for r in rows):
                raise CompileError("wk.Matrix takes a list of rows")
            n, m = len(rows), len(rows[0])
        else:
            n, m = len(self.flatten_args([rows])), 0
        flat = self.flatten_args([rows])
        if len(flat) != n * (m or 1):
            raise CompileError("wk.Matrix rows must all have the same length")
        if dtype is None:
            flat = vectors.unify_dtype(self.b, flat)
        else:       # each element cast on its own, as Taichi does: an i8 -128 beside a u32 stays -128 in an i64
            flat = [self.b.cast(e, self.as_dtype(dtype)) for e in flat]
        return VectorValue(flat, n, m)

    def matrix_from_vectors(self, as_columns: bool, args: list[Any], kwargs: dict[str, Any]) -> VectorValue:
        """wk.Matrix.rows([v0, v1, ...]) / wk.Matrix.cols([...]) with vectors of one length."""
        name = "cols" if as_columns else "rows"
        if len(args) != 1 or kwargs or not isinstance(args[0], (list, tuple)) or not args[0]:
            raise CompileError(f"wk.Matrix.{name} takes a list of vectors")
        vectors_in = [self.as_value(v) for v in args[0]]
        if not all(isinstance(v, VectorValue) and not v.is_matrix for v in vectors_in):
            raise CompileError(f"wk.Matrix.{name} takes a list of vectors")
        length = vectors_in[0].n
        if any(v.n != length for v in vectors_in):
            raise CompileError(f"wk.Matrix.{name}: the vectors have different lengths "
                               f"({', '.join(str(v.n) for v in vectors_in)})")
        flat = vectors.unify_dtype(self.b, [e for v in vectors_in for e in v.elements])
        rows = VectorValue(flat, len(vectors_in), length)
        return vectors.transpose(self.b, rows) if as_columns else rows
