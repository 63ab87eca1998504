"""Quadrants' backend-agnostic containers: `wk.tensor(dtype, shape, backend=wk.Backend.NDARRAY | FIELD,
layout=None)` makes an ndarray or a field, `isinstance(x, wk.Tensor)` holds for both, and `wk.Tensor(x)`
(Quadrants' wrapper) is x.

A `layout` (a permutation of the axes: the physical nesting order) only changes where elements live in memory,
never what a program reads, so it is checked and wgkern keeps its row-major storage."""
from __future__ import annotations

import enum
from typing import Any

from wgkern.lang.fields import Container, field, ndarray


class Backend(enum.Enum):
    """Which container `wk.tensor` makes."""
    FIELD = 0
    NDARRAY = 1


class _TensorKind(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Container)


class Tensor(metaclass=_TensorKind):
    """`isinstance(x, wk.Tensor)`: x is a field or an ndarray. Quadrants' `qd.Tensor(x)` wrapper of a field or
    ndarray gives x itself here: every container already has the wrapper's surface, and kernels and dataclass
    members then see the container they would see unwrapped. As an annotation, it takes either kind."""

    def __new__(cls, impl: Any) -> Any:
        if not isinstance(impl, Container):
            raise TypeError(f"wk.Tensor(impl) wraps a field or an ndarray, not {type(impl).__name__}")
        return impl


def tensor(dtype: Any, shape: Any, *, backend: Backend = Backend.NDARRAY, layout: Any = None,
           **kwargs: Any) -> Any:
    """A field (`backend=wk.Backend.FIELD`) or an ndarray (the default) of `dtype` and `shape`; other keywords
    (`needs_grad`, ...) go to `wk.field` / `wk.ndarray`."""
    if not isinstance(backend, Backend):
        raise ValueError(f"wk.tensor(backend=...) takes wk.Backend.FIELD or wk.Backend.NDARRAY, not {backend!r}")
    rank = 1 if isinstance(shape, int) else len(tuple(shape))
    if layout is not None and sorted(layout) != list(range(rank)):
        raise ValueError(f"wk.tensor(layout={layout!r}): give a permutation of range({rank})")
    make = field if backend is Backend.FIELD else ndarray
    return make(dtype, shape, **kwargs)
