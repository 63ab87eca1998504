"""Quadrants' backend-agnostic containers: `wk.tensor(dtype, shape, backend=wk.Backend.NDARRAY | FIELD,
layout=None)` makes an ndarray or a field (`wk.Vector.tensor` / `wk.Matrix.tensor` of vectors / matrices),
`isinstance(x, wk.Tensor)` holds for both, and `wk.Tensor(x)`, `wk.VectorTensor(x)`, `wk.MatrixTensor(x)` and
`wk.wrap(x)` (Quadrants' wrappers) are x. The factories take only the keywords every backend understands
(`backend`, `needs_grad`, and `layout` for scalars), as Quadrants' do: anything else is a TypeError pointing at
`wk.field` / `wk.ndarray`, which take the backend-specific ones.

A `layout` (a permutation of the axes: the physical nesting order) only changes where elements live in memory,
never what a program reads, so it is checked, reported back as `x.layout` (None for the identity), and wgkern
keeps its row-major storage."""
from __future__ import annotations

import enum
from typing import Any, Iterable

from wgkern.lang.fields import Container, field, ndarray


class Backend(enum.IntEnum):
    """Which container `wk.tensor` makes (an IntEnum, as in Quadrants: `backend=0` / `1` are accepted)."""
    FIELD = 0
    NDARRAY = 1


def _backend(backend: Any) -> Backend:
    if isinstance(backend, Backend):
        return backend
    if isinstance(backend, int) and not isinstance(backend, bool) and backend in (0, 1):
        return Backend(backend)
    raise ValueError(f"backend={backend!r} is not a valid wk.Backend; expected wk.Backend.FIELD or "
                     "wk.Backend.NDARRAY")


def _check_keywords(factory: str, kwargs: dict[str, Any], accepted: Iterable[str]) -> None:
    accepted = set(accepted)
    if "order" in kwargs:
        if "layout" in accepted:
            raise TypeError(f"{factory}(...) does not accept order=; pass layout=(...) (a permutation of the axes) "
                            "instead")
        raise TypeError(f"{factory}(...) does not accept order= (or layout=); use wk.Vector.field / "
                        "wk.Matrix.field for another storage order")
    extra = sorted(set(kwargs) - accepted)
    if extra:
        raise TypeError(f"{factory}() got unexpected keyword argument(s) {extra}; accepted: "
                        f"{', '.join(sorted(accepted | {'dtype', 'shape'}))} (wk.field / wk.ndarray take the "
                        "backend-specific ones)")


class _TensorKind(type):
    """isinstance(x, wk.Tensor): a container; wk.VectorTensor / wk.MatrixTensor: one of vectors / matrices."""

    element_axes: int | None = None

    def __instancecheck__(cls, obj: Any) -> bool:
        if not isinstance(obj, Container):
            return False
        return cls.element_axes is None or len(obj.element_shape) == cls.element_axes


class Tensor(metaclass=_TensorKind):
    """`isinstance(x, wk.Tensor)`: x is a field or an ndarray. Quadrants' `qd.Tensor(x)` wrapper of a field or
    ndarray gives x itself here: every container already has the wrapper's surface, and kernels and dataclass
    members then see the container they would see unwrapped. As an annotation, it takes either kind."""

    def __new__(cls, impl: Any) -> Any:
        if not isinstance(impl, cls):
            what = {None: "a field or an ndarray", 1: "a field or an ndarray of vectors",
                    2: "a field or an ndarray of matrices"}[cls.element_axes]
            raise TypeError(f"wk.{cls.__name__}(impl) wraps {what}, not "
                            f"{getattr(impl, 'element_shape', type(impl).__name__)!r}")
        return impl


class VectorTensor(Tensor):
    """Quadrants' wrapper of a container of vectors (`wk.Vector.tensor(...)`): the container itself here."""
    element_axes = 1


class MatrixTensor(Tensor):
    """Quadrants' wrapper of a container of matrices (`wk.Matrix.tensor(...)`): the container itself here."""
    element_axes = 2


def wrap(impl: Any) -> Any:
    """Quadrants' `qd.wrap(impl)` (the most specific Tensor wrapper of a field or ndarray): impl itself."""
    return Tensor(impl)


def tensor(dtype: Any, shape: Any, *, backend: Backend = Backend.NDARRAY, layout: Any = None,
           **kwargs: Any) -> Any:
    """A field (`backend=wk.Backend.FIELD`) or an ndarray (the default) of `dtype` and `shape`, with
    `needs_grad=` as given."""
    return _make("wk.tensor", dtype, shape, backend, layout, kwargs)


def _make(factory: str, dtype: Any, shape: Any, backend: Any, layout: Any, kwargs: dict[str, Any]) -> Any:
    from wgkern.lang.types import VectorType
    if isinstance(dtype, Container):
        raise TypeError(f"{factory}() allocates a new container; '{dtype.name}' is one already (wk.wrap(x) gives "
                        "Quadrants' wrapper of an existing one)")
    _check_keywords(factory, kwargs, ("backend", "needs_grad") if factory != "wk.tensor"
                    else ("backend", "needs_grad", "layout"))
    backend = _backend(backend)
    if layout is not None and isinstance(dtype, VectorType):
        raise TypeError("layout= is not supported with vector or matrix dtypes; use wk.Vector.tensor(...) or "
                        "wk.Matrix.tensor(...) without layout=")
    rank = 1 if isinstance(shape, int) else len(tuple(shape))
    if layout is not None and sorted(layout) != list(range(rank)):
        raise ValueError(f"wk.tensor(layout={layout!r}): give a permutation of range({rank})")
    make = field if backend is Backend.FIELD else ndarray
    return tag_layout(make(dtype, shape, **kwargs), layout)


def tag_layout(container: Container, layout: Any) -> Container:
    """Record `layout` on `container` (and its gradient) as `x.layout`: the permutation as a tuple of ints, or
    None for the identity or no layout (Quadrants' `Field.layout` / `Ndarray.layout`)."""
    order = None if layout is None else tuple(int(a) for a in layout)
    if order == tuple(range(len(container.shape))):
        order = None
    for each in (container, container.grad):
        if each is not None:
            each.layout = order
    return container


def vector_tensor(n: int, dtype: Any, shape: Any, *, backend: Backend = Backend.NDARRAY, **kwargs: Any) -> Any:
    """`wk.Vector.tensor(n, dtype, shape, backend=..., needs_grad=...)`: wk.tensor of n-vectors."""
    from wgkern.lang.types import vector
    return _make("wk.Vector.tensor", vector(n, dtype), shape, backend, None, kwargs)


def matrix_tensor(n: int, m: int, dtype: Any, shape: Any, *, backend: Backend = Backend.NDARRAY,
                  **kwargs: Any) -> Any:
    """`wk.Matrix.tensor(n, m, dtype, shape, backend=..., needs_grad=...)`: wk.tensor of n x m matrices."""
    from wgkern.lang.types import matrix
    return _make("wk.Matrix.tensor", matrix(n, m, dtype), shape, backend, None, kwargs)
