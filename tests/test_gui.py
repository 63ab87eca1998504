"""wk.GUI (wgkern/gui.py): Taichi's drawing calls rendered off-screen, frames saved by show(file)."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk

from tests.runtime.test_cli import _read_png


def test_fractal_style_program_saves_its_frames(arch, tmp_path):
    n = 32
    pixels = wk.field(wk.f32, shape=(n * 2, n))

    @wk.kernel
    def paint(t: wk.f32):
        for i, j in pixels:
            pixels[i, j] = wk.cast((i + j + int(t)) % 2, wk.f32)

    gui = wk.GUI("Julia Set", res=(n * 2, n), show_gui=False)
    for frame in range(3):
        paint(frame)
        gui.set_image(pixels)
        gui.show(str(tmp_path / f"{frame:03d}.png") if frame == 2 else None)
    assert gui.frame == 3 and gui.running and not gui.get_event(gui.ESCAPE)
    image = _read_png(tmp_path / "002.png")
    assert image.shape == (n, n * 2, 4)
    img = pixels.to_numpy()                          # img[x, y]: x to the right, y upwards
    np.testing.assert_array_equal(image[::-1, :, 0].T, (img * 255).astype(np.uint8))
    gui.close()
    assert not gui.running


def test_shapes_land_where_taichi_puts_them(tmp_path):
    gui = wk.GUI("shapes", res=100, background_color=0x112233, show_gui=False)
    gui.circles(np.array([[0.25, 0.25], [0.75, 0.75]]), radius=3, palette=[0xFF0000, 0x00FF00],
                palette_indices=np.array([0, 1]))
    gui.line([0.0, 0.5], [1.0, 0.5], radius=1, color=0x0000FF)
    gui.triangle([0.1, 0.9], [0.3, 0.9], [0.1, 0.7], color=0xFFFFFF)
    image = gui.get_image()                                       # RGBA, as Taichi's
    assert image.shape == (100, 100, 4) and image.dtype == np.float32
    assert image[25, 25].tolist() == [1.0, 0.0, 0.0, 1.0] and image[75, 75].tolist() == [0.0, 1.0, 0.0, 1.0]
    assert image[50, 50].tolist() == [0.0, 0.0, 1.0, 1.0]
    assert image[13, 86].tolist() == [1.0, 1.0, 1.0, 1.0]        # inside the triangle (x right, y up)
    assert np.allclose(image[90, 10], [0x11 / 255, 0x22 / 255, 0x33 / 255, 1.0])
    path = tmp_path / "shapes.png"
    gui.show(str(path))
    assert _read_png(path).shape == (100, 100, 4)


def test_max_frames_ends_an_interactive_loop_headless(tmp_path, monkeypatch):
    monkeypatch.setenv("WK_GUI_MAX_FRAMES", "3")
    monkeypatch.setenv("WK_GUI_SAVE", str(tmp_path / "last.png"))
    gui = wk.GUI("loop", res=(8, 4), show_gui=False)
    shown = 0
    while gui.running:
        gui.circle((0.5, 0.5), radius=2, color=0xFF0000)
        gui.show()
        shown += 1
    assert shown == 3 and (tmp_path / "last.png").stat().st_size > 0
    monkeypatch.setenv("WK_GUI_MAX_FRAMES", "many")
    with pytest.raises(ValueError, match="WK_GUI_MAX_FRAMES must be a frame count"):
        wk.GUI("bad", res=4, show_gui=False)


def test_max_frames_closes_the_window_for_every_loop_shape(monkeypatch, capsys):
    monkeypatch.setenv("WK_GUI_MAX_FRAMES", "2")
    gui = wk.GUI("escape", res=4, show_gui=False)
    assert not gui.get_event(wk.GUI.ESCAPE)
    shown = 0
    while not gui.get_event(wk.GUI.ESCAPE):         # the loop of programs that quit on Escape
        gui.show()
        shown += 1
    assert shown == 2 and gui.event.key == wk.GUI.ESCAPE and not gui.running
    assert gui.get_event((wk.GUI.PRESS, wk.GUI.EXIT)) and not gui.get_events()
    gui = wk.GUI("for", res=4, show_gui=False)
    with pytest.raises(SystemExit) as ended:         # a loop that never asks: the next frame ends the program
        for _ in range(10 ** 6):
            gui.show()
    assert ended.value.code == 0 and gui.frame == 2 and "ending it" in capsys.readouterr().err
    window = wk.ui.Window("ggui", (4, 4), show_window=False)
    while window.running:
        window.show()
    assert window.get_event(wk.ui.PRESS) and window.event.key == wk.ui.ESCAPE
    assert [e.key for e in window.get_events()] == ["WMClose"]


def test_per_point_radii_widgets_arrows_and_taichi_helpers(tmp_path):
    gui = wk.GUI("extras", res=100, show_gui=False)
    gui.circles(np.array([[0.25, 0.5], [0.75, 0.5]]), radius=np.array([1.0, 20.0]))
    image = gui.get_image()[..., :3].sum(axis=2) > 0
    assert image[:50].sum() <= 9 and image[50:].sum() > 1000          # each point its own radius
    gui.clear()
    gui.lines(np.array([[0.0, 0.0], [0.1, 0.1], [np.nan, 0.0]]), np.array([[1e5, 1.0], [0.9, 0.9], [1.0, 1.0]]),
              radius=np.array([1, 3, 2]), color=np.array([0xFF0000, 0x00FF00, 0x0000FF]))
    drawn = gui.get_image()
    assert drawn[..., 0].any() and drawn[..., 1].any() and not drawn[..., 2].any()   # the NaN line is skipped
    gui.arrows(np.array([[0.5, 0.5]]), np.array([[0.2, 0.0]]), color=0x00FF00)
    gui.arrow_field(np.full((4, 4, 2), 0.3))
    gui.point_field(np.full((3, 3), 2.0))
    gui.contour(np.arange(10000.0).reshape(100, 100), normalize=True)
    assert gui.get_image()[99, 99, 0] == 1.0 and gui.get_image()[0, 0, 0] == 0.0
    slider = gui.slider("speed", 0.5, 2.0)
    slider.value = 1.5
    assert slider.value == 1.5 and gui.button("reset") == "WidgetButton_reset" and gui.label("n").value == 0
    assert wk.rgb_to_hex([1.0, 0.5, 0.0]) == 0xFF7F00 and wk.hex_to_rgb(0xFF0000) == (1.0, 0.0, 0.0)
    # as Taichi: channels along the first axis (per-item arrays), truncated
    assert wk.rgb_to_hex(np.array([[0.1, 0.5], [0.2, 0.2], [1, 1]])).tolist() == [1651711, 8336383]
    wk.tools.imwrite(np.random.default_rng(0).random((8, 4, 3)), str(tmp_path / "a.png"))
    wk.imwrite(np.zeros((8, 4), np.uint8), str(tmp_path / "b.png"))
    assert (tmp_path / "a.png").read_bytes()[:4] == b"\x89PNG" and (tmp_path / "b.png").stat().st_size > 0


def _rows(gui):
    """The GUI's frame as float RGB rows from the top."""
    return np.transpose(gui.get_image()[..., :3], (1, 0, 2))[::-1]


def _ink_box(mask):
    """(top, bottom, left, right) inclusive of the True pixels."""
    rows, cols = np.nonzero(mask)
    return rows.min(), rows.max(), cols.min(), cols.max()


def test_text_is_drawn_at_its_top_left_in_its_color():
    gui = wk.GUI("text", res=(200, 100), show_gui=False)
    gui.text("E", (0.25, 0.75), font_size=20, color=0xFF0000)          # 2 pixels per font unit: crisp
    rows = _rows(gui)
    ink = rows.sum(axis=2) > 0
    # Taichi's anchor: the text box's top left is at pos, 2 pixels to the right; a gap row (2 px) above capitals
    assert _ink_box(ink) == (25 + 2, 25 + 2 + 14 - 1, 50 + 2, 50 + 2 + 10 - 1)
    assert np.array_equal(np.unique(rows[ink], axis=0), [[1.0, 0.0, 0.0]])
    gui.clear(0x000000)
    gui.text("E", (0.25, 0.75), font_size=13, color=0x00FF00)           # antialiased: greens, partly covered
    drawn = _rows(gui)
    assert drawn[..., 1].max() == 1.0 and (drawn[..., 1] > 0).any() and not drawn[..., [0, 2]].any()


def test_text_size_scales_with_font_size_and_lines_stack():
    heights = []
    for size in (10, 30):
        gui = wk.GUI("sizes", res=300, show_gui=False)
        gui.text("HELLO", (0.0, 1.0), font_size=size)
        top, bottom, left, right = _ink_box(_rows(gui)[..., 0] > 0.5)
        heights.append(bottom - top + 1)
        assert right - left + 1 == (5 * 6 - 1) * size // 10               # five glyphs, 6 units apart
    assert heights == [7, 21]
    gui = wk.GUI("lines", res=100, show_gui=False)
    gui.text("I\nI", (0.0, 1.0), font_size=20)
    ink_rows = np.nonzero((_rows(gui)[..., 0] > 0).any(axis=1))[0]
    assert ink_rows.min() == 2 and ink_rows.max() == 20 + 2 + 14 - 1      # the second line 20 pixels lower


def test_text_outside_ascii_is_boxes_and_clipped_text_is_fine():
    gui = wk.GUI("unicode", res=100, show_gui=False)
    gui.text("\u00e9\u65e5\x07", (0.1, 0.9), font_size=10, color=0xFFFFFF)     # drawn as outlined boxes
    ink = _rows(gui)[..., 0] > 0
    top, bottom, left, right = _ink_box(ink)
    assert (top, bottom) == (10 + 1, 10 + 7) and (left, right) == (12, 12 + 3 * 6 - 2)
    assert not ink[top + 3, left + 2]                                      # hollow
    gui.text("off the edge", (0.95, 0.02), font_size=40)
    gui.text("", (0.5, 0.5))
    gui.text(12.5, (-0.5, 1.5))                                            # not a string; off the canvas


def test_widgets_are_drawn_down_the_right_edge_when_shown(tmp_path, capsys):
    gui = wk.GUI("widgets", res=(400, 200), show_gui=True)
    assert "off-screen" in capsys.readouterr().err
    slider = gui.slider("speed", 0.0, 2.0)
    slider.value = 2.0
    gui.label("count")
    gui.button("go")
    gui.show(str(tmp_path / "frame.png"))
    frame = _read_png(tmp_path / "frame.png")[..., :3].astype(int)
    assert (frame[1:39, 201:399] == 0xCC).all(axis=2).mean() > 0.7      # the slider's box, mostly background
    assert (frame[:80, :199] == 0).all()                                  # nothing left of the panel
    assert (frame[45, 205:300] == 0x11).all(axis=1).any()                # the label's caption
    assert (frame[27:30, 211:370] == 0x33).all()                        # the slider bar ...
    assert (frame[28, 385:392] == 0x55).all(axis=1).any()                 # ... and its knob at the maximum
    assert not gui.get_image()[..., :3].any()                            # the canvas itself is untouched
    quiet = wk.GUI("quiet", res=(400, 200), show_gui=False)
    quiet.slider("speed", 0.0, 1.0)
    quiet.show(str(tmp_path / "quiet.png"))
    assert not _read_png(tmp_path / "quiet.png")[..., :3].any()


def test_gui_is_a_context_manager_closed_at_the_end_of_the_block():
    with wk.GUI("ctx", res=(6, 4), show_gui=False) as gui:
        assert gui.running
        gui.set_image(np.full((6, 4, 3), 0.5, np.float32))
        gui.show()
    assert not gui.running


def test_show_clears_the_canvas_so_each_frame_is_drawn_from_scratch(tmp_path):
    """As in Taichi: a program that draws moving shapes and shows them every frame leaves no trail."""
    gui = wk.GUI("trail", res=(40, 20), background_color=0x102030, show_gui=False)
    background = [0x10 / 255, 0x20 / 255, 0x30 / 255]
    for frame in range(3):
        gui.circle((0.2 + 0.3 * frame, 0.5), radius=3, color=0xFFFFFF)
        gui.show(str(tmp_path / f"f{frame}.png"))
        np.testing.assert_allclose(gui.get_image(), np.broadcast_to(background + [1.0], (40, 20, 4)), rtol=1e-6)
    last = _read_png(tmp_path / "f2.png")[..., :3].astype(int)
    assert (last[10, 32] == 255).all()              # this frame's circle (rows from the top)
    assert (last[10, 8] == [0x10, 0x20, 0x30]).all() and (last[10, 20] == [0x10, 0x20, 0x30]).all()


def test_get_image_alpha_follows_taichi_rules():
    """get_image is RGBA: opaque after clearing and where something is drawn; set_image's alpha is the image's
    own (four channels), its grey value (one channel) or 0 (two or three channels), as Taichi's GUI keeps it."""
    gui = wk.GUI("alpha", res=(8, 6), show_gui=False)
    assert (gui.get_image()[..., 3] == 1.0).all()
    rgba = np.zeros((8, 6, 4), np.float32)
    rgba[1, 2] = (0.25, 0.5, 1.0, 0.7)
    gui.set_image(rgba)
    np.testing.assert_allclose(gui.get_image()[1, 2], [0.25, 0.5, 1.0, 0.7])
    grey = np.zeros((8, 6), np.float32)
    grey[3, 4] = 0.5
    gui.set_image(grey)
    np.testing.assert_allclose(gui.get_image()[3, 4], [0.5] * 4)
    gui.set_image(np.zeros((8, 6, 3), np.uint8))
    gui.circle((0.5, 0.5), radius=2, color=0xFF0000)
    image = gui.get_image()
    assert image[4, 3].tolist() == [1.0, 0.0, 0.0, 1.0] and image[0, 0].tolist() == [0.0, 0.0, 0.0, 0.0]
    gui.show()
    assert (gui.get_image()[..., 3] == 1.0).all()
