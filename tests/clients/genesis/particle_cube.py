"""The particle scenes: a 0.2 m cube of particles dropped from 0.25 m onto the ground plane, simulated by one of
Genesis's particle solvers on the CPU backend, 100 steps of dt=4e-3. The material is the second argument:

    mpm_elastic   Genesis's MPM solver (grid density 32), an elastic cube (gs.materials.MPM.Elastic())
    mpm_sand      Genesis's MPM solver (grid density 32), a sand cube (gs.materials.MPM.Sand())
    sph_liquid    Genesis's SPH solver, a block of liquid (gs.materials.SPH.Liquid())

Run as a script, it writes every particle's position after each step as a (steps, particles, 3) float64 .npy
file:

    python particle_cube.py OUT.npy MATERIAL [STEPS]                                  # on Quadrants
    python -m wgkern run --as quadrants particle_cube.py OUT.npy MATERIAL [STEPS]     # on wgkern for Quadrants
    python -m wgkern run --as quadrants particle_cube.py OUT.npy MATERIAL [STEPS] vulkan   # the kernels on Vulkan

(a trailing `vulkan`: kernel_arch.py)

test_particle_scenes.py runs it both ways and compares."""
from __future__ import annotations

import sys
import time

import numpy as np

STEPS = 100
DT = 4e-3
LOWER, UPPER = (-0.5, -0.5, -0.1), (0.5, 0.5, 0.7)      # the simulated domain (m), the plane inside it
SEED = 0
CUBE_CENTRE, CUBE_SIZE = (0.0, 0.0, 0.35), 0.2


def build(material: str):
    """The scene and its particle entity, built."""
    import genesis as gs
    gs.init(backend=gs.cpu, precision="32", logging_level="warning", seed=SEED)    # the sand's random sampling
    solver, kind = material.split("_")
    options: dict = dict(sim_options=gs.options.SimOptions(dt=DT, substeps=10), show_viewer=False)
    if solver == "mpm":
        options["mpm_options"] = gs.options.MPMOptions(lower_bound=LOWER, upper_bound=UPPER, grid_density=32)
        chosen = {"elastic": gs.materials.MPM.Elastic, "sand": gs.materials.MPM.Sand}[kind]()
    elif solver == "sph":
        options["sph_options"] = gs.options.SPHOptions(lower_bound=LOWER, upper_bound=UPPER, particle_size=0.02)
        chosen = {"liquid": gs.materials.SPH.Liquid}[kind]()
    else:
        raise ValueError(f"unknown material {material!r}: mpm_elastic, mpm_sand or sph_liquid")
    scene = gs.Scene(**options)
    scene.add_entity(gs.morphs.Plane())
    cube = scene.add_entity(material=chosen, morph=gs.morphs.Box(pos=CUBE_CENTRE, size=(CUBE_SIZE,) * 3))
    scene.build()
    return scene, cube


def simulate(material: str, steps: int = STEPS) -> tuple[np.ndarray, float]:
    """Every particle's position after each step, and the mean wall time of the steps after the first (warm)."""
    scene, cube = build(material)
    positions = np.zeros((steps, cube.n_particles, 3))
    started = None
    for step in range(steps):
        if step == 1:
            started = time.perf_counter()
        scene.step()
        positions[step] = np.asarray(cube.get_particles_pos().cpu().numpy(), dtype=np.float64).reshape(-1, 3)
    per_step = (time.perf_counter() - started) / (steps - 1) if started is not None else float("nan")
    return positions, per_step


if __name__ == "__main__":
    from kernel_arch import scene_arguments
    arguments = scene_arguments(sys.argv)
    trajectory, seconds = simulate(arguments[1], int(arguments[2]) if len(arguments) > 2 else STEPS)
    np.save(arguments[0], trajectory)
    print(f"per-step wall time (warm): {seconds * 1e3:.3f} ms")
