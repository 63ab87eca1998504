"""`window.get_gui()`: Taichi's immediate-mode widgets (Dear ImGui's in Taichi), drawn with numpy. Each frame's
sub-windows become panels over the window's image: a translucent box with a title bar and, one row each, the
widgets' labels and values, laid out with ImGui's default metrics and dark colors. In a window on screen the left
mouse button works them as ImGui's do: a slider follows the pointer while the button is held on it, a click
toggles a checkbox, and a clicked button returns True once. Off-screen nobody clicks, so every widget hands back
the value the program gave it: sliders and checkboxes their `old_value`, color_edit_3 its color, buttons False.
The window (window.py) draws the panels last, over the canvas, and starts a new set each frame; the text comes
from font.py through raster.py."""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from wgkern.font import text_size
from wgkern.raster import draw_text, fill_rect
from wgkern.ui import inputs

# Metrics in pixels, after ImGui's default style
FONT_SIZE = 10                  # pixels per text line: one pixel per font unit, so the text stays crisp
WINDOW_PADDING = 8
FRAME_PADDING_X, FRAME_PADDING_Y = 4, 3
ITEM_SPACING_Y = 4
INNER_SPACING = 4               # between a widget and its label
FRAME_HEIGHT = FONT_SIZE + 2 * FRAME_PADDING_Y
TITLE_HEIGHT = FRAME_HEIGHT
ITEM_WIDTH_FRACTION = 0.65      # sliders and color fields take this much of the panel's width
GRAB_WIDTH = 10
IMPLICIT_WINDOW = ("Debug", 60, 60, 400, 400)   # where ImGui puts widgets called outside any sub-window (pixels)

# Colors as (float RGB, alpha), after ImGui's dark style
WINDOW_BACKGROUND = ((0.06, 0.06, 0.06), 0.94)
TITLE_BACKGROUND = ((0.16, 0.29, 0.48), 1.0)
BORDER = ((0.43, 0.43, 0.50), 0.5)
FRAME_BACKGROUND = ((0.16, 0.29, 0.48), 0.54)
BUTTON = ((0.26, 0.59, 0.98), 0.4)
CHECK_MARK = ((0.26, 0.59, 0.98), 1.0)
SLIDER_GRAB = ((0.24, 0.52, 0.88), 1.0)
TEXT = (1.0, 1.0, 1.0)


@dataclass
class Item:
    """One widget row as drawn: its kind ('text', 'button', 'checkbox', 'slider', 'color'), label, the value
    shown (text), and what some kinds need besides: text color, checkbox state, slider position, color."""
    kind: str
    label: str
    value: str = ""
    color: tuple[float, float, float] | None = None
    checked: bool = False
    fraction: float = 0.0


@dataclass
class Panel:
    """A sub-window of this frame: where it is (fractions of the window, or pixels for ImGui's implicit
    window), its rows in call order, and where the next row starts (pixels below the panel's top)."""
    name: str
    placement: tuple[float, float, float, float]
    in_pixels: bool = False
    items: list[Item] = field(default_factory=list)
    next_row: int = TITLE_HEIGHT + WINDOW_PADDING

    def rect(self, width: int, height: int) -> tuple[int, int, int, int]:
        """(left, top, width, height) in pixels on a width x height image."""
        x, y, w, h = self.placement
        if self.in_pixels:
            return int(x), int(y), int(w), int(h)
        return round(x * width), round(y * height), round(w * width), round(h * height)


@dataclass
class Pointer:
    """The mouse as the widgets see it, in pixels from the window's top left: where it is, whether the left
    button is down, and where it was pressed since the last frame."""
    x: float
    y: float
    down: bool
    clicks: list[tuple[float, float]]


class Gui:
    """What `window.get_gui()` (older: `window.GUI`) returns. `changed` is called whenever this frame's panels
    change (the window re-renders its image then)."""

    def __init__(self, changed: Callable[[], None] | None = None, size: tuple[int, int] = (0, 0),
                 pointer: Callable[[], Pointer | None] | None = None) -> None:
        self._changed = changed or (lambda: None)
        self._size = size                                   # the window's (width, height) in pixels
        self._pointer = pointer or (lambda: None)           # None: no mouse (off-screen)
        self._open: list[Panel] = []                        # sub-windows begun and not yet ended
        self._panels: dict[str, Panel] = {}                 # this frame's, in the order first begun
        self._placements: dict[str, tuple[float, float, float, float]] = {}

    @contextmanager
    def sub_window(self, name: str, x: float, y: float, width: float, height: float) -> Iterator[Gui]:
        """`with gui.sub_window("controls", 0.05, 0.1, 0.2, 0.3) as w:` (position of the top left corner and size
        as fractions of the window, from its top left)."""
        self.begin(name, x, y, width, height)
        try:
            yield self
        finally:
            self.end()

    def begin(self, name: str, x: float, y: float, width: float, height: float) -> None:
        """Starts (or, later in the same frame, continues) sub-window `name`. As in Taichi, its first placement
        sticks: later frames asking for another one keep it where it first appeared."""
        placement = self._placements.setdefault(name, (float(x), float(y), float(width), float(height)))
        panel = self._panels.setdefault(name, Panel(name, placement))
        self._open.append(panel)
        self._changed()

    def end(self) -> None:
        if not self._open:
            raise RuntimeError("gui.end() without a matching gui.begin(...)")
        self._open.pop()

    # ---- widgets -------------------------------------------------------------------------------------------
    def text(self, text: str, color: Any = None) -> None:
        self._add(Item("text", str(text), color=None if color is None else tuple(float(c) for c in inputs.rgb(color))))

    def button(self, text: str) -> bool:
        rect = self._add(Item("button", text))
        return self._clicked(rect)

    def checkbox(self, text: str, old_value: bool) -> bool:
        item = Item("checkbox", text, checked=bool(old_value))
        rect = self._add(item)
        if not self._clicked(rect):
            return old_value
        item.checked = not bool(old_value)
        return item.checked

    def slider_int(self, text: str, old_value: int, minimum: int, maximum: int) -> int:
        return self._slider(text, old_value, minimum, maximum, lambda v: int(round(v)), lambda v: f"{int(v)}")

    def slider_float(self, text: str, old_value: float, minimum: float, maximum: float) -> float:
        return self._slider(text, old_value, minimum, maximum, float, lambda v: f"{float(v):.3f}")

    def _slider(self, text: str, old_value: Any, minimum: Any, maximum: Any, cast: Callable[[float], Any],
                shown: Callable[[Any], str]) -> Any:
        item = Item("slider", text, shown(old_value), fraction=_fraction(old_value, minimum, maximum))
        left, top, width, height = self._add(item)
        pointer = self._pointer()
        if pointer is None or not pointer.down or not (left <= pointer.x < left + width
                                                       and top <= pointer.y < top + height):
            return old_value
        fraction = float(np.clip((pointer.x - left - 2 - GRAB_WIDTH / 2) / max(width - 4 - GRAB_WIDTH, 1), 0, 1))
        value = cast(float(minimum) + fraction * (float(maximum) - float(minimum)))
        item.value, item.fraction = shown(value), _fraction(value, minimum, maximum)
        return value

    def color_edit_3(self, text: str, old_value: Any) -> Any:
        rgb = tuple(float(c) for c in inputs.rgb(old_value))
        channels = (round(float(np.clip(c, 0.0, 1.0)) * 255) for c in rgb)
        value = " ".join(f"{name}:{level}" for name, level in zip("RGB", channels))
        self._add(Item("color", text, value, color=rgb))
        return old_value

    # ---- frames --------------------------------------------------------------------------------------------
    def draw(self, image: np.ndarray) -> None:
        """Draws this frame's panels over `image` (float RGB rows from the top), in the order first begun."""
        for panel in self._panels.values():
            _draw_panel(image, panel)

    def new_frame(self) -> None:
        """Forgets this frame's panels (the window calls it once a frame is shown); placements stay."""
        self._panels = {}
        self._open = []

    def _add(self, item: Item) -> tuple[int, int, int, int]:
        """Appends a row to the open panel; returns where it is drawn, (left, top, width, height) in pixels."""
        if self._open:
            panel = self._open[-1]
        else:
            name, *placement = IMPLICIT_WINDOW
            panel = self._panels.setdefault(name, Panel(name, tuple(placement), in_pixels=True))
        panel.items.append(item)
        self._changed()
        left, top, width, _ = panel.rect(*self._size)
        width, height = _item_size(item, round(ITEM_WIDTH_FRACTION * width))
        rect = (left + WINDOW_PADDING, top + panel.next_row, width, height)
        panel.next_row += height + ITEM_SPACING_Y
        return rect

    def _clicked(self, rect: tuple[int, int, int, int]) -> bool:
        """Whether a left click since the last frame landed in `rect`."""
        pointer = self._pointer()
        left, top, width, height = rect
        return pointer is not None and any(left <= x < left + width and top <= y < top + height
                                           for x, y in pointer.clicks)


def _fraction(value: float, minimum: float, maximum: float) -> float:
    """Where `value` sits between minimum and maximum, clamped to [0, 1]."""
    span = float(maximum) - float(minimum)
    return float(np.clip((float(value) - float(minimum)) / span, 0.0, 1.0)) if span else 0.0


def _item_size(item: Item, item_width: int) -> tuple[int, int]:
    """(width, height) in pixels of the part of a row the mouse works (as _draw_item draws it)."""
    label = _shown_label(item.label)
    if item.kind == "text":
        return text_size(label, FONT_SIZE) if label else (0, 0)
    if item.kind == "button":
        return text_size(label, FONT_SIZE)[0] + 2 * FRAME_PADDING_X, FRAME_HEIGHT
    if item.kind == "checkbox":
        return FRAME_HEIGHT + INNER_SPACING + text_size(label, FONT_SIZE)[0], FRAME_HEIGHT
    return item_width, FRAME_HEIGHT


def _shown_label(label: str) -> str:
    """ImGui hides what follows '##' in a label (it only makes the widget's id unique)."""
    return label.split("##", 1)[0]


def _draw_panel(image: np.ndarray, panel: Panel) -> None:
    """One sub-window: background, border, title bar, then its rows from the top; drawing is clipped to it."""
    image_height, image_width = image.shape[:2]
    left, top, width, height = panel.rect(image_width, image_height)
    view_left, view_top = max(left, 0), max(top, 0)
    view = image[view_top:max(top + height, 0), view_left:max(left + width, 0)]
    if not view.size:
        return
    x, y = left - view_left, top - view_top              # the panel's corner in the view (<= 0 where clipped)
    fill_rect(view, x, y, width, height, *WINDOW_BACKGROUND)
    fill_rect(view, x, y, width, TITLE_HEIGHT, *TITLE_BACKGROUND)
    for edge in ((x, y, width, 1), (x, y + height - 1, width, 1), (x, y, 1, height), (x + width - 1, y, 1, height)):
        fill_rect(view, *edge, *BORDER)
    draw_text(view, _shown_label(panel.name), x + WINDOW_PADDING, y + FRAME_PADDING_Y, FONT_SIZE, TEXT)
    item_width = round(ITEM_WIDTH_FRACTION * width)
    row_top = y + TITLE_HEIGHT + WINDOW_PADDING
    for item in panel.items:
        row_top += _draw_item(view, item, x + WINDOW_PADDING, row_top, item_width) + ITEM_SPACING_Y


def _draw_item(view: np.ndarray, item: Item, left: int, top: int, item_width: int) -> int:
    """One widget row with its top left at (top, left); returns the row's height."""
    label = _shown_label(item.label)
    text_top = top + FRAME_PADDING_Y
    if item.kind == "text":
        return draw_text(view, label, left, top, FONT_SIZE, item.color or TEXT)[1]
    if item.kind == "button":
        width = text_size(label, FONT_SIZE)[0] + 2 * FRAME_PADDING_X
        fill_rect(view, left, top, width, FRAME_HEIGHT, *BUTTON)
        draw_text(view, label, left + FRAME_PADDING_X, text_top, FONT_SIZE, TEXT)
        return FRAME_HEIGHT
    if item.kind == "checkbox":
        fill_rect(view, left, top, FRAME_HEIGHT, FRAME_HEIGHT, *FRAME_BACKGROUND)
        if item.checked:
            fill_rect(view, left + 4, top + 4, FRAME_HEIGHT - 8, FRAME_HEIGHT - 8, *CHECK_MARK)
        draw_text(view, label, left + FRAME_HEIGHT + INNER_SPACING, text_top, FONT_SIZE, TEXT)
        return FRAME_HEIGHT
    if item.kind == "slider":
        fill_rect(view, left, top, item_width, FRAME_HEIGHT, *FRAME_BACKGROUND)
        grab_left = left + 2 + round(item.fraction * (item_width - 4 - GRAB_WIDTH))
        fill_rect(view, grab_left, top + 2, GRAB_WIDTH, FRAME_HEIGHT - 4, *SLIDER_GRAB)
        value_width = text_size(item.value, FONT_SIZE)[0]
        draw_text(view, item.value, left + (item_width - value_width) // 2, text_top, FONT_SIZE, TEXT)
    else:                                                   # color: the channels, then a swatch
        fill_rect(view, left, top, item_width - FRAME_HEIGHT - INNER_SPACING, FRAME_HEIGHT, *FRAME_BACKGROUND)
        draw_text(view, item.value, left + FRAME_PADDING_X, text_top, FONT_SIZE, TEXT)
        fill_rect(view, left + item_width - FRAME_HEIGHT, top, FRAME_HEIGHT, FRAME_HEIGHT, np.clip(item.color, 0, 1))
    draw_text(view, label, left + item_width + INNER_SPACING, text_top, FONT_SIZE, TEXT)
    return FRAME_HEIGHT
