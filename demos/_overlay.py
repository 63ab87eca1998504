"""The text every demo frame carries: a translucent band across the top holding the demo's title and a line of
its live figures (step or iteration, the demo's own figures such as the loss, what it simulates, steps per second,
arch), drawn with wgkern's own bitmap font (wgkern/font.py, blended by wgkern/raster.py's `draw_text`).

Also owns the formatting of each figure: the demos print their figures to stdout through the same functions, so
what a run prints and what its frames show are the same strings."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from wgkern.raster import draw_text, fill_rect

# Sizes are pixels per line; font.EM_ROWS (10) font units make a line, so 10 and 20 keep the glyphs crisp
# (one and two pixels per font unit) where other sizes would be antialiased.
TITLE_SIZE = 20
FIGURES_SIZE = 10
MARGIN = 4                                  # pixels between the band's edges and its text
BAND_HEIGHT = MARGIN + TITLE_SIZE + FIGURES_SIZE + MARGIN
BAND_COLOR = np.array([0.0, 0.0, 0.0], np.float32)
BAND_ALPHA = 0.75                           # how much of the picture under the band it hides
TITLE_COLOR = np.array([1.0, 1.0, 1.0], np.float32)
FIGURES_COLOR = np.array([0.8, 0.86, 0.92], np.float32)
SEPARATOR = "  |  "


def format_loss(loss: float) -> str:
    """A loss as the demos print and draw it: four significant digits."""
    return f"{loss:.4g}"


def format_rate(per_second: float, unit: str) -> str:
    """A speed in `unit`s per second ("523 steps/s", "12.3 iterations/s"): whole numbers from 100 up, one
    decimal below."""
    digits = 0 if per_second >= 100 else 1
    return f"{per_second:.{digits}f} {unit}s/s"


def figures_line(unit: str, step: int, total: int | None, figures: Sequence[str], count: str,
                 per_second: float | None, arch: str) -> str:
    """The figures of one frame on one line: "step 40/400  |  <figures>  |  32768 particles  |  523 steps/s  |
    cpu". `total` is left out where the run has no end (a window), the rate where none was measured yet."""
    progress = f"{unit} {step}" + (f"/{total}" if total else "")
    rate = [format_rate(per_second, unit)] if per_second is not None else []
    return SEPARATOR.join([progress, *figures, count, *rate, arch])


def draw_overlay(canvas: np.ndarray, title: str, figures: str) -> None:
    """Darken the top BAND_HEIGHT rows of `canvas` (float RGB, rows from the top) and write `title` and the
    `figures` line there, in place."""
    fill_rect(canvas, 0, 0, canvas.shape[1], BAND_HEIGHT, BAND_COLOR, alpha=BAND_ALPHA)
    draw_text(canvas, title, MARGIN, MARGIN, TITLE_SIZE, TITLE_COLOR)
    draw_text(canvas, figures, MARGIN, MARGIN + TITLE_SIZE, FIGURES_SIZE, FIGURES_COLOR)
