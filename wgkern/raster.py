"""Rasterising into an (H, W, 3) float RGB image with numpy, shared by `wk.GUI` (gui.py) and `wk.ui` (ui/).

Positions are canvas coordinates as Taichi has them: [0, 1]^2 with the origin at the bottom left, while image
rows count from the top. Colors are float RGB, one for all items or one per item. Work is vectorised over items
and pixels; Python loops run only over disc offsets or chunks. The 3-D renderer (ui/render.py) builds its
z-buffered drawing on `triangle_fragments`, `box_fragments`, `barycentric` and `nearest_fragments`. Text comes
from font.py's coverage masks (`draw_text`); the GUIs' panels are `fill_rect`s."""
from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from wgkern.font import text_mask

FRAGMENT_BUDGET = 1 << 21      # candidate pixels per chunk of fragments (a few tens of MB of index arrays)


def as_array(value: Any) -> np.ndarray:
    """A field, ndarray or array-like as a numpy array (fields and ndarrays through `.to_numpy()`)."""
    return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value)


def points2d(value: Any) -> np.ndarray:
    """Positions as an (N, 2) float64 array."""
    return np.asarray(as_array(value), dtype=np.float64).reshape(-1, 2)


def image_rows(image: Any) -> np.ndarray:
    """img[x, y] (x to the right, y upwards) as float RGB rows from the top, shape (H, W, 3); see
    `image_rows_rgba` for the channel rules (alpha is dropped here)."""
    return image_rows_rgba(image)[..., :3]


def image_rows_rgba(image: Any) -> np.ndarray:
    """img[x, y] as float RGBA rows from the top, shape (H, W, 4), by Taichi's GUI rules: floats are taken as
    [0, 1], unsigned ints scaled by their maximum; 2-D or one channel is grey in all four channels, two are
    (r, g, 0, 0), three (r, g, b, 0), four are kept."""
    array = as_array(image)
    if np.issubdtype(array.dtype, np.unsignedinteger):
        array = array.astype(np.float32) / np.float32(np.iinfo(array.dtype).max)
    else:
        array = array.astype(np.float32)
    if array.ndim == 2:
        array = array[..., None]
    channels = array.shape[2]
    if channels == 1:
        array = np.repeat(array, 4, axis=2)
    elif channels < 4:
        array = np.concatenate([array, np.zeros(array.shape[:2] + (4 - channels,), np.float32)], axis=2)
    return np.transpose(array[..., :4], (1, 0, 2))[::-1]


def pixel_of(positions: np.ndarray, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of the pixels holding canvas positions (N, 2); rows count from the top."""
    positions = np.clip(positions, -1e6, 1e6)          # far off the canvas either way; keeps the casts exact
    cols = np.floor(positions[:, 0] * width).astype(np.int64)
    rows = height - 1 - np.floor(positions[:, 1] * height).astype(np.int64)
    return rows, cols


def splat_discs(canvas: np.ndarray, positions: np.ndarray, radius: Any, colors: np.ndarray) -> None:
    """Discs of `radius` pixels (one value, or one per point) at the finite canvas positions (N, 2)."""
    finite = np.isfinite(positions).all(axis=1)
    if not finite.all():
        positions = positions[finite]
        colors = colors[finite] if colors.ndim == 2 else colors
        radius = radius[finite] if np.ndim(radius) else radius
    if np.ndim(radius):
        halves = np.round(np.asarray(radius, dtype=np.float64) * 2) / 2       # per-point radii, to 0.5 px
        for value in np.unique(halves):
            pick = halves == value
            splat_discs(canvas, positions[pick], float(value), colors[pick] if colors.ndim == 2 else colors)
        return
    height, width = canvas.shape[:2]
    rows, cols = pixel_of(positions, width, height)
    reach = int(np.ceil(radius))
    offsets = np.arange(-reach, reach + 1)
    disc = offsets[:, None] ** 2 + offsets[None, :] ** 2 <= radius * radius + 0.25     # the pixels of one disc
    if np.count_nonzero(disc) > len(rows):
        # few large discs: each one is a masked box (one numpy call per disc, not per pixel of a disc)
        for k in range(len(rows)):
            top, left = rows[k] - reach, cols[k] - reach
            r0, r1 = max(top, 0), min(top + disc.shape[0], height)
            c0, c1 = max(left, 0), min(left + disc.shape[1], width)
            if r0 < r1 and c0 < c1:
                box = canvas[r0:r1, c0:c1]
                box[disc[r0 - top:r1 - top, c0 - left:c1 - left]] = colors[k] if colors.ndim == 2 else colors
        return
    for dy, dx in zip(*np.nonzero(disc)):           # many small discs: one pass over all of them per pixel offset
        r, c = rows + (dy - reach), cols + (dx - reach)
        inside = (r >= 0) & (r < height) & (c >= 0) & (c < width)
        canvas[r[inside], c[inside]] = colors[inside] if colors.ndim == 2 else colors


def stroke_segments(canvas: np.ndarray, a: np.ndarray, b: np.ndarray, radius: Any, colors: np.ndarray,
                    end_colors: np.ndarray | None = None) -> None:
    """Segments a[k] -> b[k] (canvas positions) stroked with discs of `radius` pixels (one value or one per
    segment). `colors` is one RGB or one per segment; with `end_colors` (one per segment) the color runs from
    colors[k] at a[k] to end_colors[k] at b[k]. Non-finite segments are skipped; the rest are clipped to a
    margin around the canvas first."""
    radii = np.asarray(radius, dtype=np.float64).reshape(-1)
    if radii.size > 1:                                   # one radius per segment: draw by radius
        halves = np.round(radii * 2) / 2
        for value in np.unique(halves):
            pick = halves == value
            stroke_segments(canvas, a[pick], b[pick], value, colors[pick] if colors.ndim == 2 else colors,
                            None if end_colors is None else end_colors[pick])
        return
    keep = np.isfinite(a).all(axis=1) & np.isfinite(b).all(axis=1)
    start, stop, inside = clip_segments(a[keep], b[keep], -0.05, 1.05)
    chosen = np.flatnonzero(keep)[inside]
    start, stop = start[inside], stop[inside]
    if not start.size:
        return
    height, width = canvas.shape[:2]
    length = np.max(np.abs((stop - start) * (width, height)))
    steps = max(int(np.ceil(length * 2)), 1)
    t = np.linspace(0.0, 1.0, steps + 1)
    samples = (start[:, None, :] + (stop - start)[:, None, :] * t[None, :, None]).reshape(-1, 2)
    if end_colors is not None:
        first, last = np.broadcast_to(colors, end_colors.shape)[chosen], end_colors[chosen]
        colors = (first[:, None, :] + (last - first)[:, None, :] * t[None, :, None]).reshape(-1, 3)
    elif colors.ndim == 2:
        colors = np.repeat(colors[chosen], steps + 1, axis=0)
    splat_discs(canvas, samples, float(radii[0]), colors)


def fill_triangles(canvas: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray, colors: np.ndarray) -> None:
    """Triangles (a[k], b[k], c[k]) in canvas positions, later ones over earlier ones. `colors` is one RGB, one
    per triangle (T, 3), or one per corner (T, 3, 3), then blended across the triangle."""
    height, width = canvas.shape[:2]
    corners = np.stack([a, b, c], axis=1) * (width, height)          # (T, 3, 2) pixels, y still upwards
    corners[..., 1] = height - corners[..., 1]
    keep = np.flatnonzero(np.isfinite(corners).all(axis=(1, 2)) & (triangle_area(corners) != 0))
    corners = corners[keep]
    flat = canvas.reshape(-1, 3)
    for items, ys, xs in triangle_fragments(corners, width, height):
        weights = barycentric(corners[items], xs + 0.5, ys + 0.5)
        inside = (weights >= 0).all(axis=1)
        items, weights, pixel = items[inside], weights[inside], (ys * width + xs)[inside]
        won = nearest_fragments(pixel, -items)                         # the last triangle drawn wins
        chosen = keep[items[won]]
        if colors.ndim == 3:
            flat[pixel[won]] = np.einsum("fk,fkc->fc", weights[won], colors[chosen])
        else:
            flat[pixel[won]] = colors[chosen] if colors.ndim == 2 else colors


def triangle_fragments(corners: np.ndarray, width: int, height: int,
                       budget: int = FRAGMENT_BUDGET) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Candidate pixels of triangles (T, 3, 2) in pixel coordinates (x right, y down) on a width x height image,
    as (item, y, x) chunks: on each pixel row a triangle crosses, the span between its edges plus a pixel either
    side, so the count follows the triangles' areas rather than their bounding boxes. Callers keep the pixels
    whose centres `barycentric` puts inside."""
    top = np.clip(np.ceil(corners[..., 1].min(axis=1) - 0.5), 0, height).astype(np.int64)
    bottom = np.clip(np.floor(corners[..., 1].max(axis=1) - 0.5), -1, height - 1).astype(np.int64)
    rows_at = np.zeros_like(top)
    for row_items, rows, _ in box_fragments(rows_at, top, rows_at, bottom, budget):
        left, right = _row_spans(corners[row_items], rows + 0.5)
        left = np.clip(np.floor(left - 0.5), 0, width).astype(np.int64)
        right = np.clip(np.ceil(right - 0.5), -1, width - 1).astype(np.int64)
        for spans, ys, xs in box_fragments(left, rows, right, rows, budget):
            yield row_items[spans], ys, xs


def _row_spans(corners: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where the horizontal lines at `y` cross triangles (F, 3, 2): the least and greatest x on their edges
    (the triangles' whole x extent where rounding finds no crossing, at a corner)."""
    start, stop = corners, np.roll(corners, -1, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (y[:, None] - start[..., 1]) / (stop[..., 1] - start[..., 1])
        x = start[..., 0] + t * (stop[..., 0] - start[..., 0])
    crosses = (t >= 0) & (t <= 1)
    found = crosses.any(axis=1)
    left = np.where(found, np.where(crosses, x, np.inf).min(axis=1), corners[..., 0].min(axis=1))
    right = np.where(found, np.where(crosses, x, -np.inf).max(axis=1), corners[..., 0].max(axis=1))
    return left, right


def triangle_area(corners: np.ndarray) -> np.ndarray:
    """Twice the signed area of triangles given as (T, 3, 2) corners."""
    (x0, y0), (x1, y1), (x2, y2) = (corners[:, k].T for k in range(3))
    return (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)


def barycentric(corners: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Barycentric weights (F, 3) of points (xs, ys) in triangles (F, 3, 2); all >= 0 inside."""
    (x0, y0), (x1, y1), (x2, y2) = (corners[:, k].T for k in range(3))
    area = triangle_area(corners)
    w0 = ((x1 - xs) * (y2 - ys) - (x2 - xs) * (y1 - ys)) / area
    w1 = ((x2 - xs) * (y0 - ys) - (x0 - xs) * (y2 - ys)) / area
    return np.stack([w0, w1, 1.0 - w0 - w1], axis=1)


def box_fragments(x0: np.ndarray, y0: np.ndarray, x1: np.ndarray, y1: np.ndarray,
                  budget: int = FRAGMENT_BUDGET) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Every pixel of every item's inclusive box [x0, x1] x [y0, y1], as (item, y, x) index arrays, in chunks of
    whole items holding about `budget` pixels (one item larger than that is a chunk of its own)."""
    widths = np.maximum(x1 - x0 + 1, 0).astype(np.int64)
    heights = np.maximum(y1 - y0 + 1, 0).astype(np.int64)
    counts = widths * heights
    if len(counts) > 256:
        shapes, group_of = np.unique(np.stack([widths, heights], axis=1), axis=0, return_inverse=True)
        if len(shapes) * 16 <= len(counts):
            # few box sizes among many items (particles, discs): each size's pixels at once by broadcasting
            yield from _same_size_boxes(x0, y0, shapes, group_of.reshape(-1), budget)
            return
    ends = np.cumsum(counts)
    first = 0
    while first < len(counts):
        done = int(ends[first - 1]) if first else 0
        stop = max(int(np.searchsorted(ends, done + budget, side="right")), first + 1)
        sizes = counts[first:stop]
        items = np.repeat(np.arange(first, stop), sizes)
        offsets = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        yield items, y0[items] + offsets // widths[items], x0[items] + offsets % widths[items]
        first = stop


def _same_size_boxes(x0: np.ndarray, y0: np.ndarray, shapes: np.ndarray, group_of: np.ndarray,
                     budget: int) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """box_fragments for items grouped by box size (`shapes[g]` = (width, height) of group g), flattened from
    _box_groups."""
    for items, dy, dx in _box_groups(shapes, group_of, budget):
        yield (np.repeat(items, dy.size), (y0[items, None] + dy).reshape(-1), (x0[items, None] + dx).reshape(-1))


def _box_groups(shapes: np.ndarray, group_of: np.ndarray, budget: int
                ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Chunks (items, dy, dx) of items whose boxes share one size: the pixel offsets (dy, dx) of that box from
    its corner, made once per size; about `budget` pixels per chunk."""
    for group, (width, height) in enumerate(shapes):
        per_item = int(width * height)
        if per_item == 0:
            continue
        members = np.nonzero(group_of == group)[0]
        dy, dx = np.divmod(np.arange(per_item), int(width))
        step = max(budget // per_item, 1)
        for start in range(0, len(members), step):
            yield members[start:start + step], dy, dx


def box_groups(x0: np.ndarray, y0: np.ndarray, x1: np.ndarray, y1: np.ndarray,
               budget: int = FRAGMENT_BUDGET) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The pixels of every item's inclusive box [x0, x1] x [y0, y1] as chunks (items, dy, dx): the items of a
    chunk share one box size, and item k's pixels are (y0[k] + dy, x0[k] + dx). Callers broadcast per-item
    values against the offsets instead of gathering them per pixel (3-D particles)."""
    widths = np.maximum(x1 - x0 + 1, 0).astype(np.int64)
    heights = np.maximum(y1 - y0 + 1, 0).astype(np.int64)
    shapes, group_of = np.unique(np.stack([widths, heights], axis=1), axis=0, return_inverse=True)
    yield from _box_groups(shapes, group_of.reshape(-1), budget)


def nearest_fragments(pixel: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """Indices of the fragments with the least depth at each pixel (ties: the first; NaN depths never win),
    in increasing pixel order. A scatter-min of the depths, then each pixel's first fragment at that depth: no
    sort of all the fragments (6x faster than one at 2M fragments)."""
    if pixel.size == 0:
        return np.zeros(0, np.int64)
    size = int(pixel.max()) + 1
    nearest = np.full(size, np.inf)
    np.minimum.at(nearest, pixel, np.where(np.isnan(depth), np.inf, depth))
    candidates = np.nonzero(depth == nearest[pixel])[0]
    first = np.full(size, pixel.size, np.int64)
    np.minimum.at(first, pixel[candidates], candidates)
    return first[first < pixel.size]


def clip_segments(a: np.ndarray, b: np.ndarray, low: float, high: float) -> tuple[np.ndarray, np.ndarray,
                                                                                  np.ndarray]:
    """Segments a -> b clipped to the square [low, high]^2 (Liang-Barsky); `inside` marks those that meet it."""
    start, stop, inside = clip_parameters(a, b, low, high)
    d = b - a
    return a + d * start[:, None], a + d * stop[:, None], inside


def clip_parameters(a: np.ndarray, b: np.ndarray, low: float, high: float) -> tuple[np.ndarray, np.ndarray,
                                                                                    np.ndarray]:
    """The part of each segment a -> b (N, 2) inside the square [low, high]^2 as parameters t0 <= t1 in [0, 1]
    along it (Liang-Barsky); `inside` marks the segments that meet the square."""
    d = b - a
    t0, t1 = np.zeros(len(a)), np.ones(len(a))
    inside = np.ones(len(a), bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        for axis in range(2):
            for p, q in ((-d[:, axis], a[:, axis] - low), (d[:, axis], high - a[:, axis])):
                parallel = p == 0
                inside &= ~(parallel & (q < 0))
                r = q / p
                t0 = np.where(~parallel & (p < 0), np.maximum(t0, r), t0)
                t1 = np.where(~parallel & (p > 0), np.minimum(t1, r), t1)
    inside &= t0 <= t1
    return t0, t1, inside


def blend_mask(canvas: np.ndarray, mask: np.ndarray, left: int, top: int, color: np.ndarray) -> None:
    """Blends `color` over the canvas by `mask` (rows, columns) of alpha in [0, 1], the mask's top left at pixel
    (top, left) in rows from the top; the part outside the canvas is dropped."""
    height, width = canvas.shape[:2]
    top_clip, left_clip = max(-top, 0), max(-left, 0)
    bottom, right = min(top + mask.shape[0], height), min(left + mask.shape[1], width)
    if bottom <= top + top_clip or right <= left + left_clip:
        return
    region = canvas[top + top_clip:bottom, left + left_clip:right]
    alpha = mask[top_clip:top_clip + region.shape[0], left_clip:left_clip + region.shape[1], None]
    region += alpha * (np.asarray(color, np.float32) - region)


def fill_rect(canvas: np.ndarray, left: int, top: int, width: int, height: int, color: np.ndarray,
              alpha: float = 1.0) -> None:
    """A filled box of width x height pixels from pixel (top, left) (rows from the top), blended with `alpha`."""
    if width <= 0 or height <= 0:
        return
    region_top, region_left = max(top, 0), max(left, 0)
    bottom, right = min(top + height, canvas.shape[0]), min(left + width, canvas.shape[1])
    if bottom > region_top and right > region_left:
        region = canvas[region_top:bottom, region_left:right]
        if alpha >= 1:
            region[:] = color
        else:                                       # in place: no temporaries the size of the box
            region *= np.float32(1.0 - alpha)
            region += np.float32(alpha) * np.asarray(color, np.float32)


def draw_text(canvas: np.ndarray, text: str, left: int, top: int, size: float, color: np.ndarray) -> tuple[int, int]:
    """`text` in `color`, `size` pixels per line, its box's top left corner at pixel (top, left) (rows from the
    top), blended by the glyphs' coverage; returns the box's (width, height) in pixels."""
    if not text or size <= 0:
        return 0, 0
    mask = text_mask(text, float(size))
    blend_mask(canvas, mask, int(left), int(top), color)
    return mask.shape[1], mask.shape[0]
