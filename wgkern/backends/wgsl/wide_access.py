"""WGSL lowering of wide memory access (passes/vectorize.py).

A storage buffer declared `array<f32>` cannot be read as `vec4<f32>`. A second binding of the same buffer
declared `array<vec4<f32>>` is refused by wgpu next to a read_write one when it is read-only (conflicting usages
in one dispatch); two read_write bindings of one buffer are accepted (wgpu-py 0.32 on lavapipe), but unless the
SPIR-V marks them `Aliased` the driver's compiler may assume they do not overlap, and each costs one of the
device's few storage bindings. So a task that accesses a container wide declares that container's binding as
`array<vec4<T>>` (packed: the whole arena binding): a VectorLoad/VectorStore is one element of it, and every
scalar access of a container on that binding in the task addresses a component, `c[k >> 2u][k & 3i]` (WGSL reads
or writes only that component's memory location, so neighbouring elements written by other invocations are
untouched). Buffers are allocated and bound in whole 16-byte units (runtime.py), so the last, partial vector of a
container is inside its binding.

A container on a binding that cannot be declared wide in the task (atomic typing, float bits) takes its wide
accesses one element at a time."""
from __future__ import annotations

from wgkern.ir import nodes as ir
from wgkern.backends.wgsl import types as wtypes

LANES = 4                               # the vector width of a wide binding (vec4)
WIDE_ELEMENTS = ("f32", "i32", "u32")
_COMPONENTS = "xyzw"


def wide_slot_indices(task: ir.Task, slot_index: dict[int, int]) -> set[int]:
    """Slot indices of the containers `task` accesses wide."""
    found = set()
    for stmt in _walk(task.body):
        if isinstance(stmt, (ir.VectorLoad, ir.VectorStore)):
            found.add(slot_index[id(stmt.container)])
    return found


def _walk(block: ir.Block):
    for stmt in block.stmts:
        yield stmt
        for child in stmt.blocks():
            yield from _walk(child)


class WideAccessLowering:
    """Mixin of WgslCodegen (codegen.py): `self.wide_bindings` holds the bindings declared `array<vec4<T>>`
    in the current task."""

    def wide_element(self, binding: int, element: str, atomic: bool, bits_type: str | None) -> int:
        """The lanes of `binding`'s declaration in this task: LANES where it is declared as vectors, else 0."""
        wide = binding in self.wide_bindings and not atomic and bits_type is None and element in WIDE_ELEMENTS
        return LANES if wide else 0

    def element_ref(self, decl, flat: str) -> str:
        """The reference to element `flat` (an i32 expression) of a declared container binding."""
        if decl.lanes:
            return f"{decl.name}[({flat}) >> 2u][({flat}) & 3i]"
        return f"{decl.name}[{flat}]"

    def _wide_flat(self, decl, index: ir.Stmt) -> str:
        flat = self.value(index)
        return f"{decl.base} + {flat}" if decl.base else flat

    def visit_VectorLoad(self, stmt: ir.VectorLoad) -> None:
        decl = self.container(stmt.container, stmt.loc)
        flat = self._wide_flat(decl, stmt.index)
        if decl.lanes == stmt.width:
            self.let(stmt, f"{decl.name}[({flat}) >> 2u]")
            return
        lanes = []
        for k in range(stmt.width):
            ref = self.element_ref(decl, f"{flat} + {k}i")
            lanes.append(self._decode(decl, f"atomicLoad(&{ref})" if decl.atomic else ref))
        self.let(stmt, f"array<{wtypes.register_type(stmt.dtype)}, {stmt.width}>({', '.join(lanes)})")

    def visit_VectorLane(self, stmt: ir.VectorLane) -> None:
        vector = self.value(stmt.vector)
        decl = self.decls[self.slot_key(stmt.vector.container)]
        if decl.lanes == stmt.vector.width:
            self.names[stmt] = f"{vector}.{_COMPONENTS[stmt.lane]}"
        else:
            self.names[stmt] = f"{vector}[{stmt.lane}]"

    def visit_VectorStore(self, stmt: ir.VectorStore) -> None:
        decl = self.container(stmt.container, stmt.loc)
        flat = self._wide_flat(decl, stmt.index)
        values = [self.value(v) for v in stmt.values]
        if decl.lanes == len(values):
            self.emit(f"{decl.name}[({flat}) >> 2u] = vec4<{decl.element}>({', '.join(values)});")
            return
        for k, value in enumerate(values):
            ref, stored = self.element_ref(decl, f"{flat} + {k}i"), self._encode(decl, value)
            self.emit(f"atomicStore(&{ref}, {stored});" if decl.atomic else f"{ref} = {stored};")
