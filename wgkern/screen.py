"""On-screen windows for `wk.GUI` and `wk.ui.Window`: a rendercanvas canvas (glfw, Qt or wx, whichever the
machine has) shows each frame the GUIs compose with numpy, and hands back its keyboard and mouse input as
Taichi's GUIs name it (keys 'a', 'Escape', 'Up', 'Shift', mouse buttons 'LMB'/'RMB'/'MMB', positions in [0, 1]^2
with y upwards).

A window opens only where one can be seen: a display exists (on Linux DISPLAY or WAYLAND_DISPLAY), a
rendercanvas GUI backend imports, WK_GUI_OFFSCREEN is not set to 1 and WK_GUI_MAX_FRAMES (the headless frame
limit) is not set. Anywhere else the GUIs keep drawing off-screen. The program's own loop drives the window:
show() presents a frame and collects the input that arrived since, as Taichi's GUIs do."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

# rendercanvas key names that Taichi spells differently; single characters are lower-cased, as Taichi has them
_KEY_NAMES = {"ArrowUp": "Up", "ArrowDown": "Down", "ArrowLeft": "Left", "ArrowRight": "Right",
              "Enter": "Return", "Backspace": "BackSpace"}
_BUTTONS = {1: "LMB", 2: "RMB", 3: "MMB"}
_SCREEN_BACKENDS = ("rendercanvas.glfw", "rendercanvas.auto")
_OFF_SCREEN_MODULES = ("offscreen", "stub", "terminal", "jupyter", "anywidget", "http", "pyodide")


@dataclass(slots=True)
class ScreenEvent:
    """One input event in Taichi's terms: `type` 'Press'/'Release'/'Motion', `key`, cursor `pos`, and for the
    wheel its `delta`; `modifiers` as Taichi's ('Shift', 'Control', 'Alt')."""
    type: str
    key: str
    pos: tuple[float, float]
    delta: tuple[float, float] = (0.0, 0.0)
    modifiers: tuple[str, ...] = ()


def screen_wanted(show: bool) -> bool:
    """Whether a GUI asked to be shown (show_gui / show_window) should try to open a window here."""
    if not show or os.environ.get("WK_GUI_OFFSCREEN", "").strip() in ("1", "true", "yes"):
        return False
    if os.environ.get("WK_GUI_MAX_FRAMES", "").strip():
        return False
    if sys.platform.startswith("linux"):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


def open_screen(title: str, size: tuple[int, int], canvas_class: Any = None) -> "Screen | None":
    """A window of `size` (width, height) pixels, or None (with the reason on stderr) where none can open.
    `canvas_class`: a rendercanvas RenderCanvas class to use instead of the first GUI backend found."""
    try:
        if canvas_class is None:
            canvas_class = _screen_canvas_class()
        canvas = canvas_class(size=size, title=title, update_mode="manual")
        return Screen(canvas, size)
    except Exception as exc:  # noqa: BLE001 - any failure to open a window leaves the GUI off-screen
        print(f"wgkern: no window for '{title}' ({type(exc).__name__}: {exc}); drawing off-screen",
              file=sys.stderr)
        return None


def _screen_canvas_class() -> Any:
    import importlib
    failures = []
    for name in _SCREEN_BACKENDS:
        try:
            module = importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - a missing toolkit: try the next
            failures.append(f"{name}: {exc}")
            continue
        canvas_class = module.RenderCanvas
        if not any(part in canvas_class.__module__ for part in _OFF_SCREEN_MODULES):
            return canvas_class
        failures.append(f"{name} picked {canvas_class.__module__}")
    raise RuntimeError("no rendercanvas GUI backend (pip install glfw): " + "; ".join(failures))


class Screen:
    """One window: `present(rgba)` shows a frame; `take_events()` returns the input since the last call;
    `pressed` holds the keys and buttons down now, `cursor` the last pointer position; `closed` turns True
    when the user closes the window."""

    def __init__(self, canvas: Any, size: tuple[int, int]):
        self.canvas = canvas
        self.size = size
        self.context = canvas.get_context("bitmap")
        self.pressed: set[str] = set()
        self.cursor = (0.5, 0.5)
        self.closed = False
        self._events: list[ScreenEvent] = []
        canvas.add_event_handler(self._on_event, "key_down", "key_up", "pointer_down", "pointer_up",
                                 "pointer_move", "wheel", "close")

    def present(self, rgba: np.ndarray) -> None:
        """Shows `rgba` (uint8 rows from the top, (height, width, 4)) and collects the input so far."""
        if self.closed:
            return
        self.context.set_bitmap(np.ascontiguousarray(rgba))
        self.canvas.force_draw()
        self.poll()

    def poll(self) -> None:
        """Lets the window deliver the input it has (the events land in take_events())."""
        if not self.closed:
            self.canvas._process_events()

    def take_events(self) -> list[ScreenEvent]:
        events, self._events = self._events, []
        return events

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.canvas.close()

    def _position(self, event: dict) -> tuple[float, float]:
        width, height = self.size
        x, y = event.get("x"), event.get("y")
        if x is None or y is None:
            return self.cursor
        return float(x) / max(width, 1), 1.0 - float(y) / max(height, 1)

    def _on_event(self, event: dict) -> None:
        kind = event["event_type"]
        modifiers = tuple(event.get("modifiers", ()))
        if kind == "close":
            self.closed = True
            return
        if kind in ("key_down", "key_up"):
            key = str(event.get("key", ""))
            key = _KEY_NAMES.get(key, key.lower() if len(key) == 1 else key)
            self._record("Press" if kind == "key_down" else "Release", key, self.cursor, modifiers=modifiers)
            return
        self.cursor = self._position(event)
        if kind == "pointer_move":
            self._record("Motion", "Motion", self.cursor, modifiers=modifiers)
        elif kind == "wheel":
            self._record("Motion", "Wheel", self.cursor, (float(event.get("dx", 0)), -float(event.get("dy", 0))),
                         modifiers)
        else:
            button = _BUTTONS.get(int(event.get("button", 0) or 0))
            if button is not None:
                self._record("Press" if kind == "pointer_down" else "Release", button, self.cursor,
                             modifiers=modifiers)

    def _record(self, kind: str, key: str, pos: tuple[float, float], delta: tuple[float, float] = (0.0, 0.0),
                modifiers: tuple[str, ...] = ()) -> None:
        if kind == "Press":
            self.pressed.add(key)
        elif kind == "Release":
            self.pressed.discard(key)
        self._events.append(ScreenEvent(kind, key, pos, delta, modifiers))
