"""`wk.GUI`: the drawing subset of Taichi's ti.GUI, drawn with numpy and shown in a window where one can open
(screen.py: a display and a rendercanvas GUI backend such as glfw), else off-screen, so the same programs run
headless (in CI, over SSH) and can save their frames: `gui.show("frame.png")`.

Coordinates are Taichi's: positions in [0, 1]^2 with the origin at the bottom left, colors as 0xRRGGBB,
`set_image(img)` takes img[x, y] (x to the right, y upwards; floats in [0, 1] or uint8; 2-D is grey). In a
window, keys and mouse buttons arrive as Taichi's events (`get_event`, `get_events`, `is_pressed`,
`get_cursor_pos`) and closing the window ends `running`. Off-screen there is no input: `get_event()` is False,
`is_pressed()` is False, and `running` stays True until `close()` or `gui.running = False`, as with Taichi's
`show_gui=False` (so `while gui.running:` never ends on its own). To run an interactive program headless to an
end, set WK_GUI_MAX_FRAMES=N: after the N-th `show()` the window counts as closed by its user (`running` turns
False, get_event() reports Escape and close; one more `show()` ends the program), and WK_GUI_SAVE=path.png also
saves each shown frame there (the last one stays); WK_GUI_OFFSCREEN=1 keeps any window from opening.
`text()` draws with font.py's bitmap font, anchored at its top left as Taichi's is. Widgets (`slider`, `label`,
`button`) keep the values the program gives them and, with show_gui, are drawn on each shown frame where Taichi
puts them: stacked down the right edge, 200 pixels wide; in a window, sliders follow left-button drags and
buttons send their events when clicked. `rgb_to_hex`,
`hex_to_rgb` and `imwrite` are Taichi's helpers of the same names (wk.rgb_to_hex, wk.tools.imwrite). The pixels
are drawn by raster.py, and the frame loop (HeadlessFrames) is shared with wk.ui's GGUI window (ui/)."""
from __future__ import annotations

import contextlib

import os
import sys
from typing import Any

import numpy as np

from wgkern.png import to_rgba, write_png
from wgkern.screen import Screen, open_screen, screen_wanted
from wgkern.raster import (as_array as _array, draw_text, fill_rect, fill_triangles, image_rows_rgba,
                           points2d as _points, splat_discs, stroke_segments)
from wgkern.tools.image import imwrite  # noqa: F401  (wk.imwrite, Taichi's old name for ti.tools.imwrite)


def _rgb(color: Any) -> np.ndarray:
    """0xRRGGBB (int or array of ints) -> float RGB in [0, 1], shape (..., 3)."""
    value = np.asarray(color, dtype=np.int64)
    return np.stack([(value >> 16) & 255, (value >> 8) & 255, value & 255], axis=-1).astype(np.float32) / 255.0


def rgb_to_hex(color: Any) -> Any:
    """Taichi's ti.rgb_to_hex: float (r, g, b) in [0, 1] -> 0xRRGGBB, each channel truncated to 0..255; the
    channels are the first axis, so `rgb_to_hex([r_array, g_array, b_array])` colors many items at once."""
    channels = [np.clip(np.asarray(_array(color[k]), dtype=np.float64) * 255, 0, 255).astype(np.int64)
                for k in range(3)]
    value = (channels[0] << 16) | (channels[1] << 8) | channels[2]
    return int(value) if value.ndim == 0 else value


def hex_to_rgb(color: Any) -> Any:
    """Taichi's ti.hex_to_rgb: 0xRRGGBB -> (r, g, b) floats in [0, 1]."""
    rgb = _rgb(color)
    return tuple(float(c) for c in rgb) if rgb.ndim == 1 else rgb


class Event:
    """An input event as Taichi's GUIs report them (`gui.event`, `window.event`): `type` (PRESS/RELEASE),
    `key`, `modifier`, `pos`."""

    def __init__(self, type: str, key: str):
        self.type, self.key = type, key
        self.modifier: list[str] = []
        self.pos = (0.5, 0.5)
        self.delta = (0, 0)

    def __repr__(self) -> str:
        return f"Event({self.type!r}, {self.key!r})"


# What a user closing the window sends: Escape pressed, then the window manager's close
CLOSING_EVENTS = (("Press", "Escape"), ("Press", "WMClose"))


class HeadlessFrames:
    """The frame loop of the front ends (GUI here, ui.Window): `running` stays True until the program sets it
    False, the user closes the window, or the WK_GUI_MAX_FRAMES-th frame is shown; WK_GUI_SAVE=path.png saves every
    shown frame. Where a window can open (screen.py) each shown frame goes to it and its input becomes events.

    Reaching WK_GUI_MAX_FRAMES acts as a user closing the window: `running` turns False and the event queue gets
    an Escape press and a close event (so `while not gui.get_event(gui.ESCAPE):` ends too); a program that shows
    yet another frame after that (a `for` loop over a million frames) ends there, with SystemExit(0)."""
    frame: int
    max_frames: int | None
    save_to: str | None
    event: Event | None = None
    reports_motion = True       # pointer moves and the wheel as 'Motion' events (ti.GUI has them, GGUI not)

    def _start_frames(self) -> None:
        self._screen: Screen | None = None
        self.running = True
        self.frame = 0
        self._events: list[Event] = []
        self.event = None

    @property
    def running(self) -> bool:
        """False once the program says so, the user closes the window or the frame limit is reached."""
        if self._screen is not None and self._running:
            self._take_input()              # a window closed since the last frame ends the loop now
        return self._running

    @running.setter
    def running(self, value: bool) -> None:
        self._running = bool(value)
        limit = os.environ.get("WK_GUI_MAX_FRAMES", "").strip()
        if limit and not limit.isdigit():
            raise ValueError(f"WK_GUI_MAX_FRAMES must be a frame count, not {limit!r}")
        self.max_frames = int(limit) if limit else None
        self.save_to = os.environ.get("WK_GUI_SAVE") or None

    def _frame_shown(self, rows: np.ndarray, file: str | None = None) -> None:
        """Counts a shown frame (float RGB rows from the top) and saves it where asked."""
        for path in (file, self.save_to):
            if path:
                write_png(path, to_rgba(rows))
        if self.max_frames is not None and self.frame >= self.max_frames:
            print(f"WK_GUI_MAX_FRAMES={self.max_frames}: the program goes on showing frames after its window was "
                  "closed; ending it", file=sys.stderr)
            raise SystemExit(0)
        self.frame += 1
        if self.max_frames is not None and self.frame >= self.max_frames:
            self.running = False
            self._events.extend(Event(kind, key) for kind, key in CLOSING_EVENTS)
        if self._screen is not None:
            self._screen.present(to_rgba(rows))
            self._take_input()

    # ---- the window (screen.py), where one is open ------------------------------------------------------
    def _open_window(self, title: str, show: bool) -> bool:
        """Opens a window for the frames when asked to show them and one can be seen here."""
        if screen_wanted(show):
            self._screen = open_screen(title, self.res)
        return self._screen is not None

    def _take_input(self) -> None:
        """Queues the window's input as events; a window the user closed ends the loop as Taichi's does."""
        screen = self._screen
        if screen is None:
            return
        screen.poll()
        for item in screen.take_events():
            if item.type == "Motion" and not self.reports_motion:
                continue
            event = Event(item.type, item.key)
            event.pos, event.delta, event.modifier = item.pos, item.delta, list(item.modifiers)
            self._events.append(event)
            self._pointer(event)
        if screen.closed and self._running:
            self._running = False
            self._events.extend(Event(kind, key) for kind, key in CLOSING_EVENTS)

    def _pointer(self, event: Event) -> None:
        """Window input for the front end's own widgets (GUI's panel); none by default."""

    def _keys_down(self, keys: tuple[Any, ...]) -> bool:
        return self._screen is not None and any(key in self._screen.pressed for key in keys)

    def _cursor(self) -> tuple[float, float]:
        return self._screen.cursor if self._screen is not None else (0.5, 0.5)

    def _close_window(self) -> None:
        if self._screen is not None:
            self._screen.close()

    def _take_events(self, matches: Any, first_only: bool) -> list[Event]:
        """Removes and returns the queued events `matches(event)` accepts (the first one, or all)."""
        taken = []
        for event in list(self._events):
            if matches(event):
                self._events.remove(event)
                taken.append(event)
                if first_only:
                    break
        if taken:
            self.event = taken[-1]
        return taken


class Widget:
    """What gui.slider / gui.label return: a `.value` the program reads and writes (no window changes it)."""

    def __init__(self, text: str, value: Any):
        self.text = text
        self.value = value


# Taichi's ti.GUI widgets, drawn over the right edge of the frame (pixels; colors 0xRRGGBB)
WIDGET_WIDTH = 200
WIDGET_HEIGHT = {"slider": 40, "button": 40, "label": 20}
WIDGET_TEXT_SIZE = {"slider": 16, "button": 32, "label": 16}
WIDGET_BACKGROUND, WIDGET_TEXT, SLIDER_BAR, SLIDER_KNOB = 0xCCCCCC, 0x111111, 0x333333, 0x555555
SLIDER_PADDING = 10
TEXT_PADDING = 2        # Taichi starts a text 2 pixels right of its position


class _PlacedWidget:
    """A widget as the GUI draws it: its kind ('slider', 'label' or 'button'), value and slider range."""

    def __init__(self, kind: str, widget: Widget, minimum: float = 0.0, maximum: float = 1.0, step: float = 0.0,
                 event_name: str = ""):
        self.kind, self.widget = kind, widget
        self.minimum, self.maximum, self.step = minimum, maximum, step
        self.event_name = event_name

    def slide_to(self, fraction: float) -> None:
        """A slider dragged to `fraction` of its bar: the value there, on the slider's steps."""
        value = self.minimum + min(max(fraction, 0.0), 1.0) * (self.maximum - self.minimum)
        if self.step > 0:
            value = self.minimum + round((value - self.minimum) / self.step) * self.step
        self.widget.value = min(max(value, min(self.minimum, self.maximum)), max(self.minimum, self.maximum))

    def caption(self) -> str:
        if self.kind == "button":
            return self.widget.text
        return f"{self.widget.text}: {float(self.widget.value):.3f}"


class GUI(HeadlessFrames):
    """See the module docstring. `res` is an int (square) or (width, height)."""
    ESCAPE, SPACE, SHIFT, CTRL, ALT, EXIT = "Escape", " ", "Shift", "Control", "Alt", "WMClose"
    LMB, RMB, MMB, WHEEL, MOVE, CAPSLOCK = "LMB", "RMB", "MMB", "Wheel", "Motion", "CapsLock"
    UP, DOWN, LEFT, RIGHT, BACKSPACE, RETURN, TAB = "Up", "Down", "Left", "Right", "BackSpace", "Return", "Tab"
    PRESS, RELEASE, MOTION = "Press", "Release", "Motion"

    def __init__(self, name: str = "wgkern", res: Any = 512, background_color: int = 0x000000,
                 show_gui: bool = True, fullscreen: bool = False, fast_gui: bool = False):
        self.name = name
        self.res = (int(res), int(res)) if np.isscalar(res) else (int(res[0]), int(res[1]))
        self.background_color = background_color
        self.show_gui = show_gui
        self._widgets: list[_PlacedWidget] = []
        self._start_frames()
        self.canvas = np.zeros((self.res[1], self.res[0], 3), np.float32)
        self.clear()
        if show_gui and not self._open_window(name, show_gui):
            print(f"wk.GUI '{name}': drawing off-screen (no window); gui.show('file.png') saves a frame",
                  file=sys.stderr)

    # ---- input (from the window, where one is open) ----------------------------------------------------------
    def get_event(self, *filters: Any) -> bool:
        """Takes the next queued event the filters accept into `gui.event`. Off-screen, only closing the GUI at
        WK_GUI_MAX_FRAMES queues events."""
        self._take_input()
        return bool(self._take_events(lambda e: _gui_filter_accepts(filters, e), True))

    def get_events(self, *filters: Any) -> list[Any]:
        self._take_input()
        return self._take_events(lambda e: _gui_filter_accepts(filters, e), False)

    def is_pressed(self, *keys: Any) -> bool:
        self._take_input()
        return self._keys_down(keys)

    def get_cursor_pos(self) -> tuple[float, float]:
        self._take_input()
        return self._cursor()

    def get_key_event(self) -> None:
        """The event get_event() took is `gui.event`; nothing else arrives."""
        return None

    # ---- widgets (values only) -----------------------------------------------------------------------------
    def slider(self, text: str, minimum: float, maximum: float, step: float = 1) -> Widget:
        """A slider starting at `minimum`; in a window, dragging it with the left button sets its value."""
        widget = Widget(text, minimum)
        self._widgets.append(_PlacedWidget("slider", widget, minimum, maximum, step))
        return widget

    def label(self, text: str) -> Widget:
        """A label showing `text: value` (value 0 until the program sets it)."""
        widget = Widget(text, 0)
        self._widgets.append(_PlacedWidget("label", widget))
        return widget

    def button(self, text: str, event_name: str | None = None) -> str:
        """A button; returns the name of the event a click sends (Taichi's `WidgetButton_<text>` unless given):
        in a window, a left click on it queues a press of that key."""
        name = event_name or f"WidgetButton_{text}"
        self._widgets.append(_PlacedWidget("button", Widget(text, 0), event_name=name))
        return name

    def _pointer(self, event: Event) -> None:
        """Window input reaching the widget panel (with show_gui): a left click on a button queues its event, a
        left press or drag on a slider's box moves its value."""
        if not self.show_gui or not self._widgets or not (
                (event.type == self.PRESS and event.key == self.LMB)
                or (event.type == self.MOTION and event.key == self.MOVE and self._keys_down((self.LMB,)))):
            return
        width, height = self.res
        x, y = event.pos[0] * width, (1.0 - event.pos[1]) * height       # pixels from the top left
        left, top = width - WIDGET_WIDTH, 0
        for placed in self._widgets:
            bottom = top + WIDGET_HEIGHT[placed.kind]
            if left <= x < width and top <= y < bottom:
                if placed.kind == "slider":
                    placed.slide_to((x - left - SLIDER_PADDING) / (WIDGET_WIDTH - 2 * SLIDER_PADDING))
                elif placed.kind == "button" and event.type == self.PRESS:
                    self._events.append(Event(self.PRESS, placed.event_name))
                return
            top = bottom

    # ---- drawing -----------------------------------------------------------------------------------------
    def clear(self, color: int | None = None) -> None:
        self.canvas[:] = _rgb(self.background_color if color is None else color)
        self._alpha = None                      # every pixel opaque: the canvas's alpha after clearing

    def set_image(self, image: Any) -> None:
        """The canvas from img[x, y]; as in Taichi, the image's alpha (0 for grey-less RGB, the grey value for
        one channel) is what get_image returns until something is drawn over it."""
        rows = image_rows_rgba(image)                                       # img[x, y] -> rows from the top
        if rows.shape[:2] != self.res[::-1]:
            raise ValueError(f"GUI.set_image: image of shape {rows.shape[1::-1]}, the GUI is {self.res}")
        self.canvas[:] = rows[..., :3]
        self._alpha = None if (rows[..., 3] == 1).all() else rows[..., 3].copy()

    @contextlib.contextmanager
    def _drawing(self) -> Any:
        """Around a primitive's rasterising: pixels it changes become opaque, as Taichi draws with alpha 1."""
        before = None if self._alpha is None else self.canvas.copy()
        yield self.canvas
        if before is not None:
            self._alpha[(self.canvas != before).any(axis=2)] = 1.0

    def contour(self, scalar: Any, normalize: bool = False) -> None:
        """A scalar field as a grey image (scaled to [0, 1] first with `normalize`)."""
        array = _array(scalar).astype(np.float32)
        if normalize:
            low, high = float(np.nanmin(array)), float(np.nanmax(array))
            array = (array - low) / (high - low) if high > low else np.zeros_like(array)
        self.set_image(array)

    def circles(self, pos: Any, radius: float = 1, color: Any = 0xFFFFFF, palette: Any = None,
                palette_indices: Any = None) -> None:
        points = _points(pos)
        if palette is not None and palette_indices is not None:
            indices = np.asarray(palette_indices.to_numpy() if hasattr(palette_indices, "to_numpy")
                                 else palette_indices).reshape(-1).astype(np.int64)
            colors = _rgb(np.asarray(palette)[indices])
        else:
            colors = _rgb(_array(color))
            if colors.ndim == 2 and colors.shape[0] != points.shape[0]:
                colors = colors[0]
        radii = np.asarray(_array(radius), dtype=np.float64).reshape(-1)
        with self._drawing() as canvas:
            splat_discs(canvas, points, radii if radii.size == points.shape[0] and radii.size > 1
                        else float(radii.max(initial=0)), colors)

    def circle(self, pos: Any, color: int = 0xFFFFFF, radius: float = 1) -> None:
        self.circles([pos], radius, color)

    def lines(self, begin: Any, end: Any, radius: Any = 1, color: Any = 0xFFFFFF) -> None:
        """Segments begin[k] -> end[k]; `radius` and `color` one value or one per segment. Segments with a
        non-finite end are skipped; the rest are clipped to (a margin around) the canvas before drawing."""
        radii = np.asarray(_array(radius), dtype=np.float64).reshape(-1)
        with self._drawing() as canvas:
            stroke_segments(canvas, _points(begin), _points(end), np.maximum(radii - 0.5, 0.0),
                            _rgb(np.asarray(_array(color), dtype=np.int64)))

    def arrows(self, orig: Any, direction: Any, radius: Any = 1, color: Any = 0xFFFFFF) -> None:
        """Segments orig -> orig + direction with a head (two strokes of a quarter of the length)."""
        start, delta = _points(orig), _points(direction)
        tip = start + delta
        back = -delta * 0.25
        side = np.stack([-back[:, 1], back[:, 0]], axis=1) * 0.5
        self.lines(np.concatenate([start, tip, tip]), np.concatenate([tip, tip + back + side, tip + back - side]),
                   radius, np.concatenate([_rgb_ints(color, len(start))] * 3) if np.ndim(color) else color)

    def arrow(self, orig: Any, direction: Any, radius: float = 1, color: int = 0xFFFFFF) -> None:
        self.arrows([orig], [direction], radius, color)

    def arrow_field(self, direction: Any, radius: float = 1, color: int = 0xFFFFFF, bound: float = 0.5) -> None:
        """An arrow per cell of a (w, h, 2) field of directions, from the cell centre, scaled by `bound`."""
        field = np.asarray(_array(direction), dtype=np.float64)
        w, h = field.shape[:2]
        xs, ys = np.meshgrid((np.arange(w) + 0.5) / w, (np.arange(h) + 0.5) / h, indexing="ij")
        centres = np.stack([xs, ys], axis=-1).reshape(-1, 2)
        self.arrows(centres, field.reshape(-1, 2) * bound / max(w, h), radius, color)

    def point_field(self, radius: Any, color: int = 0xFFFFFF, bound: float = 0.5) -> None:
        """A circle per cell of a (w, h) field of radii, at the cell centres."""
        radii = np.asarray(_array(radius), dtype=np.float64)
        w, h = radii.shape[:2]
        xs, ys = np.meshgrid((np.arange(w) + 0.5) / w, (np.arange(h) + 0.5) / h, indexing="ij")
        self.circles(np.stack([xs, ys], axis=-1).reshape(-1, 2), radius=radii.reshape(-1), color=color)

    def line(self, begin: Any, end: Any, radius: float = 1, color: int = 0xFFFFFF) -> None:
        self.lines([begin], [end], radius, color)

    def rect(self, topleft: Any, bottomright: Any, radius: float = 1, color: int = 0xFFFFFF) -> None:
        (x0, y0), (x1, y1) = topleft, bottomright
        corners = [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
        self.lines(corners, corners[1:] + corners[:1], radius, color)

    def triangles(self, a: Any, b: Any, c: Any, color: Any = 0xFFFFFF) -> None:
        with self._drawing() as canvas:
            fill_triangles(canvas, _points(a), _points(b), _points(c), _rgb(_array(color)))

    def triangle(self, a: Any, b: Any, c: Any, color: int = 0xFFFFFF) -> None:
        self.triangles([a], [b], [c], color)

    def text(self, content: str, pos: Any, font_size: float = 15, color: int = 0xFFFFFF) -> None:
        """`content` with its top left corner at `pos` (Taichi's: 2 pixels right of it), `font_size` pixels per
        line; newlines start new lines, characters the font lacks are drawn as boxes."""
        height, width = self.canvas.shape[:2]
        x, y = (float(v) for v in _points(pos)[0])
        left = int(np.floor(np.clip(x, -1e6, 1e6) * width)) + TEXT_PADDING
        top = height - int(np.floor(np.clip(y, -1e6, 1e6) * height))
        with self._drawing() as canvas:
            draw_text(canvas, str(content), left, top, float(font_size), _rgb(color))

    # ---- frames --------------------------------------------------------------------------------------------
    def get_image(self) -> np.ndarray:
        """The frame being drawn as Taichi returns it: RGBA float32, img[x, y] like set_image takes (after
        show(), the cleared canvas)."""
        alpha = np.ones(self.canvas.shape[:2], np.float32) if self._alpha is None else self._alpha
        rgba = np.concatenate([self.canvas, alpha[..., None]], axis=2)
        return np.ascontiguousarray(np.transpose(rgba[::-1], (1, 0, 2)))

    def show(self, file: str | None = None) -> None:
        """Shows (counts, saves) the frame: the canvas with the widgets over it where show_gui is on. Then, as
        in Taichi, the canvas is cleared to the background color: each frame is drawn from scratch."""
        frame = self.canvas
        if self.show_gui and self._widgets:
            frame = self.canvas.copy()
            _draw_widgets(frame, self._widgets)
        self._frame_shown(frame, file)
        self.clear()

    def close(self) -> None:
        self.running = False
        self._close_window()

    def __enter__(self) -> "GUI":
        """`with wk.GUI(...) as gui:` (as in Taichi): the GUI is closed when the block ends."""
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _draw_widgets(frame: np.ndarray, widgets: list[_PlacedWidget]) -> None:
    """Taichi's widget panel: boxes WIDGET_WIDTH wide down the right edge from the top, each with its caption
    in its top left corner; a slider has a bar near its bottom and a knob at its value."""
    width = frame.shape[1]
    left, top = width - WIDGET_WIDTH, 0
    for placed in widgets:
        height = WIDGET_HEIGHT[placed.kind]
        fill_rect(frame, left + 1, top + 1, WIDGET_WIDTH - 2, height - 2, _rgb(WIDGET_BACKGROUND))
        draw_text(frame, placed.caption(), left + TEXT_PADDING, top + TEXT_PADDING, WIDGET_TEXT_SIZE[placed.kind],
                  _rgb(WIDGET_TEXT))
        if placed.kind == "slider":
            bar_top = top + height - SLIDER_PADDING - 3
            fill_rect(frame, left + SLIDER_PADDING, bar_top, WIDGET_WIDTH - 2 * SLIDER_PADDING, 3, _rgb(SLIDER_BAR))
            span = placed.maximum - placed.minimum
            fraction = float(np.clip((float(placed.widget.value) - placed.minimum) / span, 0, 1)) if span else 0.0
            knob_x = left + SLIDER_PADDING + fraction * (WIDGET_WIDTH - 2 * SLIDER_PADDING)
            splat_discs(frame, np.array([[(knob_x + 0.5) / width, 1 - (bar_top + 1.5) / frame.shape[0]]]), 5.0,
                        _rgb(SLIDER_KNOB))
        top += height


def _gui_filter_accepts(filters: tuple[Any, ...], event: Event) -> bool:
    """ti.GUI's get_event filters: none (any event), a key or an event type, or a (type, key) pair."""
    if not filters:
        return True
    for wanted in filters:
        if isinstance(wanted, tuple):
            if all(part in (event.type, event.key) for part in wanted):
                return True
        elif wanted in (event.type, event.key):
            return True
    return False


def _rgb_ints(color: Any, count: int) -> np.ndarray:
    """Per-item 0xRRGGBB colors as an int array of `count`."""
    return np.broadcast_to(np.asarray(_array(color), dtype=np.int64).reshape(-1), (count,))
