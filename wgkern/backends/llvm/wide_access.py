"""LLVM lowering of wide memory access (passes/vectorize.py): a VectorLoad is one `<N x T>` load, its lanes
`extractelement`s, and a VectorStore one `<N x T>` store of the values put together with `insertelement`.

The pass guarantees the elements are in range and the index a multiple of N, so no bounds check is emitted; the
alignment stated is the target's `wide_access_align` (CUDA: 16 bytes, so NVPTX emits `ld.global.v4.f32`;
the CPU: 4, since an ndarray adopted from host memory may start at any element)."""
from __future__ import annotations

from wgkern.ir import nodes as ir

from .types import llvm_type, memory_type


class WideAccessLowering:
    """Mixin of FunctionEmitter (codegen.py)."""

    def wide_address(self, container: ir.ContainerSlot, index: ir.Stmt, stmt: ir.Stmt) -> str:
        base = self.container_base(self.slot_index(container, stmt))
        wide = self.op(f"sext i32 {self.value(index)} to i64")
        return self.op(f"getelementptr inbounds {memory_type(container.dtype)}, {self.module.global_ptr} {base}, "
                       f"i64 {wide}")

    def wide_type(self, stmt: ir.VectorLoad | ir.VectorStore, width: int) -> tuple[str, int]:
        align = min(self.target.wide_access_align, width * stmt.container.dtype.nbytes)
        return f"<{width} x {llvm_type(stmt.container.dtype)}>", align

    def visit_VectorLoad(self, stmt: ir.VectorLoad) -> None:
        address = self.wide_address(stmt.container, stmt.index, stmt)
        vector, align = self.wide_type(stmt, stmt.width)
        self.values[stmt] = self.op(f"load {vector}, {self.module.global_ptr} {address}, align {align}")

    def visit_VectorLane(self, stmt: ir.VectorLane) -> None:
        vector, _ = self.wide_type(stmt.vector, stmt.vector.width)
        self.values[stmt] = self.op(f"extractelement {vector} {self.value(stmt.vector)}, i32 {stmt.lane}")

    def visit_VectorStore(self, stmt: ir.VectorStore) -> None:
        vector, align = self.wide_type(stmt, len(stmt.values))
        element = llvm_type(stmt.container.dtype)
        packed = "undef"
        for lane, value in enumerate(stmt.values):
            packed = self.op(f"insertelement {vector} {packed}, {element} {self.value(value)}, i32 {lane}")
        address = self.wide_address(stmt.container, stmt.index, stmt)
        self.emit(f"store {vector} {packed}, {self.module.global_ptr} {address}, align {align}")
