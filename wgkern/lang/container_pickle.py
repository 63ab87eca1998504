"""Pickling of fields and ndarrays (`pickle.dumps(x)`, also what multiprocessing sends), as
Quadrants pickles its ndarrays and its `qd.tensor` wrappers of fields: the contents are copied to the host with
`to_numpy()`, and unpickling makes a new container of the same kind, element type, shape, `layout` tag (and a
field's offset and name) in the running program (wk.init first, or the default arch is chosen as for any
container) and fills it. A gradient (`needs_grad`) travels with its values.

Not picklable, with a TypeError saying why: fields under sparse nodes (pointer / bitmasked / dynamic: their
activity would be lost) and fields of quantized types (their rounding would be lost).

Registered with copyreg when the module is imported (wgkern/__init__.py imports it), so the containers of
lang/fields.py need not know about pickling."""
from __future__ import annotations

import copyreg
from typing import Any

import numpy as np

from wgkern.lang.fields import Field, Ndarray, field, ndarray

_VERSION = 1


def reduce_container(container: Any) -> tuple[Any, tuple[Any, ...]]:
    """How pickle reduces a field or ndarray: (rebuild, (state,)) with the contents as numpy arrays."""
    kind = container.kind_name
    if container.is_field:
        from wgkern.lang import sparse
        levels = sparse.sparse_levels(container)
        if levels:
            raise TypeError(f"cannot pickle field '{container.name}': it lives under a sparse "
                            f"{levels[0].kind} node, whose activity a pickle would lose; copy it to a dense "
                            "field, or pickle its to_numpy()")
        if container.quant is not None:
            raise TypeError(f"cannot pickle field '{container.name}' of a quantized type: its rounding would be "
                            "lost; pickle its to_numpy()")
    grad = container.grad
    state = {
        "version": _VERSION,
        "kind": kind,
        "dtype": container.dtype.name,
        "element_shape": tuple(container.element_shape),
        "shape": tuple(container.shape),
        "offset": tuple(container.offset) if container.is_field else (),
        "name": container.name,
        "layout": container.layout,
        "data": _contents(container),
        "grad": _contents(grad) if grad is not None else None,
    }
    return rebuild_container, (state,)


def _contents(container: Any) -> np.ndarray:
    """Values of shape `shape + element_shape` (a field's one-column matrices keep their column)."""
    if container.is_field:
        return container.to_numpy(keep_dims=True)
    return container.to_numpy()


def rebuild_container(state: dict[str, Any]) -> Any:
    """A new field or ndarray holding the pickled contents."""
    from wgkern.lang import types as T
    if state.get("version") != _VERSION:
        raise ValueError(f"unsupported wgkern container pickle version {state.get('version')!r} "
                         f"(this wgkern reads version {_VERSION})")
    dtype = getattr(T, state["dtype"], None)
    if not isinstance(dtype, T.DataType):
        raise ValueError(f"unknown dtype '{state['dtype']}' in a pickled container")
    element_shape = state["element_shape"]
    if len(element_shape) == 1:
        element = T.vector(element_shape[0], dtype)
    elif len(element_shape) == 2:
        element = T.matrix(element_shape[0], element_shape[1], dtype)
    else:
        element = dtype
    needs_grad = state["grad"] is not None
    if state["kind"] == "field":
        result = field(element, state["shape"], needs_grad=needs_grad, name=state["name"],
                       offset=state["offset"] or None)
    else:
        result = ndarray(element, state["shape"], needs_grad=needs_grad, name=state["name"])
    if state.get("layout") is not None:
        from wgkern.lang.tensor import tag_layout
        tag_layout(result, state["layout"])
    result.from_numpy(state["data"])
    if needs_grad:
        result.grad.from_numpy(state["grad"])
    return result


copyreg.pickle(Field, reduce_container)
copyreg.pickle(Ndarray, reduce_container)
