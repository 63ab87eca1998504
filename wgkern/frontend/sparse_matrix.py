"""Kernel side of `wk.types.sparse_matrix_builder()` parameters: `K[i, j] += v` / `K[i, j] -= v`.

The parameter arrives as four ndarray arguments (rows, cols, values, count; linalg/builder.py). Appending a
triplet is `slot = atomic_add(count[0], 1)`, then, only when `slot < rows.shape[0]`, three stores at `slot`:
the counter keeps counting past the capacity, so the host sees the overflow and nothing is written out of
bounds. The builder itself (and what build() does with the triplets) lives in wgkern/linalg/."""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from wgkern.errors import CompileError
from wgkern.frontend.scope import Static
from wgkern.frontend.values import NdarrayRef, VectorValue
from wgkern.ir import nodes as ir
from wgkern.ir.ops import AtomicOpKind, BinaryOpKind
from wgkern.lang import types as T


@dataclass(eq=False)
class SparseMatrixRef:
    """A sparse_matrix_builder() parameter as kernel code sees it: its buffers as ndarray arguments."""
    name: str
    dtype: T.DataType
    rows: NdarrayRef
    cols: NdarrayRef
    values: NdarrayRef
    count: NdarrayRef


@dataclass(eq=False)
class SparseMatrixEntry:
    """`K[i, j]` of a builder: only `+=` and `-=` may target it."""
    matrix: SparseMatrixRef
    row: Any
    col: Any


class SparseMatrixMixin:
    """FunctionBuilder methods for builder parameters (the builder binds them; statements dispatch to them)."""

    def bind_sparse_matrix_arg(self, name: str, spec: ir.ArgSpec) -> None:
        specs = self.ctx.arg_specs
        buffers = [NdarrayRef(k, specs[k].name, specs[k].dtype, 1) for k in spec.components]
        self.frame.scope.define(name, Static(SparseMatrixRef(name, spec.dtype, *buffers)))

    def sparse_matrix_entry(self, matrix: SparseMatrixRef, indices: list[Any]) -> SparseMatrixEntry:
        if len(indices) != 2:
            raise CompileError(f"sparse matrix builder '{matrix.name}' is indexed with two indices, "
                               f"{matrix.name}[i, j]; got {len(indices)}")
        return SparseMatrixEntry(matrix, self.as_index(indices[0]), self.as_index(indices[1]))

    def sparse_matrix_update(self, entry: SparseMatrixEntry, op_type: type, value: Any) -> None:
        """`K[i, j] += v` (or `-=`): append the triplet (i, j, +-v)."""
        matrix = entry.matrix
        if op_type not in (ast.Add, ast.Sub):
            raise CompileError(f"only '+=' and '-=' are supported on sparse matrix builder '{matrix.name}'")
        value = self.as_value(value)
        if isinstance(value, VectorValue):
            raise CompileError(f"'{matrix.name}[i, j] += v' takes a scalar v, got a vector")
        value = self.b.cast(value, matrix.dtype)
        if op_type is ast.Sub:
            value = self.b.neg(value)
        b = self.b
        zero = b.const(0, T.i32)
        count_slot = self.ctx.ndarray_slot(matrix.count)
        slot = b.atomic(AtomicOpKind.ADD, b.global_ptr(count_slot, [zero]), b.const(1, T.i32))
        rows_slot = self.ctx.ndarray_slot(matrix.rows)
        capacity = b.insert(ir.ShapeOf(container=rows_slot, axis=0, dtype=T.i32))
        branch = b.if_(b.binary(BinaryOpKind.CMP_LT, slot, capacity))
        with b.at(branch.then_block):
            b.global_store(b.global_ptr(rows_slot, [slot]), entry.row)
            b.global_store(b.global_ptr(self.ctx.ndarray_slot(matrix.cols), [slot]), entry.col)
            b.global_store(b.global_ptr(self.ctx.ndarray_slot(matrix.values), [slot]), value)
