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

A container on a binding that cannot be declared wide in the task (atomic typing, float bits, a container bound
as several windows: split.py) takes its wide accesses one element at a time, through the ordinary load and store
lowering."""
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

    def _element_ptr(self, stmt: ir.VectorLoad | ir.VectorStore, decl, k: int) -> ir.GlobalPtr:
        """A pointer to element index + k of the wide access `stmt`, named as visit_GlobalPtr names one (it is
        in range: no guard), so the ordinary load and store lowering (atomics, float bits, windows) applies."""
        ptr = ir.GlobalPtr(container=stmt.container, indices=[], dtype=stmt.container.dtype, loc=stmt.loc)
        offset = self.fresh("lane")
        self.emit(f"let {offset} = {self.value(stmt.index)} + {k}i;")
        self.names[ptr] = self.element_ref(decl, f"{decl.base} + {offset}" if decl.base else offset)
        if decl.windows > 1:
            self.split_offset(ptr, decl, offset)      # split.py
        return ptr

    def visit_VectorLoad(self, stmt: ir.VectorLoad) -> None:
        decl = self.container(stmt.container, stmt.loc)
        if decl.lanes == stmt.width:
            self.let(stmt, f"{decl.name}[({self._wide_flat(decl, stmt.index)}) >> 2u]")
            return
        lanes = []
        for k in range(stmt.width):
            load = ir.GlobalLoad(ptr=self._element_ptr(stmt, decl, k), dtype=stmt.dtype, loc=stmt.loc)
            self.visit(load)
            lanes.append(self.value(load))
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
        if decl.lanes == len(stmt.values):
            values = ", ".join(self.value(v) for v in stmt.values)
            self.emit(f"{decl.name}[({self._wide_flat(decl, stmt.index)}) >> 2u] = vec4<{decl.element}>({values});")
            return
        for k, value in enumerate(stmt.values):
            self.visit(ir.GlobalStore(ptr=self._element_ptr(stmt, decl, k), value=value, loc=stmt.loc))
