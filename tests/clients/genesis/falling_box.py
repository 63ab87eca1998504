"""The falling-box scene: a 0.2 m box dropped from 1 m onto a plane, 100 steps of dt=0.01 on Genesis's CPU
backend. Run as a script, it writes the box's positions after each step as a (100, 3) float64 .npy file:

    python falling_box.py OUT.npy                                  # on Quadrants
    python -m wgkern run --as quadrants falling_box.py OUT.npy     # on wgkern in place of Quadrants
    python -m wgkern run --as quadrants falling_box.py OUT.npy 100 vulkan   # Genesis's kernels on Vulkan

The trailing `vulkan` (kernel_arch.py) keeps `gs.init(backend=gs.cpu)` with the kernels on Vulkan.
test_falling_box.py runs it these ways and compares."""
from __future__ import annotations

import sys
import time

import numpy as np

STEPS = 100
DT = 0.01


def simulate(steps: int = STEPS) -> tuple[np.ndarray, float]:
    """The box's position after each step, and the mean wall time of the steps after the first (warm)."""
    import genesis as gs
    gs.init(backend=gs.cpu, precision="32", logging_level="warning")
    scene = gs.Scene(sim_options=gs.options.SimOptions(dt=DT), show_viewer=False)
    scene.add_entity(gs.morphs.Plane())
    box = scene.add_entity(gs.morphs.Box(size=(0.2, 0.2, 0.2), pos=(0.0, 0.0, 1.0)))
    scene.build()
    positions = np.zeros((steps, 3))
    started = None
    for step in range(steps):
        if step == 1:
            started = time.perf_counter()
        scene.step()
        positions[step] = np.asarray(box.get_pos().cpu().numpy(), dtype=np.float64).reshape(-1)[:3]
    per_step = (time.perf_counter() - started) / (steps - 1) if started is not None else float("nan")
    return positions, per_step


if __name__ == "__main__":
    from kernel_arch import scene_arguments
    arguments = scene_arguments(sys.argv)
    trajectory, seconds = simulate(int(arguments[1]) if len(arguments) > 1 else STEPS)
    np.save(arguments[0], trajectory)
    print(f"per-step wall time (warm): {seconds * 1e3:.3f} ms")
