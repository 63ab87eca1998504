"""On-screen windows (wgkern/screen.py) and the GUIs' input through them. The window here is rendercanvas's
off-screen canvas (the same canvas API as a glfw or Qt window), fed with the events a window system sends."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from wgkern import gui as gui_module
from wgkern import screen

offscreen = pytest.importorskip("rendercanvas.offscreen")


@pytest.fixture
def windows(monkeypatch):
    """GUIs asked to show themselves get a window (an off-screen rendercanvas canvas); the list of them."""
    opened = []

    def open_window(title, size, canvas_class=None):
        window = screen.open_screen(title, size, offscreen.RenderCanvas)
        opened.append(window)
        return window

    monkeypatch.setattr(gui_module, "screen_wanted", lambda show: show)
    monkeypatch.setattr(gui_module, "open_screen", open_window)
    return opened


def _send(window, **event):
    window.canvas.submit_event(event)


def test_a_window_opens_only_where_one_can_be_seen(monkeypatch):
    monkeypatch.delenv("WK_GUI_OFFSCREEN", raising=False)
    monkeypatch.delenv("WK_GUI_MAX_FRAMES", raising=False)
    monkeypatch.setattr(screen.sys, "platform", "linux")
    monkeypatch.setenv("DISPLAY", ":0")
    assert screen.screen_wanted(True) and not screen.screen_wanted(False)
    monkeypatch.setenv("WK_GUI_MAX_FRAMES", "3")              # a headless run to a frame count
    assert not screen.screen_wanted(True)
    monkeypatch.delenv("WK_GUI_MAX_FRAMES")
    monkeypatch.setenv("WK_GUI_OFFSCREEN", "1")
    assert not screen.screen_wanted(True)
    monkeypatch.delenv("WK_GUI_OFFSCREEN")
    monkeypatch.delenv("DISPLAY")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert not screen.screen_wanted(True)


def test_a_window_that_cannot_open_leaves_the_gui_off_screen(capsys):
    class Broken:
        def __init__(self, **kwargs):
            raise RuntimeError("no display")
    assert screen.open_screen("t", (8, 8), Broken) is None
    assert "no window for 't' (RuntimeError: no display); drawing off-screen" in capsys.readouterr().err


def test_gui_shows_frames_and_reports_keys_buttons_motion_and_wheel_as_taichi(windows):
    gui = wk.GUI("input", res=(64, 32))
    window = windows[0]
    gui.circle((0.25, 0.5), radius=4, color=0xFF0000)
    gui.show()
    shown = np.asarray(window.canvas.draw())                # what the window shows: rows from the top, RGBA
    assert shown.shape == (32, 64, 4) and tuple(shown[16, 16]) == (255, 0, 0, 255)
    assert tuple(shown[16, 48]) == (0, 0, 0, 255)
    _send(window, event_type="key_down", key="A", modifiers=("Shift",))
    _send(window, event_type="key_down", key="ArrowLeft", modifiers=())
    _send(window, event_type="pointer_move", x=48, y=8, buttons=(), modifiers=())
    _send(window, event_type="pointer_down", x=48, y=8, button=2, buttons=(2,), modifiers=())
    _send(window, event_type="wheel", dx=0, dy=-100, x=48, y=8, buttons=(), modifiers=())
    assert gui.is_pressed("a") and gui.is_pressed(wk.GUI.LEFT, "z") and gui.is_pressed(wk.GUI.RMB)
    assert not gui.is_pressed("z")
    assert gui.get_cursor_pos() == (0.75, 0.75)
    presses = [(e.key, e.pos, e.modifier) for e in gui.get_events(wk.GUI.PRESS)]
    assert presses == [("a", (0.5, 0.5), ["Shift"]), ("Left", (0.5, 0.5), []), ("RMB", (0.75, 0.75), [])]
    assert gui.get_event(wk.GUI.MOTION) and gui.event.key == wk.GUI.MOVE
    assert gui.get_event((wk.GUI.MOTION, wk.GUI.WHEEL)) and gui.event.delta == (0.0, 100.0)
    _send(window, event_type="key_up", key="A", modifiers=())
    assert gui.get_event(wk.GUI.RELEASE) and gui.event.key == "a" and not gui.is_pressed("a")


def test_closing_the_window_ends_the_gui_loop(windows):
    gui = wk.GUI("closing", res=16)
    frames = 0
    while gui.running:
        gui.show()
        frames += 1
        if frames == 3:
            windows[0].canvas.close()                    # the user closes the window
    assert frames == 3 and not gui.running
    assert [(e.type, e.key) for e in gui.get_events()] == [("Press", "Escape"), ("Press", "WMClose")]
    gui.close()
    assert windows[0].closed


def test_ggui_window_reports_presses_and_releases_only(windows):
    window = wk.ui.Window("ggui", res=(32, 16))
    canvas = window.get_canvas()
    canvas.set_background_color((0.0, 0.0, 1.0))
    window.show()
    screen_window = windows[0]
    _send(screen_window, event_type="pointer_move", x=8, y=4, buttons=(), modifiers=())
    _send(screen_window, event_type="pointer_down", x=8, y=4, button=1, buttons=(1,), modifiers=())
    _send(screen_window, event_type="key_down", key="Escape", modifiers=())
    assert [(e.type, e.key) for e in window.get_events()] == [("Press", "LMB"), ("Press", "Escape")]
    assert window.is_pressed(wk.ui.LMB) and window.get_cursor_pos() == (0.25, 0.75)
    window.destroy()
    assert screen_window.closed and not window.running


def test_gui_widgets_answer_the_mouse_in_a_window(windows):
    """Taichi's widget panel, 200 pixels down the right edge: a left press or drag on a slider's box sets its
    value (on its steps), a click on a button queues its event."""
    gui = wk.GUI("widgets", res=(400, 200))
    speed = gui.slider("speed", 0.0, 10.0, step=0.5)        # box: y 0..40
    reset = gui.button("reset")                              # box: y 40..80
    gui.show()
    window = windows[0]
    bar_left, bar_width = 200 + 10, 200 - 2 * 10
    _send(window, event_type="pointer_down", x=bar_left + 0.3 * bar_width, y=20, button=1, buttons=(1,),
          modifiers=())
    gui.get_events()
    assert speed.value == 3.0
    _send(window, event_type="pointer_move", x=bar_left + 0.76 * bar_width, y=30, buttons=(1,), modifiers=())
    gui.get_events()
    assert speed.value == 7.5                               # 7.6 on the slider's 0.5 steps
    _send(window, event_type="pointer_up", x=bar_left, y=30, button=1, buttons=(), modifiers=())
    _send(window, event_type="pointer_move", x=bar_left, y=30, buttons=(), modifiers=())
    gui.get_events()
    assert speed.value == 7.5                               # moves without the button pressed change nothing
    _send(window, event_type="pointer_down", x=300, y=60, button=1, buttons=(1,), modifiers=())
    assert gui.get_event((wk.GUI.PRESS, reset)) and gui.event.key == "WidgetButton_reset"
    _send(window, event_type="pointer_down", x=100, y=60, button=1, buttons=(1,), modifiers=())
    assert not gui.get_event((wk.GUI.PRESS, reset))         # left of the panel: no button


def test_ggui_widgets_answer_the_mouse_in_a_window(windows):
    """A slider follows the pointer while the left button is held on it; a click toggles a checkbox and makes a
    button return True for one frame; off the widgets nothing changes."""
    from wgkern.ui import imgui
    window = wk.ui.Window("widgets", res=(400, 300))
    gui = window.get_gui()
    screen_window = windows[0]
    # the panel's first row starts below its title bar; rows are FRAME_HEIGHT high, ITEM_SPACING_Y apart
    left, top = 0.1 * 400 + imgui.WINDOW_PADDING, 0.1 * 300 + imgui.TITLE_HEIGHT + imgui.WINDOW_PADDING
    row = imgui.FRAME_HEIGHT + imgui.ITEM_SPACING_Y
    slider_width = round(imgui.ITEM_WIDTH_FRACTION * 0.5 * 400)
    value, enabled = 0.0, False

    def frame():
        nonlocal value, enabled
        with gui.sub_window("controls", 0.1, 0.1, 0.5, 0.5) as w:
            value = w.slider_float("value", value, 0.0, 10.0)
            enabled = w.checkbox("enabled", enabled)
            pressed = w.button("go")
        window.show()
        return pressed

    assert not frame() and value == 0.0 and not enabled
    grab = imgui.GRAB_WIDTH
    x_at_7 = left + 2 + grab / 2 + 0.7 * (slider_width - 4 - grab)
    _send(screen_window, event_type="pointer_down", x=x_at_7, y=top + 3, button=1, buttons=(1,), modifiers=())
    assert not frame() and value == pytest.approx(7.0, abs=0.05)
    _send(screen_window, event_type="pointer_up", x=x_at_7, y=top + 3, button=1, buttons=(), modifiers=())
    _send(screen_window, event_type="pointer_down", x=left + 3, y=top + row + 3, button=1, buttons=(1,),
          modifiers=())
    _send(screen_window, event_type="pointer_up", x=left + 3, y=top + row + 3, button=1, buttons=(), modifiers=())
    assert not frame() and enabled and value == pytest.approx(7.0, abs=0.05)
    assert not frame() and enabled                          # one click, one toggle
    _send(screen_window, event_type="pointer_down", x=left + 3, y=top + 2 * row + 3, button=1, buttons=(1,),
          modifiers=())
    _send(screen_window, event_type="pointer_up", x=left + 3, y=top + 2 * row + 3, button=1, buttons=(),
          modifiers=())
    assert frame() and not frame()                          # the button: True for the frame after the click
    _send(screen_window, event_type="pointer_down", x=390, y=290, button=1, buttons=(1,), modifiers=())
    assert not frame() and enabled and value == pytest.approx(7.0, abs=0.05)
