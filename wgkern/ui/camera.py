"""`wk.ui.Camera`: Taichi's GGUI camera, its settings (position, lookat, up, fov in degrees, projection mode,
orthographic bounds, clip planes) and `track_user_inputs`. Off-screen no key is held and the cursor stays put,
so tracking moves nothing. The settings a scene copies at `scene.set_camera` are a `CameraState`; turning one
into pixels is the renderer's job (render.py)."""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from wgkern.lang.matrix import Vector
from wgkern.ui.constants import ProjectionMode

_MOVES = {"w": (1, 0, 0), "s": (-1, 0, 0), "a": (0, 1, 0), "d": (0, -1, 0), "e": (0, 0, 1), "q": (0, 0, -1)}
"""track_user_inputs: key -> (front, left, up) weights of the step, as Taichi's camera moves."""


@dataclasses.dataclass
class CameraState:
    """One camera's settings, with Taichi's defaults (at the origin looking down +z, 45 degree fov)."""
    position: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(3))
    lookat: np.ndarray = dataclasses.field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    up: np.ndarray = dataclasses.field(default_factory=lambda: np.array([0.0, 1.0, 0.0]))
    projection: ProjectionMode = ProjectionMode.Perspective
    fov: float = 45.0
    left: float = -1.0
    right: float = 1.0
    top: float = -1.0
    bottom: float = 1.0
    z_near: float = 0.1
    z_far: float = 1000.0

    def basis(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(right, up, forward) unit vectors of the view (a right-handed camera looking down `forward`)."""
        forward = _unit(self.lookat - self.position)
        right = _unit(np.cross(forward, self.up))
        return right, np.cross(right, forward), forward


class Camera:
    """See the module docstring. `curr_position`, `curr_lookat` and `curr_up` are the values last set, as in Taichi."""

    def __init__(self) -> None:
        self._state = CameraState()
        self.last_mouse_x: float | None = None
        self.last_mouse_y: float | None = None

    @property
    def curr_position(self) -> Any:
        return Vector(self._state.position.tolist())

    @property
    def curr_lookat(self) -> Any:
        return Vector(self._state.lookat.tolist())

    @property
    def curr_up(self) -> Any:
        return Vector(self._state.up.tolist())

    def state(self) -> CameraState:
        """A copy of the current settings (what scene.set_camera keeps)."""
        return dataclasses.replace(self._state, position=self._state.position.copy(),
                                   lookat=self._state.lookat.copy(), up=self._state.up.copy())

    def position(self, x: float, y: float, z: float) -> None:
        self._state.position = np.array([x, y, z], dtype=np.float64)

    def lookat(self, x: float, y: float, z: float) -> None:
        self._state.lookat = np.array([x, y, z], dtype=np.float64)

    def up(self, x: float, y: float, z: float) -> None:
        self._state.up = np.array([x, y, z], dtype=np.float64)

    def projection_mode(self, mode: Any) -> None:
        self._state.projection = ProjectionMode(int(mode))

    def fov(self, fov: float) -> None:
        """The vertical field of view in degrees (perspective projection)."""
        self._state.fov = float(fov)

    def left(self, left: float) -> None:
        self._state.left = float(left)

    def right(self, right: float) -> None:
        self._state.right = float(right)

    def top(self, top: float) -> None:
        self._state.top = float(top)

    def bottom(self, bottom: float) -> None:
        self._state.bottom = float(bottom)

    def z_near(self, z_near: float) -> None:
        self._state.z_near = float(z_near)

    def z_far(self, z_far: float) -> None:
        self._state.z_far = float(z_far)

    def get_view_matrix(self) -> np.ndarray:
        """World -> view (x right, y up, looking down -z, as OpenGL's lookAt), a 4x4 for `M @ (x, y, z, 1)`."""
        right, up, forward = self._state.basis()
        matrix = np.eye(4)
        matrix[:3, :3] = np.stack([right, up, -forward])
        matrix[:3, 3] = -matrix[:3, :3] @ self._state.position
        return matrix

    def get_projection_matrix(self, aspect: float) -> np.ndarray:
        """View -> clip space (depth in [0, 1], as Vulkan's), a 4x4 for `M @ (x, y, z, 1)`."""
        state = self._state
        near, far = state.z_near, state.z_far
        matrix = np.zeros((4, 4))
        if state.projection == ProjectionMode.Perspective:
            focal = 1.0 / math.tan(math.radians(state.fov) / 2)
            matrix[0, 0], matrix[1, 1] = focal / aspect, focal
            matrix[2, 2], matrix[2, 3] = far / (near - far), near * far / (near - far)
            matrix[3, 2] = -1.0
        else:
            matrix[0, 0] = 2 / (state.right - state.left)
            matrix[1, 1] = 2 / (state.bottom - state.top)
            matrix[0, 3] = -(state.right + state.left) / (state.right - state.left)
            matrix[1, 3] = -(state.bottom + state.top) / (state.bottom - state.top)
            matrix[2, 2], matrix[2, 3] = 1 / (near - far), near / (near - far)
            matrix[3, 3] = 1.0
        return matrix

    def track_user_inputs(self, window: Any, movement_speed: float = 1.0, yaw_speed: float = 2,
                          pitch_speed: float = 2, hold_key: Any = None) -> None:
        """Taichi's first-person controls: w/s/a/d/e/q move, the cursor turns while `hold_key` is held (any time
        without one). Headless no key is pressed and the cursor does not move, so the view stays as set."""
        state = self._state
        front = _unit(state.lookat - state.position)
        axes = np.stack([front, np.cross(state.up, front), state.up])
        for key, weights in _MOVES.items():
            if window.is_pressed(key):
                step = np.asarray(weights, dtype=np.float64) @ axes * movement_speed
                state.position = state.position + step
                state.lookat = state.lookat + step
        if hold_key is not None and not window.is_pressed(hold_key):
            self.last_mouse_x = self.last_mouse_y = None
            return
        mouse_x, mouse_y = window.get_cursor_pos()
        if self.last_mouse_x is None or self.last_mouse_y is None:
            self.last_mouse_x, self.last_mouse_y = mouse_x, mouse_y
            return
        yaw = math.atan2(-front[0], -front[2]) - (mouse_x - self.last_mouse_x) * yaw_speed
        pitch = math.asin(float(np.clip(front[1], -1.0, 1.0))) + (mouse_y - self.last_mouse_y) * pitch_speed
        pitch = float(np.clip(pitch, -math.pi / 2 * 0.99, math.pi / 2 * 0.99))
        turned = np.array([-math.sin(yaw) * math.cos(pitch), math.sin(pitch), -math.cos(yaw) * math.cos(pitch)])
        state.lookat = state.position + turned
        state.up = np.array([0.0, 1.0, 0.0])
        self.last_mouse_x, self.last_mouse_y = mouse_x, mouse_y


def make_camera() -> Camera:
    """Older Taichi's `ti.ui.make_camera()`."""
    return Camera()


def _unit(vector: np.ndarray) -> np.ndarray:
    length = float(np.linalg.norm(vector))
    return vector / length if length > 0 else vector
