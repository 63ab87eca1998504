"""Turns the arguments of Taichi's drawing calls into numpy arrays: vertex fields, ndarrays or arrays as (N, k)
floats, colors as float RGB, and index buffers with Taichi's offsets and counts as (E, corners) vertex numbers.
The canvas (canvas.py) and the scene (scene.py) both read their inputs through here."""
from __future__ import annotations

from typing import Any

import numpy as np

from wgkern.raster import as_array


def vectors(value: Any, size: int) -> np.ndarray:
    """A vector field (any shape), ndarray or array as (N, size) float64: its first `size` components, copied
    (drawing happens at show(), after the program may have changed its arrays)."""
    array = np.array(as_array(value), dtype=np.float64)
    return array.reshape(-1, array.shape[-1])[:, :size]


def rgb(color: Any) -> np.ndarray:
    """A color as float RGB (3,); an alpha component is dropped."""
    return np.array(as_array(color), dtype=np.float32).reshape(-1)[:3]


def item_colors(color: Any, per_vertex_color: Any, count: int) -> np.ndarray:
    """(count, 3) float RGB: `per_vertex_color` where given (Taichi ignores `color` then), else `color` for all."""
    if per_vertex_color is None:
        return np.broadcast_to(rgb(color), (count, 3))
    return vectors(per_vertex_color, 3)[:count].astype(np.float32)


def element_vertices(vertex_total: int, corners: int, indices: Any = None, vertex_offset: int = 0,
                     vertex_count: int | None = None, index_offset: int = 0,
                     index_count: int | None = None) -> np.ndarray:
    """The vertex numbers of each element (line: 2 corners, triangle: 3) as (E, corners), Taichi's way: without
    `indices` the vertices from `vertex_offset` taken `corners` at a time (at most `vertex_count`); with them,
    `indices[index_offset:][:index_count] + vertex_offset`. A trailing partial element is dropped."""
    if indices is None:
        count = vertex_total - vertex_offset if vertex_count is None else vertex_count
        count = max(min(count, vertex_total - vertex_offset), 0)
        numbers = np.arange(vertex_offset, vertex_offset + count, dtype=np.int64)
    else:
        numbers = np.asarray(as_array(indices), dtype=np.int64).reshape(-1)[index_offset:]
        numbers = (numbers if index_count is None else numbers[:index_count]) + vertex_offset
    usable = numbers.size - numbers.size % corners
    return numbers[:usable].reshape(-1, corners)
