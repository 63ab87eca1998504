"""demos/_chart.py and the aim demo's loss panel: axes (linear, or log when the values span decades) with their
tick labels in wgkern's font, and the curve drawn through the pixels of the recorded values."""
from __future__ import annotations

import numpy as np
import pytest

from tests.demo_modules import demo, helper
from tests.error_bounds import f32_bound
from wgkern.font import text_mask, text_size

chart = helper("_chart")
overlay = helper("_overlay")


def _blank(height: int = 240, width: int = 320) -> np.ndarray:
    return np.zeros((height, width, 3), np.float32)


def test_axes_are_log_when_the_values_span_more_than_a_decade():
    log = chart.value_axis(np.array([120.5, 30.0, 3.6]))
    assert log.log and (log.low, log.high) == (1.0, 1000.0) and log.labels() == ["1", "10", "100", "1000"]
    assert chart.value_axis(np.array([2.0, 5.0, np.nan])) == chart.Axis(2.0, 5.0, False, (2.0, 3.0, 4.0, 5.0))
    assert not chart.value_axis(np.array([-1.0, 100.0])).log               # not all positive: linear
    wide = chart.value_axis(np.array([1e-9, 1e3]))
    assert wide.log and len(wide.ticks) <= chart.MAX_TICKS and wide.labels()[0] == "1e-9"
    assert chart.linear_axis(3.0, 3.0).low < 3.0 < chart.linear_axis(3.0, 3.0).high
    assert chart.linear_axis(1.0, 40.0, extend=False).ticks == (10.0, 20.0, 30.0, 40.0)
    assert chart.tick_label(0.001, True) == "0.001" and chart.tick_label(2.5, False) == "2.5"


def test_the_curve_runs_through_the_pixels_of_its_values():
    canvas = _blank()
    xs, ys = np.arange(1, 6), np.array([10.0, 1.0, 0.1, 0.01, 0.001])
    plot = chart.draw_line_chart(canvas, 8, 6, 300, 220, xs, ys, "loss", "iteration")
    assert plot.y.log and (plot.y.low, plot.y.high) == (0.001, 10.0)
    assert (plot.left, plot.top) == (8 + chart.LEFT_MARGIN, 6 + chart.TOP_MARGIN)
    # 10 at the area's top left pixel, 0.001 at its bottom right, each decade a quarter of the height between
    right, bottom = plot.left + plot.width - 1, plot.top + plot.height - 1
    corners = [(plot.top, plot.left), (bottom, right)]
    middle = (plot.top + round(0.5 * (plot.height - 1)), plot.left + round(0.5 * (plot.width - 1)))
    for row, col in [*corners, middle]:
        assert np.array_equal(canvas[row, col], chart.CURVE_COLOR), (row, col)
    rows, cols = plot.pixels(xs, ys)
    assert list(zip(rows, cols)) == [corners[0], *list(zip(rows, cols))[1:4], corners[1]]
    assert np.array_equal(canvas[rows.astype(int), cols.astype(int)], np.tile(chart.CURVE_COLOR, (5, 1)))
    # the curve's pixels reach CURVE_RADIUS beyond its end points, no further (labels and axes have other colors)
    curve_rows, curve_cols = np.nonzero(np.all(canvas == chart.CURVE_COLOR, axis=2))
    reach = chart.CURVE_RADIUS
    assert (curve_rows.min(), curve_cols.min()) == (plot.top - reach, plot.left - reach)
    assert (curve_rows.max(), curve_cols.max()) == (bottom + reach, right + reach)
    assert len(curve_rows) > plot.width


def test_tick_labels_are_the_fonts_masks_beside_their_ticks():
    canvas = _blank()
    plot = chart.draw_line_chart(canvas, 0, 0, 320, 240, np.arange(1, 4), np.array([50.0, 5.0, 0.05]), "loss",
                                 "iteration")
    rows, _ = plot.pixels(np.full(len(plot.y.ticks), 1.0), np.array(plot.y.ticks))
    assert plot.y.labels() == ["0.01", "0.1", "1", "10", "100"]
    for row, label in zip(rows.astype(int), plot.y.labels()):
        mask = text_mask(label, chart.LABEL_SIZE)
        width, height = text_size(label, chart.LABEL_SIZE)
        left, top = plot.left - chart.TICK - 2 - width, row - height // 2
        drawn = canvas[top:top + height, left:left + width].astype(np.float64)
        # blended onto black: mask * color, one f32 multiply-add per channel
        assert np.abs(drawn - mask[..., None] * chart.LABEL_COLOR).max() <= f32_bound(2, 1.0), label
    title = text_mask("loss (log scale)", chart.LABEL_SIZE)
    assert np.array_equal(canvas[:title.shape[0], :title.shape[1], 0] > 0, title > 0)


def test_points_off_the_axis_are_left_out_not_drawn_wrong():
    canvas = _blank()
    plot = chart.draw_line_chart(canvas, 0, 0, 320, 240, np.arange(1, 5), np.array([1.0, np.nan, np.inf, 0.5]),
                                 "loss", "iteration")
    assert not plot.y.log and plot.y.low <= 0.5 and plot.y.high >= 1.0
    rows, cols = plot.pixels(np.array([1.0, 4.0]), np.array([1.0, 0.5]))
    assert np.array_equal(canvas[int(rows[0]), int(cols[0])], chart.CURVE_COLOR)
    assert np.array_equal(canvas[int(rows[1]), int(cols[1])], chart.CURVE_COLOR)


def test_the_aim_panel_plots_the_recorded_losses(arch):
    aim = demo("aim")
    state: dict = {}
    frames = []
    for frame in aim.simulate(7, state):
        frames.append((frame.step, list(state["losses"]), frame.draw()))
    assert [step for step, _, _ in frames] == [5, 7]
    for step, losses, image in frames:
        assert len(losses) == step
        left, top, width, height = aim.chart_box()
        assert top >= overlay.BAND_HEIGHT and left >= aim.SCENE_WIDTH and left + width <= aim.WIDTH
        plot = chart.plot_area(left, top, width, height, np.arange(1, step + 1), np.array(losses))
        rows, cols = plot.pixels(np.arange(1, step + 1), np.array(losses))
        assert (cols[0], cols[-1]) == (plot.left, plot.left + plot.width - 1)
        for row, col in zip(rows.astype(int), cols.astype(int)):
            assert np.array_equal(image[row, col], chart.CURVE_COLOR), (step, row, col)
    assert frames[0][1] == frames[1][1][:5]                  # the curve grows: the first five losses kept


@pytest.mark.parametrize("count", [1, 2])
def test_a_curve_of_one_or_two_values_is_drawn(count):
    canvas = _blank()
    xs, ys = np.arange(1, count + 1), np.linspace(2.0, 1.0, count)
    plot = chart.draw_line_chart(canvas, 0, 0, 320, 240, xs, ys, "loss", "iteration")
    rows, cols = plot.pixels(xs, ys)
    assert all(np.array_equal(canvas[int(r), int(c)], chart.CURVE_COLOR) for r, c in zip(rows, cols))


def test_a_long_curve_is_thinned_keeping_its_end_points():
    canvas = _blank()
    xs = np.arange(1, 20001)
    ys = 100.0 * np.exp(-xs / 4000.0)                   # 100 down to 0.67: more than a decade, log axis
    plot = chart.draw_line_chart(canvas, 0, 0, 320, 240, xs, ys, "loss", "iteration")
    assert plot.y.log
    rows, cols = plot.pixels(xs[[0, -1]], ys[[0, -1]])
    assert (int(cols[0]), int(cols[1])) == (plot.left, plot.left + plot.width - 1)
    for row, col in zip(rows.astype(int), cols.astype(int)):
        assert np.array_equal(canvas[row, col], chart.CURVE_COLOR)
