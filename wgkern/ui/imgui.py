"""`window.get_gui()`: Taichi's immediate-mode widgets with no window behind them. Nothing is drawn and nobody
clicks, so every widget hands back the value the program gave it: sliders and checkboxes their `old_value`,
color_edit_3 its color, buttons False. Sub-windows are accepted and nest like Taichi's begin/end."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator


class Gui:
    """What `window.get_gui()` (older: `window.GUI`) returns."""

    def __init__(self) -> None:
        self._open: list[str] = []          # names of the sub-windows begun and not yet ended

    @contextmanager
    def sub_window(self, name: str, x: float, y: float, width: float, height: float) -> Iterator[Gui]:
        """`with gui.sub_window("controls", 0.05, 0.1, 0.2, 0.3) as w:` (position and size relative to the window)."""
        self.begin(name, x, y, width, height)
        try:
            yield self
        finally:
            self.end()

    def begin(self, name: str, x: float, y: float, width: float, height: float) -> None:
        self._open.append(name)

    def end(self) -> None:
        if not self._open:
            raise RuntimeError("gui.end() without a matching gui.begin(...)")
        self._open.pop()

    def text(self, text: str, color: Any = None) -> None:
        return None

    def button(self, text: str) -> bool:
        return False

    def checkbox(self, text: str, old_value: bool) -> bool:
        return old_value

    def slider_int(self, text: str, old_value: int, minimum: int, maximum: int) -> int:
        return old_value

    def slider_float(self, text: str, old_value: float, minimum: float, maximum: float) -> float:
        return old_value

    def color_edit_3(self, text: str, old_value: Any) -> Any:
        return old_value
