"""Genesis's particle solvers on Quadrants and on wgkern in place of Quadrants (each in a subprocess, as
test_falling_box.py): a 0.2 m cube of particles dropped onto the ground plane (particle_cube.py) as an MPM elastic
cube, an MPM sand cube and an SPH liquid block, 100 steps of dt=4e-3 (10 substeps each); the elastic cube also
with wgkern on Vulkan. Skipped as test_falling_box.py is.

Both toolkits run Genesis's f32 solvers on the same particles (the same sampling, seeded), so the trajectories
differ by rounding only; what that rounding becomes depends on the material, hence one comparison per scene."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.clients.genesis.runs import ON_QUADRANTS, ON_WGKERN, require_vulkan, run_scene

pytestmark = pytest.mark.usefixtures("genesis_installed")

STEPS, DT = 100, 4e-3


def _both(tmp_path: Path, material: str, *where: str) -> tuple[np.ndarray, np.ndarray]:
    """Quadrants' trajectory on the CPU and wgkern's (on the CPU, or on Vulkan with `where` = ("vulkan",))."""
    theirs = run_scene(ON_QUADRANTS, "particle_cube.py", tmp_path / "quadrants.npy", material)
    ours = run_scene(ON_WGKERN, "particle_cube.py", tmp_path / "wgkern.npy", material, str(STEPS), *where)
    assert ours.shape == theirs.shape and theirs.shape[0] == STEPS and theirs.shape[1] >= 500
    # the cube fell onto the plane: its lowest particles come within 3 cm of the ground (it starts 25 cm above)
    assert theirs[:, :, 2].min() < 0.03 < 0.25 < theirs[0, :, 2].min()
    return ours, theirs


def _scale(theirs: np.ndarray) -> np.ndarray:
    """Each step's scale: the largest distance of a particle from the origin."""
    return np.linalg.norm(theirs, axis=-1).max(axis=1)


def _per_particle(ours: np.ndarray, theirs: np.ndarray) -> np.ndarray:
    """Each step's largest difference of one particle's coordinate."""
    return np.abs(ours - theirs).reshape(len(theirs), -1).max(axis=1)


def _centre_of_mass(positions: np.ndarray) -> np.ndarray:
    return positions.mean(axis=1)          # every particle of the cube has the same mass


def _extents(positions: np.ndarray) -> np.ndarray:
    return positions.max(axis=1) - positions.min(axis=1)


@pytest.mark.parametrize("where", [(), ("vulkan",)], ids=["cpu", "vulkan"])
def test_mpm_elastic_cube_matches_quadrants_on_cpu(tmp_path: Path, where: tuple[str, ...]):
    """wgkern on the CPU, and on Vulkan (lavapipe here; the scripts' `vulkan` argument), against Quadrants on
    the CPU."""
    if where:
        require_vulkan()
    ours, theirs = _both(tmp_path, "mpm_elastic", *where)
    # The differences: the order of the f32 sums of the particle-to-grid scatter (atomic adds; a grid node sums
    # n <= 27 x 8 particle contributions, and reordering changes a sum by at most (n - 1) u sum|terms| with
    # u = 2^-24, ~1e-5 of a node's momentum) and the two toolkits' 3x3 SVDs (both iterative f32 algorithms; on
    # near-identity deformation gradients their singular values differ by up to 11 ulps, measured). The
    # corotated elastic response is linear in F - R and damped by the grid transfer, so these differences add up
    # instead of growing: 1000 substeps of 4e-4 s at speeds under 2 m/s with a relative velocity error of 1e-5
    # move a particle by at most ~1e-5 m, 3e-5 of the 0.35 m scale: within the criterion of 1e-4
    # (measured: 5.4e-6 of the scale after 100 steps; on lavapipe, whose atomic adds run in another order
    # again, 1.2e-5).
    gap = _per_particle(ours, theirs) / _scale(theirs)
    step = int(np.argmax(gap))
    assert gap[step] <= 1e-4, f"step {step}: particle positions differ by {gap[step]:.2e} of their scale"


def test_mpm_sand_cube_matches_quadrants_on_cpu(tmp_path: Path):
    ours, theirs = _both(tmp_path, "mpm_sand")
    # Sand's plastic return mapping works on the logarithms of the deformation gradient's singular values
    # (Hencky strain), so the toolkits' SVD rounding (up to 11 ulps, 7e-7, apart on near-identity gradients,
    # measured) is a strain difference of up to 7e-7 per substep, where the elastic cube's corotated response
    # sees it only through F - R. With Genesis's default sand (E = 1e6 Pa, nu = 0.2: 2 mu + 3 lambda = 1.7e6 Pa,
    # rho = 1000 kg/m^3) that is a stress difference of at most 1.2 Pa, over a grid cell (dx = 1/32 m) an
    # acceleration difference of at most a = 1.2 / (1000 / 32) = 0.04 m/s^2; were it to point the same way at every
    # substep, after t seconds particles and the centre of mass would be at most a t^2 / 2 apart. The granular
    # flow after the impact rearranges particles, so that bound (not a fixed fraction) is the tolerance
    # (measured: 1.2e-4 m after 100 steps, where the bound is 3.2e-3 m; 2.2e-6 m after 10 steps, bound 3.2e-5 m).
    t = DT * np.arange(1, STEPS + 1)
    bound = 0.04 * t ** 2 / 2 + 1e-6           # + a few f32 ulps of the 0.35 m positions for the first steps
    gap = _per_particle(ours, theirs) / bound
    step = int(np.argmax(gap))
    assert gap[step] <= 1, f"step {step}: particle positions differ by {gap[step]:.2f} x the bound {bound[step]:.1e}"
    centre = np.abs(_centre_of_mass(ours) - _centre_of_mass(theirs)).max(axis=1) / bound
    assert centre.max() <= 1, f"step {int(np.argmax(centre))}: the centres of mass differ by {centre.max():.2f} x"


def test_sph_liquid_block_matches_quadrants_on_cpu(tmp_path: Path):
    ours, theirs = _both(tmp_path, "sph_liquid")
    # Until the liquid reaches the ground (step 50; it lands at step ~55) its particles fall together and the
    # SPH sums over neighbours see the same particles in both toolkits: rounding only, as for the elastic cube
    # (measured: 5e-7 m, 1.5e-6 of the scale). The impact splashes the liquid: the order in which a particle's
    # neighbours are summed comes from Genesis's per-cell particle sort (atomic counters), which differs between
    # the toolkits, and a splash amplifies those ulp differences (particles end up to 1e-3 m apart; Quadrants
    # against itself repeats exactly). What the splash does not change is the momentum balance: the centre of
    # mass is moved by gravity and the total impulse of the ground alone, so it keeps to rounding (measured
    # 1e-6 m, 3e-6 of the scale), and so does the block's overall spread (extents: measured 2.7e-6 m).
    scale = _scale(theirs)
    falling = _per_particle(ours[:50], theirs[:50]) / scale[:50]
    assert falling.max() <= 1e-4, f"step {int(np.argmax(falling))}: {falling.max():.2e} of the scale"
    centre = np.abs(_centre_of_mass(ours) - _centre_of_mass(theirs)).max(axis=1) / scale
    assert centre.max() <= 1e-4, f"step {int(np.argmax(centre))}: centres of mass differ by {centre.max():.2e}"
    spread = np.abs(_extents(ours) - _extents(theirs)).max(axis=1) / scale
    assert spread.max() <= 1e-3, f"step {int(np.argmax(spread))}: extents differ by {spread.max():.2e}"
