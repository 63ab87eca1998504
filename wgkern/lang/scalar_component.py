"""`field.get_scalar_field(...)`: one component of a vector or matrix field, as a handle of its own."""
from __future__ import annotations

from typing import Any

import numpy as np


class ScalarComponent:
    """What `field.get_scalar_field(...)` returns. Fields keep an element's components together here, so placing
    a component places the whole field (the other components then land beside it, under the same node, which
    is the shape Taichi gives them); `wk.block_local` takes it as the hint it is. On the host it reads and writes
    that component of the field's elements."""

    def __init__(self, field: Any, indices: tuple[int, ...]) -> None:
        self.field = field
        self.indices = indices

    @property
    def shape(self) -> tuple[int, ...]:
        return self.field.shape

    @property
    def dtype(self) -> Any:
        return self.field.dtype

    def _key(self, key: Any) -> tuple[Any, ...]:
        return (key if isinstance(key, tuple) else (key,)) + self.indices

    def __getitem__(self, key: Any) -> Any:
        return self.field[self._key(key)]

    def __setitem__(self, key: Any, value: Any) -> None:
        self.field[self._key(key)] = value

    def to_numpy(self) -> np.ndarray:
        return self.field.to_numpy()[(Ellipsis,) + self.indices]
