"""A block's shared arrays (`wk.simt.block.SharedArray`) on the GPU targets: module globals in the shared address
space (addrspace 3: CUDA's shared memory, AMD's LDS), addressed through generic pointers like every other access
and guarded as a field's accesses are (bounds.py). Mixed into the targets' function emitters."""
from __future__ import annotations

import math

from wgkern.errors import CompileError
from wgkern.ir import nodes as ir

from .types import memory_type


class SharedArrayLowering:
    """Needs from the emitter: op, value, values, module, task_index, guarded_offset, checked_address."""

    def shared_global(self, slot: ir.ContainerSlot) -> str:
        """The module global of a shared array (one per slot; a task's arrays are its own)."""
        names = self.module.shared_names
        if id(slot) not in names:
            used = self.module.shared_bytes.get(self.task_index, 0) + math.prod(slot.shape) * slot.dtype.nbytes
            owner, limit = self.module.target.shared_memory
            if used > limit:
                raise CompileError(f"the shared arrays of one block take {used} bytes, more than {owner}'s "
                                   f"{limit} bytes of static shared memory per block", slot.loc)
            self.module.shared_bytes[self.task_index] = used
            names[id(slot)] = f"@wk_shared{len(names)}"
            count = math.prod(slot.shape)
            self.module.helpers[names[id(slot)]] = (
                f"{names[id(slot)]} = internal addrspace(3) global [{count} x {memory_type(slot.dtype)}] undef, "
                f"align 16   ; SharedArray of line {slot.loc.lineno if slot.loc else '?'}")
        return names[id(slot)]

    def shared_pointer(self, stmt: ir.GlobalPtr) -> None:
        """The generic address of a shared array's element; guarded as a field's access is (bounds.py)."""
        slot = stmt.container
        strides = [str(math.prod(slot.shape[axis + 1:])) for axis in range(len(slot.shape))]
        element = memory_type(slot.dtype)
        if stmt not in self.module.in_range and not self.module.bounds_check:
            wide = self.guarded_offset(stmt, -1, strides)     # a static shape: no slot index needed
        else:
            offset = "0"
            for axis, index in enumerate(stmt.indices):
                term = self.value(index) if strides[axis] == "1" else \
                    self.op(f"mul nsw i32 {self.value(index)}, {strides[axis]}")
                offset = term if offset == "0" else self.op(f"add nsw i32 {offset}, {term}")
            wide = self.op(f"sext i32 {offset} to i64")
        local = self.op(f"getelementptr inbounds {element}, ptr addrspace(3) {self.shared_global(slot)}, i64 {wide}")
        address = self.op(f"addrspacecast ptr addrspace(3) {local} to ptr")
        if self.module.bounds_check and stmt not in self.module.in_range:
            address = self.checked_address(stmt, -1, address)   # debug=True: as a field's (static shape)
        self.values[stmt] = address
