"""Kernel side of `wk.BufferView` (lang/buffer_view.py): a window (offset, size) on a 1-D ndarray. A parameter
arrives as its ndarray and two i32 arguments; `v[i]` is the ndarray's element `offset + i`, `v.size` / `v.offset`
/ `v.shape` read the window, `v.subview(offset, size)` and `v[a:b]` narrow it and `BufferView(arr, offset, size)`
makes one from an ndarray parameter. Views are compile-time objects holding run-time offsets, so they pass
through funcs like any template value. Under wk.init(debug=True) an index or subview outside the window raises."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wgkern.errors import CompileError
from wgkern.frontend import arith
from wgkern.frontend.scope import Static
from wgkern.frontend.values import NdarrayRef, describe, is_runtime
from wgkern.ir import nodes as ir
from wgkern.ir.ops import BinaryOpKind, UnaryOpKind
from wgkern.lang import types as T


@dataclass(eq=False)
class BufferViewRef:
    """A BufferView as kernel code sees it: the viewed ndarray and the window's i32 offset and size."""
    name: str
    array: NdarrayRef
    offset: ir.Stmt
    size: ir.Stmt


@dataclass(frozen=True)
class BufferViewMethod:
    """`v.subview`, waiting for its call."""
    view: BufferViewRef
    name: str


class BufferViewMixin:
    """FunctionBuilder methods for BufferView values (the builder binds parameters; attribute access, calls and
    subscripts dispatch here)."""

    def bind_buffer_view_arg(self, name: str, spec: ir.ArgSpec) -> None:
        array_index, offset_index, size_index = spec.components
        array_spec = self.ctx.arg_specs[array_index]
        dtype, element_shape = array_spec.dtype, tuple(array_spec.element_shape)
        if isinstance(dtype, T.VectorType):
            dtype, element_shape = dtype.dtype, dtype.element_shape
        array = NdarrayRef(array_index, name, dtype, 1, element_shape)
        offset = self.b.insert(ir.ArgLoad(arg_index=offset_index, dtype=T.i32))
        size = self.b.insert(ir.ArgLoad(arg_index=size_index, dtype=T.i32))
        self.frame.scope.define(name, Static(BufferViewRef(name, array, offset, size)))

    def make_buffer_view(self, args: list[Any], kwargs: dict[str, Any]) -> BufferViewRef:
        """`BufferView(arr, offset, size)` in kernel code, `arr` an ndarray parameter."""
        values = dict(zip(("ndarray", "offset", "size"), args), **kwargs)
        if set(values) != {"ndarray", "offset", "size"}:
            raise CompileError("BufferView(ndarray, offset, size) takes an ndarray parameter, an offset and a size")
        array = values["ndarray"]
        if not isinstance(array, NdarrayRef) or array.ndim != 1:
            raise CompileError(f"BufferView(ndarray, offset, size) views a 1D ndarray parameter, got "
                               f"{describe(array)}")
        offset, size = self.as_index(values["offset"]), self.as_index(values["size"])
        extent = self.b.insert(ir.ShapeOf(container=self.ctx.ndarray_slot(array), axis=0, dtype=T.i32))
        self.check_window(offset, size, extent, "BufferView Out Of Range: BufferView(ndarray, offset, size) "
                                                "exceeds the ndarray (BufferView construction out of range)")
        return BufferViewRef(array.name, array, offset, size)

    def buffer_view_attribute(self, view: BufferViewRef, attr: str) -> Any:
        if attr == "size":
            return view.size
        if attr == "offset":
            return view.offset
        if attr == "shape":
            return (view.size,)
        if attr == "subview":
            return BufferViewMethod(view, attr)
        if attr == "dtype":
            return view.array.dtype
        raise CompileError(f"BufferView '{view.name}' has no attribute '{attr}' (it has size, offset, shape, "
                           "subview)")

    def call_buffer_view_method(self, method: BufferViewMethod, args: list[Any], kwargs: dict[str, Any]) -> Any:
        values = dict(zip(("offset", "size"), args), **kwargs)
        if set(values) != {"offset", "size"} or len(args) > 2:
            raise CompileError(f"{method.view.name}.subview(offset, size) takes an offset and a size")
        return self.subview(method.view, self.as_index(values["offset"]), self.as_index(values["size"]))

    def subview(self, view: BufferViewRef, offset: ir.Stmt, size: ir.Stmt) -> BufferViewRef:
        self.check_window(offset, size, view.size, "subview Out Of Range")
        return BufferViewRef(view.name, view.array, arith.binary(self.b, BinaryOpKind.ADD, view.offset, offset), size)

    def buffer_view_subscript(self, view: BufferViewRef, indices: list[Any]) -> Any:
        if len(indices) == 1 and isinstance(indices[0], slice):        # v[a:b]: a subview
            key = indices[0]
            if key.step not in (None, 1):
                raise CompileError(f"BufferView slices take step=1, got step={key.step} (a view is contiguous: an "
                                   "explicit step is not supported)")
            if any(is_runtime(bound) for bound in (key.start, key.stop)) or \
                    any(bound is not None and bound < 0 for bound in (key.start, key.stop)):
                raise CompileError("a BufferView slice in kernel code takes non-negative compile-time bounds; use "
                                   "v.subview(offset, size) for run-time ones")
            start = self.b.const(key.start or 0, T.i32)
            stop = view.size if key.stop is None else self.b.const(key.stop, T.i32)
            return self.subview(view, start, arith.binary(self.b, BinaryOpKind.SUB, stop, start))
        if not indices or any(isinstance(i, slice) for i in indices):
            raise CompileError(f"BufferView '{view.name}' is indexed with one index (or sliced v[a:b])")
        index = self.as_index(indices[0])
        inside = self.check_window(index, self.b.const(1, T.i32), view.size,
                                   f"BufferView Out Of Range: index outside '{view.name}'")
        position = arith.binary(self.b, BinaryOpKind.ADD, view.offset, index)
        if inside is not None:      # debug: a failed check reports the view; the access itself stays in range
            position = self.b.select(inside, position, self.b.const(0, T.i32))
        return self.subscript(view.array, [position] + list(indices[1:]), view.name)

    def check_window(self, offset: ir.Stmt, size: ir.Stmt, extent: ir.Stmt, message: str) -> ir.Stmt | None:
        """Under wk.init(debug=True): 0 <= offset, 0 <= size and offset + size <= extent, else the launch raises
        `message`; returns that condition (None without debug)."""
        from wgkern.runtime.program import current
        program = current()
        if program is None or not program.options.debug:
            return None
        b = self.b
        zero = b.const(0, T.i32)
        inside = arith.binary(b, BinaryOpKind.BIT_AND, arith.binary(b, BinaryOpKind.CMP_GE, offset, zero),
                              arith.binary(b, BinaryOpKind.CMP_GE, size, zero))
        end = arith.binary(b, BinaryOpKind.ADD, offset, size)
        inside = arith.binary(b, BinaryOpKind.BIT_AND, inside, arith.binary(b, BinaryOpKind.CMP_LE, end, extent))
        branch = b.if_(arith.unary(b, UnaryOpKind.LOGICAL_NOT, inside))
        with b.at(branch.then_block):
            b.insert(ir.AssertFail(message=message))
        return inside
