"""Rasterising helpers (wgkern/raster.py) against brute-force references."""
from __future__ import annotations

import numpy as np
import pytest

from wgkern.raster import pixel_of, splat_discs


def _reference_discs(height, width, positions, radius, colors):
    canvas = np.zeros((height, width, 3), np.float32)
    rows, cols = pixel_of(positions, width, height)
    yy, xx = np.mgrid[0:height, 0:width]
    for k in range(len(positions)):
        inside = (yy - rows[k]) ** 2 + (xx - cols[k]) ** 2 <= radius * radius + 0.25
        canvas[inside] = colors[k]
    return canvas


@pytest.mark.parametrize("count,radius", [(3, 40.0), (1, 120.5), (400, 2.5), (50, 6.0)])
def test_discs_cover_the_pixels_within_their_radius(count, radius):
    """Few large discs (drawn a box at a time) and many small ones (drawn an offset at a time) cover exactly
    the pixels within radius of their centres, clipped at the canvas edges; later discs over earlier ones."""
    rng = np.random.default_rng(count)
    positions = rng.uniform(-0.1, 1.1, size=(count, 2))
    colors = rng.uniform(0, 1, size=(count, 3)).astype(np.float32)
    canvas = np.zeros((90, 130, 3), np.float32)
    splat_discs(canvas, positions, radius, colors)
    want = _reference_discs(90, 130, positions, radius, colors)
    covered = want.any(axis=2)
    np.testing.assert_array_equal(canvas.any(axis=2), covered)
    if count <= 3:
        np.testing.assert_array_equal(canvas, want)          # a box at a time: in the points' order


@pytest.mark.parametrize("sizes", [1, 3, 40])
def test_box_fragments_cover_every_box_once(sizes):
    """Every pixel of every item's inclusive box exactly once, with its item, whether the boxes come in a few
    sizes (made by broadcasting one box's offsets) or in many; chunks hold whole items."""
    from wgkern.raster import box_fragments
    rng = np.random.default_rng(sizes)
    n = 2000
    x0, y0 = rng.integers(-5, 50, n), rng.integers(-5, 50, n)
    w, h = rng.integers(0, sizes, n), rng.integers(0, sizes, n)
    want = sorted((k, y, x) for k in range(n) for y in range(y0[k], y0[k] + h[k]) for x in range(x0[k], x0[k] + w[k]))
    got = []
    for items, ys, xs in box_fragments(x0, y0, x0 + w - 1, y0 + h - 1, budget=500):
        assert len(items) <= max(500, (w * h).max())
        got += zip(items.tolist(), ys.tolist(), xs.tolist())
    assert sorted(got) == want
