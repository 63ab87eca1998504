"""Host handles of global data: `wk.field` and `wk.ndarray` (SKELETON: the runtime helper completes it).

Attribute contract the frontend relies on (docs/internals.md):
  .dtype          scalar DataType of one stored element
  .element_type   VectorType for vector/matrix containers, else None
  .shape          the container's own axes (tuple of int)
  .element_shape  () for scalars, (n,) vectors, (n, m) matrices
  .grad / .dual   the adjoint / dual container (same class) or None
  .name           for messages
  .is_field       True for wk.field, False for wk.ndarray
"""
from __future__ import annotations

from typing import Any


class Container:
    is_field: bool = False

    def __init__(self, dtype: Any, shape: tuple[int, ...], element_type: Any = None, name: str = ""):
        self.dtype = dtype
        self.shape = tuple(shape)
        self.element_type = element_type
        self.element_shape: tuple[int, ...] = element_type.element_shape if element_type is not None else ()
        self.grad: Container | None = None
        self.dual: Container | None = None
        self.name = name
        self.generation = 0
