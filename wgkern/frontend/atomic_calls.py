"""Atomic calls in kernel code (`wk.atomic_add(x[i], v)` and its kin, `x.atomic_add(...)`): on a global element, on a
local variable, compare-and-swap operands checked; the IR's AtomicOp is the result (the old value)."""
from __future__ import annotations

import ast
from typing import Any

from wgkern.errors import CompileError
from wgkern.frontend import intrinsics
from wgkern.frontend.scope import GlobalVar, LocalVar, VectorVar
from wgkern.frontend.values import GlobalRef, VectorValue, describe
from wgkern.ir.ops import INT_ONLY_ATOMIC, AtomicOpKind, BinaryOpKind


def _check_cas_operands(operands: list[Any]) -> None:
    """Quadrants' rule: atomic_cas compares and stores integers only, one scalar at a time."""
    for name, operand in zip(("expected", "desired"), operands):
        if isinstance(operand, VectorValue):
            raise CompileError(f"wk.atomic_cas: the {name} value is {describe(operand)}; compare-and-swap works "
                               "on one scalar element at a time")
        if operand.dtype.is_float:
            raise CompileError(f"wk.atomic_cas takes integer operands, the {name} value is {describe(operand)}")


class AtomicMixin:
    """The builder's rules for atomic calls."""

    # ---- atomics ------------------------------------------------------------------------------------------
    def atomic_call(self, op: AtomicOpKind, node: ast.Call) -> Any:
        arity = 3 if op is AtomicOpKind.CAS else 2
        if len(node.args) != arity or node.keywords:
            raise CompileError("wk.atomic_cas takes three arguments: (destination, expected, desired)"
                               if op is AtomicOpKind.CAS else "atomics take two arguments: (destination, value)")
        target_node = node.args[0]
        binding = self.frame.scope.lookup(target_node.id) if isinstance(target_node, ast.Name) else None
        operands = [self.as_value(self.visit(arg)) for arg in node.args[1:]]
        value = operands[-1]
        expected = operands[0] if op is AtomicOpKind.CAS else None
        if isinstance(binding, GlobalVar):
            return self.global_atomic(op, self.global_var_ref(binding), value, expected)
        if isinstance(binding, (LocalVar, VectorVar)):
            return self.local_atomic(op, binding, value, expected)
        if isinstance(target_node, (ast.Subscript, ast.Attribute)) and self.local_vector_var(target_node.value):
            place = self.target_place(target_node)     # an element of a local vector: a plain update
            old = self.read_place(place)
            self.write_place(place, self.atomic_update(op, old, value, expected))
            return old
        target = self.visit(target_node)
        if self.is_zero_d_field(target):    # older Taichi's `ti.atomic_add(total, v)` on a 0-d field: total[None]
            target = self.subscript(target, [None], getattr(target, "name", "") or "0-d field")
        if not isinstance(target, GlobalRef):
            raise CompileError(f"wk.atomic_{op.value}: the destination (first argument) must be a writable "
                               f"field/ndarray element or local variable, got {describe(target)} (cannot use a "
                               f"non-writable target as the first operand of atomic_{op.value})")
        return self.global_atomic(op, target, value, expected)

    def global_atomic(self, op: AtomicOpKind, ref: GlobalRef, value: Any, expected: Any = None) -> Any:
        if op in INT_ONLY_ATOMIC and ref.slot.dtype.is_float:
            raise CompileError(f"atomic {op.value} needs an integer destination, '{ref.label}' is "
                               f"{ref.slot.dtype.name}")
        if op is AtomicOpKind.CAS and ref.element_shape:
            raise CompileError(f"wk.atomic_cas on a vector/matrix element ('{ref.label}') is not supported (as in "
                               "Quadrants); compare-and-swap one component, e.g. x[i][0]")
        if op is AtomicOpKind.CAS:
            _check_cas_operands([expected, value])
        if getattr(ref.slot.host, "quant", None) is not None:     # frontend/quant.py
            return self.quant_atomic(op, ref, value, expected)
        value = self.as_value(value)
        ptrs = self.element_ptrs(ref)
        if isinstance(value, VectorValue):
            if value.shape != ref.element_shape:
                raise CompileError(f"atomic on '{ref.label}' with {describe(value)}: shapes differ")
            olds = [self.b.atomic(op, p, v) for p, v in zip(ptrs, value.elements)]
        else:
            olds = [self.b.atomic(op, p, value, expected) for p in ptrs]
        self.activate_on_write(ref)
        if not ref.element_shape:
            return olds[0]
        return VectorValue(olds, ref.element_shape[0], ref.element_shape[1] if len(ref.element_shape) > 1 else 0)

    def local_atomic(self, op: AtomicOpKind, binding: LocalVar | VectorVar, value: Any, expected: Any = None) -> Any:
        """Atomics on a local variable are plain read-modify-writes (a local is private to its thread)."""
        old = self.read_binding(binding)
        self.write_binding(binding, self.atomic_update(op, old, value, expected))
        return old

    def atomic_update(self, op: AtomicOpKind, old: Any, value: Any, expected: Any) -> Any:
        """The new contents of a thread-private destination holding `old` after atomic `op`."""
        if op is AtomicOpKind.EXCHANGE:
            if isinstance(old, VectorValue) and not isinstance(value, VectorValue):
                return VectorValue([value] * len(old.elements), old.n, old.m)
            return value
        if op is AtomicOpKind.CAS:
            if isinstance(old, VectorValue):
                raise CompileError(f"wk.atomic_cas on {describe(old)} is not supported (as in Quadrants); "
                                   "compare-and-swap one component, e.g. v[0]")
            if old.dtype.is_float:
                raise CompileError(f"atomic cas needs an integer destination, got {describe(old)}")
            _check_cas_operands([expected, value])
            same = self.b.binary(BinaryOpKind.CMP_EQ, old, self.b.cast(expected, old.dtype))
            return self.b.select(same, self.b.cast(value, old.dtype), old)
        return self.binary_values(intrinsics.ATOMIC_AS_BINARY[op], old, value)
