"""Taichi's dense placement, for programs written against it: `wk.root.dense(wk.ij, (n, m)).place(x, y)`.

wgkern fields are dense arrays with a shape; the SNode tree of Taichi reduces to that here: a chain of `dense`
calls names index axes and their extents, and `place` gives the fields that shape (axes ordered i, j, k, l
whatever the nesting order, as Taichi indexes them; an axis named at several levels, a blocked layout, has the
product of its extents). A field declared without a shape and placed later is
re-allocated by `place`, which must come before a kernel uses it. Sparse nodes (pointer, bitmasked, dynamic)
are not available and say so. A float field declared without a shape has a `.grad` (as in Taichi) that can be
placed with it (`place(x, x.grad)`) and otherwise takes x's shape when first used, so `lazy_grad()` places
every such `.grad` now."""
from __future__ import annotations

import itertools
from typing import Any

from wgkern.errors import WkError

AXIS_NAMES = "ijkl"


class Axes(tuple):
    """Index axes: `wk.i` is (0,), `wk.ij` is (0, 1), ..."""

    def __repr__(self) -> str:
        return "wk." + "".join(AXIS_NAMES[a] for a in self)


i, j, k, l = (Axes((n,)) for n in range(4))  # noqa: E741 - Taichi's names
ij, ijk, ijkl = Axes((0, 1)), Axes((0, 1, 2)), Axes((0, 1, 2, 3))


def axes(*indices: int) -> Axes:
    """Taichi's `ti.axes(1, 2)`: the index axes with these numbers (`wk.axes(0, 1)` is `wk.ij`)."""
    for index in indices:
        if not isinstance(index, int) or not 0 <= index < len(AXIS_NAMES):
            raise WkError(f"wk.axes() takes axis numbers 0..{len(AXIS_NAMES) - 1}, got {index!r}")
    if len(set(indices)) != len(indices):
        raise WkError(f"wk.axes{indices}: an axis appears twice")
    return Axes(indices)


# every other ordered combination Taichi names (wk.jk, wk.il, wk.jkl, ...)
AXIS_COMBINATIONS = {"".join(AXIS_NAMES[a] for a in axes): Axes(axes)
                     for size in (2, 3) for axes in itertools.combinations(range(4), size)}
globals().update({name: axes for name, axes in AXIS_COMBINATIONS.items() if name not in globals()})


class SNode:
    """A node of a placement chain: the (axis, extent) pairs from the root down to it."""

    def __init__(self, axes: tuple[tuple[int, int], ...] = ()):
        self.axes = axes

    def dense(self, axes: Any, dimensions: Any) -> SNode:
        if not isinstance(axes, tuple):
            raise WkError(f"dense(): the first argument names axes (wk.i, wk.ij, ...), got {axes!r}")
        extents = (dimensions,) if isinstance(dimensions, int) else tuple(dimensions)
        if len(extents) == 1 and len(axes) > 1:
            extents = extents * len(axes)
        if len(extents) != len(axes):
            raise WkError(f"dense({axes!r}, {dimensions!r}): {len(axes)} axes need {len(axes)} extents")
        if len(set(axes)) != len(axes):
            raise WkError(f"dense({axes!r}, {dimensions!r}): an axis is named twice")
        return SNode(self.axes + tuple(zip(axes, (int(e) for e in extents))))

    @property
    def shape(self) -> tuple[int, ...]:
        """Per axis (i, j, ... in order), the product of its extents down the chain: Taichi's blocked layouts
        (`dense(ij, 4).dense(ij, 8)`) index the same 32 x 32 array, so the field has that shape here."""
        extents: dict[int, int] = {}
        for axis, extent in self.axes:
            extents[axis] = extents.get(axis, 1) * extent
        return tuple(extents[axis] for axis in sorted(extents))

    def place(self, *fields: Any, offset: Any = None) -> SNode:
        from wgkern.lang.fields import Field
        if offset is not None:
            raise WkError("place(offset=...) is not supported")
        for field in fields:
            if not isinstance(field, Field):
                raise WkError(f"place() takes fields, got {type(field).__name__}")
            field._place(self.shape)
        return self

    def lazy_grad(self) -> None:
        """Taichi's `ti.root.lazy_grad()`: every float field of the program, made before or after, has a
        `.grad` of its layout (placed now for fields placed so far)."""
        from wgkern.lang.fields import Field
        from wgkern.runtime.program import get_program
        program = get_program()
        program.lazy_grad = True
        for container in list(program.containers):
            if getattr(container, "unplaced_adjoint", False) and container._adjoint_of.shape != ():
                container._materialize()
            elif isinstance(container, Field) and container._adjoint_of is None \
                    and not container.name.endswith((".grad", ".dual")):
                container._add_grad()

    def _sparse(self, name: str) -> Any:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise WkError(f"{name}() nodes are not available: wgkern places fields densely (use dense(), or "
                          "wk.field(dtype, shape=...))")
        return refuse

    def __getattr__(self, name: str) -> Any:
        if name in ("pointer", "bitmasked", "dynamic", "hash", "bit_struct", "quant_array"):
            return self._sparse(name)
        raise AttributeError(name)


root = SNode()
