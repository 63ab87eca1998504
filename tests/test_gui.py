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
    image = gui.get_image()
    assert image[25, 25].tolist() == [1.0, 0.0, 0.0] and image[75, 75].tolist() == [0.0, 1.0, 0.0]
    assert image[50, 50].tolist() == [0.0, 0.0, 1.0]
    assert image[13, 86].tolist() == [1.0, 1.0, 1.0]             # inside the triangle (x right, y up)
    assert np.allclose(image[90, 10], [0x11 / 255, 0x22 / 255, 0x33 / 255])
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
