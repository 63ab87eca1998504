"""Quadrants' `wk.BufferView`: a window (offset, size) on a 1-D ndarray, made on the host by slicing (`data[8:24]`)
or by `BufferView(data, offset, size)`, and passed to kernel parameters annotated `BufferView[dtype]` (or bare
`BufferView`). A kernel receives it as the ndarray plus two i32 arguments, offset and size (lang/arguments.py),
so views of any offset and size share one compiled kernel; in kernels (frontend/buffer_view.py) `v[i]` is element
`offset + i` of the ndarray, `v.size` / `v.offset` / `v.shape` read the window, `v.subview(offset, size)` and
`v[a:b]` narrow it, and `BufferView(arr, offset, size)` makes one from an ndarray parameter. With
`wk.init(debug=True)` an index outside the window raises, as an index outside an ndarray does."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from wgkern.lang.types import to_dtype


@dataclass(frozen=True, slots=True)
class BufferViewType:
    """The `BufferView[dtype]` annotation (dtype None: the argument's)."""
    dtype: Any = None


def _integer(value: Any, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"BufferView {what} must be an integer, got {value!r}")
    return int(value)


class BufferView:
    """See the module docstring."""

    def __init__(self, ndarray: Any, offset: int, size: int):
        from wgkern.lang.fields import Ndarray
        if not isinstance(ndarray, Ndarray) or len(ndarray.shape) != 1:
            raise TypeError(f"BufferView(ndarray, offset, size) views a 1D wk.ndarray, got {ndarray!r}")
        offset, size = _integer(offset, "offset"), _integer(size, "size")
        length = ndarray.shape[0]
        if offset < 0 or size < 0 or offset + size > length:
            raise ValueError(f"BufferView(offset={offset}, size={size}) is out of range for an ndarray of length "
                             f"{length}")
        self._ndarray, self.offset, self.size = ndarray, offset, size

    def __class_getitem__(cls, dtype: Any) -> BufferViewType:
        return BufferViewType(to_dtype(dtype) if not hasattr(dtype, "element_shape") else dtype)

    @property
    def shape(self) -> tuple[int]:
        return (self.size,)

    @property
    def dtype(self) -> Any:
        return self._ndarray.dtype

    def get_ndarray(self) -> Any:
        return self._ndarray

    def subview(self, offset: int, size: int) -> BufferView:
        """The window [offset, offset + size) of this view (offsets relative to it)."""
        offset, size = _integer(offset, "offset"), _integer(size, "size")
        if offset < 0 or size < 0 or offset + size > self.size:
            raise ValueError(f"subview out of range: subview({offset}, {size}) of a BufferView of size {self.size}")
        return BufferView(self._ndarray, self.offset + offset, size)

    def __getitem__(self, key: Any) -> BufferView:
        if not isinstance(key, slice):
            raise TypeError("BufferView indexing on the host takes a slice (view[a:b]); read elements through "
                            "get_ndarray() or in a kernel")
        start, stop = slice_bounds(key, self.size)
        return self.subview(start, stop - start)

    def to_numpy(self) -> np.ndarray:
        return self._ndarray.to_numpy()[self.offset:self.offset + self.size]

    def __repr__(self) -> str:
        return f"BufferView({self._ndarray.name}, offset={self.offset}, size={self.size})"


def slice_bounds(key: slice, length: int) -> tuple[int, int]:
    """(start, stop) of a step-1 slice over `length` elements (Python's clamping of negative and large bounds)."""
    if key.step not in (None, 1):
        raise ValueError(f"BufferView slices take step=1, got step={key.step}")
    start, stop, _ = key.indices(length)
    return start, max(start, stop)


def ndarray_slice(ndarray: Any, key: slice) -> BufferView:
    """`data[a:b]` on a 1-D wk.ndarray."""
    if len(ndarray.shape) != 1:
        raise TypeError(f"slicing makes a BufferView of a 1D ndarray; '{ndarray.name}' has shape {ndarray.shape}")
    start, stop = slice_bounds(key, ndarray.shape[0])
    return BufferView(ndarray, start, stop - start)
