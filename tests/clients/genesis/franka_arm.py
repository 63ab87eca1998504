"""The Franka arm scene: Genesis's bundled Franka Emika Panda (xml/franka_emika_panda/panda.xml) on a plane,
driven by its joint PD controllers towards a fixed joint-position target, 100 steps of dt=0.01 on Genesis's CPU
backend; with N_ENVS > 0, built with that many environments (`scene.build(n_envs=N_ENVS)`), each driven to the
target scaled by its own factor from 0.5 to 1.5. Run as a script, it writes every link's position (of every
environment, environment-major) after each step as a (steps, links x environments, 3) float64 .npy file:

    python franka_arm.py OUT.npy [STEPS [N_ENVS]]                                  # on Quadrants
    python -m wgkern run --as quadrants franka_arm.py OUT.npy [STEPS [N_ENVS]]     # on wgkern for Quadrants
    python -m wgkern run --as quadrants franka_arm.py OUT.npy STEPS N_ENVS vulkan  # the kernels on Vulkan

(a trailing `vulkan`: kernel_arch.py)

test_more_scenes.py runs it both ways and compares."""
from __future__ import annotations

import sys
import time

import numpy as np

STEPS = 100
DT = 0.01
KP, KV = 4500.0, 450.0                 # joint PD gains (every joint alike)
TARGET = (1.0, 1.0, 0.0, -1.5, 0.0, 1.5, 0.5, 0.04, 0.04)   # seven arm joints (rad), two finger slides (m)


def simulate(steps: int = STEPS, n_envs: int = 0) -> tuple[np.ndarray, float]:
    """Every link's position after each step, and the mean wall time of the steps after the first (warm)."""
    import genesis as gs
    gs.init(backend=gs.cpu, precision="32", logging_level="warning")
    scene = gs.Scene(sim_options=gs.options.SimOptions(dt=DT), show_viewer=False)
    scene.add_entity(gs.morphs.Plane())
    arm = scene.add_entity(gs.morphs.MJCF(file="xml/franka_emika_panda/panda.xml"))
    scene.build(n_envs=n_envs)
    dofs = np.arange(arm.n_dofs)
    arm.set_dofs_kp(np.full(arm.n_dofs, KP), dofs)
    arm.set_dofs_kv(np.full(arm.n_dofs, KV), dofs)
    target = np.array(TARGET[:arm.n_dofs])
    if n_envs:                          # each environment its own target: the joint angles scaled by 0.5 to 1.5
        target = np.outer(np.linspace(0.5, 1.5, n_envs), target)
    positions = np.zeros((steps, max(n_envs, 1) * arm.n_links, 3))
    started = None
    for step in range(steps):
        if step == 1:
            started = time.perf_counter()
        arm.control_dofs_position(target, dofs)
        scene.step()
        positions[step] = np.asarray(arm.get_links_pos().cpu().numpy(), dtype=np.float64).reshape(-1, 3)
    per_step = (time.perf_counter() - started) / (steps - 1) if started is not None else float("nan")
    return positions, per_step


if __name__ == "__main__":
    from kernel_arch import scene_arguments
    arguments = scene_arguments(sys.argv)
    trajectory, seconds = simulate(int(arguments[1]) if len(arguments) > 1 else STEPS,
                                   int(arguments[2]) if len(arguments) > 2 else 0)
    np.save(arguments[0], trajectory)
    print(f"per-step wall time (warm): {seconds * 1e3:.3f} ms")
