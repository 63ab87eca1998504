"""`wk.ui.Window`: Taichi's GGUI window, drawn with numpy and shown on screen where a window can open
(screen.py), else off-screen. It owns the frame: the background color, the drawing queued by the canvas this
frame, and the image and depth they render to when the frame is shown or read. In a window, keys and mouse
buttons arrive as events (`get_event`, `get_events`, `is_pressed`, `get_cursor_pos`); off-screen there is no
input: no events, no key pressed, the cursor at (0.5, 0.5). The frame loop (`running`, WK_GUI_MAX_FRAMES,
WK_GUI_SAVE, the window) is the one wk.GUI has (gui.py). Drawing calls live in canvas.py, widgets in imgui.py
(drawn last, over the canvas, as ImGui draws over GGUI's frame)."""
from __future__ import annotations

import sys
from typing import Any, Callable

import numpy as np

from wgkern.gui import HeadlessFrames
from wgkern.png import to_rgba, write_png
from wgkern.ui.canvas import Canvas
from wgkern.ui.constants import PRESS, RELEASE
from wgkern.ui.imgui import Gui, Pointer
from wgkern.ui.render import FrameBuffer
from wgkern.ui.scene import Scene


class Window(HeadlessFrames):
    """`Window(name, res=(width, height), vsync=False, show_window=True)`; see the module docstring. `vsync`,
    `fps_limit` and `pos` only matter to a real window and change nothing here."""

    reports_motion = False      # GGUI's events are key and button presses and releases only

    def __init__(self, name: str, res: Any, vsync: bool = False, show_window: bool = True, fps_limit: int = 1000,
                 pos: Any = (100, 100)) -> None:
        self.name = name
        self.res = (int(res), int(res)) if np.isscalar(res) else (int(res[0]), int(res[1]))
        self.event: Any = None
        self.background = np.zeros(3, np.float32)
        self._start_frames()
        self._queued: list[Callable[[FrameBuffer], None]] = []
        width, height = self.res
        self._frame = FrameBuffer(np.zeros((height, width, 3), np.float32), np.ones((height, width), np.float32))
        self._rendered = False          # whether _frame holds this frame's drawing (or the last shown frame)
        self._canvas = Canvas(self)
        self._scene: Scene | None = None
        self._clicks: list[tuple[float, float]] = []      # left-button presses since the last frame (pixels)
        self._gui = Gui(changed=self._gui_changed, size=self.res, pointer=self._gui_pointer)
        if show_window and not self._open_window(name, show_window):
            print(f"wk.ui.Window '{name}': drawing off-screen (no window); window.save_image('file.png') saves "
                  "a frame", file=sys.stderr)

    # ---- input (from the window, where one is open) ----------------------------------------------------------
    def get_events(self, tag: str | None = None) -> list[Any]:
        """The queued events of type `tag` (all with None). Off-screen, only closing the window at
        WK_GUI_MAX_FRAMES queues events."""
        _check_event_tag(tag)
        self._take_input()
        return self._take_events(lambda e: tag is None or e.type == tag, False)

    def get_event(self, tag: str | None = None) -> bool:
        _check_event_tag(tag)
        self._take_input()
        return bool(self._take_events(lambda e: tag is None or e.type == tag, True))

    def is_pressed(self, *keys: Any) -> bool:
        self._take_input()
        return self._keys_down(keys)

    def get_cursor_pos(self) -> tuple[float, float]:
        self._take_input()
        return self._cursor()

    # ---- parts ---------------------------------------------------------------------------------------------
    def get_canvas(self) -> Canvas:
        return self._canvas

    def get_scene(self) -> Scene:
        """The window's scene (newer Taichi's spelling of `ti.ui.Scene()`)."""
        if self._scene is None:
            self._scene = Scene()
        return self._scene

    def get_gui(self) -> Gui:
        return self._gui

    @property
    def GUI(self) -> Gui:
        """Older Taichi's spelling of get_gui()."""
        return self._gui

    def get_window_shape(self) -> tuple[int, int]:
        return self.res

    # ---- frames --------------------------------------------------------------------------------------------
    def queue(self, draw: Callable[[FrameBuffer], None]) -> None:
        """Adds a drawing step to this frame (the canvas's calls come here)."""
        self._queued.append(draw)
        self._rendered = False

    def show(self) -> None:
        if not self._queued:            # nothing drawn this frame: it shows the background
            self._rendered = False
        self._clicks = []               # the widgets of this frame have seen them
        self._frame_shown(self._image_rows())
        self._queued = []
        self._gui.new_frame()

    def save_image(self, filename: str) -> None:
        """Writes this frame as drawn so far (before show(), as in Taichi) to a PNG file."""
        write_png(filename, to_rgba(self._image_rows()))

    def write_image(self, filename: str) -> None:
        """Older Taichi's name for save_image."""
        self.save_image(filename)

    def get_image_buffer_as_numpy(self) -> np.ndarray:
        """This frame as float RGBA, img[x, y] (shape (width, height, 4))."""
        rows = self._image_rows()
        pixels = np.ones(rows.shape[:2] + (4,), np.float32)
        pixels[..., :3] = rows
        return np.transpose(pixels[::-1], (1, 0, 2)).copy()

    def get_depth_buffer_as_numpy(self) -> np.ndarray:
        """The depth of this frame's 3-D drawing in [0, 1] (1 where none), img[x, y] (shape (width, height))."""
        self._image_rows()
        return np.transpose(self._frame.depth[::-1]).copy()

    def get_depth_buffer(self, depth: Any) -> None:
        """Copies the depth buffer (as get_depth_buffer_as_numpy) into a (width, height) f32 field or ndarray."""
        depth.from_numpy(self.get_depth_buffer_as_numpy())

    def _pointer(self, event: Any) -> None:
        if event.type == PRESS and event.key == "LMB":
            width, height = self.res
            self._clicks.append((event.pos[0] * width, (1.0 - event.pos[1]) * height))

    def _gui_pointer(self) -> Pointer | None:
        """The mouse for this frame's widgets (imgui.py), None off-screen."""
        if self._screen is None:
            return None
        self._take_input()
        (x, y), (width, height) = self._cursor(), self.res
        return Pointer(x * width, (1.0 - y) * height, self._keys_down(("LMB",)), self._clicks)

    def destroy(self) -> None:
        self.running = False
        self._close_window()

    def _gui_changed(self) -> None:
        """The widgets of this frame changed: the image is drawn again when next shown or read."""
        self._rendered = False

    def _image_rows(self) -> np.ndarray:
        """Renders the queued frame if it is not yet; float RGB rows from the top."""
        if not self._rendered:
            self._frame.image[:] = self.background
            self._frame.depth[:] = 1.0
            for draw in self._queued:
                draw(self._frame)
            self._gui.draw(self._frame.image)
            self._rendered = True
        return self._frame.image


def _check_event_tag(tag: str | None) -> None:
    if tag not in (None, PRESS, RELEASE):
        raise ValueError(f"unrecognized event tag {tag!r}: use None, wk.ui.PRESS or wk.ui.RELEASE")
