"""Containers larger than one storage binding (the device's max_storage_buffer_binding_size) on the WGSL backend.

Such a container lives in one wgpu buffer (up to max_buffer_size) and is bound as several *windows*: window c
covers bytes [c * chunk, (c + 1) * chunk) with `chunk` the largest power of two within the binding limit, and
each window is its own binding, declared `name_c`. An access splits its flat element offset into the window
(`offset >> shift`) and the index inside it (`offset & mask`) and runs in a `switch` over the windows: loads,
stores, atomics (and their compare-exchange helpers, one per window) are the ordinary lowering with the
window's binding in place of the container's. A container that fits one binding is bound whole and its
accesses are unchanged, so small containers cost nothing.

The number of windows is part of a compiled kernel: a launch whose containers need another count compiles a
variant (runtime.py asks `window_counts` only while some live buffer is split)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Sequence

from wgkern.backends.wgsl import types as wtypes
from wgkern.ir import nodes as ir

if TYPE_CHECKING:
    from wgkern.backends.wgsl.buffers import WgslBuffer


def chunk_bytes(max_binding: int) -> int:
    """Bytes of one window: the largest power of two within the binding limit (a multiple of every element
    size and of the 256-byte offset alignment)."""
    return 1 << (int(max_binding).bit_length() - 1)


def window_count(capacity: int, max_binding: int, chunk: int) -> int:
    """1 for a buffer bound whole, else the number of `chunk`-byte windows covering it."""
    return 1 if capacity <= max_binding else -(-capacity // chunk)


def window_counts(buffers: Sequence[WgslBuffer], max_binding: int, chunk: int) -> tuple[int, ...]:
    return tuple(window_count(b.capacity, max_binding, chunk) for b in buffers)


def windows(buffer: WgslBuffer, max_binding: int, chunk: int) -> list[tuple[int, int]]:
    """(offset, size) of each binding of `buffer`: the whole buffer, or its windows."""
    capacity = buffer.capacity
    if capacity <= max_binding:
        return [(buffer.offset, capacity)]
    return [(buffer.offset + start, min(chunk, capacity - start)) for start in range(0, capacity, chunk)]


def too_many_bindings(kernel: ir.OffloadedKernel, counts: Sequence[int], chunk: int, max_binding: int,
                      reserved: int, limit: int) -> str:
    """The message of a kernel whose split containers need more storage bindings than the device allows."""
    split = ", ".join(f"'{slot.name}' ({count} windows)" for slot, count in zip(kernel.containers, counts)
                      if count > 1)
    return (f"kernel '{kernel.name}' needs {sum(counts) + reserved} storage buffer bindings and this device "
            f"allows {limit} per shader stage: container(s) {split} exceed max_storage_buffer_binding_size "
            f"({max_binding} bytes) and are bound as windows of {chunk} bytes, one binding each, beside "
            f"{len(counts)} container(s) and {reserved} binding(s) of the runtime; pass fewer or smaller "
            "containers to this kernel")


class SplitLowering:
    """Mixin for codegen.WgslCodegen: accesses to a container bound as windows (`ContainerDecl.windows` > 1)."""

    def split_offset(self, stmt: ir.GlobalPtr, decl: Any, offset: str) -> None:
        """Emit the window and the index inside it of the access `stmt` at element `offset` (in range, or 0)."""
        window, inner = self.fresh("window"), self.fresh("inner")
        self.emit(f"let {window} = bitcast<u32>({offset}) >> {decl.shift}u;")
        self.emit(f"let {inner} = {offset} & {(1 << decl.shift) - 1}i;")
        self.split_ptrs[stmt] = (window, inner)

    def per_window(self, ptr: ir.GlobalPtr, stmt: ir.Stmt | None, lower: Callable[[], Any]) -> None:
        """Run `lower` (the ordinary lowering of an access through `ptr`) once per window of ptr's container,
        each in its case of a `switch` on the access's window; `stmt`'s value (when it has one) is copied to a
        variable declared before the switch."""
        where = self.split_ptrs.get(ptr)
        if where is None:
            lower()
            return
        window, inner = where
        decl = self.decls[self.slot_key(ptr.container)]
        name, ref = decl.name, self.names[ptr]
        result = None
        if stmt is not None and stmt.dtype is not None:
            result = self.fresh()
            self.emit(f"var {result}: {wtypes.register_type(stmt.dtype)};")
        self.emit(f"switch ({window}) {{")
        try:
            for c in range(decl.windows):
                self.emit(f"  {'default' if c == decl.windows - 1 else f'case {c}u'}: {{")
                self.indent += 2
                decl.name = f"{name}_{c}"
                self.names[ptr] = f"{decl.name}[{inner}]"
                lower()
                if result is not None:
                    self.emit(f"{result} = {self.value(stmt)};")
                self.indent -= 2
                self.emit("  }")
        finally:
            decl.name, self.names[ptr] = name, ref
        self.emit("}")
        if result is not None:
            self.names[stmt] = result

    def window_declarations(self, decl: Any) -> str:
        return "".join(f"@group(0) @binding({decl.binding + c}) var<storage, read_write> {decl.name}_{c}: "
                       f"array<{decl.element}>;  // {decl.dtype.name}, window {c} of {decl.windows}\n"
                       for c in range(decl.windows))
