"""Statement visitors: assignment (locals with a fixed dtype, global stores, vector components, tuple
unpacking), augmented assignment (atomic on global data for + - & | ^), if/while, break/continue, return.

Loops over ranges, ndrange, containers and wk.static live in loops.py; func inlining in calls.py."""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from wgkern.errors import CompileError
from wgkern.frontend import arith, stream_parallel, vectors
from wgkern.frontend.expressions import PYTHON_BINARY
from wgkern.frontend.graph_regions import module_prefix, spelling
from wgkern.frontend.loops import StaticExit
from wgkern.frontend.sparse_matrix import SparseMatrixEntry
from wgkern.lang.structs import StructType, leaf_types
from wgkern.frontend.scope import Fixed, GlobalVar, LocalVar, Static, StructVar, VectorVar
from wgkern.frontend.values import (GlobalRef, NdarrayRef, StructElement, StructValue, VectorValue, describe,
                                    is_python_number, is_runtime)
from wgkern.ir import nodes as ir
from wgkern.ir.ops import AtomicOpKind, BinaryOpKind, UnaryOpKind
from wgkern.lang import math as wm
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


def return_annotation_parts(annotation: Any) -> list[Any] | None:
    """The value annotations of a tuple return (`-> tuple[wk.f32, wk.i32]`, `-> (wk.f32, wk.i32)`,
    `-> typing.Tuple[...]`), else None."""
    import typing
    if isinstance(annotation, tuple):
        return list(annotation)
    if typing.get_origin(annotation) is tuple:
        parts = list(typing.get_args(annotation))
        if not parts or parts[-1] is Ellipsis:
            raise CompileError(f"a kernel's tuple return annotation must list each value's type, got {annotation!r}")
        return parts
    return None


_PRINTF_FIELD = re.compile(r"%([-+ #0]*\d*(?:\.\d+)?)(?:hh|h|ll|l|z)?([diouxXeEfFgGcs%])")


def runtime_message(msg: ast.expr) -> ast.Call | None:
    """An assert message that formats values (Taichi's `assert c, "x = %d" % x`, an f-string, `"{}".format(x)`),
    as the print() call that shows it; None for a plain message. A printf field becomes an f-string field with
    the same spec (print() reads printf's conversions); `%s` prints the value as print() would."""
    from wgkern.frontend.calls import is_str_format
    if isinstance(msg, ast.JoinedStr) or is_str_format(msg):
        text = msg
    elif isinstance(msg, ast.BinOp) and isinstance(msg.op, ast.Mod) and isinstance(msg.left, ast.Constant) \
            and isinstance(msg.left.value, str):
        values = list(msg.right.elts) if isinstance(msg.right, ast.Tuple) else [msg.right]
        parts: list[ast.expr] = []
        position = 0
        for field in _PRINTF_FIELD.finditer(msg.left.value):
            literal = msg.left.value[position:field.start()]
            position = field.end()
            if field.group(2) == "%":
                parts.append(ast.Constant(literal + "%"))
                continue
            if not values:
                raise CompileError(f"the assert message {msg.left.value!r} has more fields than values")
            spec = "" if field.group(2) == "s" else field.group(1) + field.group(2)
            parts += [ast.Constant(literal),
                      ast.FormattedValue(values.pop(0), -1, ast.JoinedStr([ast.Constant(spec)]) if spec else None)]
        if values:
            raise CompileError(f"the assert message {msg.left.value!r} has fewer fields than values")
        parts.append(ast.Constant(msg.left.value[position:]))
        text = ast.JoinedStr([p for p in parts if not (isinstance(p, ast.Constant) and p.value == "")])
    else:
        return None
    call = ast.Call(func=ast.Name("print", ast.Load()), args=[text], keywords=[])
    return ast.fix_missing_locations(ast.copy_location(call, msg))


def is_static_call(node: ast.expr) -> bool:
    """`wk.static(...)` spelled with any module alias (checked by the callee's name only)."""
    return isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Attribute) and node.func.attr == "static")
        or (isinstance(node.func, ast.Name) and node.func.id == "static"))


class StatementMixin:
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

    # ---- control flow ----------------------------------------------------------------------------------------
    def visit_With(self, node: ast.With) -> bool:
        """`with wk.stream_parallel():` (Quadrants) around top-level loops: the body as written (its loops stay
        top-level, so parallel). `with wk.graph.parallel_context():` / `with wk.graph.parallel():` regions and
        sections: frontend/graph_regions.py. No other context manager has a meaning in kernels."""
        stream_parallel.check_with(self, node)
        for item in node.items:
            context = item.context_expr
            callee = self.visit(context.func) if isinstance(context, ast.Call) else None
            kind = self.graph_region_kind(context, callee)
            if kind is not None:
                return self.visit_graph_region(node, kind)
            if callee is not wm.stream_parallel or item.optional_vars is not None or context.args \
                    or context.keywords:
                why = ("it only supports qd.stream_parallel() and qd.graph regions" if isinstance(context, ast.Call)
                       else "it requires a call expression")     # Quadrants' phrases
                raise CompileError(f"'with' is not supported inside kernels, except `with wk.stream_parallel():` "
                                   f"({why})")
        return self.visit_body(node.body)

    def visit_If(self, node: ast.If) -> bool:
        """True when a compile-time branch was taken that certainly returns (see visit_body)."""
        cond = self.visit(node.test)
        if not is_runtime(cond):
            # a compile-time branch is spliced in place: names it assigns stay visible after it
            if any(is_static_call(part) for part in ast.walk(node.test)):
                return self.visit_body(node.body if cond else node.orelse)
            # Taichi makes an `if` on a Python constant (no wk.static) a real branch, so a loop in it is not
            # a kernel's outermost loop: it runs serially (break works, updates of outer variables do not race)
            self.frame.constant_branch_depth += 1
            try:
                return self.visit_body(node.body if cond else node.orelse)
            finally:
                self.frame.constant_branch_depth -= 1
        cond = self.as_value(cond)
        if isinstance(cond, VectorValue):
            raise CompileError("an 'if' condition must be a scalar, got a vector (use .all()/.any() or "
                               "compare components)")
        branch = self.b.if_(cond)
        self.frame.branch_depth += 1
        try:
            with self.b.at(branch.then_block), self.frame.scope.block():
                self.visit_body(node.body)
            with self.b.at(branch.else_block), self.frame.scope.block():
                self.visit_body(node.orelse)
        finally:
            self.frame.branch_depth -= 1
        return False

    def visit_While(self, node: ast.While) -> None:
        if node.orelse:
            raise CompileError("while/else is not supported inside kernels")
        self.ctx.serialize_next_loop = False
        self.ctx.block_dim_next_loop = 0
        if isinstance(node.test, ast.Call) and self.visit(node.test.func) is wm.graph_do_while:
            self.graph_do_while_loop(node)
            return
        loop = self.b.while_()
        with self.b.at(loop.body), self.frame.scope.block(), self.in_loop("ir"):
            cond = self.visit(node.test)
            never_runs = not is_runtime(cond) and not cond
            if is_runtime(cond):
                exit_branch = self.b.if_(arith.unary(self.b, UnaryOpKind.LOGICAL_NOT, self.as_scalar(cond)))
                with self.b.at(exit_branch.then_block):
                    self.b.insert(ir.Break())
            if not never_runs:
                self.visit_body(node.body)
        if never_runs:
            self.b.block.stmts.remove(loop)

    def graph_do_while_loop(self, node: ast.While) -> None:
        """Quadrants' `while wk.graph_do_while(c): body`: a do-while loop, the body first, then `c[()] != 0`
        decides whether it runs again. The While is marked with its counter: at the kernel's top level (or
        directly in another such loop) offload makes it a host loop, whose body's outermost loops run as
        parallel tasks, as Quadrants' host-side fallback of a CUDA graph does; elsewhere it stays a loop in
        kernel code."""
        test = node.test
        if not getattr(self.ctx.kernel, "graph", False):
            # as in Quadrants: the loop runs its body's loops as host-repeated tasks, a graph kernel's construct
            prefix = module_prefix(test.func)
            raise CompileError(f"{spelling(test.func)}() requires @{prefix}.kernel(graph=True): write "
                               f"@{prefix}.kernel(graph=True) above '{self.ctx.kernel.name}'")
        if len(test.args) != 1 or test.keywords:
            raise CompileError("wk.graph_do_while(c) takes one argument: a 0-d integer ndarray or field")
        unresolved = f"the condition of {spelling(test.func)}() does not resolve to an ndarray kernel parameter"
        try:
            counter = self.visit(test.args[0])
        except CompileError as exc:           # an unknown name or attribute: say what the condition must be
            raise CompileError(f"{exc.message} ({unresolved})", exc.loc) from None
        if not _zero_d_integer_container(counter):
            raise CompileError(f"wk.graph_do_while(c) takes a 0-d integer ndarray or field, not {describe(counter)} "
                               f"({unresolved} or field)")
        for inner in _statements_of_this_loop(node.body):
            if isinstance(inner, ast.Continue):
                raise CompileError("'continue' in a wk.graph_do_while loop would skip its condition; use an 'if'")
        read = ast.Subscript(value=test.args[0], slice=ast.Tuple(elts=[], ctx=ast.Load()), ctx=ast.Load())
        ast.copy_location(read, test)
        ast.fix_missing_locations(read)
        loop = self.b.while_()
        with self.b.at(loop.body), self.frame.scope.block(), self.in_loop("ir"):
            self.visit_body(node.body)
            value = self.as_scalar(self.rvalue(read))
            done = arith.binary(self.b, BinaryOpKind.CMP_EQ, value, self.b.const(0, value.dtype))
            with self.b.at(self.b.if_(done).then_block):
                self.b.insert(ir.Break())
        if isinstance(value, ir.GlobalLoad):
            loop.host_counter = value.ptr.container     # at top level, offload makes it a host loop

    def visit_Break(self, node: ast.Break) -> StaticExit | None:
        if self.check_loop_control("break"):
            return StaticExit.BREAK
        self.b.insert(ir.Break())
        return None

    def visit_Continue(self, node: ast.Continue) -> StaticExit | None:
        if self.check_loop_control("continue"):
            return StaticExit.CONTINUE
        self.b.insert(ir.Continue())
        return None

    def check_loop_control(self, what: str) -> bool:
        """True when `what` leaves an unrolled wk.static loop (decided at compile time)."""
        loops = self.frame.loops
        if not loops:
            raise CompileError(f"'{what}' outside a loop")
        if loops[-1] == "static":
            if self.frame.branch_depth > self.frame.loop_branch_depths[-1]:
                raise CompileError(f"'{what}' of a wk.static loop under a run-time 'if' is not supported: You are "
                                   f"trying to `{what}` a static `for` loop, which is unrolled at compile time; "
                                   "make the condition wk.static(...)")
            return True
        if loops[-1] == "parallel" and what == "break":
            raise CompileError("Cannot break in the outermost loop: 'break' is not allowed in a kernel's outermost "
                               "(parallel) loop; put the loop "
                               "inside another one, or run it serially with wk.loop_config(serialize=True)")
        return False

    def visit_Return(self, node: ast.Return) -> None:
        if not self.frame.is_kernel:
            self.func_return(node)
            return
        if self.in_runtime_loop() or self.frame.branch_depth > 0:
            raise CompileError("Return inside non-static if/for is not supported: "
                               "'return' inside a run-time if/for/while of a kernel is not supported (only at "
                               "the top level or under wk.static conditions and loops; use a flag, or move the "
                               "logic into a wk.func)")
        value = None if node.value is None else self.visit(node.value)
        if value is None and not self.has_return_annotation():
            return
        self.store_kernel_return(value)

    def has_return_annotation(self) -> bool:
        annotation = self.ctx.kernel.signature.return_annotation
        if isinstance(annotation, str):
            return annotation != "None"
        return not any(annotation is none for none in (self.ctx.kernel.signature.empty, None, type(None)))

    def store_kernel_return(self, value: Any) -> None:
        kernel = self.ctx.kernel
        annotation = kernel.signature.return_annotation
        if value is None:
            raise CompileError(f"kernel '{kernel.name}' is annotated to return {annotation!r} but returns "
                               "nothing here")
        if not self.has_return_annotation():
            raise CompileError(f"kernel '{kernel.name}' returns a value but has no return type annotation "
                               "(write e.g. 'def k() -> wk.f32:')")
        annotation = self.resolve_annotation(annotation)
        parts = return_annotation_parts(annotation)
        if isinstance(annotation, StructType):
            annotations, values = leaf_types(annotation), self.struct_leaves(annotation, value)
            parts = annotations
        elif parts is None:
            annotations, values = [annotation], [value]
        else:
            values = list(value) if isinstance(value, (tuple, list)) else [value]
            if len(values) != len(parts):
                raise CompileError(f"kernel '{kernel.name}' is annotated to return {len(parts)} values but "
                                   f"returns {len(values) if isinstance(value, (tuple, list)) else describe(value)}")
            annotations, flat_values = [], []
            for part, part_value in zip(parts, values):
                if isinstance(part, StructType):    # a struct among the values: its leaves, regrouped on the host
                    annotations += leaf_types(part)
                    flat_values += self.struct_leaves(part, part_value)
                else:
                    annotations.append(part)
                    flat_values.append(part_value)
            values = flat_values
        slots = []
        for k, (part, part_value) in enumerate(zip(annotations, values)):
            dtype = self.as_dtype(part)
            part_value = self.as_value(part_value)
            elements = part_value.elements if isinstance(part_value, VectorValue) else [part_value]
            expected = part.size if isinstance(part, T.VectorType) else 1
            if len(elements) != expected:
                raise CompileError(f"kernel '{kernel.name}' is annotated to return {part!r} but returns "
                                   f"{describe(part_value)}")
            slot = ir.ContainerSlot(name=f"__return{k}__" if parts else "__return__", kind="temp", dtype=dtype,
                                    ndim=1, shape=(len(elements),))
            self.ctx.slots.append(slot)
            slots.append(slot)
            for j, element in enumerate(elements):
                ptr = self.b.global_ptr(slot, [self.b.const(j, T.i32)])
                self.b.global_store(ptr, self.cast_to(element, dtype))
        self.ctx.return_slots = tuple(slots)

    def struct_leaves(self, stype: StructType, value: Any) -> list[Any]:
        """The leaf values (lang/structs.py leaf_types order) of a struct value returned as `stype`."""
        if isinstance(value, StructElement):
            value = self.load_struct(value)
        if not isinstance(value, StructValue) or value.stype is not stype:
            raise CompileError(f"kernel '{self.ctx.kernel.name}' is annotated to return {stype!r} but returns "
                               f"{describe(value)}")
        leaves: list[Any] = []
        for name, dtype in stype.members.items():
            member = value.members.get(name)
            if isinstance(dtype, StructType):
                leaves.extend(self.struct_leaves(dtype, member))
            else:
                leaves.append(0 if member is None else member)
        return leaves

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant):
            return          # docstrings and bare constants
        if self.fill_local_vector(node.value):
            return
        self.visit(node.value)

    def fill_local_vector(self, call: ast.expr) -> bool:
        """`m.fill(v)` on a local vector or matrix variable, or on a vector element of a field (`x[i].v.fill(v)`;
        Taichi's in-place method): every component is set to the scalar v. False when the statement is
        something else."""
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "fill"):
            return False
        var = self.local_vector_var(call.func.value)
        place: Any = None
        if var is None and isinstance(call.func.value, (ast.Subscript, ast.Attribute)):
            try:
                place = self.target_place(call.func.value)     # `x[i].v.fill(a)`: a vector element in memory
            except CompileError:
                return False
            if not (isinstance(place, GlobalRef) and place.element_shape):
                return False
        elif var is None:
            return False
        if len(call.args) != 1 or call.keywords:
            raise CompileError("fill() takes one value")
        value = self.as_value(self.visit(call.args[0]))
        if isinstance(value, VectorValue):
            raise CompileError(f"fill() takes a scalar, got {describe(value)}")
        if place is not None:
            self.store_ref(place, self.cast_to(value, place.slot.dtype))
            return True
        shape = (var.n, var.m) if var.m else (var.n,)
        self.write_place(VarElements(var, list(range(len(var.allocas))), shape), value)
        return True

    def visit_Pass(self, node: ast.Pass) -> None:
        return None

    def visit_Assert(self, node: ast.Assert) -> None:
        """`assert cond[, message]`: checked under wk.init(debug=True) (as in Taichi); otherwise the condition is
        still evaluated, for the side effects of the funcs it calls (as in Taichi), and not checked. A
        compile-time condition is checked now; the message must be a compile-time value."""
        from wgkern.runtime.program import current
        program = current()
        if program is None or not program.options.debug:
            self.visit(node.test)
            return
        message = ""
        printed = runtime_message(node.msg) if node.msg is not None else None
        if printed is not None:
            message = f"{ast.unparse(node.msg)} (printed above)"
        elif node.msg is not None:
            text = self.visit(node.msg)
            if is_runtime(text):
                raise CompileError("an assert's message must be a string, or a string formatted with '%', an "
                                   "f-string or str.format()")
            message = str(text)
        cond = self.visit(node.test)
        if not is_runtime(cond):
            if cond:
                return None
            # `assert False, "unreachable"` fails when it runs (it may sit under a run-time branch), as in Taichi
            self.fail_assertion(message or ast.unparse(node.test), printed)
            return None
        cond = self.as_scalar(cond)
        branch = self.b.if_(arith.unary(self.b, UnaryOpKind.LOGICAL_NOT, cond))
        with self.b.at(branch.then_block):
            self.fail_assertion(message or ast.unparse(node.test), printed)
        return None

    def fail_assertion(self, message: str, printed: ast.Call | None) -> None:
        """The statements of a failing assert where the builder stands: its message printed with its run-time
        values (shown as the assertion is raised, and quoted by the error), then ir.AssertFail."""
        block = self.b.block
        pieces: tuple[str, ...] = ()
        if printed is not None:
            self.print_call(printed)
            pieces = next((s.pieces for s in reversed(block.stmts) if isinstance(s, ir.Print)), ())
        self.b.insert(ir.AssertFail(message=message, printed_pieces=pieces))


def _statements_of_this_loop(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """The nodes of a loop body outside the loops nested in it (where a `continue` belongs to this loop)."""
    pending: list[ast.AST] = list(body)
    while pending:
        node = pending.pop()
        yield node
        if isinstance(node, (ast.For, ast.While, ast.FunctionDef, ast.Lambda)):
            continue
        pending.extend(ast.iter_child_nodes(node))


def _zero_d_integer_container(value: Any) -> bool:
    """A 0-d ndarray argument or field of integers (the condition of wk.graph_do_while)."""
    if isinstance(value, NdarrayRef):
        return value.ndim == 0 and not value.element_shape and value.dtype.is_int
    if getattr(value, "is_field", False):
        return tuple(value.shape) == () and not value.element_shape and value.dtype.is_int
    return False
