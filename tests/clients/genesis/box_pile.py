"""The rigid-contact pile: four 0.2 m boxes dropped one above another, each offset sideways from the one below
(by 2 to 5 cm, less than half a box, so they land on each other and settle as a leaning stack on a plane), 100
steps of dt=0.01 on Genesis's CPU backend: box-box contacts as well as box-plane ones, solved together. Run as a
script, it writes every box's position after each step as a (steps, boxes, 3) float64 .npy file:

    python box_pile.py OUT.npy [STEPS]                                  # on Quadrants
    python -m wgkern run --as quadrants box_pile.py OUT.npy [STEPS]     # on wgkern in place of Quadrants
    python -m wgkern run --as quadrants box_pile.py OUT.npy [STEPS] vulkan   # the kernels on Vulkan

(a trailing `vulkan`: kernel_arch.py)

test_box_pile.py runs it both ways and compares."""
from __future__ import annotations

import sys
import time

import numpy as np

STEPS = 100
DT = 0.01
SIZE = 0.2
# the boxes' starting centres (m): 1 cm above the plane, then 1 cm more between each box and the next, the upper
# ones offset sideways by 2 to 4 cm from the one below
STARTS = ((0.0, 0.0, 0.11), (0.04, 0.02, 0.32), (0.01, -0.02, 0.53), (-0.02, 0.01, 0.74))


def simulate(steps: int = STEPS) -> tuple[np.ndarray, float]:
    """Each box's position after each step, and the mean wall time of the steps after the first (warm)."""
    import genesis as gs
    gs.init(backend=gs.cpu, precision="32", logging_level="warning")
    scene = gs.Scene(sim_options=gs.options.SimOptions(dt=DT), show_viewer=False)
    scene.add_entity(gs.morphs.Plane())
    boxes = [scene.add_entity(gs.morphs.Box(size=(SIZE,) * 3, pos=start)) for start in STARTS]
    scene.build()
    positions = np.zeros((steps, len(boxes), 3))
    started = None
    for step in range(steps):
        if step == 1:
            started = time.perf_counter()
        scene.step()
        for i, box in enumerate(boxes):
            positions[step, i] = np.asarray(box.get_pos().cpu().numpy(), dtype=np.float64).reshape(-1)[:3]
    per_step = (time.perf_counter() - started) / (steps - 1) if started is not None else float("nan")
    return positions, per_step


if __name__ == "__main__":
    from kernel_arch import scene_arguments
    arguments = scene_arguments(sys.argv)
    trajectory, seconds = simulate(int(arguments[1]) if len(arguments) > 1 else STEPS)
    np.save(arguments[0], trajectory)
    print(f"per-step wall time (warm): {seconds * 1e3:.3f} ms")
