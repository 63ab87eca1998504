"""`window.get_canvas()`: Taichi's GGUI 2-D drawing calls. Positions are in [0, 1]^2 with the origin at the bottom
left, colors are float RGB tuples, circle radii and line widths are fractions of the window height, and
`set_image` takes img[x, y] (stretched to the window). Each call reads its inputs at once and queues the drawing
in the window's frame (window.py), so the frame starts from the background color whenever it is set, as on a GPU.
The pixels are drawn by wgkern/raster.py, shared with wk.GUI; `canvas.scene(scene)` queues a 3-D scene frame for
render.py."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from wgkern.raster import as_array, fill_triangles, image_rows, splat_discs, stroke_segments
from wgkern.ui import inputs
from wgkern.ui.render import FrameBuffer, render_scene

if TYPE_CHECKING:
    from wgkern.ui.scene import Scene
    from wgkern.ui.window import Window

_GREY = (0.5, 0.5, 0.5)


class Canvas:
    """See the module docstring."""

    def __init__(self, window: Window) -> None:
        self._window = window

    def set_background_color(self, color: Any) -> None:
        self._window.background = inputs.rgb(color)

    def set_image(self, img: Any) -> None:
        rows = image_rows(img)
        width, height = self._window.res
        if rows.shape[:2] != (height, width):                       # stretched to the window, nearest texel
            pick_rows = np.arange(height) * rows.shape[0] // height
            pick_cols = np.arange(width) * rows.shape[1] // width
            rows = rows[pick_rows][:, pick_cols]

        def draw(frame: FrameBuffer) -> None:
            frame.image[:] = rows

        self._window.queue(draw)

    def contour(self, scalar_field: Any, cmap_name: str = "plasma", normalize: bool = False) -> None:
        """A 2-D scalar field as an image, in grey (no color maps off-screen); scaled to [0, 1] with `normalize`."""
        array = as_array(scalar_field).astype(np.float32)
        if array.ndim != 2:
            raise ValueError(f"canvas.contour takes a 2-D scalar field, not one of shape {array.shape}")
        if normalize:
            low, high = float(np.nanmin(array)), float(np.nanmax(array))
            array = (array - low) / (high - low) if high > low else np.zeros_like(array)
        self.set_image(array)

    def circles(self, centers: Any, radius: float, color: Any = _GREY, per_vertex_color: Any = None,
                per_vertex_radius: Any = None) -> None:
        """Discs at `centers`; `radius` (or one per circle) is a fraction of the window height."""
        points = inputs.vectors(centers, 2)
        colors = inputs.item_colors(color, per_vertex_color, len(points))
        height = self._window.res[1]
        if per_vertex_radius is None:
            radii: Any = float(radius) * height
        else:
            radii = np.asarray(as_array(per_vertex_radius), dtype=np.float64).reshape(-1) * height
        self._window.queue(lambda frame: splat_discs(frame.image, points, radii, np.asarray(colors)))

    def lines(self, vertices: Any, width: float, indices: Any = None, color: Any = _GREY,
              per_vertex_color: Any = None) -> None:
        """Segments between vertex pairs (by `indices`, or vertices 0-1, 2-3, ...); `width` is a fraction of the
        window height; per-vertex colors blend along each segment."""
        points = inputs.vectors(vertices, 2)
        pairs = inputs.element_vertices(len(points), 2, indices)
        colors = np.asarray(inputs.item_colors(color, per_vertex_color, len(points)))
        half_width = max(float(width) * self._window.res[1] / 2, 0.5)
        self._window.queue(lambda frame: stroke_segments(frame.image, points[pairs[:, 0]], points[pairs[:, 1]],
                                                         half_width, colors[pairs[:, 0]], colors[pairs[:, 1]]))

    def triangles(self, vertices: Any, color: Any = _GREY, indices: Any = None, per_vertex_color: Any = None) -> None:
        """Filled triangles (by `indices`, three per triangle, or three consecutive vertices each); per-vertex
        colors blend across each triangle."""
        points = inputs.vectors(vertices, 2)
        corners = inputs.element_vertices(len(points), 3, indices)
        colors = (inputs.rgb(color) if per_vertex_color is None
                  else inputs.item_colors(color, per_vertex_color, len(points))[corners])
        self._window.queue(lambda frame: fill_triangles(frame.image, points[corners[:, 0]], points[corners[:, 1]],
                                                        points[corners[:, 2]], colors))

    def scene(self, scene: Scene) -> None:
        """Draws the scene's frame so far (camera, lights, particles, meshes, lines), depth-tested."""
        frame = scene.take_frame()
        self._window.queue(lambda buffer: render_scene(buffer, frame))
