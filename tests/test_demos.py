"""The bundled demos (demos/*.py, run by `python -m wgkern demo`) stay inside their physical domain and finite
over a few hundred steps on every arch, and a headless run writes its PNG where it says, not into the current
directory."""
from __future__ import annotations

import importlib.util
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest

import wgkern as wk
from wgkern.__main__ import _demo_files, _load_demo, main
from wgkern.font import text_mask
from wgkern.png import read_png
from tests.conftest import _IN_CI as IN_CI
from tests.demo_modules import helper
from tests.error_bounds import f32_bound

ROOT = Path(__file__).resolve().parent.parent
SCREENSHOT_BYTES = 150_000          # each README picture stays small


@pytest.fixture(scope="module")
def demos() -> dict:
    return {name: _load_demo(path) for name, path in _demo_files().items()}


def _frames(module, steps: int) -> dict:
    state: dict = {}
    shapes = [frame.draw().shape for frame in module.simulate(steps, state)]
    assert shapes and set(shapes) == {(module.HEIGHT, module.WIDTH, 3)}
    return {name: field.to_numpy().astype(np.float64) for name, field in state.items()}


def test_every_demo_is_covered_here(demos):
    # sweep runs on Ray actors: tests/distributed/test_sweep_demo.py
    assert set(demos) == {"aim", "heat", "mpm", "particles", "sweep"}


def test_mpm_particles_stay_in_the_grid_with_bounded_speed(arch, demos):
    mpm = demos["mpm"]
    state = _frames(mpm, 300)
    for name in ("x", "v", "affine", "deformation", "plastic"):
        assert np.isfinite(state[name]).all(), name
    x, v = state["x"], state["v"]
    assert (x >= np.float32(mpm.X_MIN)).all() and (x <= np.float32(mpm.X_MAX)).all()
    # |v| <= V_MAX after the rescale v * (V_MAX / |v|): 4 operations (norm, division, product)
    assert (np.linalg.norm(v, axis=1) <= mpm.V_MAX + f32_bound(4, mpm.V_MAX)).all()
    assert (state["plastic"] > 0).all()
    snow = state["material"] == mpm.SNOW
    assert snow.any() and (~snow).any()


def test_heat_stays_between_the_cold_border_and_the_sources(arch, demos):
    state = _frames(demos["heat"], 200)
    t = state["temperature"]
    # each step is a convex combination (1 - 4 alpha) T + alpha (4 neighbours), alpha < 1/4, of values in [0, 1]:
    # a maximum principle; 6 f32 operations per step on values up to 1, and a source resets its disc to 1
    assert np.isfinite(t).all() and t.min() >= 0.0 and t.max() <= 1.0 + f32_bound(6, 1.0)
    assert t.max() > 0.5 and (t[0] == 0).all() and (t[:, -1] == 0).all()


def test_particles_stay_in_the_box(arch, demos):
    particles = demos["particles"]
    state = _frames(particles, 300)
    px, py, vx, vy = (state[k] for k in ("px", "py", "vx", "vy"))
    assert all(np.isfinite(a).all() for a in (px, py, vx, vy))
    assert px.min() >= 0.0 and px.max() <= 1.0 and py.min() >= 0.0
    # the highest launch (1.8 up from 0.02 high) rises at most 1.8^2 / (2 * 2.5) = 0.648, bounces lower
    assert py.max() <= 0.02 + 1.8 ** 2 / (2 * -particles.GRAVITY) + 1e-3
    assert np.hypot(vx, vy).max() <= 1.8 + -particles.GRAVITY * particles.LIFETIME


def test_aim_speeds_stay_in_range_and_the_miss_shrinks(arch, demos):
    aim = demos["aim"]
    state: dict = {}
    angles, first, speeds, targets = aim.train(100, state)
    assert np.isfinite(speeds).all() and speeds.min() >= aim.SPEED_MIN and speeds.max() <= aim.SPEED_MAX
    assert np.isfinite(state["landing"].to_numpy()).all()
    def miss(speed: np.ndarray) -> float:        # the mean distance to the targets, flown on the host
        return float(np.mean([abs(aim.trajectory(float(s), float(a))[-1, 0] - t)
                              for s, a, t in zip(speed, angles, targets)]))
    assert miss(speeds) < 0.1 * miss(first)


@pytest.mark.parametrize("name", ["aim", "heat", "particles", "mpm"])
def test_headless_run_writes_into_the_demo_folder_not_the_current_directory(name, tmp_path, monkeypatch, capsys):
    folder, cwd = tmp_path / "demos", tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("WK_DEMO_DIR", str(folder))
    assert main(["demo", name, "--headless", "--arch", "cpu", "--steps", "2"]) == 0
    wk.reset()
    written = folder / f"{name}.png"
    assert written.is_file() and os.listdir(cwd) == []
    assert f"wrote {written}" in capsys.readouterr().out


def test_all_runs_every_demo_into_the_demo_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WK_DEMO_DIR", str(tmp_path / "shots"))
    assert main(["demo", "--all", "--arch", "cpu", "--steps", "2"]) == 0
    wk.reset()
    expected = ["aim.png", "heat.png", "mpm.png", "particles.png", "sweep.png"]
    captured = capsys.readouterr()
    if importlib.util.find_spec("ray") is None and not IN_CI:      # CI installs ray with the test extra
        expected.remove("sweep.png")
        assert "sweep: skipped, it needs ray (pip install 'wgkern[ray]')" in captured.err
    assert sorted(os.listdir(tmp_path / "shots")) == expected
    assert os.listdir(tmp_path) == ["shots"]
    assert captured.out.count("wrote ") == len(expected)


def test_headless_default_folder_is_wgkern_out_of_the_current_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WK_DEMO_DIR", raising=False)
    assert main(["demo", "heat", "--headless", "--arch", "cpu", "--steps", "2"]) == 0
    wk.reset()
    assert os.listdir(tmp_path) == ["wgkern-out"] and (tmp_path / "wgkern-out" / "heat.png").is_file()
    assert "wgkern-out" in capsys.readouterr().out


def test_headless_run_inside_the_wgkern_checkout_writes_outside_it(monkeypatch, capsys):
    home = Path(wk.__file__).resolve().parent.parent
    monkeypatch.chdir(home)
    monkeypatch.delenv("WK_DEMO_DIR", raising=False)
    before = set(os.listdir(home))
    assert main(["demo", "heat", "--headless", "--arch", "cpu", "--steps", "2"]) == 0
    wk.reset()
    assert set(os.listdir(home)) == before
    written = Path(tempfile.gettempdir()) / "wgkern-out" / "heat.png"
    assert f"wrote {written}" in capsys.readouterr().out


def test_the_readme_shows_each_demos_own_screenshot(demos):
    section = (ROOT / "README.md").read_text().split("\n## Demos\n", 1)[1].split("\n## ", 1)[0]
    for name, module in demos.items():
        path = ROOT / "docs" / "images" / f"{name}.png"
        assert f"(docs/images/{name}.png)" in section and path.stat().st_size < SCREENSHOT_BYTES, name
        image = read_png(str(path))
        assert image.shape == (module.HEIGHT, module.WIDTH, 4), name
        # made by the demo: its title in the band, white where the (crisp) font mask has ink, as _overlay draws it
        overlay = helper("_overlay")
        ink = text_mask(module.TITLE, overlay.TITLE_SIZE) > 0
        top = left = overlay.MARGIN
        title = image[top:top + ink.shape[0], left:left + ink.shape[1], :3]
        assert (title[ink] == 255).all() and (title[~ink] < 255).any(axis=1).all(), name
