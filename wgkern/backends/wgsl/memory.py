"""WGSL for global memory: element pointers of fields and ndarrays (flat offsets from extents and strides), loads
and stores with their encodings (f16 and float bits held in u32 words), atomics, shapes, failed asserts."""
from __future__ import annotations

import math

from wgkern.ir import nodes as ir
from wgkern.ir.ops import AtomicOpKind
from wgkern import dtypes as T
from wgkern.backends.wgsl.bindings import HALF_PAIRS
from wgkern.backends.wgsl.printing import record_bounds_site
from wgkern.backends.wgsl import ops as wops
from wgkern.backends.wgsl import types as wtypes
from wgkern.backends.wgsl.shader_common import ContainerDecl, _WRAPPING_ATOMIC, _element_index


class MemoryLowering:
    """WgslCodegen's rules for global memory."""

    # ---- globals --------------------------------------------------------------------------------------------
    def _extent(self, slot: ir.ContainerSlot, axis: int) -> str:
        if slot.shape is not None:
            return wtypes.literal(slot.shape[axis], T.i32)
        return f"wk_params.{self.layout.shape_member[(self.slot_index[id(slot)], axis)]}"

    def _strides(self, slot: ir.ContainerSlot, axis: int, end: int | None = None) -> list[str]:
        """Row-major stride of `axis` as factors (none for a stride of 1): one constant for static shapes; for
        ndarrays an extent from the launch arguments, or the task's invariant product of several. `end`: the
        stride within the container's first `end` axes (default all)."""
        end = slot.ndim if end is None else end
        if slot.shape is not None:
            product = math.prod(slot.shape[axis + 1:end])
            return [] if product == 1 else [wtypes.literal(product, T.i32)]
        extents = [self._extent(slot, k) for k in range(axis + 1, end)]
        return [self.invariant(" * ".join(extents), "wk_axis_stride")] if len(extents) > 1 else extents

    def _element_count(self, slot: ir.ContainerSlot, end: int | None = None) -> str:
        """The container's element count as a u32 (of its first `end` axes: default all): a constant, or the
        task's invariant product of extents."""
        end = slot.ndim if end is None else end
        if slot.shape is not None:
            return f"{math.prod(slot.shape[:end])}u"
        return self.invariant(f"u32({' * '.join(self._extent(slot, axis) for axis in range(end))})",
                              "wk_elements")

    def _last_element(self, slot: ir.ContainerSlot) -> str:
        """The offset of the container's last element as a u32 (0 for an empty container, whose binding still
        holds a word): a constant, or a task invariant."""
        if slot.shape is not None:
            return f"{max(math.prod(slot.shape), 1) - 1}u"
        return self.invariant(f"max({self._element_count(slot)}, 1u) - 1u", "wk_last")

    def _flat_offset(self, stmt: ir.GlobalPtr, end: int | None = None) -> str:
        """The row-major offset of `stmt`'s indices (of its first `end` axes, within those axes: default all)."""
        terms = [" * ".join([self.value(index), *self._strides(stmt.container, axis, end)])
                 for axis, index in enumerate(stmt.indices[:end])]
        return " + ".join(terms) if terms else "0i"

    def visit_GlobalPtr(self, stmt: ir.GlobalPtr) -> None:
        decl = self.container(stmt.container, stmt.loc)
        offset_expr = self._flat_offset(stmt)
        if self.bounds_sites is not None and stmt.indices and stmt not in self.in_range:
            # debug=True: an index outside its axis records the site, and the access is dropped (bounds.py)
            self.bounds_sites.append((self.kernel.name, stmt))
            inside = " && ".join(f"(bitcast<u32>({self.value(index)}) < bitcast<u32>("
                                 f"{self._extent(stmt.container, axis)}))" for axis, index in enumerate(stmt.indices))
            ok = self.fresh("inside")
            self.emit(f"let {ok} = {inside};")
            self.declare_local(ok, "bool")
            failed = f"!{ok}" if self.lane_mask is None else f"{self.lane_mask} && !{ok}"
            self.emit(f"if ({failed}) {{ {record_bounds_site(len(self.bounds_sites))} }}")
            offset_expr = f"select(0i, {offset_expr}, {ok})"
            self.guards[stmt] = ok
        elif stmt not in self.in_range:
            unchecked = self.fresh("offset")
            self.emit(f"let {unchecked} = {offset_expr};")
            self.declare_local(unchecked, "i32")
            self.range_guard(stmt, unchecked)                                               # bounds.py
            # the access goes to the offset clamped into the container, so a load can start before its test
            # is done (the test then selects 0); a store or an atomic runs only where the test passes
            offset_expr = f"bitcast<i32>(min(bitcast<u32>({unchecked}), {self._last_element(stmt.container)}))"
        offset = self.let(stmt, offset_expr, "i32")
        self.names[stmt] = self.element_ref(decl, f"{decl.base} + {offset}" if decl.base else offset)
        if decl.windows > 1:
            self.split_offset(stmt, decl, offset)

    def visit_AssertFail(self, stmt: ir.AssertFail) -> None:
        """debug=True only: recorded like a failed bounds check; the runtime raises it at the next sync."""
        self.bounds_sites.append((self.kernel.name, stmt))
        record = record_bounds_site(len(self.bounds_sites))
        self.emit(record if self.lane_mask is None else f"if ({self.lane_mask}) {{ {record} }}")

    def visit_GlobalLoad(self, stmt: ir.GlobalLoad) -> None:
        decl = self.decls[self.slot_key(stmt.ptr.container)]
        ref = self.value(stmt.ptr)
        if decl.bits_type == HALF_PAIRS:
            loaded = f"wk_load_{self._half_helper('load_half', decl)}({_element_index(ref)})"
        else:
            loaded = self._decode(decl, f"atomicLoad(&{ref})" if decl.atomic else ref)
        inside = self.guards.get(stmt.ptr)     # out of range: element 0 was read, the value is 0
        self.let(stmt, loaded if inside is None else f"select({wtypes.literal(0, decl.dtype)}, {loaded}, {inside})")

    def _half_helper(self, template: str, decl: ContainerDecl, op: AtomicOpKind | None = None) -> str:
        """The name (after `wk_load_`/`wk_atomic_`) of a HALF_PAIRS helper of `decl`: a plain load, or an
        atomic `op` (None: a plain store, which must not race with the other half's atomics either)."""
        name = f"{op.value if op is not None else 'store'}_{decl.name}" if template == "atomic_half" else decl.name
        encode = "v" if op is None or op is AtomicOpKind.EXCHANGE else wops.WGSL_ATOMIC_COMBINE[op]
        self.use_helper(template, T.f16, NAME=name, BUF=decl.name, ENCODE=encode)
        return name

    def _encode(self, decl: ContainerDecl, value: str) -> str:
        """A register value as the container stores it."""
        if decl.dtype.is_bool:
            return f"select(0u, 1u, {value})"
        if decl.bits_type is not None:
            return f"bitcast<{decl.bits_type}>({value})"
        return value

    def _decode(self, decl: ContainerDecl, stored: str) -> str:
        """A stored element as a register value."""
        if decl.bits_type is not None:
            stored = f"bitcast<{wtypes.register_type(decl.dtype)}>({stored})"
        if decl.dtype.is_bool:
            stored = f"({stored} != 0u)"
        return stored

    def visit_GlobalStore(self, stmt: ir.GlobalStore) -> None:
        decl = self.decls[self.slot_key(stmt.ptr.container)]
        if decl.bits_type == HALF_PAIRS:
            helper = self._half_helper("atomic_half", decl)
            self.guarded_statement(stmt.ptr, f"_ = wk_atomic_{helper}({_element_index(self.value(stmt.ptr))}, "
                                             f"{self.value(stmt.value)});")
            return
        ref, value = self.value(stmt.ptr), self._encode(decl, self.value(stmt.value))
        self.guarded_statement(stmt.ptr, f"atomicStore(&{ref}, {value});" if decl.atomic else f"{ref} = {value};")

    def visit_AtomicOp(self, stmt: ir.AtomicOp) -> None:
        decl = self.decls[self.slot_key(stmt.ptr.container)]
        ref, value = self.value(stmt.ptr), self.value(stmt.value)
        index = ref[ref.index("[") + 1:-1]
        dtype = decl.dtype
        if stmt.op is AtomicOpKind.CAS:
            helper_name = f"cas_{decl.name}"
            self.use_helper("atomic_compare_exchange", wtypes.storage_type(dtype), NAME=helper_name, BUF=decl.name)
            expected = self._encode(decl, self.value(stmt.expected))
            self.guarded_value(stmt, stmt.ptr, wtypes.register_type(dtype), wtypes.literal(0, dtype),
                               self._decode(decl, f"wk_atomic_{helper_name}({index}, {expected}, "
                                                  f"{self._encode(decl, value)})"))
            return
        reduction = self.reductions.get(stmt)
        if reduction is not None:          # accumulate in the invocation's register (flushed at the end)
            register = self.reduction_registers[reduction]
            self.emit(f"{register} = {self._combine(reduction, register, value)};")
            self.names[stmt] = wtypes.literal(0, dtype)     # unused: only unused atomics are reductions
            return
        self.guarded_value(stmt, stmt.ptr, wtypes.register_type(dtype), wtypes.literal(0, dtype),
                           self._atomic_expr(stmt.op, stmt.ptr, value))

    def _atomic_expr(self, op: AtomicOpKind, ptr: ir.GlobalPtr, value: str) -> str:
        """The old value of an atomic `op` (not CAS) of register value `value` on the element `ptr` names."""
        decl = self.decls[self.slot_key(ptr.container)]
        ref = self.value(ptr)
        index = ref[ref.index("[") + 1:-1]
        dtype = decl.dtype
        if decl.bits_type == HALF_PAIRS:
            return f"wk_atomic_{self._half_helper('atomic_half', decl, op)}({index}, {value})"
        builtin = wops.WGSL_ATOMIC_BUILTIN.get(op)
        native = builtin is not None and (decl.bits_type is None or op in wops.BITWISE_ATOMIC) \
            and not (dtype.is_int and dtype.bits < 32 and op in _WRAPPING_ATOMIC)
        if native:
            return self._decode(decl, f"{builtin}(&{ref}, {self._encode(decl, value)})")
        # compare-exchange loop: float bits, a narrow int whose sum must wrap to its own width, or an op with no
        # builtin (mul)
        combine = wops.WGSL_ATOMIC_COMBINE[op]
        if decl.bits_type is not None:
            reg = wtypes.register_type(dtype)
            decode, encode = f"bitcast<{reg}>(old_bits)", f"bitcast<{decl.bits_type}>({combine})"
        else:
            decode, encode = "old_bits", wtypes.wrap_narrow(combine, dtype)
        helper_name = f"{op.value}_{decl.name}"
        self.use_helper("atomic_cas", dtype, NAME=helper_name, BUF=decl.name, DECODE=decode, ENCODE=encode)
        return f"wk_atomic_{helper_name}({index}, {value})"

    def visit_ShapeOf(self, stmt: ir.ShapeOf) -> None:
        self.names[stmt] = self._extent(stmt.container, stmt.axis)
