"""Genesis beyond the falling box, on Quadrants and on wgkern in place of Quadrants (each in a subprocess, as
test_falling_box.py): the Franka arm under joint position control (franka_arm.py), alone and in 64 batched
environments, and 16 and 64 batched falling boxes (batched_boxes.py), with the trajectories compared step by
step; the unbatched arm and the 16 boxes also with wgkern on Vulkan. Skipped as test_falling_box.py is."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.clients.genesis.runs import ON_QUADRANTS, ON_WGKERN, require_vulkan, run_scene

pytestmark = pytest.mark.usefixtures("genesis_installed")

# Both toolkits run Genesis's f32 solver on the same inputs; they differ in the order of f32 sums and in fused
# multiply-adds, a few ulps (2^-24 ~ 6e-8 relative) per step of each body's state. The PD-controlled arm and the
# resting boxes are damped, so these differences add up over the 100 steps instead of growing exponentially: at
# most ~100 steps x ~10 ulps ~ 1e3 ulps ~ 6e-5 of the positions' scale, under the issue's acceptance criterion
# of 1e-4 relative per step (measured: under 1e-6 for the unbatched arm and 16 boxes, 2.4e-6 for 64 arms, 1.9e-6
# for 64 boxes).
RELATIVE = 1e-4


def _gap(ours: np.ndarray, theirs: np.ndarray) -> tuple[float, int]:
    """The largest per-step difference relative to the scale of the positions at that step, and its step."""
    steps = len(theirs)
    scale = np.linalg.norm(theirs, axis=-1).reshape(steps, -1).max(axis=1)
    gap = np.abs(ours - theirs).reshape(steps, -1).max(axis=1) / scale
    step = int(np.argmax(gap))
    return float(gap[step]), step


@pytest.mark.parametrize("n_envs", [0, 64])           # 0: an unbatched scene
def test_franka_arm_matches_quadrants_on_cpu(tmp_path: Path, n_envs: int):
    theirs = run_scene(ON_QUADRANTS, "franka_arm.py", tmp_path / "quadrants.npy", "100", str(n_envs))
    ours = run_scene(ON_WGKERN, "franka_arm.py", tmp_path / "wgkern.npy", "100", str(n_envs))
    assert ours.shape == theirs.shape and theirs.shape[0] == 100 and theirs.shape[2] == 3
    assert np.abs(theirs[-1] - theirs[0]).max() > 0.1          # the arm moved towards its target
    gap, step = _gap(ours, theirs)
    assert gap <= RELATIVE, f"step {step}: link positions differ by {gap:.2e} of their scale"


def test_franka_arm_on_vulkan_matches_quadrants_on_cpu(tmp_path: Path):
    """Genesis's kernels on wgkern's Vulkan backend (lavapipe here; the scripts' `vulkan` argument): the same
    f32 solver, rounding differently only where the driver's operations do (measured on lavapipe: 6.0e-7)."""
    require_vulkan()
    theirs = run_scene(ON_QUADRANTS, "franka_arm.py", tmp_path / "quadrants.npy", "100", "0")
    ours = run_scene(ON_WGKERN, "franka_arm.py", tmp_path / "wgkern.npy", "100", "0", "vulkan")
    assert ours.shape == theirs.shape and theirs.shape[0] == 100 and theirs.shape[2] == 3
    gap, step = _gap(ours, theirs)
    assert gap <= RELATIVE, f"step {step}: link positions differ by {gap:.2e} of their scale"


@pytest.mark.parametrize("n_envs", [16, 64])
def test_batched_falling_boxes_match_quadrants_on_cpu(tmp_path: Path, n_envs: int):
    _compare_batched_boxes(tmp_path, n_envs)


def test_batched_falling_boxes_on_vulkan_match_quadrants_on_cpu(tmp_path: Path):
    """Genesis's kernels on wgkern's Vulkan backend (lavapipe here; the scripts' `vulkan` argument): the same
    f32 solver, rounding differently only where the driver's operations do (measured on lavapipe: 8.3e-7)."""
    require_vulkan()
    _compare_batched_boxes(tmp_path, 16, "vulkan")


def _compare_batched_boxes(tmp_path: Path, n_envs: int, *where: str) -> None:
    theirs = run_scene(ON_QUADRANTS, "batched_boxes.py", tmp_path / "quadrants.npy", "100", str(n_envs))
    ours = run_scene(ON_WGKERN, "batched_boxes.py", tmp_path / "wgkern.npy", "100", str(n_envs), *where)
    assert ours.shape == theirs.shape == (100, n_envs, 3)
    gap, step = _gap(ours, theirs)
    assert gap <= RELATIVE, f"step {step}: box positions differ by {gap:.2e} of their scale"
    # every box ends resting on its half height, whichever height it fell from
    np.testing.assert_allclose(theirs[-1, :, 2], 0.1, atol=1e-3)
