"""Genesis's rigid contacts between bodies, on Quadrants and on wgkern in place of Quadrants (each in a
subprocess, as test_falling_box.py): four boxes dropped one above another (box_pile.py) land on each other and
settle as a leaning stack, so box-box contacts are solved together with the box-plane ones; wgkern on the CPU
and on Vulkan. Skipped as test_falling_box.py is."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.clients.genesis.runs import ON_QUADRANTS, ON_WGKERN, require_vulkan, run_scene

pytestmark = pytest.mark.usefixtures("genesis_installed")


@pytest.fixture(scope="module")
def quadrants_trajectory(tmp_path_factory: pytest.TempPathFactory) -> np.ndarray:
    return run_scene(ON_QUADRANTS, "box_pile.py", tmp_path_factory.mktemp("quadrants") / "trajectory.npy")


def _assert_matches(ours: np.ndarray, theirs: np.ndarray) -> None:
    assert ours.shape == theirs.shape == (100, 4, 3)
    # the boxes ended up on each other: the k-th from the bottom rests with its centre near (2k + 1) x 0.1 m
    np.testing.assert_allclose(theirs[-1, :, 2], [0.1, 0.3, 0.5, 0.7], atol=3e-3)
    # Both toolkits run Genesis's f32 contact solve (Newton's method, at most 25 iterations, leaving once an
    # iteration improves the cost by less than its tolerance of 1e-5) on the same contacts; their results differ
    # by the rounding of the f32 sums (a few ulps, 2^-24 ~ 6e-8 relative, of each body's velocity per step) as long
    # as both leave after the same iteration with the same contact set. The settling stack does not magnify such
    # differences: in Quadrants alone, moving one box's start by 1e-6 m leaves the trajectories 1.5e-6 m apart
    # after 100 steps (measured), so rounding adds up over the steps, to at most 100 steps x ~10 ulps ~ 6e-5 of
    # the 0.74 m scale, within the criterion of 1e-4 relative per step (measured: 2.2e-7). The drops are
    # kept to 1 cm: from 10 cm the impacts make the contact set itself depend on the toolkits' fast_math rewrites
    # (docs/porting.md), while with fast_math=False on both the two runs agree to the bit.
    scale = np.linalg.norm(theirs, axis=-1).max(axis=1)
    gap = np.abs(ours - theirs).reshape(len(theirs), -1).max(axis=1) / scale
    step = int(np.argmax(gap))
    assert gap[step] <= 1e-4, f"step {step}: box positions differ by {gap[step]:.2e} of their scale"


def test_box_pile_matches_quadrants_on_cpu(quadrants_trajectory: np.ndarray, tmp_path: Path):
    _assert_matches(run_scene(ON_WGKERN, "box_pile.py", tmp_path / "wgkern.npy"), quadrants_trajectory)


def test_box_pile_on_vulkan_matches_quadrants_on_cpu(quadrants_trajectory: np.ndarray, tmp_path: Path):
    """Genesis's kernels on wgkern's Vulkan backend (lavapipe here; box_pile.py's `vulkan` argument): the same
    f32 solver, rounding differently only where the driver's operations do, so the bound above holds
    (measured on lavapipe: 2.1e-7)."""
    require_vulkan()
    _assert_matches(run_scene(ON_WGKERN, "box_pile.py", tmp_path / "wgkern.npy", "100", "vulkan"),
                    quadrants_trajectory)
