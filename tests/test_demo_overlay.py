"""demos/_overlay.py and demos/_common.py: every demo frame carries its title and its real live figures, drawn with
wgkern's font, and the figures a run prints are the strings its frames show."""
from __future__ import annotations

import re

import numpy as np
import pytest

from tests.demo_modules import demo, helper
from tests.error_bounds import f32_bound
from wgkern.font import ADVANCE, text_mask

overlay = helper("_overlay")
common = helper("_common")

PLAIN = np.array([0.3, 0.5, 0.7], np.float32)
# A blend c + a (t - c) of values in [0, 1], after the band's c (1 - a) + a b: five f32 operations on magnitudes
# up to 1 each (float64 numpy reference).
BLEND_BOUND = f32_bound(5, 1.0)


def _band(under: np.ndarray) -> np.ndarray:
    """The title band's color over a picture `under` (float64)."""
    return under * (1.0 - overlay.BAND_ALPHA) + overlay.BAND_ALPHA * overlay.BAND_COLOR.astype(np.float64)


def _expected_text(under: np.ndarray, text: str, size: int, color: np.ndarray) -> np.ndarray:
    """`text`'s font mask blended in `color` over the band, `under` being the picture beneath (float64)."""
    mask = text_mask(text, size).astype(np.float64)[..., None]
    band = _band(under)
    return band + mask * (color.astype(np.float64) - band)


def test_the_band_holds_the_title_and_figures_in_the_fonts_masks():
    plain = np.empty((120, 300, 3), np.float32)
    plain[:] = PLAIN
    canvas = plain.copy()
    title, figures = "Heat diffusion", "step 40/400  |  cpu"
    overlay.draw_overlay(canvas, title, figures)
    assert np.array_equal(canvas[overlay.BAND_HEIGHT:], plain[overlay.BAND_HEIGHT:])     # below the band: as was
    under = np.broadcast_to(PLAIN.astype(np.float64), (overlay.BAND_HEIGHT, 300, 3))
    band = _band(under)
    mask = np.zeros(band.shape[:2], bool)
    for text, top, size, color in ((title, overlay.MARGIN, overlay.TITLE_SIZE, overlay.TITLE_COLOR),
                                   (figures, overlay.MARGIN + overlay.TITLE_SIZE, overlay.FIGURES_SIZE,
                                    overlay.FIGURES_COLOR)):
        rows, cols = text_mask(text, size).shape
        box = (slice(top, top + rows), slice(overlay.MARGIN, overlay.MARGIN + cols))
        expected = _expected_text(under[box], text, size, color)
        assert np.abs(canvas[box] - expected).max() <= BLEND_BOUND, text
        band[box] = expected
        mask[box] = text_mask(text, size) > 0
    assert np.abs(canvas[:overlay.BAND_HEIGHT] - band).max() <= BLEND_BOUND                # nothing else drawn
    assert (np.abs(canvas[:overlay.BAND_HEIGHT] - plain[:overlay.BAND_HEIGHT]).max(axis=2) > 0.1).all()
    assert mask.sum() > 200 and (canvas[:overlay.BAND_HEIGHT][mask].min(axis=1) > 0.75).all()   # white-ish ink


def test_figures_are_formatted_once_for_print_and_frame():
    assert overlay.format_loss(0.012345678) == "0.01235" and overlay.format_loss(120.54) == "120.5"
    for loss in (3.14159e-5, 0.5, 7.25, 1234.5678, 9.87654e7):
        # four significant digits: off by at most half a unit of the fourth, 5e-4 of the value
        assert abs(float(overlay.format_loss(loss)) - loss) <= 5e-4 * loss
    assert overlay.format_rate(523.4, "step") == "523 steps/s"
    assert overlay.format_rate(12.34, "iteration") == "12.3 iterations/s"
    line = overlay.figures_line("iteration", 7, 100, ["loss 0.5 m^2"], "64 cannons", 12.34, "vulkan")
    assert line == "iteration 7/100  |  loss 0.5 m^2  |  64 cannons  |  12.3 iterations/s  |  vulkan"
    assert overlay.figures_line("step", 7, None, [], "32768 particles", None, "cpu") == \
        "step 7  |  32768 particles  |  cpu"


def _recorded(frames, pictures: list):
    """`frames` with each picture drawn also appended to `pictures`, and each frame to pictures' owner's list."""
    for frame in frames:
        def draw(frame=frame):
            pictures.append((frame, frame.draw()))
            return pictures[-1][1]
        yield common.Frame(frame.step, draw, frame.figures)


def _assert_text_shown(shown: np.ndarray, picture: np.ndarray, text: str, top: int, size: int,
                       color: np.ndarray) -> None:
    """`text`'s mask blended over the band at (top, MARGIN) of the RGBA frame `shown`, `picture` being beneath."""
    rows, cols = text_mask(text, size).shape
    box = (slice(top, top + rows), slice(overlay.MARGIN, overlay.MARGIN + cols))
    expected = _expected_text(picture[box].astype(np.float64), text, size, color)
    # to_rgba rounds to the nearest of 255 levels (half a level), after the blend's own f32 error
    assert np.abs(shown[box][..., :3] / 255.0 - expected).max() <= 0.5 / 255 + BLEND_BOUND, text


@pytest.mark.parametrize("name", ["aim", "heat", "mpm", "particles"])
def test_each_demos_frames_show_its_title_and_its_real_step(arch, name):
    module = demo(name)
    steps, pictures = 3, []
    info = common.Demo(name, f"Title of {name}", "N things", arch.value,
                       unit="iteration" if name == "aim" else "step")
    image, elapsed = common.run_headless(info, _recorded(module.simulate(steps), pictures), steps)
    assert image.shape == (module.HEIGHT, module.WIDTH, 4) and elapsed > 0
    ((frame, picture),) = pictures                      # headless: only the last frame is drawn
    assert frame.step == steps
    _assert_text_shown(image, picture, info.title, overlay.MARGIN, overlay.TITLE_SIZE, overlay.TITLE_COLOR)
    prefix = f"{info.unit} {steps}/{steps}  |  " + "".join(f"{f}  |  " for f in frame.figures) + "N things  |  "
    _assert_text_shown(image, picture, prefix, overlay.MARGIN + overlay.TITLE_SIZE, overlay.FIGURES_SIZE,
                       overlay.FIGURES_COLOR)
    below = image[overlay.BAND_HEIGHT:, :, :3] / 255.0 - picture[overlay.BAND_HEIGHT:]
    assert np.abs(below).max() <= 0.5 / 255 + 1e-6                    # the picture itself, rounded to 8 bits


def test_the_aim_loss_printed_is_the_loss_drawn_and_computed(capsys):
    aim = demo("aim")
    steps, state, pictures = 4, {}, []
    info = common.Demo("aim", "Differentiable aiming", "64 cannons", "cpu", unit="iteration")
    image, _ = common.run_headless(info, _recorded(aim.simulate(steps, state, report=True), pictures), steps)
    losses = state["losses"]
    printed = re.findall(r"iteration +(\d+): loss (\S+) m\^2", capsys.readouterr().out)
    assert [int(step) for step, _ in printed] == list(range(1, steps + 1))
    assert [text for _, text in printed] == [overlay.format_loss(loss) for loss in losses]
    ((frame, picture),) = pictures
    assert frame.figures[0] == f"loss {printed[-1][1]} m^2"
    prefix = f"iteration {steps}/{steps}  |  loss {printed[-1][1]} m^2  |  "
    _assert_text_shown(image, picture, prefix, overlay.MARGIN + overlay.TITLE_SIZE, overlay.FIGURES_SIZE,
                       overlay.FIGURES_COLOR)
    # the last loss is the mean squared miss of the last forward pass's landings (64 f32 squares of misses up
    # to 30 m summed atomically: 3 operations each on the running sum, at most 64 * 900)
    miss = state["landing"].to_numpy().astype(np.float64) - state["target"].to_numpy()
    squares = float(np.sum(miss * miss))
    assert abs(losses[-1] * aim.CANNONS - squares) <= f32_bound(3 * aim.CANNONS, aim.CANNONS * 900.0)


def test_live_frames_measure_the_rate_between_frames():
    calls = []

    def frames():
        for step in (5, 10, 15):
            calls.append(step)
            yield common.Frame(step, lambda: np.zeros((60, 200, 3), np.float32), ("loss 1 m^2",))

    info = common.Demo("x", "X", "1 thing", "cpu")
    shown = list(common.live_frames(info, frames()))
    assert len(shown) == 3 and all(f.shape == (60, 200, 4) and f.dtype == np.uint8 for f in shown)
    assert calls == [5, 10, 15]
    assert not np.array_equal(shown[0][:overlay.BAND_HEIGHT], shown[1][:overlay.BAND_HEIGHT])  # step 5 -> 10


def test_a_run_without_a_final_frame_is_an_error():
    info = common.Demo("x", "X", "1 thing", "cpu")
    frames = iter([common.Frame(5, lambda: np.zeros((60, 200, 3), np.float32))])
    with pytest.raises(RuntimeError, match="x: the simulation ended without a frame at step 10"):
        common.run_headless(info, frames, 10)
