"""`wk.ui`: Taichi's GGUI (`ti.ui`) drawn off-screen with numpy, so GGUI programs run headless and save frames.

`Window` (window.py) owns the frame loop and the image; `get_canvas()` gives 2-D drawing (canvas.py), `Scene` /
`window.get_scene()` and `Camera` (scene.py, camera.py) 3-D content drawn by render.py, `get_gui()` widgets
drawn as panels over the frame that return the values they are given (imgui.py). `running` stays True until the program ends it, or for
WK_GUI_MAX_FRAMES frames; WK_GUI_SAVE=path.png saves each shown frame, as for wk.GUI. `wk.ui.GUI` is wk.GUI."""
from __future__ import annotations

from wgkern.gui import GUI, hex_to_rgb, rgb_to_hex
from wgkern.ui.camera import Camera, make_camera
from wgkern.ui.canvas import Canvas
from wgkern.ui.constants import (ALT, BACKSPACE, CAPSLOCK, CTRL, DOWN, ESCAPE, LEFT, LMB, MMB, PRESS, RELEASE, RETURN,
                                 RIGHT, RMB, SHIFT, SPACE, TAB, UP, ProjectionMode)
from wgkern.ui.imgui import Gui
from wgkern.ui.scene import Scene
from wgkern.ui.window import Window

__all__ = [
    "Window", "Canvas", "Scene", "Camera", "make_camera", "Gui", "ProjectionMode", "GUI", "rgb_to_hex",
    "hex_to_rgb", "SHIFT", "ALT", "CTRL", "ESCAPE", "RETURN", "TAB", "BACKSPACE", "SPACE", "CAPSLOCK", "UP", "DOWN",
    "LEFT", "RIGHT", "LMB", "MMB", "RMB", "PRESS", "RELEASE",
]
