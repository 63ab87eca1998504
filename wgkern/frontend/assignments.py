"""Assignments in kernel code: `x = ...` (a new variable or a write), annotated and augmented assignment,
tuple unpacking, writes to fields, ndarrays, vector components and struct members, `global` names."""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

import numpy as np

from wgkern.errors import CompileError
from wgkern.frontend import vectors
from wgkern.frontend.expressions import PYTHON_BINARY
from wgkern.frontend.graph_regions import spelling
from wgkern.frontend.sparse_matrix import SparseMatrixEntry
from wgkern.lang.structs import StructType
from wgkern.frontend.scope import Fixed, GlobalVar, LocalVar, Static, StructVar, VectorVar
from wgkern.frontend.values import (GlobalRef, StructElement, StructValue, VectorValue, describe, is_python_number,
                                    is_runtime)
from wgkern.ir import nodes as ir
from wgkern.ir.ops import AtomicOpKind, BinaryOpKind
from wgkern.lang import swizzle
from wgkern.lang import types as T


ATOMIC_AUGMENTED: dict[type, AtomicOpKind] = {
    ast.Add: AtomicOpKind.ADD, ast.Sub: AtomicOpKind.SUB, ast.BitAnd: AtomicOpKind.AND,
    ast.BitOr: AtomicOpKind.OR, ast.BitXor: AtomicOpKind.XOR,
}


@dataclass(eq=False)
class BindingPlace:
    """A member of a local struct variable as an assignment target (its LocalVar/VectorVar/StructVar)."""
    binding: Any


@dataclass(eq=False)
class VarElements:
    """Components of a local vector variable: static flat positions (with the picked shape) or one runtime
    flat position."""
    var: VectorVar
    selection: Any
    shape: tuple[int, ...]


def runtime_list(value: list[Any]) -> bool:
    """A list literal of numbers with at least one run-time scalar (`v = [a[0], a[1]]`): it becomes a vector
    variable whose elements can be assigned (`v[0] = v[1]`)."""
    def runtime_scalar(v: Any) -> bool:
        return isinstance(v, ir.Stmt) or (isinstance(v, GlobalRef) and not v.element_shape)
    return any(runtime_scalar(v) for v in value) and all(runtime_scalar(v) or is_python_number(v) for v in value)


def is_static_call(node: ast.expr) -> bool:
    """`wk.static(...)` spelled with any module alias (checked by the callee's name only)."""
    return isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Attribute) and node.func.attr == "static")
        or (isinstance(node.func, ast.Name) and node.func.id == "static"))


class AssignmentMixin:
    """The builder's rules for assignments."""

    # ---- variables -----------------------------------------------------------------------------------------
    def new_variable(self, name: str, value: Any, dtype: T.DataType | None = None) -> Any:
        if isinstance(value, (StructValue, StructElement)):
            return self.new_struct_var(name, self.struct_of(value, None, f"'{name} = ...'"))
        value = self.as_value(value)
        if name in self.frame.reduction_names and len(self.frame.scope.levels) == 1 \
                and self.b.block is self.root_block:      # the kernel's scope, or a func's inlined there
            element_shape = value.shape if isinstance(value, VectorValue) else ()
            slot = ir.ContainerSlot(name=name, kind="temp", dtype=dtype or value.dtype,
                                    ndim=max(len(element_shape), 1), shape=element_shape or (1,))
            self.ctx.slots.append(slot)
            var: Any = GlobalVar(slot, element_shape)
        elif isinstance(value, VectorValue):
            element_dtype = dtype or value.dtype
            var: LocalVar | VectorVar = VectorVar([self.b.alloca(element_dtype, name) for _ in value.elements],
                                                  value.n, value.m)
        else:
            var = LocalVar(self.b.alloca(dtype or value.dtype, name))
        self.write_binding(var, value)
        return var

    def write_binding(self, binding: Any, value: Any) -> None:
        if isinstance(binding, StructVar):
            self.write_struct_var(binding, value)
            return
        value = self.as_value(value)
        if isinstance(binding, GlobalVar):
            if isinstance(value, VectorValue) and value.shape != binding.element_shape:
                raise CompileError(f"cannot assign {describe(value)} to the variable '{binding.slot.name}'")
            self.store_ref(self.global_var_ref(binding), value)
            return
        if isinstance(binding, LocalVar):
            if isinstance(value, VectorValue):
                raise CompileError(f"cannot assign {describe(value)} to the scalar variable "
                                   f"'{binding.alloca.name}'")
            self.b.store(binding.alloca, value)
            return
        if isinstance(value, VectorValue):
            if value.shape != ((binding.n, binding.m) if binding.m else (binding.n,)):
                raise CompileError(f"cannot assign {describe(value)} to the vector variable "
                                   f"'{binding.allocas[0].name}' of shape "
                                   f"{'x'.join(map(str, (binding.n, binding.m) if binding.m else (binding.n,)))}")
            elements = value.elements
        else:
            elements = [value] * len(binding.allocas)
        for alloca, element in zip(binding.allocas, elements):
            self.b.store(alloca, element)

    def rebindable_loop_variable(self, name: str, binding: Fixed) -> bool:
        """Whether `name = ...` may rebind this loop variable: in the loop's own body, as in Python (and
        Quadrants: `i_b = wk.cast(i_b, wk.i32)`), it names a new local for the rest of the iteration; the loop's
        counter is unchanged. Inside a nested block the rebinding would end with that block, unlike Python, so
        it stays an error there."""
        return binding.what == "loop variable" and name in self.frame.scope.levels[-1]

    def assign_name(self, name: str, value: Any, static: bool = False, dtype: T.DataType | None = None) -> None:
        scope = self.frame.scope
        if isinstance(value, StructElement):           # a copy of the element's members, read now
            value = self.load_struct(value)
        if isinstance(value, list) and not static and runtime_list(value):
            value = self.as_value(value)               # a list of run-time numbers is a vector variable, as in Taichi
        if isinstance(value, np.ndarray) and not static and value.ndim in (1, 2) and value.size \
                and value.dtype.kind in "biuf":
            value = self.as_value(value)     # `pos = cam` (a Python-scope vector): a local vector variable, as in Taichi
        binding = scope.lookup(name)
        if isinstance(value, StructValue) and not static:
            if isinstance(binding, StructVar):
                self.write_struct_var(binding, value)
            elif isinstance(binding, (LocalVar, VectorVar, GlobalVar)):
                raise CompileError(f"cannot assign {describe(value)} to the variable '{name}' "
                                   "(it holds a number or vector)")
            else:
                scope.define(name, self.new_struct_var(name, value))
            return
        if isinstance(binding, Fixed):
            if not static and self.rebindable_loop_variable(name, binding):
                scope.define(name, self.new_variable(name, value, dtype))
                return
            raise CompileError(f"cannot assign to the {binding.what} '{name}'")
        if isinstance(binding, (LocalVar, VectorVar, GlobalVar, StructVar)) and not static:
            self.write_binding(binding, value)
            return
        if static or not (is_runtime(value) or is_python_number(value)):
            if is_runtime(value):
                raise CompileError(f"cannot bind '{name}' to {describe(value)} at compile time")
            scope.define(name, Static(value))
            return
        if isinstance(binding, Static) and is_python_number(value) and is_python_number(binding.value):
            scope.define(name, Static(value))     # a compile-time number updated with compile-time values
            return
        scope.define(name, self.new_variable(name, value, dtype))

    # ---- assignment targets ----------------------------------------------------------------------------------
    def target_place(self, node: ast.expr) -> Any:
        """What an assignment target denotes: a name (str), a GlobalRef or VarElements."""
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Subscript):
            var = self.local_vector_var(node.value)
            index_nodes = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            indices = self.expand_indices(self.visit_elements(index_nodes))
            if var is not None:
                shape = (var.n, var.m) if var.m else (var.n,)
                selection, picked = self.element_selection(shape, indices)
                return VarElements(var, selection, picked)
            base = self.visit(node.value)
            if isinstance(base, GlobalRef) and any(isinstance(i, slice) for i in indices):
                return self.element_slice_refs(base, indices)      # components, written as a swizzle's are
            place = self.subscript(base, indices, ast.unparse(node.value))
            if isinstance(place, (GlobalRef, StructElement, SparseMatrixEntry)):
                return place
            raise CompileError(f"cannot assign to an element of {describe(base)}")
        if isinstance(node, ast.Attribute):
            var = self.local_vector_var(node.value)
            if var is not None and not var.m and self.is_swizzle(node.attr, (var.n,)):
                picked = swizzle.positions(node.attr, var.n)
                return VarElements(var, picked, () if len(picked) == 1 else (len(picked),))
            member = self.struct_member_binding(node)
            if member is not None:
                return BindingPlace(member)
            base = self.visit(node.value)
            if isinstance(base, StructElement):
                return self.attribute_of(base, node.attr)
            if isinstance(base, StructValue):
                raise CompileError(f"cannot assign to the member '{node.attr}' of a struct value that is not a "
                                   f"variable ('{ast.unparse(node.value)}'); assign it to a variable first")
            if isinstance(base, GlobalRef) and base.element_shape and self.is_swizzle(node.attr, base.element_shape):
                if len(node.attr) == 1:
                    return self.attribute_of(base, node.attr)
                return [self.attribute_of(base, c) for c in node.attr]       # vf[i].xyz = ...: one per component
            raise CompileError(f"cannot assign to the attribute '{node.attr}' of {describe(base)}")
        raise CompileError(f"cannot assign to {type(node).__name__} expressions")

    def read_place(self, place: Any) -> Any:
        if isinstance(place, str):
            return self.lookup(place)
        if isinstance(place, GlobalRef):
            return self.load_ref(place)
        if isinstance(place, BindingPlace):
            return self.read_binding(place.binding)
        if isinstance(place, StructElement):
            return self.load_struct(place)
        if isinstance(place, list):
            return VectorValue([self.load_ref(ref) for ref in place], len(place))
        loads = [self.b.load(a) for a in place.var.allocas]
        if isinstance(place.selection, ir.Stmt):
            return vectors.dynamic_element(self.b, loads, place.selection)
        picked = [loads[k] if isinstance(k, int) else vectors.dynamic_element(self.b, loads, k)
                  for k in place.selection]
        shape = place.shape
        return picked[0] if not shape else VectorValue(picked, shape[0], shape[1] if len(shape) > 1 else 0)

    def write_place(self, place: Any, value: Any, static: bool = False) -> None:
        if isinstance(place, str):
            self.assign_name(place, value, static)
            return
        if isinstance(place, GlobalRef):
            self.store_ref(place, value)
            return
        if isinstance(place, StructElement):
            self.store_struct(place, value)
            return
        if isinstance(place, BindingPlace):
            self.write_binding(place.binding, value)
            return
        if isinstance(place, list):                     # components of a field element (a swizzle, a slice)
            for ref, part in zip(place, self.component_parts(value, len(place))):
                self.store_ref(ref, part)
            return
        value = self.as_value(value)
        allocas = place.var.allocas
        if isinstance(place.selection, ir.Stmt):
            if isinstance(value, VectorValue):
                raise CompileError("a runtime-indexed vector element takes a scalar")
            self.store_at_runtime_position(allocas, place.selection, value)
            return
        if isinstance(value, VectorValue):
            if len(value.elements) != len(place.selection):
                raise CompileError(f"cannot assign {describe(value)} to {len(place.selection)} component(s)")
            elements = value.elements
        else:
            elements = [value] * len(place.selection)
        for k, element in zip(place.selection, elements):
            if isinstance(k, int):
                self.b.store(allocas[k], element)
            else:
                self.store_at_runtime_position(allocas, k, element)

    def component_parts(self, value: Any, count: int) -> list[Any]:
        """What each of `count` components gets from `value`: a vector's or matrix's elements (row by row), or
        one scalar for all."""
        if isinstance(value, GlobalRef):
            value = self.load_ref(value)
        if isinstance(value, VectorValue) and len(value.elements) == count:
            return list(value.elements)
        if is_python_number(value) or isinstance(value, ir.Stmt):
            return [value] * count
        return self.unpack(value, count)

    def store_at_runtime_position(self, allocas: list[ir.Alloca], position: ir.Stmt, value: ir.Stmt) -> None:
        """allocas[position] = value for a runtime position: each element keeps its value unless it is the one.
        The value is cast to the element's type before the select, so the store is select(hit, value, load)
        of that type (a wider select cast back would hide the kept old value from offload's shared-local
        rewrite, and round the kept value through the wider type)."""
        for k, alloca in enumerate(allocas):
            hit = self.b.binary(BinaryOpKind.CMP_EQ, position, self.b.const(k, T.i32))
            self.b.store(alloca, self.b.select(hit, self.b.cast(value, alloca.dtype), self.b.load(alloca)))

    def assign_target(self, target: ast.expr, value: Any, static: bool = False) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            if any(isinstance(element, ast.Starred) for element in target.elts):
                raise CompileError("starred assignment targets (a, *b = ...) are not supported inside kernels; "
                                   "unpack every element")
            items = self.unpack(value, len(target.elts))
            for element, item in zip(target.elts, items):
                self.assign_target(element, item, static)
            return
        if isinstance(target, ast.Starred):
            raise CompileError("starred assignment targets are not supported")
        if self.tile_assignment(target, value):         # t[:] = a[r0:r1, c0:c1] and back (frontend/tiles.py)
            return
        self.write_place(self.target_place(target), value, static)

    def unpack(self, value: Any, count: int) -> list[Any]:
        if isinstance(value, GlobalRef):
            value = self.load_ref(value)
        if isinstance(value, VectorValue):
            items: list[Any] = list(value.elements) if not value.m else [value.row(i) for i in range(value.n)]
        elif is_runtime(value):
            raise CompileError(f"cannot unpack {describe(value)}")
        else:
            try:
                items = list(value)
            except TypeError:
                raise CompileError(f"cannot unpack {describe(value)}") from None
        if len(items) != count:
            raise CompileError(f"cannot unpack {len(items)} values into {count} targets")
        return items

    # ---- assignment statements -------------------------------------------------------------------------------
    def visit_Assign(self, node: ast.Assign) -> None:
        static = is_static_call(node.value)
        value = self.rvalue(node.value)
        for target in node.targets:
            self.assign_target(target, value, static)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        annotation = self.visit(node.annotation)
        if not isinstance(node.target, ast.Name):
            if node.value is not None:
                self.assign_target(node.target, self.visit(node.value))
            return
        name = node.target.id
        from wgkern.lang.structs import StructType
        if isinstance(annotation, StructType):          # p: P = ... (or p: P, zero)
            value = (self.zero_struct(annotation) if node.value is None
                     else self.struct_of(self.visit(node.value), annotation, f"'{name}: {annotation!r}'"))
            self.assign_name(name, value)
            return
        dtype = self.as_dtype(annotation)
        if node.value is None:
            if self.frame.scope.lookup(name) is None:
                zero = self.b.const(0, dtype)
                if isinstance(annotation, T.VectorType):
                    value: Any = VectorValue([zero] * annotation.size, annotation.n, annotation.m)
                else:
                    value = zero
                self.frame.scope.define(name, self.new_variable(name, value, dtype))
            return
        value = self.visit(node.value)
        if isinstance(annotation, T.VectorType):
            value = self.construct_vector(annotation, [value])
        binding = self.frame.scope.lookup(name)
        if binding is None or isinstance(binding, Static):
            self.frame.scope.define(name, self.new_variable(name, value, dtype))
        else:
            declared = getattr(binding, "dtype", None)
            if isinstance(declared, T.DataType) and declared != dtype:     # as Taichi: a variable keeps its type
                raise CompileError(f"variable '{name}' is {declared!r}; it cannot be annotated again as {dtype!r}")
            self.assign_name(name, value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if self.tile_update(node):                      # t -= wk.outer(u, v) (frontend/tiles.py)
            return
        op_type = type(node.op)
        place = self.target_place(node.target)
        if isinstance(place, str) and self.frame.scope.lookup(place) is None:
            place = self.zero_d_field_element(place)
        rhs = self.rvalue(node.value)
        if isinstance(place, SparseMatrixEntry):
            self.sparse_matrix_update(place, op_type, rhs)
            return
        if isinstance(place, GlobalRef) and op_type in ATOMIC_AUGMENTED:
            self.global_atomic(ATOMIC_AUGMENTED[op_type], place, rhs)
            return
        if isinstance(place, list) and op_type in ATOMIC_AUGMENTED:
            # components of field elements (a swizzle `v[i].xy += d`, a slice `m[i][:, j] += d`): atomic each,
            # as an element's `+=` is
            for ref, part in zip(place, self.component_parts(rhs, len(place))):
                self.global_atomic(ATOMIC_AUGMENTED[op_type], ref, part)
            return
        if isinstance(place, str):
            binding = self.frame.scope.lookup(place)
            if isinstance(binding, Fixed) and self.rebindable_loop_variable(place, binding):
                updated = self.binary_op(op_type, binding.value, rhs)
                self.frame.scope.define(place, self.new_variable(place, updated))
                return
            if isinstance(binding, Fixed):
                raise CompileError(f"cannot assign to the {binding.what} '{place}'")
            if binding is None:
                raise CompileError(f"name '{place}' is not defined")
            if isinstance(binding, GlobalVar) and op_type in ATOMIC_AUGMENTED:
                self.global_atomic(ATOMIC_AUGMENTED[op_type], self.global_var_ref(binding), rhs)
                return
            current = self.read_binding(binding)
            if isinstance(binding, Static):
                if is_runtime(rhs):
                    raise CompileError(f"'{place}' is a compile-time value; cannot update it with a runtime value")
                self.frame.scope.define(place, Static(PYTHON_BINARY[op_type](current, rhs)))
                return
        else:
            current = self.read_place(place)
        self.write_place(place, self.binary_op(op_type, current, rhs))

    def zero_d_field_element(self, name: str) -> GlobalRef:
        """`n += 1` in a kernel where `n` names a global 0-d field: older Taichi's spelling of `n[None] += 1`
        (GAMES201's mass-spring programs count particles so). Any other undefined name stays an error."""
        try:
            value = self.lookup(name)
        except CompileError:
            value = None
        if not self.is_zero_d_field(value):
            raise CompileError(f"name '{name}' is not defined")
        return self.subscript(value, [None], name)

    def is_zero_d_field(self, value: Any) -> bool:
        return self.is_container(value) and getattr(value, "is_field", False) and value.shape == ()

    def visit_Global(self, node: ast.Global) -> None:
        """`global total` in a kernel, as Taichi 0.x programs declared the 0-d fields they update (`total += v`,
        `ti.atomic_add(total, v)`): nothing to do when every name is a field, which a kernel updates in place and
        never rebinds. Any other name would ask to rebind a Python global from device code, which cannot be."""
        for name in node.names:
            try:
                value = self.lookup(name)
            except CompileError:
                value = None
            if not (self.is_container(value) and getattr(value, "is_field", False)):
                raise CompileError(f"'global {name}' inside a kernel: only fields may be named there (a kernel "
                                   f"cannot rebind a Python global); '{name}' is {describe(value)}")
