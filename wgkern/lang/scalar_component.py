"""`field.get_scalar_field(...)`: one component of a vector or matrix field, as a scalar field of its own."""
from __future__ import annotations

from typing import Any

import numpy as np


class ScalarComponent:
    """What `field.get_scalar_field(...)` returns: Taichi's scalar field of one component, so it passes
    `isinstance(c, wk.ScalarField)` (lang/fields.py). Fields keep an element's components together here, so
    placing a component places the whole field (the other components then land beside it, under the same node,
    which is the shape Taichi gives them); `wk.block_local` takes it as the hint it is. On the host and in
    kernels, `c[I]` reads and writes component `indices` of the field's element `I` (`c[None]` for a 0-d field);
    `to_numpy`, `from_numpy` and `fill` act on that component only."""

    def __init__(self, field: Any, indices: tuple[int, ...]) -> None:
        self.field = field
        self.indices = indices

    @property
    def shape(self) -> tuple[int, ...]:
        return self.field.shape

    @property
    def dtype(self) -> Any:
        return self.field.dtype

    @property
    def name(self) -> str:
        return f"{self.field.name}{list(self.indices)}"

    def _key(self, key: Any) -> tuple[Any, ...]:
        """The field's key of element `key`'s component: one index per field axis, then the component's."""
        if key is None:                 # c[None]: the one element of a 0-d field
            key = ()
        elif isinstance(key, np.ndarray) and key.ndim == 1 and key.dtype.kind in "iu":
            key = tuple(key.tolist())
        elif not isinstance(key, tuple):
            key = (key,)
        if len(key) != len(self.shape):
            given = "[None]" if not key else f"{len(key)} indices"
            raise IndexError(f"component field '{self.name}' has shape {self.shape}: index it with "
                             f"{len(self.shape) or '[None]'}{' integers' if self.shape else ''}, not {given}")
        return key + self.indices

    def __getitem__(self, key: Any) -> Any:
        return self.field[self._key(key)]

    def __setitem__(self, key: Any, value: Any) -> None:
        self.field[self._key(key)] = value

    def to_numpy(self, dtype: Any = None) -> np.ndarray:
        values = self.field.to_numpy(dtype).reshape(self.field.full_shape)
        return np.ascontiguousarray(values[(Ellipsis,) + self.indices])

    def from_numpy(self, array: Any) -> None:
        array = np.asarray(array)
        if array.shape != self.shape:
            raise ValueError(f"from_numpy: component field '{self.name}' has shape {self.shape}, the array "
                             f"{array.shape}")
        values = self.field.to_numpy().reshape(self.field.full_shape)
        values[(Ellipsis,) + self.indices] = array
        self.field.from_numpy(values)

    def fill(self, value: Any) -> None:
        self.from_numpy(np.full(self.shape, value))

    def __str__(self) -> str:
        return str(self.to_numpy())

    def __repr__(self) -> str:
        return f"<component {list(self.indices)} of field '{self.field.name}' of shape {self.shape}>"
