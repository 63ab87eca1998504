"""`wk.ui.Scene` (newer Taichi: `window.get_scene()`): collects one frame of 3-D content, as Taichi's GGUI scene
does: the camera given to `set_camera`, ambient and point lights, and particles, meshes and lines read from
fields, ndarrays or numpy arrays when they are declared. `canvas.scene(scene)` takes that frame away to be drawn
(point lights and geometry are declared again each frame; the camera and ambient light stay). Drawing is
render.py's; argument conversion is inputs.py's."""
from __future__ import annotations

from typing import Any

import numpy as np

from wgkern.raster import as_array
from wgkern.ui import inputs
from wgkern.ui.camera import Camera, CameraState
from wgkern.ui.render import LineBatch, Lights, MeshBatch, ParticleBatch, SceneFrame

_GREY = (0.5, 0.5, 0.5)


class Scene:
    """See the module docstring."""

    def __init__(self) -> None:
        self._camera = CameraState()
        self._ambient = np.full(3, 0.1)
        self._light_positions: list[np.ndarray] = []
        self._light_colors: list[np.ndarray] = []
        self._batches: list[MeshBatch | ParticleBatch | LineBatch] = []

    def set_camera(self, camera: Camera) -> None:
        """Uses the camera's settings as they are now (later changes need another set_camera, as in Taichi)."""
        self._camera = camera.state()

    def ambient_light(self, color: Any) -> None:
        self._ambient = inputs.rgb(color).astype(np.float64)

    def point_light(self, pos: Any, color: Any) -> None:
        self._light_positions.append(inputs.vectors(pos, 3)[0])
        self._light_colors.append(inputs.rgb(color).astype(np.float64))

    def particles(self, centers: Any, radius: float, color: Any = _GREY, per_vertex_color: Any = None,
                  per_vertex_radius: Any = None, index_offset: int = 0, index_count: int | None = None) -> None:
        """Spheres of `radius` (world units; or one per particle from `per_vertex_radius`) at the centers."""
        points = inputs.vectors(centers, 3)
        chosen = slice(index_offset, None if index_count is None else index_offset + index_count)
        colors = inputs.item_colors(color, per_vertex_color, len(points))
        radii = (np.full(len(points), float(radius)) if per_vertex_radius is None
                 else np.array(as_array(per_vertex_radius), dtype=np.float64).reshape(-1))
        self._batches.append(ParticleBatch(points[chosen], radii[chosen], colors[chosen]))

    def mesh(self, vertices: Any, indices: Any = None, normals: Any = None, color: Any = _GREY,
             per_vertex_color: Any = None, two_sided: bool = False, vertex_offset: int = 0,
             vertex_count: int | None = None, index_offset: int = 0, index_count: int | None = None,
             show_wireframe: bool = False) -> None:
        """Triangles over `vertices` (by `indices`, three per triangle, or three consecutive vertices each).
        Without `normals`, each vertex gets the mean of its triangles' normals, as in Taichi."""
        points = inputs.vectors(vertices, 3)
        triangles = inputs.element_vertices(len(points), 3, indices, vertex_offset, vertex_count, index_offset,
                                            index_count)
        self._add_mesh(points, triangles, normals, inputs.item_colors(color, per_vertex_color, len(points)),
                       two_sided, show_wireframe)

    def mesh_instance(self, vertices: Any, indices: Any = None, normals: Any = None, color: Any = _GREY,
                      per_vertex_color: Any = None, two_sided: bool = False, transforms: Any = None,
                      instance_offset: int = 0, instance_count: int | None = None, vertex_offset: int = 0,
                      vertex_count: int | None = None, index_offset: int = 0, index_count: int | None = None,
                      show_wireframe: bool = False) -> None:
        """The mesh once per 4x4 transform of `transforms` (a Matrix field or array, applied as M @ (x, y, z, 1))."""
        if transforms is None:
            self.mesh(vertices, indices, normals, color, per_vertex_color, two_sided, vertex_offset, vertex_count,
                      index_offset, index_count, show_wireframe)
            return
        points = inputs.vectors(vertices, 3)
        triangles = inputs.element_vertices(len(points), 3, indices, vertex_offset, vertex_count, index_offset,
                                            index_count)
        colors = inputs.item_colors(color, per_vertex_color, len(points))
        matrices = np.asarray(as_array(transforms), dtype=np.float64).reshape(-1, 4, 4)
        stop = None if instance_count is None else instance_offset + instance_count
        for matrix in matrices[instance_offset:stop]:
            moved = points @ matrix[:3, :3].T + matrix[:3, 3]
            turned = None
            if normals is not None:
                turned = inputs.vectors(normals, 3) @ np.linalg.inv(matrix[:3, :3])   # normals: inverse transpose
            self._add_mesh(moved, triangles, turned, colors, two_sided, show_wireframe)

    def lines(self, vertices: Any, width: float, indices: Any = None, color: Any = _GREY,
              per_vertex_color: Any = None, vertex_offset: int = 0, vertex_count: int | None = None,
              index_offset: int = 0, index_count: int | None = None) -> None:
        """Segments between vertex pairs (by `indices`, or vertices 0-1, 2-3, ...), `width` pixels wide."""
        points = inputs.vectors(vertices, 3)
        pairs = inputs.element_vertices(len(points), 2, indices, vertex_offset, vertex_count, index_offset,
                                        index_count)
        colors = inputs.item_colors(color, per_vertex_color, len(points))
        self._batches.append(LineBatch(points[pairs], colors[pairs], float(width)))

    def take_frame(self) -> SceneFrame:
        """This frame's content, for canvas.scene; the scene starts the next frame with no lights or geometry."""
        lights = Lights(self._ambient.copy(), np.array(self._light_positions).reshape(-1, 3),
                        np.array(self._light_colors).reshape(-1, 3))
        frame = SceneFrame(self._camera, lights, self._batches)
        self._light_positions, self._light_colors, self._batches = [], [], []
        return frame

    def _add_mesh(self, points: np.ndarray, triangles: np.ndarray, normals: Any, colors: np.ndarray,
                  two_sided: bool, show_wireframe: bool) -> None:
        corners = points[triangles]
        if show_wireframe:
            edges = triangles[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2)
            self._batches.append(LineBatch(points[edges], colors[edges], 1.0))
            return
        vertex_normals = vertex_normals_of(points, triangles) if normals is None else inputs.vectors(normals, 3)
        self._batches.append(MeshBatch(corners, vertex_normals[triangles], colors[triangles], bool(two_sided)))


def vertex_normals_of(points: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Each vertex's mean of the unit normals of the triangles using it (counter-clockwise corners face the
    viewer); vertices no triangle uses get a zero normal."""
    corners = points[triangles]
    faces = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    length = np.linalg.norm(faces, axis=1, keepdims=True)
    faces = faces / np.where(length > 0, length, 1.0)
    total = np.zeros_like(points)
    uses = np.zeros(len(points))
    for corner in range(3):
        np.add.at(total, triangles[:, corner], faces)
        np.add.at(uses, triangles[:, corner], 1.0)
    return total / np.maximum(uses, 1.0)[:, None]
