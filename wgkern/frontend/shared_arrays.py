"""A `wk.simt.block.SharedArray` in kernel code: indexing it gives GlobalRefs of its 'shared' container slot
(simt.py makes the slot, subscripts.py and tiles.py index it)."""
from __future__ import annotations

from dataclasses import dataclass

from wgkern.frontend.values import GlobalRef
from wgkern.ir import nodes as ir


@dataclass(eq=False)
class SharedArrayRef:
    """A `wk.simt.block.SharedArray` in kernel code: indexing it gives GlobalRefs of its 'shared' slot."""
    slot: ir.ContainerSlot
    shape: tuple[int, ...]
    element_shape: tuple[int, ...]

    def ref(self, label: str) -> GlobalRef:
        return GlobalRef(self.slot, [], self.shape + self.element_shape, label or self.slot.name)
