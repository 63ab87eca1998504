"""Struct values in kernel code: copies of struct-field elements (`p = s[i]`), values made by calling a struct
type (`P(pos=..., m=1.0)`), local struct variables whose members are assigned (`p.m += 1.0`), stores of a whole
value (`s[i] = p`, `s[i] = s[j]`), struct arguments and results of funcs, and @wk.dataclass methods.

A `StructValue` maps member names to runtime values (scalars, VectorValues, nested StructValues); a `StructVar`
binds a name to one local variable per member. Field elements stay `StructElement`s (references): their members
are read and written in place, and a method called on one sees the element itself."""
from __future__ import annotations

import ast
from typing import Any

from wgkern.errors import CompileError
from wgkern.frontend.scope import LocalVar, StructVar, VectorVar
from wgkern.frontend.values import StructElement, StructValue, VectorValue, describe
from wgkern.ir import nodes as ir
from wgkern.lang import types as T
from wgkern.lang.structs import HostStruct, StructField, StructType, member_values


class StructMixin:
    # ---- values ------------------------------------------------------------------------------------------
    def load_struct(self, element: StructElement) -> StructValue:
        """The members of a field element, read now (a copy)."""
        members = {}
        for name, member in element.owner.members.items():
            label = f"{element.label}.{name}"
            if isinstance(member, StructField):
                members[name] = self.load_struct(StructElement(member, element.indices, label))
            else:
                members[name] = self.load_ref(self.container_ref(member, element.indices, label))
        return StructValue(element.owner.struct_type, members, element.label)

    def struct_of(self, value: Any, stype: StructType | None, what: str) -> StructValue:
        """`value` as a struct value of type `stype` (any type if None): a StructValue, a field element (read
        now), a Python-scope HostStruct or a dict of members."""
        if isinstance(value, StructElement):
            value = self.load_struct(value)
        elif isinstance(value, HostStruct):
            value = self.construct_struct(value.struct_type, [], value.members)
        elif isinstance(value, dict) and stype is not None:
            value = self.construct_struct(stype, [], value)
        if not isinstance(value, StructValue):
            raise CompileError(f"{what} takes a struct value{f' of type {stype!r}' if stype else ''}, got "
                               f"{describe(value)}")
        if stype is not None and value.stype is not stype and list(value.members) != list(stype.members):
            raise CompileError(f"{what} takes a {stype!r}, got a {value.stype!r}")
        return value

    def construct_struct(self, stype: StructType, args: list[Any], kwargs: dict[str, Any]) -> StructValue:
        """`P(...)` in kernel code: members positional in order or by name, each converted to its declared dtype;
        members not given are zero."""
        try:
            given = member_values(stype, tuple(args), kwargs, repr(stype))
        except Exception as exc:   # noqa: BLE001 - WkError from the shared argument check, reported as a compile error
            raise CompileError(str(exc)) from None
        members = {}
        for name, spec in stype.members.items():
            value = given[name]
            if isinstance(spec, StructType):
                if value is None:
                    members[name] = self.zero_struct(spec)
                elif isinstance(value, (StructValue, StructElement, HostStruct, dict)):
                    members[name] = self.struct_of(value, spec, f"member '{name}' of {stype!r}")
                else:   # Taichi: a nested struct member given one value takes it as its own first member
                    members[name] = self.construct_struct(spec, [value], {})
            elif isinstance(spec, T.VectorType):
                members[name] = (VectorValue([self.b.const(0, spec.dtype)] * spec.size, spec.n, spec.m)
                                 if value is None else self.construct_vector(spec, [value]))
            else:
                dtype = self.as_dtype(spec)
                members[name] = self.b.const(0, dtype) if value is None else self.cast_to(self.as_scalar(value),
                                                                                          dtype)
        return StructValue(stype, members)

    def struct_from(self, stype: StructType, scalars: Any) -> StructValue:
        """A struct value from an iterator of scalar values, one per component in member order."""
        members: dict[str, Any] = {}
        for name, spec in stype.members.items():
            if isinstance(spec, StructType):
                members[name] = self.struct_from(spec, scalars)
            elif isinstance(spec, T.VectorType):
                members[name] = VectorValue([next(scalars) for _ in range(spec.size)], spec.n, spec.m)
            else:
                members[name] = next(scalars)
        return StructValue(stype, members)

    def anonymous_struct(self, args: list[Any], kwargs: dict[str, Any]) -> StructValue:
        """`wk.Struct({"ori": v, "len": 1.0})` / `wk.Struct(ori=v, len=1.0)` in kernel code: a struct value whose
        member types are those of the values."""
        if len(args) > 1 or (args and not isinstance(args[0], dict)):
            raise CompileError("wk.Struct(...) in a kernel takes a dict of members or members by name")
        given = {**(args[0] if args else {}), **kwargs}
        if not given or not all(isinstance(name, str) for name in given):
            raise CompileError("wk.Struct(...) needs members named by strings")
        members: dict[str, Any] = {}
        types: dict[str, Any] = {}
        for name, value in given.items():
            if isinstance(value, (StructValue, StructElement)):
                members[name] = self.struct_of(value, None, f"member '{name}'")
                types[name] = members[name].stype
                continue
            value = self.as_value(value)
            members[name] = value
            types[name] = T.vector(value.n, value.dtype) if isinstance(value, VectorValue) and not value.m \
                else T.matrix(value.n, value.m, value.dtype) if isinstance(value, VectorValue) else value.dtype
        return StructValue(StructType(types), members)

    def zero_struct(self, stype: StructType) -> StructValue:
        return self.construct_struct(stype, [], {})

    def store_struct(self, element: StructElement, value: Any) -> None:
        """`s[i] = value`: every member stored into the element."""
        value = self.struct_of(value, element.owner.struct_type, f"'{element.label}[...]'")
        for name, member in element.owner.members.items():
            label = f"{element.label}.{name}"
            if isinstance(member, StructField):
                self.store_struct(StructElement(member, element.indices, label), value.members[name])
            else:
                self.store_ref(self.container_ref(member, element.indices, label), value.members[name])

    # ---- variables -----------------------------------------------------------------------------------------
    def new_struct_var(self, name: str, value: StructValue) -> StructVar:
        members: dict[str, Any] = {}
        for member, member_value in value.members.items():
            if isinstance(member_value, StructValue):
                members[member] = self.new_struct_var(f"{name}.{member}", member_value)
            else:
                members[member] = self.new_variable(f"{name}.{member}", member_value)
        return StructVar(value.stype, members)

    def read_struct_var(self, var: StructVar) -> StructValue:
        return StructValue(var.stype, {name: self.read_binding(b) for name, b in var.members.items()})

    def write_struct_var(self, var: StructVar, value: Any) -> None:
        value = self.struct_of(value, var.stype, "a struct variable")
        for name, binding in var.members.items():
            self.write_binding(binding, value.members[name])

    def struct_var_at_entry(self, value: StructValue, name: str, entry: list[ir.Stmt]) -> StructVar:
        """A struct variable whose allocas are appended to `entry` (a flag-mode func's result, declared where
        every return path sees it)."""
        members: dict[str, Any] = {}
        for member, member_value in value.members.items():
            if isinstance(member_value, StructValue):
                members[member] = self.struct_var_at_entry(member_value, name, entry)
                continue
            elements = member_value.elements if isinstance(member_value, VectorValue) else [member_value]
            allocas = [ir.Alloca(dtype=e.dtype, name=f"{name}.{member}", loc=self.b.loc) for e in elements]
            entry.extend(allocas)
            members[member] = (VectorVar(allocas, member_value.n, member_value.m)
                               if isinstance(member_value, VectorValue) else LocalVar(allocas[0]))
        return StructVar(value.stype, members)

    def struct_var_of(self, node: ast.expr) -> StructVar | None:
        """The local struct variable that `p` or `p.inner` names, else None."""
        if isinstance(node, ast.Name):
            binding = self.frame.scope.lookup(node.id)
            return binding if isinstance(binding, StructVar) else None
        if isinstance(node, ast.Attribute):
            outer = self.struct_var_of(node.value)
            if outer is not None:
                member = outer.members.get(node.attr)
                return member if isinstance(member, StructVar) else None
        return None

    def struct_member_binding(self, node: ast.Attribute) -> Any:
        """The binding of `p.m` where `p` is a local struct variable, else None."""
        var = self.struct_var_of(node.value)
        if var is None:
            return None
        if node.attr not in var.members:
            raise CompileError(f"struct {var.stype!r} has no member '{node.attr}'")
        return var.members[node.attr]

    # ---- attributes -------------------------------------------------------------------------------------------
    def struct_attribute(self, base: StructValue | StructElement, attr: str, receiver: Any = None) -> Any:
        """`base.attr`: a member, or a bound @wk.dataclass method (called with `receiver`, default `base`)."""
        from wgkern.lang.kernel import BoundFunc
        if isinstance(base, StructValue):
            stype, what = base.stype, f"struct {base.stype!r}"
        else:
            stype, what = base.owner.struct_type, f"struct field '{base.label}'"
        if attr in stype.methods:
            return BoundFunc(stype.methods[attr], base if receiver is None else receiver)
        if attr in stype.host_methods:
            raise CompileError(f"{what}: '{attr}' is a plain Python method of @wk.dataclass {stype!r}; make it a "
                               "@wk.func to call it in kernels")
        if isinstance(base, StructValue):
            if attr not in base.members:
                raise CompileError(f"{what} has no member '{attr}'")
            return base.members[attr]
        member = base.owner.members.get(attr)
        if member is None:
            raise CompileError(f"{what} has no member '{attr}'")
        label = f"{base.label}.{attr}"
        if isinstance(member, StructField):
            return StructElement(member, base.indices, label)
        return self.container_ref(member, base.indices, label)
