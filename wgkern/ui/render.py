"""The numpy 3-D renderer behind `canvas.scene(scene)`: a camera's view and projection, near-plane clipping and
z-buffered drawing of meshes (Lambert-lit triangles with interpolated normals), particles (lit spheres) and
lines into a frame's image. What a scene holds (the batches below) is filled in by scene.py; camera settings
come from camera.py; the per-pixel machinery (boxes of candidate pixels, barycentrics, nearest fragment per
pixel) is wgkern/raster.py's."""
from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np

from wgkern.raster import (barycentric, box_fragments, box_groups, clip_parameters, nearest_fragments,
                           triangle_area, triangle_fragments)
from wgkern.ui.camera import CameraState
from wgkern.ui.constants import ProjectionMode


@dataclasses.dataclass
class FrameBuffer:
    """A frame being drawn: float RGB rows from the top (H, W, 3) and the depth of the nearest 3-D fragment in
    [0, 1] (Vulkan's clip-space depth; 1 where nothing was drawn)."""
    image: np.ndarray
    depth: np.ndarray

    def draw(self, pixel: np.ndarray, depth: np.ndarray, shade: Callable[[np.ndarray], np.ndarray]) -> None:
        """Depth-tests fragments (flat pixel numbers and depths) and writes `shade(winners)` where they pass."""
        won = nearest_fragments(pixel, depth)
        flat_depth = self.depth.reshape(-1)
        won = won[depth[won] < flat_depth[pixel[won]]]
        flat_depth[pixel[won]] = depth[won]
        self.image.reshape(-1, 3)[pixel[won]] = shade(won)


@dataclasses.dataclass
class Lights:
    ambient: np.ndarray          # (3,)
    positions: np.ndarray        # (L, 3) point lights
    colors: np.ndarray           # (L, 3)


@dataclasses.dataclass
class MeshBatch:
    corners: np.ndarray          # (T, 3, 3) world positions of each triangle's corners
    normals: np.ndarray          # (T, 3, 3) per corner
    colors: np.ndarray           # (T, 3, 3) per corner
    two_sided: bool


@dataclasses.dataclass
class ParticleBatch:
    centers: np.ndarray          # (N, 3)
    radii: np.ndarray            # (N,) world units
    colors: np.ndarray           # (N, 3)


@dataclasses.dataclass
class LineBatch:
    ends: np.ndarray             # (S, 2, 3) world positions
    colors: np.ndarray           # (S, 2, 3) per end
    width: float                 # pixels


@dataclasses.dataclass
class SceneFrame:
    """What one `canvas.scene(scene)` draws: the camera the scene was given, its lights and its batches."""
    camera: CameraState
    lights: Lights
    batches: list[MeshBatch | ParticleBatch | LineBatch]


@dataclasses.dataclass
class View:
    """A camera fitted to a frame of width x height pixels."""
    camera: CameraState
    width: int
    height: int

    def __post_init__(self) -> None:
        self.right, self.up, self.forward = self.camera.basis()
        self.perspective = self.camera.projection == ProjectionMode.Perspective
        self.focal = (self.height / 2) / math.tan(math.radians(self.camera.fov) / 2)    # pixels at depth 1
        self.y_low, self.y_high = sorted((self.camera.top, self.camera.bottom))

    def to_view(self, points: np.ndarray) -> np.ndarray:
        """World points (..., 3) -> view space (x right, y up, z the distance along the view direction)."""
        offset = points - self.camera.position
        return np.stack([offset @ self.right, offset @ self.up, offset @ self.forward], axis=-1)

    def to_pixels(self, view_points: np.ndarray) -> np.ndarray:
        """View-space points (..., 3) in front of the camera -> pixel (x from the left, y down from the top)."""
        x, y, z = view_points[..., 0], view_points[..., 1], view_points[..., 2]
        if self.perspective:
            return np.stack([self.width / 2 + x / z * self.focal, self.height / 2 - y / z * self.focal], axis=-1)
        camera = self.camera
        return np.stack([(x - camera.left) / (camera.right - camera.left) * self.width,
                         (self.y_high - y) / (self.y_high - self.y_low) * self.height], axis=-1)

    def pixels_per_unit(self, z: np.ndarray) -> np.ndarray:
        """How many pixels a world length spans across the view at distance z."""
        return self.focal / z if self.perspective else np.full_like(z, self.height / (self.y_high - self.y_low))

    def depth(self, z: np.ndarray) -> np.ndarray:
        """View distance -> depth in [0, 1] between the near and far planes (perspective: as 1/z)."""
        near, far = self.camera.z_near, self.camera.z_far
        if self.perspective:
            return far * (z - near) / (z * (far - near))
        return (z - near) / (far - near)

    def screen_weights(self, weights: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Screen-space barycentric (or segment) weights (F, k) and the corners' view distances (F, k) -> the
        fragments' view distance and perspective-correct weights for attributes."""
        if not self.perspective:
            return np.einsum("fk,fk->f", weights, z), weights
        over_z = weights / z
        inverse = over_z.sum(axis=1)
        return 1.0 / inverse, over_z / inverse[:, None]


def render_scene(frame_buffer: FrameBuffer, frame: SceneFrame) -> None:
    height, width = frame_buffer.image.shape[:2]
    view = View(frame.camera, width, height)
    for batch in frame.batches:
        _DRAW[type(batch)](frame_buffer, view, frame.lights, batch)


def lambert(base: np.ndarray, positions: np.ndarray, normals: np.ndarray, lights: Lights,
            two_sided: bool) -> np.ndarray:
    """base * (ambient + sum over point lights of color * cos(angle to the light)), clipped to [0, 1]. Two-sided
    surfaces are lit from either side; one-sided ones only from the side their normal faces."""
    received = np.broadcast_to(lights.ambient, base.shape).astype(np.float64)
    for light_position, light_color in zip(lights.positions, lights.colors):
        to_light = _units(light_position - positions)
        facing = np.einsum("fi,fi->f", to_light, normals)
        facing = np.abs(facing) if two_sided else np.maximum(facing, 0.0)
        received = received + facing[:, None] * light_color
    return np.clip(base * received, 0.0, 1.0)


def draw_mesh(frame_buffer: FrameBuffer, view: View, lights: Lights, mesh: MeshBatch) -> None:
    """Lit triangles, with depth, normals and colors interpolated perspective-correctly across each."""
    # Per corner: view position (0:3), world position (3:6), normal (6:9), color (9:12); clipped together.
    corners = np.concatenate([view.to_view(mesh.corners), mesh.corners, mesh.normals, mesh.colors], axis=2)
    corners = clip_triangles_near(corners[np.isfinite(corners).all(axis=(1, 2))], view.camera.z_near)
    pixels = view.to_pixels(corners[..., :3])
    keep = np.flatnonzero(np.isfinite(pixels).all(axis=(1, 2)) & (triangle_area(pixels) != 0))
    corners, pixels = corners[keep], pixels[keep]
    height, width = frame_buffer.image.shape[:2]
    for items, ys, xs in triangle_fragments(pixels, width, height):
        weights = barycentric(pixels[items], xs + 0.5, ys + 0.5)
        inside = (weights >= 0).all(axis=1)
        items, weights, pixel = items[inside], weights[inside], (ys * width + xs)[inside]
        z, weights = view.screen_weights(weights, corners[items, :, 2])

        def shade(won: np.ndarray, items: np.ndarray = items, weights: np.ndarray = weights) -> np.ndarray:
            chosen = np.einsum("fk,fka->fa", weights[won], corners[items[won], :, 3:])
            return lambert(chosen[:, 6:9], chosen[:, 0:3], _units(chosen[:, 3:6]), lights, mesh.two_sided)

        frame_buffer.draw(pixel, view.depth(z), shade)


def draw_particles(frame_buffer: FrameBuffer, view: View, lights: Lights, particles: ParticleBatch) -> None:
    """Lit spheres: a disc of the projected radius per particle, with the depth and normal of the sphere."""
    centers = view.to_view(particles.centers)
    keep = np.isfinite(centers).all(axis=1) & (centers[:, 2] > view.camera.z_near)
    centers, radii, colors = centers[keep], particles.radii[keep], particles.colors[keep]
    world = particles.centers[keep]
    middle = view.to_pixels(centers)
    reach = np.maximum(radii * view.pixels_per_unit(centers[:, 2]), 0.75)    # a far particle still shows
    height, width = frame_buffer.image.shape[:2]
    on_screen = ((middle + reach[:, None] >= 0) & (middle - reach[:, None] <= (width, height))).all(axis=1)
    centers, radii, colors, world = centers[on_screen], radii[on_screen], colors[on_screen], world[on_screen]
    middle, reach = middle[on_screen], reach[on_screen]
    lo = np.clip(np.floor(middle - reach[:, None]).astype(np.int64), 0, (width - 1, height - 1))
    hi = np.clip(np.ceil(middle + reach[:, None]).astype(np.int64), 0, (width - 1, height - 1))
    for group, dy, dx in box_groups(lo[:, 0], lo[:, 1], hi[:, 0], hi[:, 1]):
        # per particle (rows) and box pixel (columns), broadcast: the sphere's normal seen from the camera
        scale = 1.0 / reach[group, None]
        across = (lo[group, 0, None] + dx + 0.5 - middle[group, 0, None]) * scale
        upward = (middle[group, 1, None] - lo[group, 1, None] - dy - 0.5) * scale
        off_axis = across * across + upward * upward
        inside = off_axis <= 1.0
        rows = np.nonzero(inside)
        items = group[rows[0]]
        ys, xs = lo[items, 1] + dy[rows[1]], lo[items, 0] + dx[rows[1]]
        across, upward = across[inside], upward[inside]
        toward = np.sqrt(1.0 - off_axis[inside])
        z = np.maximum(centers[items, 2] - radii[items] * toward, view.camera.z_near)

        def shade(won: np.ndarray, items: np.ndarray = items, across: np.ndarray = across,
                  upward: np.ndarray = upward, toward: np.ndarray = toward) -> np.ndarray:
            normals = (across[won, None] * view.right + upward[won, None] * view.up
                       - toward[won, None] * view.forward)
            points = world[items[won]] + radii[items[won], None] * normals
            return lambert(colors[items[won]], points, normals, lights, two_sided=False)

        frame_buffer.draw(ys * width + xs, view.depth(z), shade)


def draw_lines(frame_buffer: FrameBuffer, view: View, lights: Lights, lines: LineBatch) -> None:
    """Unlit segments `width` pixels wide: a disc every half pixel along each, at its depth."""
    height, width = frame_buffer.image.shape[:2]
    ends = view.to_view(lines.ends)
    keep = np.isfinite(ends).all(axis=(1, 2))
    ends, colors = clip_segments_near(ends[keep], lines.colors[keep], view.camera.z_near)
    pixels, z_ends, colors = _clip_to_screen(view, ends, colors, width, height)
    samples = np.ceil(np.abs(pixels[:, 1] - pixels[:, 0]).max(axis=1) * 2).astype(np.int64) + 2
    segment = np.repeat(np.arange(len(pixels)), samples)
    t = (np.arange(samples.sum()) - np.repeat(np.cumsum(samples) - samples, samples)) / (samples[segment] - 1)
    along = np.stack([1.0 - t, t], axis=1)
    points = np.einsum("sk,skc->sc", along, pixels[segment])
    z, along = view.screen_weights(along, z_ends[segment])
    sample_colors = np.einsum("sk,skc->sc", along, colors[segment])
    reach = max(lines.width / 2, 0.5)
    lo = np.clip(np.floor(points - reach).astype(np.int64), 0, (width - 1, height - 1))
    hi = np.clip(np.ceil(points + reach).astype(np.int64), 0, (width - 1, height - 1))
    for items, ys, xs in box_fragments(lo[:, 0], lo[:, 1], hi[:, 0], hi[:, 1]):
        offset = np.stack([xs + 0.5, ys + 0.5], axis=1) - points[items]
        inside = (offset * offset).sum(axis=1) <= reach * reach + 0.25
        items = items[inside]
        frame_buffer.draw((ys * width + xs)[inside], view.depth(z[items]),
                          lambda won, items=items: sample_colors[items[won]])


def _clip_to_screen(view: View, ends: np.ndarray, colors: np.ndarray, width: int,
                    height: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Segments in view space (S, 2, 3) beyond the near plane, with end colors (S, 2, 3) -> the parts on (a margin
    around) the screen: their pixel ends (S', 2, 2), view distances (S', 2) and colors (S', 2, 3)."""
    pixels = view.to_pixels(ends)
    size = np.array([width, height], dtype=np.float64)
    start, stop, inside = clip_parameters(pixels[:, 0] / size, pixels[:, 1] / size, -0.05, 1.05)
    t = np.stack([start, stop], axis=1)[inside]                  # screen parameters of the kept ends
    pixels, ends, colors = pixels[inside], ends[inside], colors[inside]
    clipped = pixels[:, :1] + (pixels[:, 1:] - pixels[:, :1]) * t[..., None]
    along = np.stack([1.0 - t, t], axis=2).reshape(-1, 2)
    z, along = view.screen_weights(along, np.repeat(ends[..., 2], 2, axis=0))
    end_colors = np.einsum("ek,ekc->ec", along, np.repeat(colors, 2, axis=0))
    return clipped, z.reshape(-1, 2), end_colors.reshape(-1, 2, 3)


def clip_triangles_near(corners: np.ndarray, near: float) -> np.ndarray:
    """Triangles (T, 3, K) whose attribute 2 is the view distance, cut to the part beyond `near`: a triangle with
    one corner beyond stays one triangle, with two it becomes two; corner order (winding) is kept."""
    beyond = corners[..., 2] > near
    count = beyond.sum(axis=1)
    whole = corners[count == 3]
    pieces = [whole]
    for kept in (1, 2):
        group = corners[count == kept]
        if not len(group):
            continue
        # Rotate each triangle so that its odd corner (the one kept, or the one cut off) comes first.
        odd = np.argmax(beyond[count == kept] == (kept == 1), axis=1)
        order = (odd[:, None] + np.arange(3)) % 3
        first, second, third = np.moveaxis(np.take_along_axis(group, order[:, :, None], axis=1), 1, 0)
        towards_second = _cut(first, second, near)
        towards_third = _cut(first, third, near)
        if kept == 1:
            pieces.append(np.stack([first, towards_second, towards_third], axis=1))
        else:
            pieces.append(np.stack([second, third, towards_third], axis=1))
            pieces.append(np.stack([second, towards_third, towards_second], axis=1))
    return np.concatenate(pieces) if len(pieces) > 1 else whole


def clip_segments_near(ends: np.ndarray, colors: np.ndarray, near: float) -> tuple[np.ndarray, np.ndarray]:
    """Segments (S, 2, 3) in view space and their end colors, cut to the part beyond `near`."""
    beyond = ends[..., 2] > near
    keep = beyond.any(axis=1)
    ends, colors, beyond = ends[keep].copy(), colors[keep].copy(), beyond[keep]
    combined = np.concatenate([ends, colors], axis=2)
    for end in (0, 1):
        cut = ~beyond[:, end]
        combined[cut, end] = _cut(combined[cut, 1 - end], combined[cut, end], near)
    return combined[..., :3], combined[..., 3:]


def _cut(inner: np.ndarray, outer: np.ndarray, near: float) -> np.ndarray:
    """Where the edge inner -> outer (attribute 2: view distance) crosses the near plane, every attribute."""
    t = (inner[:, 2] - near) / (inner[:, 2] - outer[:, 2])
    crossing = inner + (outer - inner) * t[:, None]
    crossing[:, 2] = near                 # exactly, even where a far-off corner leaves the sum no precision
    return crossing


def _units(vectors: np.ndarray) -> np.ndarray:
    length = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(length > 0, length, 1.0)


_DRAW = {MeshBatch: draw_mesh, ParticleBatch: draw_particles, LineBatch: draw_lines}
