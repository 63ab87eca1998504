"""LLVM IR for global memory: container base addresses, extents and strides read from the argument block, element
pointers, loads and stores (with the in-memory spellings of bools and f16)."""
from __future__ import annotations

from wgkern.errors import InternalCompilerError
from wgkern.ir import nodes as ir
from wgkern.dtypes import DataType
from .types import memory_type


class MemoryLowering:
    """FunctionEmitter's rules for global memory."""

    def container_base(self, slot_index: int) -> str:
        """A container's first element. Where the target names the address space containers live in (AMDGPU's
        global addrspace(1)) while accesses go through generic pointers (shared arrays are addressed through
        them too), the base is loaded in that space and cast, so LLVM's address-space inference gives every
        access derived from it the global space's instructions."""
        gptr = self.module.global_ptr
        offset = self.layout.container_address[slot_index]
        space = getattr(self.target, "container_address_space", "")
        if not space:
            return self.arg_field(offset, gptr, gptr)
        cached = self.container_cache.get((offset, "generic"))
        if cached is None:
            loaded = self.arg_field(offset, "ptr" + space, "ptr" + space)
            cached = self.entry_op(f"addrspacecast ptr{space} {loaded} to {gptr}")
            self.container_cache[(offset, "generic")] = cached
        return cached

    def device_pointer(self, address: int) -> str:
        """A generic pointer to device memory at a fixed `address` (the print buffer), made in the containers'
        address space where the target names one and cast, as container_base does: so LLVM gives its accesses
        the global space's instructions (on AMDGPU a 64-bit atomic through a pointer that may be private is
        otherwise expanded into a test of the address and a path for each space)."""
        space = getattr(self.target, "container_address_space", "")
        if not space:
            return self.op(f"inttoptr i64 {address} to ptr")
        return self.op(f"addrspacecast ptr{space} {self.op(f'inttoptr i64 {address} to ptr{space}')} to ptr")

    def container_extent(self, slot_index: int, slot: ir.ContainerSlot, axis: int) -> str:
        if slot.shape is not None:
            return str(slot.shape[axis])
        return self.arg_field(self.layout.container_shape[slot_index] + 4 * axis, "i32", "i32")

    def container_strides(self, slot_index: int, slot: ir.ContainerSlot, axes: int | None = None) -> list[str]:
        """Row-major strides in elements (i32), constants for static shapes; of the first `axes` axes alone
        (an array of their extents) when given."""
        axes = slot.ndim if axes is None else axes
        strides = ["1"]
        for axis in range(axes - 1, 0, -1):
            extent = self.container_extent(slot_index, slot, axis)
            previous = strides[0]
            if previous.lstrip("-").isdigit() and extent.lstrip("-").isdigit():
                strides.insert(0, str(int(previous) * int(extent)))
            else:
                key = f"stride{axis}" if axes == slot.ndim else f"stride{axis}/{axes}"
                cached = self.container_cache.get((slot_index, key))
                if cached is None:
                    cached = self.entry_op(f"mul i32 {previous}, {extent}")
                    self.container_cache[(slot_index, key)] = cached
                strides.insert(0, cached)
        return strides

    def slot_index(self, slot: ir.ContainerSlot, stmt: ir.Stmt) -> int:
        index = self.module.slot_indices.get(slot)
        if index is None:
            raise InternalCompilerError(f"container {slot.name} is not in the kernel's container list", stmt.loc)
        return index

    # ---- globals -----------------------------------------------------------------------------------------
    def visit_GlobalPtr(self, stmt: ir.GlobalPtr) -> None:
        slot = stmt.container
        index = self.slot_index(slot, stmt)
        strides = self.container_strides(index, slot)
        if stmt not in self.module.in_range and not self.module.bounds_check:
            wide = self.guarded_offset(stmt, index, strides)    # bounds.py
        else:
            offset = None
            for axis, idx in enumerate(stmt.indices):
                term = self.value(idx)
                if strides[axis] != "1":
                    term = self.op(f"mul nsw i32 {term}, {strides[axis]}")
                offset = term if offset is None else self.op(f"add nsw i32 {offset}, {term}")
            wide = self.op(f"sext i32 {offset if offset is not None else 0} to i64")
        base = self.container_base(index)
        address = self.op(f"getelementptr inbounds {memory_type(slot.dtype)}, {self.module.global_ptr} {base}, "
                          f"i64 {wide}")
        if self.module.bounds_check and stmt not in self.module.in_range:
            address = self.checked_address(stmt, index, address)
        self.values[stmt] = address

    def visit_GlobalLoad(self, stmt: ir.GlobalLoad) -> None:
        dtype = stmt.ptr.dtype
        mem = memory_type(dtype)


        def load() -> str:
            raw = self.op(f"load {mem}, {self.module.global_ptr} {self.value(stmt.ptr)}, align {dtype.nbytes}")
            return self.from_memory(raw, dtype)
        self.values[stmt] = self.in_range_only(stmt.ptr, dtype, load)

    def visit_GlobalStore(self, stmt: ir.GlobalStore) -> None:
        dtype = stmt.ptr.dtype
        value = self.value(stmt.value)
        if stmt.value.dtype != dtype:
            value = self.convert(value, stmt.value.dtype, dtype)
        raw = self.to_memory(value, dtype)
        self.emit(f"store {memory_type(dtype)} {raw}, {self.module.global_ptr} {self.store_address(stmt.ptr)}, "
                  f"align {dtype.nbytes}")

    def from_memory(self, raw: str, dtype: DataType) -> str:
        return self.op(f"icmp ne i8 {raw}, 0") if dtype.is_bool else raw

    def to_memory(self, value: str, dtype: DataType) -> str:
        return self.op(f"zext i1 {value} to i8") if dtype.is_bool else value
