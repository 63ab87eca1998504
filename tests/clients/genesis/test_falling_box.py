"""Genesis (PyPI genesis-world) on wgkern: the falling-box scene (falling_box.py) run on Quadrants and on wgkern
in place of Quadrants (`python -m wgkern run --as quadrants`), each in a subprocess, with the box's trajectories
compared.

How to run: in an environment holding genesis-world 1.4.5, quadrants 1.3.3 and a CPU build of torch next to
wgkern's own requirements,
    python -m pytest -q tests/clients/genesis
The tests skip, saying which, when genesis-world, quadrants or torch is not installed or `python -m wgkern run`
is not available; under WK_CLIENTS_REQUIRED=1 (CI's client stage, .ci/run-clients) they fail instead. A first
run compiles every Genesis kernel on both toolkits (minutes each); later runs use the toolkits' kernel caches."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.clients.genesis.runs import ON_QUADRANTS, ON_WGKERN, require_vulkan, run_scene

pytestmark = pytest.mark.usefixtures("genesis_installed")


@pytest.fixture(scope="module")
def quadrants_trajectory(tmp_path_factory: pytest.TempPathFactory) -> np.ndarray:
    return run_scene(ON_QUADRANTS, "falling_box.py", tmp_path_factory.mktemp("quadrants") / "trajectory.npy")


def _assert_matches(ours: np.ndarray, theirs: np.ndarray, where: str) -> None:
    assert ours.shape == theirs.shape == (100, 3)
    # The box falls 0.9 m and rests on the plane: both toolkits run the same f32 solver, so the positions differ
    # by rounding, which the contact solve's iterations amplify; the bound is the acceptance criterion
    # (1e-4 of the distance from the origin, per step), about 1e3 f32 ulps (the measured gap is under 1e-6).
    gap = np.abs(ours - theirs).max(axis=1) / np.linalg.norm(theirs, axis=1)
    step = int(np.argmax(gap))
    assert gap[step] <= 1e-4, (f"step {step}: wgkern {where} {ours[step]}, Quadrants {theirs[step]} "
                               f"({gap[step]:.2e} of |pos|)")
    assert ours[-1, 2] == pytest.approx(0.1, abs=1e-3)     # resting on its half height


def test_falling_box_matches_quadrants_on_cpu(quadrants_trajectory: np.ndarray, tmp_path: Path):
    _assert_matches(run_scene(ON_WGKERN, "falling_box.py", tmp_path / "trajectory.npy"), quadrants_trajectory,
                    "on the CPU")


def test_falling_box_on_vulkan_matches_quadrants_on_cpu(quadrants_trajectory: np.ndarray, tmp_path: Path):
    """Genesis's kernels on wgkern's Vulkan backend (lavapipe here; falling_box.py's `vulkan` argument) against
    Quadrants on the CPU. A first run on lavapipe compiles every kernel in its LLVM (minutes); Mesa's shader
    cache keeps them for later runs."""
    require_vulkan()
    # the Vulkan backend runs the same f32 solver, rounding differently only where the driver's operations do
    _assert_matches(run_scene(ON_WGKERN, "falling_box.py", tmp_path / "trajectory.npy", "100", "vulkan"),
                    quadrants_trajectory, "on Vulkan")
