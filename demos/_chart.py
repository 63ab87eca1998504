"""A line chart drawn into a demo frame (the aim demo's loss curve): two axes with tick labels, linear or, when the
values span more than a decade, logarithmic, and the values as a polyline through pixel centres (wgkern/raster.py's
`stroke_segments`), labels in wgkern's own font.

`Axis` maps values to [0, 1] along a side of the plot; `Plot` maps a pair of axes to the pixels of a box of the
frame, so a test can tell where a value was drawn."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from wgkern.font import text_size
from wgkern.raster import draw_text, fill_rect, stroke_segments

LABEL_SIZE = 10                       # pixels per line: one pixel per font unit, crisp
LEFT_MARGIN = 44                      # room for the value labels ("0.0001" is 36 pixels wide)
TOP_MARGIN = 2 * LABEL_SIZE           # the chart's title
BOTTOM_MARGIN = 2 * LABEL_SIZE + 4    # the step labels and the step axis' name
RIGHT_MARGIN = 12                     # half of the last step label
TICK = 3                              # tick marks' length in pixels
MAX_TICKS = 6
AXIS_COLOR = np.array([0.55, 0.58, 0.62], np.float32)
GRID_ALPHA = 0.18
LABEL_COLOR = np.array([0.8, 0.86, 0.92], np.float32)
CURVE_COLOR = np.array([1.0, 0.6, 0.15], np.float32)
CURVE_RADIUS = 1                      # the curve's pixels: each point's and its four neighbours'


@dataclass(frozen=True)
class Axis:
    """An axis from `low` to `high` (powers of ten when `log`), its tick values and their labels."""
    low: float
    high: float
    log: bool
    ticks: tuple[float, ...]

    def fraction(self, values: np.ndarray) -> np.ndarray:
        """Where `values` lie along the axis: 0 at `low`, 1 at `high`."""
        values = np.asarray(values, np.float64)
        if self.log:
            with np.errstate(divide="ignore", invalid="ignore"):
                return (np.log10(values) - math.log10(self.low)) / (math.log10(self.high) - math.log10(self.low))
        return (values - self.low) / (self.high - self.low)

    def labels(self) -> list[str]:
        return [tick_label(tick, self.log) for tick in self.ticks]


def nice_step(span: float) -> float:
    """A step of 1, 2 or 5 times a power of ten that cuts `span` into at most MAX_TICKS - 1 parts."""
    rough = span / (MAX_TICKS - 1)
    power = 10.0 ** math.floor(math.log10(rough))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= rough)


def linear_axis(low: float, high: float, *, extend: bool = True) -> Axis:
    """A linear axis over [low, high], widened to whole steps when `extend`; equal ends get a span of one step
    of their magnitude."""
    if high <= low:
        half = max(abs(low), 1.0) * 0.5
        low, high = low - half, high + half
    step = nice_step(high - low)
    if extend:
        low, high = math.floor(low / step) * step, math.ceil(high / step) * step
    first = math.ceil(low / step - 1e-9)
    ticks = tuple(round(k * step, 12) for k in range(first, int(math.floor(high / step + 1e-9)) + 1))
    return Axis(low, high, False, ticks)


def log_axis(low: float, high: float) -> Axis:
    """A logarithmic axis from the power of ten at or below `low` to the one at or above `high`, ticks at powers
    of ten (every second or third one where there are many)."""
    bottom, top = math.floor(math.log10(low)), math.ceil(math.log10(high))
    top = max(top, bottom + 1)
    stride = max(1, math.ceil((top - bottom + 1) / MAX_TICKS))
    return Axis(10.0 ** bottom, 10.0 ** top, True, tuple(10.0 ** k for k in range(bottom, top + 1, stride)))


def value_axis(values: np.ndarray) -> Axis:
    """The axis for `values` (their finite ones): logarithmic when all are positive and the largest is more than
    ten times the least, linear otherwise."""
    finite = np.asarray(values, np.float64)
    finite = finite[np.isfinite(finite)]
    if not finite.size:
        return linear_axis(0.0, 1.0)
    low, high = float(finite.min()), float(finite.max())
    if low > 0 and high > 10 * low:
        return log_axis(low, high)
    return linear_axis(low, high)


def tick_label(value: float, log: bool) -> str:
    """A tick's label: powers of ten from 1e-4 to 1e4 written out ("0.001", "100"), others as "1e-6"; linear
    ticks in the shortest form ("2.5", "40")."""
    if log:
        power = round(math.log10(value))
        return f"{value:g}" if -4 <= power <= 4 else f"1e{power}"
    return f"{value:g}"


@dataclass(frozen=True)
class Plot:
    """The plotting area: `width` x `height` pixels from pixel (top, left) of the frame, and its two axes."""
    left: int
    top: int
    width: int
    height: int
    x: Axis
    y: Axis

    def pixels(self, xs: np.ndarray, ys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rows, cols) of the frame where the points (xs, ys) are drawn: the nearest pixel, the axes' ends on
        the area's first and last pixels (NaN off a log axis)."""
        cols = self.left + np.round(self.x.fraction(xs) * (self.width - 1))
        rows = self.top + np.round((1.0 - self.y.fraction(ys)) * (self.height - 1))
        return rows, cols


def plot_area(left: int, top: int, width: int, height: int, xs: np.ndarray, ys: np.ndarray) -> Plot:
    """The Plot of a chart of (xs, ys) drawn in the box of `width` x `height` pixels from (top, left): the box
    less the margins for the title and labels; xs on a linear axis over exactly their range, ys on value_axis."""
    xs = np.asarray(xs, np.float64)
    x_axis = linear_axis(float(xs.min()), float(xs.max()), extend=False) if xs.size else linear_axis(0.0, 1.0)
    return Plot(left + LEFT_MARGIN, top + TOP_MARGIN, width - LEFT_MARGIN - RIGHT_MARGIN,
                height - TOP_MARGIN - BOTTOM_MARGIN, x_axis, value_axis(ys))


def draw_line_chart(canvas: np.ndarray, left: int, top: int, width: int, height: int, xs: np.ndarray,
                    ys: np.ndarray, title: str, x_name: str) -> Plot:
    """A chart of ys against xs in the box of `width` x `height` pixels from pixel (top, left) of `canvas` (float
    RGB, rows from the top): `title` above, axes with tick labels and grid lines, `x_name` under the step labels,
    the points joined by a polyline. Non-finite points are left out. Returns the Plot (where each value went)."""
    plot = plot_area(left, top, width, height, xs, ys)
    draw_text(canvas, title + (" (log scale)" if plot.y.log else ""), left, top, LABEL_SIZE, LABEL_COLOR)
    _draw_axes(canvas, plot)
    label_top = plot.top + plot.height + TICK + 2
    x_name_width = text_size(x_name, LABEL_SIZE)[0]
    draw_text(canvas, x_name, plot.left + (plot.width - x_name_width) // 2, label_top + LABEL_SIZE, LABEL_SIZE,
              LABEL_COLOR)
    _draw_curve(canvas, plot, np.asarray(xs, np.float64), np.asarray(ys, np.float64))
    return plot


def _draw_axes(canvas: np.ndarray, plot: Plot) -> None:
    """The two axis lines, ticks with labels, and faint grid lines across the area."""
    right, bottom = plot.left + plot.width - 1, plot.top + plot.height - 1
    rows, _ = plot.pixels(np.full(len(plot.y.ticks), plot.x.low), np.array(plot.y.ticks))
    for row, label in zip(rows.astype(int), plot.y.labels()):
        fill_rect(canvas, plot.left, row, plot.width, 1, AXIS_COLOR, alpha=GRID_ALPHA)
        fill_rect(canvas, plot.left - TICK, row, TICK, 1, AXIS_COLOR)
        label_width, label_height = text_size(label, LABEL_SIZE)
        draw_text(canvas, label, plot.left - TICK - 2 - label_width, row - label_height // 2, LABEL_SIZE,
                  LABEL_COLOR)
    _, cols = plot.pixels(np.array(plot.x.ticks), np.full(len(plot.x.ticks), plot.y.high))
    for col, label in zip(cols.astype(int), plot.x.labels()):
        fill_rect(canvas, col, plot.top, 1, plot.height, AXIS_COLOR, alpha=GRID_ALPHA)
        fill_rect(canvas, col, bottom + 1, 1, TICK, AXIS_COLOR)
        label_width = text_size(label, LABEL_SIZE)[0]
        draw_text(canvas, label, col - label_width // 2, bottom + TICK + 2, LABEL_SIZE, LABEL_COLOR)
    fill_rect(canvas, plot.left - 1, plot.top, 1, plot.height + 1, AXIS_COLOR)
    fill_rect(canvas, plot.left - 1, bottom + 1, right - plot.left + 2, 1, AXIS_COLOR)


def _draw_curve(canvas: np.ndarray, plot: Plot, xs: np.ndarray, ys: np.ndarray) -> None:
    """The finite points joined in order by segments between their pixels' centres, stroked CURVE_RADIUS wide;
    beyond two points per pixel column an evenly spaced subset (first and last kept) is drawn."""
    keep = np.isfinite(xs) & np.isfinite(ys) & (ys > 0 if plot.y.log else True)
    xs, ys = xs[keep], ys[keep]
    if len(xs) > 2 * plot.width:
        pick = np.unique(np.round(np.linspace(0, len(xs) - 1, 2 * plot.width)).astype(int))
        xs, ys = xs[pick], ys[pick]
    if not len(xs):
        return
    rows, cols = plot.pixels(xs, ys)
    height, width = canvas.shape[:2]
    # the centre of pixel (row, col) as a canvas position (x right, y up, [0, 1]^2): raster.pixel_of's inverse
    points = np.stack([(cols + 0.5) / width, (height - 1 - rows + 0.5) / height], axis=1)
    starts = points[:-1] if len(points) > 1 else points
    stroke_segments(canvas, starts, points[1:] if len(points) > 1 else points, CURVE_RADIUS, CURVE_COLOR)
