"""Subscripts in kernel code: `x[i, j]` of fields and ndarrays (a GlobalRef, loaded only when its value is
needed), of vector and matrix values (components, slices, runtime positions), with Taichi's index expansion
(`x[I]` of a vector index) and element selections of vector fields."""
from __future__ import annotations

import ast
from typing import Any

import numpy as np

from wgkern.errors import CompileError
from wgkern.frontend import arith, vectors
from wgkern.frontend.sparse_matrix import SparseMatrixRef
from wgkern.frontend.buffer_view import BufferViewRef
from wgkern.lang.scalar_component import ScalarComponent
from wgkern.lang.structs import StructField
from wgkern.frontend.shared_arrays import SharedArrayRef
from wgkern.frontend.values import GlobalRef, NdarrayRef, StructElement, VectorValue, describe, is_runtime
from wgkern.ir import nodes as ir
from wgkern.ir.ops import BinaryOpKind
from wgkern.lang import types as T


class SubscriptMixin:
    """The builder's rules for subscripts."""

    # ---- subscripts ---------------------------------------------------------------------------------------
    def visit_Subscript(self, node: ast.Subscript) -> Any:
        base = self.visit(node.value)
        index_node = node.slice
        elements = index_node.elts if isinstance(index_node, ast.Tuple) else [index_node]
        if any(isinstance(e, ast.Slice) for e in elements) and self.is_tile_source(base):
            return self.tile_slice(base, elements, ast.unparse(node.value))      # frontend/tiles.py
        if isinstance(index_node, ast.Tuple):
            indices = self.visit_elements(index_node.elts)
        else:
            indices = [self.visit(index_node)]
        return self.subscript(base, indices, ast.unparse(node.value))

    def expand_indices(self, indices: list[Any]) -> list[Any]:
        """`x[I]` with I a vector or tuple of indices means `x[I[0], I[1], ...]`."""
        out: list[Any] = []
        for index in indices:
            if isinstance(index, VectorValue):
                out.extend(index.elements)
            elif isinstance(index, (tuple, list)):
                out.extend(index)
            elif isinstance(index, np.ndarray) and index.ndim == 1 and index.dtype.kind in "iu":
                out.extend(index.tolist())     # a compile-time index vector (wk.static(wk.grouped(...)))
            else:
                out.append(index)
        return out

    def subscript(self, base: Any, indices: list[Any], label: str = "") -> Any:
        """base[indices]; `label` is the base's source text, used to name it in messages."""
        if isinstance(base, StructField):
            dynamic = self.dynamic_list(base, self.expand_indices(indices))
            return dynamic if dynamic is not None else StructElement(base, self.expand_indices(indices), label)
        if isinstance(base, BufferViewRef):
            return self.buffer_view_subscript(base, indices)
        if isinstance(base, ScalarComponent):        # v.get_scalar_field(c)[I]: component c of v[I]
            given = [i for i in self.expand_indices(indices) if i is not None]
            if len(given) != len(base.shape):
                raise CompileError(f"component field '{base.name}' has shape {base.shape}: index it with "
                                   f"{len(base.shape) if base.shape else '[None]'}"
                                   f"{' indices' if base.shape else ''}, not {len(given)}")
            element = self.subscript(base.field, indices, label)
            return self.subscript(element, list(base.indices), label)
        if isinstance(base, SharedArrayRef):
            base = base.ref(label)
        if isinstance(base, NdarrayRef) or self.is_container(base):
            dynamic = self.dynamic_list(base, self.expand_indices(indices)) if self.is_container(base) else None
            if dynamic is not None:
                return dynamic
            return self.container_ref(base, self.expand_indices(indices), label)
        if isinstance(base, GlobalRef):
            if not base.element_shape:
                raise CompileError(f"'{base.label}' is indexed with too many indices")
            indices = self.expand_indices(indices)
            if any(isinstance(i, slice) for i in indices):
                return self.vector_subscript(self.load_ref(base), indices)    # x[i][:, j] read as a value
            if len(indices) > len(base.element_shape):
                raise CompileError(f"elements of '{base.label}' have shape {base.element_shape}; got "
                                   f"{len(indices)} indices (Expected {len(base.element_shape)} indices, got "
                                   f"{len(indices)})")
            extra = [self.as_index(i) for i in indices]
            if base.clamp:
                extra = self.clamp_element_indices(extra, base.element_shape)
            return GlobalRef(base.slot, base.indices + extra, base.element_shape[len(indices):], base.label,
                             base.clamp)
        if isinstance(base, VectorValue):
            return self.vector_subscript(base, self.expand_indices(indices))
        if isinstance(base, SparseMatrixRef):
            return self.sparse_matrix_entry(base, indices)
        if is_runtime(base):
            raise CompileError(f"{describe(base)} cannot be indexed")
        if any(is_runtime(i) for i in indices):
            raise CompileError(f"indexing {describe(base)} needs a compile-time index "
                               "(use wk.static(range(...)) for the loop variable)")
        key = indices[0] if len(indices) == 1 else tuple(indices)
        try:
            return base[key]
        except (TypeError, KeyError, IndexError) as exc:
            raise CompileError(f"cannot index {describe(base)} with {key!r}: {exc}") from None

    def element_selection(self, shape: tuple[int, ...], indices: list[Any]) -> tuple[Any, tuple[int, ...]]:
        """Flat element positions picked by `indices` from a vector/matrix of `shape`: (list of positions,
        result shape), or (runtime flat index, ()) for a runtime scalar pick. A position is an int, or a runtime
        flat index where a slice or a whole row sits beside a runtime index (`m[:, j]`, `m[i, 1:]`, `m[i]`)."""
        if not 1 <= len(indices) <= len(shape):
            what = (f"a vector of {shape[0]} elements takes 1 index" if len(shape) == 1 else
                    f"a {shape[0]}x{shape[1]} matrix takes 1 or 2 indices (a row, or a row and a column)")
            raise CompileError(f"{what}, got {len(indices)} (Expected {len(shape)} indices, got {len(indices)})")
        for i in indices:
            if not is_runtime(i) and not isinstance(i, (int, slice)):
                raise CompileError(f"vector/matrix indices must be integers or slices, got {i!r}")
            bounds = (i.start, i.stop) if isinstance(i, slice) else (i,)
            if any(isinstance(b, int) and not is_runtime(b) and b < 0 for b in bounds):
                # Taichi and Quadrants refuse them; counting from the end would silently differ from their code
                raise CompileError(f"Negative indices are not supported in Quadrants kernels, nor in Taichi's or "
                                   f"wgkern's: {i!r} in an index of a {'x'.join(map(str, shape))} vector/matrix; "
                                   f"count from 0 (0..{shape[0] - 1})")
        picks_one = len(indices) == len(shape) and not any(isinstance(i, slice) for i in indices)
        if picks_one and any(is_runtime(i) for i in indices):
            flat = self.element_index(indices[0], shape, 0)
            if len(shape) == 2:
                flat = arith.binary(self.b, BinaryOpKind.ADD,
                                    arith.binary(self.b, BinaryOpKind.MUL, flat, self.b.const(shape[1], T.i32)),
                                    self.element_index(indices[1], shape, 1))
            return flat, ()
        axes, kept = self.selection_axes(shape, indices)
        if len(shape) == 1:
            return axes[0], kept
        return [self.flat_position(r, c, shape[1]) for r in axes[0] for c in axes[1]], kept

    def element_index(self, index: Any, shape: tuple[int, ...], axis: int) -> ir.Stmt:
        """A run-time index along `axis` of a vector/matrix of `shape`. Under wk.init(debug=True) one outside
        the axis fails the launch naming the line (without debug a read past the end gives the last element)."""
        from wgkern.runtime.program import current
        position = self.as_index(index)
        program = current()
        if program is None or not program.options.debug:
            return position
        n = shape[axis]
        outside = arith.binary(self.b, BinaryOpKind.BIT_OR,
                               arith.binary(self.b, BinaryOpKind.CMP_LT, position, self.b.const(0, T.i32)),
                               arith.binary(self.b, BinaryOpKind.CMP_GE, position, self.b.const(n, T.i32)))
        kind = (f"vector of {n} elements" if len(shape) == 1 else
                f"{shape[0]}x{shape[1]} matrix ({('row', 'column')[axis]})")
        with self.b.at(self.b.if_(outside).then_block):
            self.b.insert(ir.AssertFail(message=f"index out of range for a {kind} (Out of bound access): a "
                                                f"run-time index must lie in 0..{n - 1}"))
        return position

    def selection_axes(self, shape: tuple[int, ...], indices: list[Any]) -> tuple[list[list[Any]], tuple[int, ...]]:
        """The positions `indices` pick along each axis of `shape` (ints, or a runtime index), and the lengths
        of the axes a slice keeps (the result's shape)."""
        axes: list[list[Any]] = []
        kept: list[int] = []
        for i, n in zip(indices, shape):
            if isinstance(i, slice):
                axes.append(list(range(*i.indices(n))))
                kept.append(len(axes[-1]))
                continue
            if is_runtime(i):
                axes.append([self.element_index(i, shape, len(axes))])
                continue
            position = i
            if not 0 <= position < n:
                raise CompileError(f"index {i} is out of range for a size-{n} axis")
            axes.append([position])
        if len(axes) < len(shape):           # m[i]: row i
            axes.append(list(range(shape[1])))
            kept.append(shape[1])
        if any(k == 0 for k in kept):
            raise CompileError("a vector/matrix slice must keep at least one element")
        return axes, tuple(kept)

    def element_slice_refs(self, base: GlobalRef, indices: list[Any]) -> list[GlobalRef]:
        """`x[i][:, j] = ...`: one reference per element of a field element's slice, row-major."""
        axes, _ = self.selection_axes(base.element_shape, indices)
        combos: list[list[Any]] = [[]]
        for axis in axes:
            combos = [combo + [self.as_index(p)] for combo in combos for p in axis]
        refs = []
        for extra in combos:
            if base.clamp:
                extra = self.clamp_element_indices(extra, base.element_shape)
            refs.append(GlobalRef(base.slot, base.indices + extra, (), base.label, base.clamp))
        return refs

    def flat_position(self, row: Any, column: Any, columns: int) -> Any:
        """row * columns + column: an int for int positions, else a runtime index."""
        if isinstance(row, int) and isinstance(column, int):
            return row * columns + column
        row = self.b.const(row, T.i32) if isinstance(row, int) else row
        column = self.b.const(column, T.i32) if isinstance(column, int) else column
        return arith.binary(self.b, BinaryOpKind.ADD,
                            arith.binary(self.b, BinaryOpKind.MUL, row, self.b.const(columns, T.i32)), column)

    def vector_subscript(self, v: VectorValue, indices: list[Any]) -> Any:
        selection, shape = self.element_selection(v.shape, indices)
        if isinstance(selection, ir.Stmt):
            return vectors.dynamic_element(self.b, v.elements, selection)
        picked = [v.elements[k] if isinstance(k, int) else vectors.dynamic_element(self.b, v.elements, k)
                  for k in selection]
        return picked[0] if not shape else VectorValue(picked, shape[0], shape[1] if len(shape) > 1 else 0)
