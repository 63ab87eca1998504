"""wk.ui (wgkern/ui/): Taichi's GGUI drawn off-screen: canvas drawing, 3-D scenes, the frame loop and widgets."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import wgkern as wk

from tests.runtime.test_cli import _read_png

BACKGROUND = (0.1, 0.2, 0.3)


def _window(res=(64, 64)):
    window = wk.ui.Window("test", res, show_window=False)
    window.get_canvas().set_background_color(BACKGROUND)
    return window


def _camera(position, lookat):
    camera = wk.ui.Camera()
    camera.position(*position)
    camera.lookat(*lookat)
    return camera


def test_circle_from_a_field_lights_its_pixels_and_nothing_else(arch):
    centers = wk.Vector.field(2, wk.f32, shape=1)
    centers[0] = [0.25, 0.75]
    window = _window((80, 40))
    window.get_canvas().circles(centers, radius=0.1, color=(1.0, 0.5, 0.0))      # 4 px: a fraction of the height
    image = window.get_image_buffer_as_numpy()                                   # img[x, y], y upwards, RGBA
    assert image.shape == (80, 40, 4)
    lit = np.abs(image[..., :3] - (1.0, 0.5, 0.0)).max(axis=2) < 1e-6
    xs, ys = np.nonzero(lit)
    assert lit[20, 30] and 9 <= lit.sum() <= 81
    assert np.abs(xs - 20).max() <= 5 and np.abs(ys - 30).max() <= 5
    assert np.allclose(image[~lit][:, :3], BACKGROUND)


def test_set_image_takes_img_x_y_and_stretches_to_the_window(arch):
    img = wk.Vector.field(3, wk.f32, shape=(8, 4))
    values = np.zeros((8, 4, 3), np.float32)
    values[7, 0] = (1, 0, 0)                          # bottom right
    values[0, 3] = (0, 1, 0)                          # top left
    img.from_numpy(values)
    window = _window((8, 4))
    window.get_canvas().set_image(img)
    np.testing.assert_array_equal(window.get_image_buffer_as_numpy()[..., :3], values)
    big = _window((16, 8))
    big.get_canvas().set_image(img)
    image = big.get_image_buffer_as_numpy()
    assert image[15, 0, :3].tolist() == [1, 0, 0] and image[0, 7, :3].tolist() == [0, 1, 0]
    grey = _window((4, 2))
    grey.get_canvas().set_image(np.full((4, 2), 255, np.uint8))
    assert (grey.get_image_buffer_as_numpy() == 1.0).all()


def test_lines_and_triangles_blend_per_vertex_colors():
    window = _window((100, 100))
    canvas = window.get_canvas()
    corners = np.array([[0.1, 0.1], [0.9, 0.1], [0.1, 0.9]], np.float32)
    canvas.triangles(corners, per_vertex_color=np.eye(3, dtype=np.float32))
    canvas.lines(np.array([[0.0, 0.95], [1.0, 0.95]]), width=0.03, color=(1.0, 1.0, 1.0))
    image = window.get_image_buffer_as_numpy()
    near_red, middle = image[15, 15, :3], image[36, 36, :3]
    assert near_red[0] > 0.8 and near_red[1] < 0.2
    assert np.allclose(middle.sum(), 1.0, atol=0.02) and (middle > 0.2).all()     # a blend of all three
    assert (image[:, 95, :3] == 1.0).all() and np.allclose(image[95, 50, :3], BACKGROUND)


def _triangle_scene(window, lookat):
    scene = window.get_scene()
    scene.set_camera(_camera((0.0, 0.0, 3.0), lookat))
    scene.ambient_light((0.0, 0.0, 0.0))
    scene.point_light(pos=(0.0, 0.0, 3.0), color=(1.0, 1.0, 1.0))
    vertices = wk.Vector.field(3, wk.f32, shape=3)
    vertices.from_numpy(np.array([[-1, -1, 0], [1, -1, 0], [0, 1, 0]], np.float32))
    scene.mesh(vertices, color=(0.0, 0.8, 0.0))
    window.get_canvas().scene(scene)
    return window.get_image_buffer_as_numpy()


def test_mesh_in_front_of_the_camera_covers_the_centre_and_vanishes_when_it_looks_away(arch):
    image = _triangle_scene(_window(), lookat=(0.0, 0.0, 0.0))
    assert np.allclose(image[32, 32, :3], (0.0, 0.8, 0.0), atol=0.01)           # lit head-on
    # The triangle spans 2 units at distance 3 under a 45 degree fov: about 0.8 of the height.
    covered = (image[..., 1] > 0.5).sum()
    assert 0.25 * 64 * 64 < covered < 0.5 * 64 * 64
    assert np.allclose(image[2, 62, :3], BACKGROUND)
    away = _triangle_scene(_window(), lookat=(0.0, 0.0, 6.0))
    assert np.allclose(away[..., :3], BACKGROUND)
    unlit = _window()
    scene = unlit.get_scene()
    scene.set_camera(_camera((0.0, 0.0, -3.0), (0.0, 0.0, 0.0)))               # behind a one-sided mesh,
    scene.ambient_light((0.0, 0.0, 0.0))
    scene.point_light(pos=(0.0, 0.0, -3.0), color=(1.0, 1.0, 1.0))             # lit from behind too
    scene.mesh(np.array([[-1, -1, 0], [1, -1, 0], [0, 1, 0]], np.float32), color=(0.0, 0.8, 0.0))
    unlit.get_canvas().scene(scene)
    assert unlit.get_image_buffer_as_numpy()[32, 32, :3].tolist() == [0.0, 0.0, 0.0]


def test_nearer_particle_wins_whatever_the_order(arch):
    centers = wk.Vector.field(3, wk.f32, shape=2)
    colors = wk.Vector.field(3, wk.f32, shape=2)
    for near_first in (True, False):
        order = [0, 1] if near_first else [1, 0]
        # Seen from z = 3: red 2 away (a disc of 11.6 px around x = 32), blue 3 away (7.7 px around x = 39.7).
        centers.from_numpy(np.array([[0.0, 0.0, 1.0], [0.3, 0.0, 0.0]], np.float32)[order])
        colors.from_numpy(np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], np.float32)[order])
        window = _window()
        scene = wk.ui.Scene()
        scene.set_camera(_camera((0.0, 0.0, 3.0), (0.0, 0.0, 0.0)))
        scene.ambient_light((1.0, 1.0, 1.0))
        scene.particles(centers, radius=0.3, per_vertex_color=colors)
        window.get_canvas().scene(scene)
        image = window.get_image_buffer_as_numpy()
        assert image[36, 32, :3].tolist() == [1.0, 0.0, 0.0]                      # both cover it: the nearer
        assert image[46, 32, :3].tolist() == [0.0, 0.0, 1.0]
        depth = window.get_depth_buffer_as_numpy()
        assert depth.shape == (64, 64) and 0 < depth[36, 32] < depth[46, 32] < 1 and depth[0, 0] == 1


def test_scene_lines_are_depth_tested_and_the_near_plane_clips():
    window = _window()
    scene = window.get_scene()
    scene.set_camera(_camera((0.0, 0.0, 3.0), (0.0, 0.0, 0.0)))                # 77.25 px per unit at distance 1
    scene.ambient_light((1.0, 1.0, 1.0))
    square = np.array([[-0.5, -0.5, 1], [0.5, -0.5, 1], [0.5, 0.5, 1], [-0.5, 0.5, 1]], np.float32)
    scene.mesh(square, indices=np.array([0, 1, 2, 0, 2, 3]), color=(0.0, 1.0, 0.0))    # x, y in 32 +- 19
    scene.lines(np.array([[-2, 0.5, 0], [2, 0.5, 0], [-2, -0.2, 2], [2, -0.2, 2]], np.float32), width=2,
                color=(1.0, 0.0, 0.0))                                           # at y = 32 + 12.9 and 32 - 15.5
    floor = np.array([[-5, -1, -10], [5, -1, -10], [0, -1, 10]], np.float32)    # reaches behind the camera
    scene.mesh(floor, color=(0.0, 0.0, 1.0), two_sided=True)
    window.get_canvas().scene(scene)
    image = window.get_image_buffer_as_numpy()
    assert (image[32, 42:48, :3] == (0.0, 1.0, 0.0)).all()                       # behind the square: hidden
    assert (image[2, 42:48, 0] == 1.0).any()                                     # beside it: shown
    assert (image[32, 14:19, 0] == 1.0).any() and (image[32, 14:19, 1] == 0.0).any()    # in front of it
    assert image[32, 2, :3].tolist() == [0.0, 0.0, 1.0]                          # the clipped floor still shows


def test_max_frames_ends_the_loop_and_save_writes_each_frame(arch, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WK_GUI_MAX_FRAMES", "3")
    monkeypatch.setenv("WK_GUI_SAVE", str(tmp_path / "last.png"))
    window = wk.ui.Window("loop", res=(32, 16), vsync=True)
    assert "off-screen" in capsys.readouterr().err
    canvas = window.get_canvas()
    shown = 0
    while window.running:
        assert window.get_events(wk.ui.PRESS) == [] and not window.get_event(wk.ui.RELEASE)
        assert not window.is_pressed("a", wk.ui.LMB, wk.ui.ESCAPE) and window.get_cursor_pos() == (0.5, 0.5)
        canvas.set_background_color((shown / 2, 0.0, 0.0))
        window.show()
        shown += 1
    assert shown == 3 and window.event is None and window.get_window_shape() == (32, 16)
    saved = _read_png(tmp_path / "last.png")
    assert saved.shape == (16, 32, 4) and saved[0, 0, 0] == 255                  # the last frame
    window.save_image(str(tmp_path / "again.png"))
    assert (tmp_path / "again.png").read_bytes() == (tmp_path / "last.png").read_bytes()
    with pytest.raises(ValueError, match="unrecognized event tag"):
        window.get_events("Motion")
    monkeypatch.delenv("WK_GUI_MAX_FRAMES")
    endless = wk.ui.Window("endless", (4, 4), show_window=False)
    assert capsys.readouterr().err == ""
    for _ in range(5):
        endless.show()
    assert endless.running
    endless.destroy()
    assert not endless.running


def test_widgets_return_the_values_they_are_given():
    window = _window()
    gui = window.get_gui()
    with gui.sub_window("controls", 0.05, 0.1, 0.3, 0.4) as panel:
        panel.text("hello")
        assert panel.slider_float("dt", 0.25, 0.0, 1.0) == 0.25
        assert panel.slider_int("n", 7, 1, 10) == 7
        assert panel.checkbox("paused", True) is True
        assert panel.color_edit_3("color", (0.1, 0.2, 0.3)) == (0.1, 0.2, 0.3)
        assert panel.button("reset") is False
    window.GUI.begin("old style", 0, 0, 1, 1)
    window.GUI.end()
    with pytest.raises(RuntimeError, match="without a matching"):
        gui.end()


def _frame_rows(window):
    """The window's frame so far as float RGB rows from the top."""
    return np.transpose(window.get_image_buffer_as_numpy()[..., :3], (1, 0, 2))[::-1]


def test_sub_windows_are_drawn_as_panels_with_their_widgets(tmp_path):
    from wgkern.ui import imgui

    window = _window(res=(200, 100))
    gui = window.get_gui()
    with gui.sub_window("Panel##1", 0.1, 0.2, 0.5, 0.6) as panel:     # left 20, top 20, 100 x 60 pixels
        panel.text("hi", color=(1.0, 0.0, 0.0))
        assert panel.slider_float("dt", 0.5, 0.0, 1.0) == 0.5
        assert panel.checkbox("on", True) is True
    rows = _frame_rows(window)
    assert np.allclose(rows[19, 60], BACKGROUND) and np.allclose(rows[50, 121], BACKGROUND)   # outside
    assert np.allclose(rows[21, 90], imgui.TITLE_BACKGROUND[0])        # the title bar ...
    title = rows[20:20 + imgui.TITLE_HEIGHT, 20:120]
    assert (title == 1.0).all(axis=2).sum() > 20                        # ... and its white text, "Panel"
    body_color = np.float32(0.94) * np.float32(0.06) + np.float32(0.06) * np.array(BACKGROUND, np.float32)
    assert np.allclose(rows[78, 110], body_color, atol=1e-3)            # translucent body
    text_top = 20 + imgui.TITLE_HEIGHT + imgui.WINDOW_PADDING
    red = (rows == (1.0, 0.0, 0.0)).all(axis=2)
    red_rows, red_cols = np.nonzero(red)
    assert red_rows.min() == text_top + 1 and red_rows.max() == text_top + 7    # "hi": one font unit per pixel
    assert red_cols.min() == 28 and red_cols.max() < 28 + 12
    slider_top = text_top + imgui.FONT_SIZE + imgui.ITEM_SPACING_Y
    grab = (rows[slider_top + 5] == np.float32(imgui.SLIDER_GRAB[0])).all(axis=1)
    grab_cols = np.nonzero(grab)[0]
    item_width = round(imgui.ITEM_WIDTH_FRACTION * 100)
    assert grab_cols.min() == 28 + 2 + round(0.5 * (item_width - 4 - imgui.GRAB_WIDTH))    # the grab at 0.5
    window.save_image(str(tmp_path / "panel.png"))
    assert (_read_png(tmp_path / "panel.png")[..., :3] == 255).all(axis=2).any()    # the PNG has the panel
    window.show()
    window.show()
    assert np.allclose(_frame_rows(window), BACKGROUND)                 # a new frame asked for no widgets


def test_sub_window_placement_sticks_and_stray_widgets_use_the_default_window():
    from wgkern.ui import imgui

    window = _window(res=(200, 160))
    gui = window.get_gui()
    with gui.sub_window("a", 0.0, 0.0, 0.3, 0.3):
        pass
    window.show()
    with gui.sub_window("a", 0.6, 0.6, 0.3, 0.3):                       # moved: ImGui keeps the first place
        gui.text("\u00e9t\u00e9 \u2603\n\tok")                               # no glyphs: boxes, no crash
    rows = _frame_rows(window)
    assert np.allclose(rows[2, 30], imgui.TITLE_BACKGROUND[0]) and np.allclose(rows[150, 190], BACKGROUND)
    window.show()
    gui.button("stray")                                                 # outside any sub-window
    rows = _frame_rows(window)
    _, left, top, _, _ = imgui.IMPLICIT_WINDOW
    assert np.allclose(rows[top + 2, left + 30], imgui.TITLE_BACKGROUND[0])
    assert np.allclose(rows[top - 1, left - 1], BACKGROUND)


def test_camera_settings_and_user_tracking_without_input():
    camera = wk.ui.make_camera()
    camera.position(1.0, 2.0, 3.0)
    camera.lookat(1.0, 2.0, 0.0)
    camera.fov(60)
    camera.projection_mode(wk.ui.ProjectionMode.Perspective)
    window = _window()
    for _ in range(3):
        camera.track_user_inputs(window, movement_speed=0.03, hold_key=wk.ui.RMB)   # never held
    assert camera.curr_position.tolist() == [1.0, 2.0, 3.0] and camera.curr_lookat.tolist() == [1.0, 2.0, 0.0]
    for _ in range(3):
        camera.track_user_inputs(window, movement_speed=0.03)                       # the cursor never moves
    assert camera.curr_position.tolist() == [1.0, 2.0, 3.0]
    np.testing.assert_allclose(camera.curr_lookat, [1.0, 2.0, 2.0], atol=1e-9)   # same direction, unit distance
    view = camera.get_view_matrix()
    np.testing.assert_allclose(view @ [1.0, 2.0, 0.0, 1.0], [0.0, 0.0, -3.0, 1.0], atol=1e-9)
    clip = camera.get_projection_matrix(1.0) @ [0.0, 0.0, -3.0, 1.0]
    assert 0 < clip[2] / clip[3] < 1


def test_orthographic_camera_keeps_sizes_with_distance():
    window = _window()
    scene = window.get_scene()
    camera = _camera((0.0, 0.0, 3.0), (0.0, 0.0, 0.0))
    camera.projection_mode(wk.ui.ProjectionMode.Orthogonal)
    scene.set_camera(camera)
    scene.ambient_light((1.0, 1.0, 1.0))
    scene.particles(np.array([[-0.5, 0.0, 0.0], [0.5, 0.0, -50.0]]), radius=0.25, color=(1.0, 1.0, 1.0))
    window.get_canvas().scene(scene)
    lit = window.get_image_buffer_as_numpy()[..., 0] == 1.0
    assert abs(int(lit[:32].sum()) - int(lit[32:].sum())) <= 4 and lit[16, 32] and lit[48, 32]


def test_wk_ui_is_a_lazy_submodule():
    code = ("import sys, wgkern as wk; assert 'wgkern.ui' not in sys.modules; "
            "import wgkern.ui; assert wk.ui.Window is wgkern.ui.Window and wk.ui.GUI is wk.GUI")
    subprocess.run([sys.executable, "-c", code], check=True)
    assert "ui" in dir(wk)


# ---- a ported GGUI program: Taichi's cloth example (mass-spring cloth falling on a ball), made small -------------

def test_ported_ggui_cloth_program_runs_its_frames_and_saves_them(arch, tmp_path, monkeypatch):
    monkeypatch.setenv("WK_GUI_MAX_FRAMES", "4")
    monkeypatch.setenv("WK_GUI_SAVE", str(tmp_path / "cloth.png"))
    ti = wk
    n = 8
    quad_size = 1.0 / n
    dt = 3e-4
    substeps = 10
    gravity = ti.Vector([0, -9.8, 0])
    spring_Y, dashpot_damping, drag_damping = 3e4, 1e4, 1
    ball_radius = 0.3
    ball_center = ti.Vector.field(3, dtype=float, shape=(1,))
    ball_center[0] = [0, 0, 0]
    x = ti.Vector.field(3, dtype=float, shape=(n, n))
    v = ti.Vector.field(3, dtype=float, shape=(n, n))
    indices = ti.field(int, shape=(n - 1) * (n - 1) * 6)
    vertices = ti.Vector.field(3, dtype=float, shape=n * n)
    colors = ti.Vector.field(3, dtype=float, shape=n * n)

    @ti.kernel
    def initialize_mass_points():
        for i, j in x:
            x[i, j] = [i * quad_size - 0.5, 0.6, j * quad_size - 0.5]
            v[i, j] = [0, 0, 0]

    @ti.kernel
    def initialize_mesh_indices():
        for i, j in ti.ndrange(n - 1, n - 1):
            quad_id = (i * (n - 1)) + j
            indices[quad_id * 6 + 0] = i * n + j
            indices[quad_id * 6 + 1] = (i + 1) * n + j
            indices[quad_id * 6 + 2] = i * n + (j + 1)
            indices[quad_id * 6 + 3] = (i + 1) * n + j + 1
            indices[quad_id * 6 + 4] = i * n + (j + 1)
            indices[quad_id * 6 + 5] = (i + 1) * n + j
        for i, j in ti.ndrange(n, n):
            if (i // 4 + j // 4) % 2 == 0:
                colors[i * n + j] = (0.22, 0.72, 0.52)
            else:
                colors[i * n + j] = (1, 0.334, 0.52)

    spring_offsets = [ti.Vector([i, j]) for i in range(-1, 2) for j in range(-1, 2) if (i, j) != (0, 0)]

    @ti.kernel
    def substep():
        for i in ti.grouped(x):
            v[i] += gravity * dt
        for i in ti.grouped(x):
            force = ti.Vector([0.0, 0.0, 0.0])
            for spring_offset in ti.static(spring_offsets):
                j = i + spring_offset
                if 0 <= j[0] < n and 0 <= j[1] < n:
                    x_ij = x[i] - x[j]
                    v_ij = v[i] - v[j]
                    d = x_ij.normalized()
                    current_dist = x_ij.norm()
                    original_dist = quad_size * float(i - j).norm()
                    force += -spring_Y * d * (current_dist / original_dist - 1)
                    force += -v_ij.dot(d) * d * dashpot_damping * quad_size
            v[i] += force * dt
        for i in ti.grouped(x):
            v[i] *= ti.exp(-drag_damping * dt)
            offset_to_center = x[i] - ball_center[0]
            if offset_to_center.norm() <= ball_radius:
                normal = offset_to_center.normalized()
                v[i] -= min(v[i].dot(normal), 0) * normal
            x[i] += dt * v[i]

    @ti.kernel
    def update_vertices():
        for i, j in ti.ndrange(n, n):
            vertices[i * n + j] = x[i, j]

    window = ti.ui.Window("Taichi Cloth Simulation on GGUI", (96, 96), vsync=True, show_window=False)
    canvas = window.get_canvas()
    canvas.set_background_color((1, 1, 1))
    scene = ti.ui.Scene()
    camera = ti.ui.Camera()
    initialize_mesh_indices()
    initialize_mass_points()
    frames = 0
    while window.running:
        for _ in range(substeps):
            substep()
        update_vertices()
        camera.position(0.0, 0.0, 3)
        camera.lookat(0.0, 0.0, 0)
        scene.set_camera(camera)
        scene.point_light(pos=(0, 1, 2), color=(1, 1, 1))
        scene.ambient_light((0.5, 0.5, 0.5))
        scene.mesh(vertices, indices=indices, per_vertex_color=colors, two_sided=True)
        scene.particles(ball_center, radius=ball_radius * 0.95, color=(0.5, 0.42, 0.8))
        canvas.scene(scene)
        window.show()
        frames += 1
    assert frames == 4 and x.to_numpy()[..., 1].max() < 0.6                        # the cloth fell
    image = _read_png(tmp_path / "cloth.png")[::-1, :, :3].astype(np.int64)       # rows from the bottom
    ball = image[48, 48]                                                          # lit purple, not background
    assert ball[2] > ball[1] and ball.sum() < 3 * 250
    cloth = image[60:76, 20:76]                                   # seen edge-on above the ball (y = 0.6)
    assert (cloth[..., 0] - cloth[..., 1] > 80).any() and (cloth[..., 1] - cloth[..., 0] > 60).any()  # pink, green
    assert (image[2, 2] == 255).all()
