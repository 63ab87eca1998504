"""Taichi's sparse-SNode operations on the host, and the intrinsics kernels call (`wk.activate`,
`wk.deactivate`, `wk.is_active`, `wk.append`, `wk.length`, `wk.rescale_index`).

The tree and the activity fields are lang/snode.py's; kernel code for these intrinsics, struct-for guards and
activation on writes is frontend/sparse.py's. Here: which sparse nodes lie above a field (`sparse_levels`), the
host-side forms of the intrinsics (Python scope calls them on the activity fields directly), host writes that
activate, and `deactivate_all`."""
from __future__ import annotations

from typing import Any

import numpy as np

from wgkern.errors import WkError
from wgkern.lang.snode import SPARSE_KINDS, SNode


def place_node(container: Any) -> SNode | None:
    """The place node of a field (set by `node.place(x)`), None for a field declared with a shape."""
    return getattr(container, "_place_node", None)


def sparse_levels(container: Any) -> list[SNode]:
    """The sparse nodes above a field, root first (empty for a dense field)."""
    node = place_node(container)
    return [n for n in node.path() if n.kind in SPARSE_KINDS] if node is not None else []


def as_node(target: Any, what: str) -> SNode:
    """An SNode argument, or the place node of a field (Taichi takes either in `rescale_index`)."""
    if isinstance(target, SNode):
        return target
    node = place_node(target)
    if node is not None:
        return node
    shape = getattr(target, "shape", None)
    if isinstance(shape, tuple) and hasattr(target, "dtype"):
        from wgkern.lang.snode import root
        return SNode(root.dense(tuple(range(len(shape))), shape).axes, "place", None) if shape else root
    raise WkError(f"{what} takes an SNode (e.g. x.parent() or a node from wk.root.pointer(...)), got "
                  f"{type(target).__name__}")


def _host_index(node: SNode, index: Any) -> tuple[int, ...]:
    if index is None:
        index = ()
    values = tuple(int(v) for v in np.atleast_1d(np.asarray(index, dtype=np.int64))) \
        if not isinstance(index, (int, np.integer)) else (int(index),)
    return values


def _cell(node: SNode, ancestor: SNode, index: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(index[position] // divisor for position, divisor in node.coordinate_map(ancestor))


def activate_host(node: SNode, index: tuple[int, ...]) -> None:
    """Activate the cell `index` (in `node`'s coordinates) of `node` and of the sparse nodes above it."""
    for level in node.path():
        if level.kind not in SPARSE_KINDS:
            continue
        if level.kind == "dynamic":
            if level is node and len(index) == len(node.shape) - 1:
                continue          # a dynamic node indexed by its parent's cell: nothing to grow
            parent = _cell(node, level._parent, index)
            position = node.axis_order.index(level.dynamic_axis)
            grown = index[position] // (node.extents()[level.dynamic_axis] // level.capacity) + 1
            lengths = level.activity
            key = parent if parent else None
            if lengths[key] < grown:
                lengths[key] = grown
        else:
            level.activity[_cell(node, level, index)] = 1


def activate_for_host_write(container: Any, index: tuple[int, ...]) -> None:
    """A host write `x[I] = v` of a field under sparse nodes activates I's cells."""
    node = place_node(container)
    if node is not None and sparse_levels(container):
        activate_host(node, index)


def active_elements(container: Any) -> np.ndarray | None:
    """A bool array over the field's shape: which elements are active (None for a dense field). Each level's
    cell of an element is gathered through one index array per axis, shaped to broadcast (an open grid), so
    no index array of the field's full size is made."""
    levels = sparse_levels(container)
    if not levels:
        return None
    node = place_node(container)
    shape = node.shape

    def along(position: int) -> np.ndarray:
        """The element index along one axis, broadcastable over the field's shape."""
        extents = [1] * len(shape)
        extents[position] = shape[position]
        return np.arange(shape[position], dtype=np.int64).reshape(extents)

    active = np.ones(shape, dtype=bool)
    for level in levels:
        flags = level.activity.to_numpy()
        if level.kind == "dynamic":
            parent = [along(p) // d for p, d in node.coordinate_map(level._parent)]
            position = node.axis_order.index(level.dynamic_axis)
            divisor = node.extents()[level.dynamic_axis] // level.capacity
            lengths = flags[tuple(parent)] if parent else flags
            active &= along(position) // divisor < lengths
        else:
            cells = [along(p) // d for p, d in node.coordinate_map(level)]
            active &= flags[tuple(cells)] != 0
    return active


def coordinate_node(container: Any) -> SNode | None:
    """The node whose cells index a container of the tree: a field's place node, a pointer/bitmasked node's
    flags' own node, a dynamic node's lengths' parent node; None for a container outside the tree."""
    owner = getattr(container, "_activity_of", None)
    if owner is None:
        return place_node(container)
    return owner._parent if owner.kind == "dynamic" else owner


def containers_below(node: SNode) -> list[Any]:
    """The live fields and activity fields under `node` (for the root: those under some sparse node)."""
    from wgkern.runtime.program import get_program
    out = []
    for container in list(get_program().containers):
        owner = getattr(container, "_activity_of", None)
        below = place_node(container) if owner is None else owner
        if below is None:
            continue
        if node.kind == "root":
            if owner is not None or sparse_levels(container):
                out.append(container)
        elif owner is not node and node in below.path():
            out.append(container)
    return out


def block_of(anchor: SNode, index: tuple[int, ...], target: SNode) -> tuple[slice, ...]:
    """The slices of `target`'s cells that lie in cell `index` of `anchor` (target is at or below it)."""
    mine, theirs = anchor.extents(), target.extents()
    order = list(mine)
    slices = []
    for axis, extent in theirs.items():
        if axis in mine:
            ratio = extent // mine[axis]
            start = index[order.index(axis)] * ratio
            slices.append(slice(start, start + ratio))
        else:
            slices.append(slice(None))
    return tuple(slices)


def deactivate_all(node: SNode) -> None:
    """Zero the activity of `node` and of the sparse nodes below it, and the fields placed below it."""
    if node.kind in SPARSE_KINDS:
        node.activity._fill_raw(0)
    for container in containers_below(node):
        container._fill_raw(0)


def deactivate_host(node: SNode, index: tuple[int, ...]) -> None:
    """Deactivate cell `index` of a pointer/bitmasked node (of a dynamic node: empty the list at its parent's
    cell `index`), zeroing what lies below it. A dense node's cells are always active: nothing happens, as in
    Taichi."""
    if node.kind in ("dense", "place"):
        return
    if node.kind not in SPARSE_KINDS:
        raise WkError(f"wk.deactivate() takes a pointer, bitmasked or dynamic node, not a {node.kind} node")
    anchor = node._parent if node.kind == "dynamic" else node
    node.activity[index if index else None] = 0
    for container in containers_below(node):
        data = container.to_numpy()
        data[block_of(anchor, index, coordinate_node(container))] = 0
        container._write_all(data)


def host_is_active(node: SNode, index: Any) -> int:
    index = _host_index(node, index)
    if node.kind not in ("pointer", "bitmasked"):
        raise WkError(f"wk.is_active() takes a pointer or bitmasked node, not a {node.kind} node")
    if len(index) != len(node.shape) or not all(0 <= v < n for v, n in zip(index, node.shape)):
        return 0
    return int(node.activity[index] != 0)


def host_length(node: SNode, index: Any) -> int:
    if node.kind != "dynamic":
        raise WkError(f"wk.length() takes a dynamic node, not a {node.kind} node")
    index = _host_index(node, index)
    return min(int(node.activity[index if index else None]), node.capacity)


def _host_or_kernel(name: str, host: Any) -> Any:
    def function(node: Any, *args: Any) -> Any:
        return host(as_node(node, f"wk.{name}()"), *args)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"Taichi's `ti.{name}`; in kernels it compiles to device code (frontend/sparse.py)."
    return function


def _append_host(node: SNode, index: Any, value: Any) -> int:
    raise WkError("wk.append() works inside kernels")


def _rescale_index(a: Any, b: Any, index: Any) -> Any:
    source, target = as_node(a, "wk.rescale_index()"), as_node(b, "wk.rescale_index()")
    values = _host_index(source, index)
    out = []
    for k, value in enumerate(values):
        have, want = source.shape[k], target.shape[k] if k < len(target.shape) else source.shape[k]
        out.append(value // (have // want) if have >= want else value * (want // have))
    return np.array(out, dtype=np.int32)


activate = _host_or_kernel("activate", lambda node, index: activate_host(node, _host_index(node, index)))
deactivate = _host_or_kernel("deactivate", lambda node, index: deactivate_host(node, _host_index(node, index)))
is_active = _host_or_kernel("is_active", host_is_active)
append = _host_or_kernel("append", _append_host)
length = _host_or_kernel("length", host_length)


def rescale_index(a: Any, b: Any, index: Any) -> Any:
    """Taichi's `ti.rescale_index(a, b, I)`: index I of field/node `a` in the coordinates of node `b`."""
    return _rescale_index(a, b, index)


def deactivate_all_snodes() -> None:
    """Taichi's `ti.deactivate_all_snodes()`: `wk.root.deactivate_all()`."""
    from wgkern.lang.snode import root
    deactivate_all(root)
