"""Taichi's dense placement, for programs written against it: `wk.root.dense(wk.ij, (n, m)).place(x, y)`.

wgkern fields are dense arrays with a shape; the SNode tree of Taichi reduces to that here: a chain of `dense`
calls names index axes and their extents, and `place` gives the fields that shape (axes ordered i, j, k, l
whatever the nesting order, as Taichi indexes them; an axis named at several levels, a blocked layout, has the
product of its extents). A field declared without a shape and placed later is
re-allocated by `place`, which must come before a kernel uses it. Sparse nodes (pointer, bitmasked, dynamic)
are not available and say so. A float field declared without a shape has a `.grad` (as in Taichi) that can be
placed with it (`place(x, x.grad)`) and otherwise takes x's shape when first used, so `lazy_grad()` places
every such `.grad` now. Also owns fields placed bit-packed (`wk.BitpackedFields`, `snode.bit_struct`; the bit
budgets of lang/quant.py's types) and answers for the fields placed here what placement means for host access
(`fill_field`, `active_elements`, `activate_for_host_write`, which lang/fields.py's Field asks)."""
from __future__ import annotations

import itertools
import math
import warnings
from typing import Any

import numpy as np

from wgkern.errors import WkError
from wgkern.lang.fields import _MAX_ELEMENTS, PLACE_NODE_MAKERS, Field
from wgkern.lang.quant import QuantFloat, SharedExponent, check_quant_array, quant_of

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


SPARSE_KINDS = ("pointer", "bitmasked", "dynamic")


class SNode:
    """A node of a placement tree: its kind, its parent, and the (axis, extent) pairs from the root down to it.

    Sparse nodes keep their activity in a small i32 field (`activity`): a `pointer` or `bitmasked` node one flag
    per cell of its shape, a `dynamic` node one length per cell of its parent. The data under a sparse node is
    stored densely (the full shape is allocated); what sparsity changes is which elements exist: struct-for loops
    visit only active ones, writes activate, and deactivation zeroes the data under the cell, so an inactive
    element reads 0 as in Taichi."""

    def __init__(self, axes: tuple[tuple[int, int], ...] = (), kind: str = "root", parent: SNode | None = None,
                 chunk_size: int | None = None):
        self.axes = axes
        self.kind = kind
        self._parent = parent
        self.chunk_size = chunk_size
        self._activity: Any = None
        self.quant_array_bits: tuple[int, int] | None = None     # (cells, max_num_bits) of a quant_array node

    # ---- building the tree -----------------------------------------------------------------------------
    def _child(self, kind: str, axes: Any, dimensions: Any) -> SNode:
        if not isinstance(axes, tuple):
            raise WkError(f"{kind}(): the first argument names axes (wk.i, wk.ij, ...), got {axes!r}")
        extents = (dimensions,) if isinstance(dimensions, (int, np.integer)) else tuple(dimensions)
        if len(extents) == 1 and len(axes) > 1:
            extents = extents * len(axes)
        if len(extents) != len(axes):
            raise WkError(f"{kind}({axes!r}, {dimensions!r}): {len(axes)} axes need {len(axes)} extents")
        if len(set(axes)) != len(axes):
            raise WkError(f"{kind}({axes!r}, {dimensions!r}): an axis is named twice")
        if self.kind in ("place", "dynamic") and kind != "place":
            raise WkError(f"a {kind}() node cannot hang below a {self.kind} node")
        return SNode(self.axes + tuple(zip(axes, (int(e) for e in extents))), kind, self)

    def dense(self, axes: Any, dimensions: Any) -> SNode:
        return self._child("dense", axes, dimensions)

    def pointer(self, axes: Any, dimensions: Any) -> SNode:
        """Taichi's pointer node: cells activated by writes or `wk.activate`, visited by struct-for loops only
        while active. Stored densely here (see the class docstring)."""
        return self._child("pointer", axes, dimensions)

    def bitmasked(self, axes: Any, dimensions: Any) -> SNode:
        """Taichi's bitmasked node: one activity flag per cell (the same as `pointer` here)."""
        return self._child("bitmasked", axes, dimensions)

    def quant_array(self, axes: Any, dimensions: Any, max_num_bits: int = 32) -> SNode:
        """Taichi's quant array: a dense node whose cells pack quantized fields into `max_num_bits` bits
        (checked when a field is placed). Stored at full width here (lang/quant.py), so it is a dense node."""
        node = self._child("dense", axes, dimensions)
        node.quant_array_bits = (math.prod(extent for _, extent in node.axes[len(self.axes):]), max_num_bits)
        return node

    def bit_struct(self, num_bits: int = 32) -> Any:
        """Taichi's older `snode.bit_struct(num_bits).place(x, y)`: a BitpackedFields placed here."""
        return BitStructNode(self, num_bits)

    def bit_array(self, axes: Any, dimensions: Any, num_bits: int = 32) -> SNode:
        """Taichi's older name of `quant_array`."""
        return self.quant_array(axes, dimensions, num_bits)

    def dynamic(self, axis: Any, capacity: int, chunk_size: int | None = None) -> SNode:
        """Taichi's dynamic node: a list of up to `capacity` elements along one axis per parent cell, grown by
        `wk.append` / `x[i].append(v)` or by writing an element; `wk.length` / `x[i].length()` read it."""
        if not isinstance(axis, tuple) or len(axis) != 1:
            raise WkError(f"dynamic() takes one axis (wk.i, wk.j, ...), got {axis!r}")
        node = self._child("dynamic", axis, capacity)
        node.chunk_size = chunk_size
        return node

    def place(self, *fields: Any, offset: Any = None) -> SNode:
        offsets = None
        if offset is not None:
            offsets = (offset,) if isinstance(offset, int) else tuple(offset)
            if len(offsets) != len(self.shape) or not all(isinstance(o, int) for o in offsets):
                raise WkError(f"place(offset={offset!r}): give one integer per axis of the shape {self.shape}")
        if self.kind == "place":
            raise WkError("place() hangs fields below a dense/pointer/bitmasked/dynamic node, not below a field")
        from wgkern.lang.scalar_component import ScalarComponent
        from wgkern.lang.structs import StructField
        for field in fields:
            if isinstance(field, (list, tuple)):        # Taichi's place([x, y])
                self.place(*field, offset=offset)
                continue
            if isinstance(field, ScalarComponent):      # v.get_scalar_field(d): the whole field goes here
                field = field.field
            if not isinstance(field, (Field, StructField)) and callable(getattr(field, "place", None)):
                field.place(self)                       # older Taichi: an object that places its own fields
                continue
            if isinstance(field, StructField):          # a struct field: its members, placed together
                self.place(*field.members.values(), offset=offset)
                object.__setattr__(field, "shape", self.shape)
                object.__setattr__(field, "_place_node", SNode(self.axes, "place", self))
                continue
            if not isinstance(field, Field):
                raise WkError(f"place() takes fields, got {type(field).__name__}")
            if self.quant_array_bits is not None:
                check_quant_array(self, field)
            self._check_dense_storage_fits(field)
            field._place(self.shape)
            if offsets is not None:         # the index of the first element per axis, as wk.field(offset=...)
                for container in (field, field.grad, field.dual):
                    if container is not None:
                        container.offset = offsets
            if field._adjoint_of is None:     # a .grad placed beside its field stays dense
                field._place_node = SNode(self.axes, "place", self)
        for node in self.path():
            if node.kind in SPARSE_KINDS:
                node.activity               # noqa: B018 - allocated now, before kernels bind it
        return self

    def _check_dense_storage_fits(self, field: Any) -> None:
        """Sparse nodes are stored densely here, so a field below one takes every cell of the declared domain;
        one past what a field can index is refused naming that, not only the element count."""
        sparse = [node.kind for node in self.path() if node.kind in SPARSE_KINDS]
        size = math.prod(self.shape) * math.prod(getattr(field, "element_shape", ()) or (1,))
        if sparse and size > _MAX_ELEMENTS:
            shape = " x ".join(str(n) for n in self.shape)
            raise WkError(f"placing field '{field.name}' below {'/'.join(dict.fromkeys(sparse))} nodes: wgkern "
                          f"stores sparse nodes densely (every cell of the declared domain, {shape} here), which is "
                          f"{size} elements, past the 2^31-1 a field can hold; declare smaller sparse "
                          f"sizes (a dynamic node's capacity, a pointer's extent) that cover what the program fills")

    # ---- host access of the fields placed here (Field.fill / from_numpy / x[I] = v ask their place node) ----
    def fill_field(self, field: Any, value: Any) -> bool:
        """`field.fill(value)` of a field placed here: under sparse nodes only the active elements, as in Taichi.
        False when no sparse node lies above it (the field then fills every element itself)."""
        from wgkern.lang import sparse
        if not sparse.sparse_levels(field):
            return False
        from wgkern.lang.sparse_fill import fill_active
        if not fill_active(field, value):
            active = sparse.active_elements(field)
            field._write_active(active, np.broadcast_to(np.asarray(value), field.element_shape or ()))
        return True

    def active_elements(self, field: Any) -> np.ndarray | None:
        """Which elements of `field`, placed here, are active (None when no sparse node lies above it)."""
        from wgkern.lang import sparse
        return sparse.active_elements(field)

    def activate_for_host_write(self, field: Any, index: tuple[int, ...]) -> None:
        """A host write `x[I] = v` of a field placed under sparse nodes activates I's cells."""
        from wgkern.lang import sparse
        sparse.activate_for_host_write(field, index)

    # ---- shape and structure -----------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """Per axis (i, j, ... in order), the product of its extents down the chain: Taichi's blocked layouts
        (`dense(ij, 4).dense(ij, 8)`) index the same 32 x 32 array, so the field has that shape here."""
        extents = self.extents()
        return tuple(extents[axis] for axis in sorted(extents))

    def extents(self) -> dict[int, int]:
        """{axis: extent} of this node's cells, axes in order."""
        extents: dict[int, int] = {}
        for axis, extent in self.axes:
            extents[axis] = extents.get(axis, 1) * extent
        return dict(sorted(extents.items()))

    @property
    def axis_order(self) -> tuple[int, ...]:
        return tuple(self.extents())

    def parent(self, n: int = 1) -> SNode | None:
        """The node `n` levels up (Taichi's `snode.parent(n)`): None past the root, as in Taichi."""
        node: SNode | None = self
        for _ in range(n):
            if node is None:
                break
            node = node._parent
        return node

    def path(self) -> list[SNode]:
        """The nodes from below the root down to this one."""
        out: list[SNode] = []
        node: SNode | None = self
        while node is not None and node.kind != "root":
            out.append(node)
            node = node._parent
        return out[::-1]

    def coordinate_map(self, ancestor: SNode) -> list[tuple[int, int]]:
        """How to turn an index of this node's cells into one of `ancestor`'s: per axis of the ancestor,
        (position in this node's index, divisor)."""
        mine, theirs = self.extents(), ancestor.extents()
        order = list(mine)
        return [(order.index(axis), mine[axis] // extent) for axis, extent in theirs.items()]

    @property
    def dynamic_axis(self) -> int:
        return self.axes[-1][0]

    @property
    def capacity(self) -> int:
        return self.axes[-1][1]

    @property
    def activity(self) -> Any:
        """The i32 field of a sparse node's activity: flags over its cells (pointer, bitmasked) or lengths over
        its parent's cells (dynamic). Allocated on first use."""
        if self.kind not in SPARSE_KINDS:
            return None
        if self._activity is None or not self._activity.program.alive:
            from wgkern.lang.types import i32
            shape = self._parent.shape if self.kind == "dynamic" else self.shape
            label = "length" if self.kind == "dynamic" else "active"
            self._activity = Field(i32, shape, name=f"{self.kind}{list(self.shape)}.{label}")
            self._activity._activity_of = self
        return self._activity

    def deactivate_all(self) -> None:
        """Deactivate every cell of this node and of the nodes below it, zeroing the data under them (Taichi's
        `snode.deactivate_all()`; `wk.root.deactivate_all()` clears every sparse structure)."""
        from wgkern.lang import sparse
        sparse.deactivate_all(self)

    def __repr__(self) -> str:
        parts = ["wk.root"] + [f"{node.kind} {list(node.shape)}" for node in self.path()]
        return " => ".join(parts)

    def __getattr__(self, name: str) -> Any:
        if name == "hash":
            raise WkError(f"{name}() nodes are not available (dense, pointer, bitmasked and dynamic are)")
        raise AttributeError(name)

    def lazy_grad(self) -> None:
        """Taichi's `ti.root.lazy_grad()`: every float field of the program, made before or after, has a
        `.grad` of its layout (placed now for fields placed so far)."""
        from wgkern.runtime.program import get_program
        program = get_program()
        program.lazy_grad = True
        for container in list(program.containers):
            if getattr(container, "unplaced_adjoint", False) and container._adjoint_of.shape != ():
                container._materialize()
            elif isinstance(container, Field) and container._adjoint_of is None \
                    and not container.name.endswith((".grad", ".dual")):
                container._add_grad()

    def lazy_dual(self) -> None:
        """Taichi's `ti.root.lazy_dual()`: every float field of the program, made before or after, has a `.dual`
        of its layout (forward mode, wk.ad.FwdMode)."""
        from wgkern.runtime.program import get_program
        program = get_program()
        program.lazy_dual = True
        for container in list(program.containers):
            if isinstance(container, Field) and container._adjoint_of is None \
                    and not container.name.endswith((".grad", ".dual")):
                container._add_dual()


class RootNode(SNode):
    """The root of a placement tree (`wk.root`, a FieldsBuilder). Taichi's roots are FieldsBuilders, whose
    methods name their arguments `indices` (`index` and `dimension` for `dynamic`), where a node below one names
    them `axes`: `ti.root.dense(indices=ti.i, dimensions=n)` runs in Taichi, so it does here (positional calls
    are the same)."""

    def dense(self, indices: Any, dimensions: Any) -> SNode:  # type: ignore[override]
        return super().dense(indices, dimensions)

    def pointer(self, indices: Any, dimensions: Any) -> SNode:  # type: ignore[override]
        return super().pointer(indices, dimensions)

    def bitmasked(self, indices: Any, dimensions: Any) -> SNode:  # type: ignore[override]
        return super().bitmasked(indices, dimensions)

    def quant_array(self, indices: Any, dimensions: Any, max_num_bits: int = 32) -> SNode:  # type: ignore[override]
        return super().quant_array(indices, dimensions, max_num_bits)

    def dynamic(self, index: Any, dimension: int, chunk_size: int | None = None) -> SNode:  # type: ignore[override]
        return super().dynamic(index, dimension, chunk_size)


root = RootNode()


def _implicit_place_node(shape: tuple[int, ...]) -> SNode:
    """The place node `x.snode` reports for a field made with a shape: a dense node of that shape under root."""
    parent = root.dense(tuple(range(len(shape))), shape) if shape else root
    return SNode(parent.axes, "place", parent)


PLACE_NODE_MAKERS["implicit"] = _implicit_place_node


class FieldsBuilder(RootNode):
    """Taichi's `ti.FieldsBuilder()`: a root of its own for fields placed after others are in use
    (`fb.dense(wk.i, n).place(x); tree = fb.finalize()`). Every field is its own dense array here, so the builder
    is a root node that `finalize()` closes to further placement; the tree it returns has Taichi's `destroy()`."""

    def __init__(self) -> None:
        super().__init__()
        self.finalized = False
        self.empty = True

    def _check_not_finalized(self) -> None:
        if self.finalized:
            raise WkError("FieldsBuilder finalized: no more nodes or fields can be added to it")

    def _child(self, kind: str, axes: Any, dimensions: Any) -> SNode:
        self._check_not_finalized()
        self.empty = False
        return super()._child(kind, axes, dimensions)

    def place(self, *fields: Any, offset: Any = None) -> SNode:
        self._check_not_finalized()
        self.empty = False
        return super().place(*fields, offset=offset)

    def lazy_grad(self) -> None:
        self._check_not_finalized()
        super().lazy_grad()

    def lazy_dual(self) -> None:
        self._check_not_finalized()
        super().lazy_dual()

    def finalize(self, raise_warning: bool = True) -> SNodeTree:
        self._check_not_finalized()
        if self.empty and raise_warning:
            warnings.warn("Finalizing an empty FieldsBuilder!", stacklevel=2)
        self.finalized = True
        return SNodeTree(self)

    def deactivate_all(self) -> None:
        """Deactivate the sparse nodes of this builder's tree (fields elsewhere keep their cells)."""
        if not self.finalized:
            warnings.warn("'deactivate_all()' would do nothing if FieldsBuilder is not finalized", stacklevel=2)
            return
        from wgkern.lang import sparse
        from wgkern.runtime.program import get_program
        for container in list(get_program().containers):
            owner = getattr(container, "_activity_of", None)
            node = owner if owner is not None else sparse.place_node(container)
            if node is None or (owner is None and not sparse.sparse_levels(container)):
                continue
            top = node
            while top._parent is not None:
                top = top._parent
            if top is self:
                container._fill_raw(0)


class SNodeTree:
    """What `FieldsBuilder.finalize()` returns (Taichi's SNodeTree). `destroy()` ends the tree once (a second call
    raises, as in Taichi); the fields' storage goes when they are no longer referenced."""

    def __init__(self, builder: FieldsBuilder) -> None:
        self.root = builder
        self.destroyed = False

    def destroy(self) -> None:
        if self.destroyed:
            raise WkError("SNode tree has been destroyed")
        self.destroyed = True


class BitpackedFields:
    """Taichi's `wk.BitpackedFields(max_num_bits=32)`: `place(x, y, shared_exponent=False)` groups quantized
    fields whose bits must fit `max_num_bits` (checked as Taichi does), and `wk.root.dense(...).place(group)`
    places them. Each member keeps its own full-width storage here; with `shared_exponent=True` the quant.float
    members of one element share the exponent of the largest, which every store to one of them recomputes."""

    def __init__(self, max_num_bits: int = 32) -> None:
        if max_num_bits not in (8, 16, 32, 64):
            raise WkError(f"BitpackedFields(max_num_bits={max_num_bits!r}): use 8, 16, 32 or 64")
        self.max_num_bits = max_num_bits
        self.fields: list[Any] = []
        self.used_bits = 0
        self.shared_groups: list[SharedExponent] = []

    def place(self, *fields: Any, shared_exponent: bool = False) -> None:
        if len(fields) == 1 and isinstance(fields[0], SNode) and not shared_exponent:
            fields[0].place(*self.fields)        # wk.root.dense(...).place(bitpacked)
            return
        members = []
        for field in fields:
            qtype = quant_of(field)
            if qtype is None:
                raise WkError("Only a QuantType can be a member of a BitStructType (BitpackedFields.place "
                              f"takes fields of wk.types.quant types, got '{getattr(field, 'name', field)}')")
            components = max(1, int(np.prod(field.element_shape))) if field.element_shape else 1
            members.append((field, qtype, components))
        if shared_exponent:
            if sum(n for _, _, n in members) < 2:
                raise WkError("At least 2 fields need to be placed when shared_exponent=True")
            if not all(isinstance(qtype, QuantFloat) for _, qtype, _ in members):
                raise WkError("shared_exponent=True takes quant.float fields only")
            if len({(qtype.exp, qtype.compute) for _, qtype, _ in members}) > 1:
                raise WkError("QuantFloatTypes with shared exponents must have exactly the same exponent type.")
            bits = members[0][1].exp + sum(qtype.frac * n for _, qtype, n in members)
        else:
            bits = sum(qtype.bits * n for _, qtype, n in members)
        if self.used_bits + bits > self.max_num_bits:
            raise WkError(f"BitStructType overflows: {self.used_bits + bits} bits used out of "
                          f"{self.max_num_bits}.")
        self.used_bits += bits
        self.fields.extend(field for field, _, _ in members)
        if shared_exponent:
            group = SharedExponent([field for field, _, _ in members])
            self.shared_groups.append(group)
            for field in group.fields:
                field.quant_group = group


class BitStructNode:
    """What Taichi's older `snode.bit_struct(num_bits)` returns: `place(x, y, shared_exponent=False)` checks the
    bits as BitpackedFields does and places the fields under the node."""

    def __init__(self, node: Any, num_bits: int) -> None:
        self.node = node
        self.num_bits = num_bits

    def place(self, *fields: Any, shared_exponent: bool = False) -> Any:
        group = BitpackedFields(self.num_bits)
        group.place(*fields, shared_exponent=shared_exponent)
        self.node.place(group)
        return self.node
