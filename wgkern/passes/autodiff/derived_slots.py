"""The derivative containers of a kernel's containers: adjoints (`.grad`, reverse mode) or tangents (`.dual`,
forward mode), one ContainerSlot each, made on first request and appended to the kernel's container list."""
from __future__ import annotations

from wgkern.ir import nodes as ir


class DerivedSlots:
    """`slots(primal)`: the `attribute` ("grad" or "dual") container of `primal`, or None where it has none.
    Fields have one when their host field has that attribute (created with needs_grad / needs_dual), kernel
    temporaries always (except the return slot), ndarray arguments only for "grad" and only when declared with
    needs_grad. Derived slots carry `is_grad=True` (for ndarrays: bind the argument's `.grad`), and are never
    derived again."""

    def __init__(self, kernel: ir.OffloadedKernel, attribute: str):
        self.kernel = kernel
        self.attribute = attribute
        self.containers = list(kernel.containers)
        self.by_primal: dict[ir.ContainerSlot, ir.ContainerSlot | None] = {}
        self.field_slots = {id(c.host): c for c in kernel.containers if c.kind == "field"}

    def __call__(self, slot: ir.ContainerSlot) -> ir.ContainerSlot | None:
        if slot in self.by_primal:
            return self.by_primal[slot]
        derived = self._make(slot)
        self.by_primal[slot] = derived
        if derived is not None and derived not in self.containers:
            self.containers.append(derived)
        return derived

    def _make(self, slot: ir.ContainerSlot) -> ir.ContainerSlot | None:
        if slot.is_grad or not slot.dtype.is_float:
            return None
        name = f"{slot.name}.{self.attribute}"
        if slot.kind == "field":
            host = getattr(slot.host, self.attribute, None)
            if host is None:
                return None
            getattr(host, "_materialize", lambda: None)()
            existing = self.field_slots.get(id(host))
            if existing is not None:
                return existing
            return ir.ContainerSlot(name=name, kind="field", dtype=slot.dtype, ndim=slot.ndim, shape=slot.shape,
                                    host=host, is_grad=True)
        if slot.kind == "ndarray":
            if self.attribute != "grad" or not self.kernel.args[slot.arg_index].needs_grad:
                return None
            return ir.ContainerSlot(name=name, kind="ndarray", dtype=slot.dtype, ndim=slot.ndim,
                                    element_shape=slot.element_shape, arg_index=slot.arg_index, is_grad=True)
        if slot.kind == "temp" and all(slot is not r for r in self.kernel.returns):
            return ir.ContainerSlot(name=name, kind="temp", dtype=slot.dtype, ndim=slot.ndim, shape=slot.shape,
                                    is_grad=True)
        return None
