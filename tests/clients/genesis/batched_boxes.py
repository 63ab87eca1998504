"""The batched falling boxes: the falling-box scene built with n_envs environments (16 unless the third argument
says otherwise), each box dropped from its own height (0.5 m to 1.5 m) and x offset, 100 steps of dt=0.01 on
Genesis's CPU backend. Run as a script, it writes every environment's box position after each step as a
(steps, n_envs, 3) float64 .npy file:

    python batched_boxes.py OUT.npy [STEPS [N_ENVS]]                                  # on Quadrants
    python -m wgkern run --as quadrants batched_boxes.py OUT.npy [STEPS [N_ENVS]]     # on wgkern for Quadrants
    python -m wgkern run --as quadrants batched_boxes.py OUT.npy STEPS N_ENVS vulkan  # the kernels on Vulkan

(a trailing `vulkan`: kernel_arch.py)

test_more_scenes.py runs it both ways and compares."""
from __future__ import annotations

import sys
import time

import numpy as np

STEPS = 100
DT = 0.01
N_ENVS = 16


def simulate(steps: int = STEPS, n_envs: int = N_ENVS) -> tuple[np.ndarray, float]:
    """Each environment's box position after each step, and the mean wall time of the steps after the first."""
    import genesis as gs
    gs.init(backend=gs.cpu, precision="32", logging_level="warning")
    scene = gs.Scene(sim_options=gs.options.SimOptions(dt=DT), show_viewer=False)
    scene.add_entity(gs.morphs.Plane())
    box = scene.add_entity(gs.morphs.Box(size=(0.2, 0.2, 0.2), pos=(0.0, 0.0, 1.0)))
    scene.build(n_envs=n_envs)
    start = np.zeros((n_envs, 3))
    start[:, 0] = np.linspace(-0.5, 0.5, n_envs)
    start[:, 2] = np.linspace(0.5, 1.5, n_envs)
    box.set_pos(start)
    positions = np.zeros((steps, n_envs, 3))
    started = None
    for step in range(steps):
        if step == 1:
            started = time.perf_counter()
        scene.step()
        positions[step] = np.asarray(box.get_pos().cpu().numpy(), dtype=np.float64).reshape(n_envs, 3)
    per_step = (time.perf_counter() - started) / (steps - 1) if started is not None else float("nan")
    return positions, per_step


if __name__ == "__main__":
    from kernel_arch import scene_arguments
    arguments = scene_arguments(sys.argv)
    trajectory, seconds = simulate(int(arguments[1]) if len(arguments) > 1 else STEPS,
                                   int(arguments[2]) if len(arguments) > 2 else N_ENVS)
    np.save(arguments[0], trajectory)
    print(f"per-step wall time (warm): {seconds * 1e3:.3f} ms")
