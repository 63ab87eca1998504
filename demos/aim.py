"""Differentiable aiming: 64 cannons learn their launch speed by gradient descent through a while loop.

Each cannon fires a ball with air drag and steps it until it lands (a trip count known only at run time);
reverse mode through that loop (adstacks) gives d(miss distance)/d(speed). The frames show the first volley, the
current one and the loss curve.
Run: python -m wgkern demo aim [--headless --out aim.png] [--arch cpu|vulkan] [--steps N]"""
from __future__ import annotations

import functools
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import wgkern as wk  # noqa: E402
from wgkern.raster import draw_text  # noqa: E402
from _chart import draw_line_chart  # noqa: E402
from _common import Demo, Frame, run_frames  # noqa: E402
from _overlay import BAND_HEIGHT, format_loss  # noqa: E402

TITLE = "Differentiable aiming"  # drawn on every frame, and the window's title

CANNONS = 64
DT = 0.01
DRAG = 0.02
GRAVITY = 9.81
LEARNING_RATE = 0.02
FRAME_EVERY = 5                 # gradient steps between frames
SCENE_WIDTH, CHART_WIDTH, HEIGHT = 640, 320, 360     # the side view, and the loss curve on its right
WIDTH = SCENE_WIDTH + CHART_WIDTH
CHART_GAP = 8                   # pixels between the title band and the chart, and around the chart
BACKGROUND = (0.05, 0.07, 0.12)
FIRST_COLOR, CURRENT_COLOR, TARGET_COLOR = (0.2, 0.35, 0.8), (1.0, 0.6, 0.15), (0.3, 1.0, 0.4)
LEGEND = (("first volley", FIRST_COLOR), ("current volley", CURRENT_COLOR), ("targets", TARGET_COLOR))
LEGEND_SIZE = 10                # pixels per line of the legend (crisp: one per font unit)
LEGEND_WIDTH = 100              # from the scene's right edge
# Launch speeds stay in [SPEED_MIN, SPEED_MAX] m/s whatever the gradient says: 60 m/s carries a ball past the
# farthest target (30 m) at every angle, and bounds the while loop's trips (a flight of at most about 6 s, 100
# steps a second: the per-thread adstack the gradient keeps) however large a step the descent takes; near 0 a
# ball would never leave the ground.
SPEED_MIN, SPEED_MAX = 1.0, 60.0


def build():
    speed = wk.field(wk.f32, shape=CANNONS, needs_grad=True)
    angle = wk.field(wk.f32, shape=CANNONS)
    target = wk.field(wk.f32, shape=CANNONS)
    landing = wk.field(wk.f32, shape=CANNONS, needs_grad=True)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def fire():
        for c in speed:
            vx = speed[c] * wk.cos(angle[c])
            vy = speed[c] * wk.sin(angle[c])
            px = 0.0
            py = 0.0
            while py >= 0.0:                       # until the ball lands: a dynamic trip count
                v = wk.sqrt(vx * vx + vy * vy)
                vx = vx - DT * DRAG * v * vx
                vy = vy - DT * (GRAVITY + DRAG * v * vy)
                px = px + DT * vx
                py = py + DT * vy
            landing[c] = px
            miss = px - target[c]
            loss[None] += miss * miss

    @wk.kernel
    def descend(rate: wk.f32):
        for c in speed:
            speed[c] = wk.clamp(speed[c] - rate * speed.grad[c], SPEED_MIN, SPEED_MAX)

    return speed, angle, target, landing, loss, fire, descend


def trajectory(speed: float, angle: float) -> np.ndarray:
    """The ball's path on the host (numpy), for drawing: the same steps as the kernel."""
    vx, vy, px, py = speed * math.cos(angle), speed * math.sin(angle), 0.0, 0.0
    points = []
    while py >= 0.0:
        v = math.hypot(vx, vy)
        vx -= DT * DRAG * v * vx
        vy -= DT * (GRAVITY + DRAG * v * vy)
        px += DT * vx
        py += DT * vy
        points.append((px, py))
    return np.array(points)


def render(first: np.ndarray, current: np.ndarray, angles: np.ndarray, targets: np.ndarray,
           losses: list[float]) -> np.ndarray:
    """The frame as float RGB rows (HEIGHT, WIDTH, 3): on the left a side view of the first volley (blue), the
    current one (orange) and the targets (green ticks); on the right the loss of every iteration so far."""
    image = np.empty((HEIGHT, WIDTH, 3), np.float32)
    image[:] = BACKGROUND
    draw_scene(image[BAND_HEIGHT:, :SCENE_WIDTH], first, current, angles, targets)
    image[BAND_HEIGHT:, SCENE_WIDTH] = (0.25, 0.27, 0.3)
    draw_line_chart(image, *chart_box(), np.arange(1, len(losses) + 1), np.array(losses),
                    "loss: mean squared miss, m^2", "iteration")
    return image


def chart_box() -> tuple[int, int, int, int]:
    """(left, top, width, height) in pixels of the loss chart: right of the scene, below the title band."""
    top = BAND_HEIGHT + CHART_GAP
    return SCENE_WIDTH + CHART_GAP, top, CHART_WIDTH - 2 * CHART_GAP, HEIGHT - top - CHART_GAP


def draw_scene(image: np.ndarray, first: np.ndarray, current: np.ndarray, angles: np.ndarray,
               targets: np.ndarray) -> None:
    """The side view into `image` (a float RGB view, rows from the top): 36 m of range across its width, the same
    scale upwards (the parts of flights above the view are left out), and a legend at the top right."""
    height, width = image.shape[:2]
    scale = (width - 20) / 36.0
    ground = height - 20

    def plot(points: np.ndarray, color: tuple[float, float, float]) -> None:
        cols = (10 + points[:, 0] * scale).astype(int)
        rows = (ground - points[:, 1] * scale).astype(int)
        seen = (rows >= 0) & (rows <= height - 2) & (cols >= 0) & (cols <= width - 2)
        rows, cols = rows[seen], cols[seen]
        for dr in (0, 1):
            for dc in (0, 1):
                image[rows + dr, cols + dc] = color

    for speeds, color in ((first, FIRST_COLOR), (current, CURRENT_COLOR)):
        for speed, angle in zip(speeds, angles):
            plot(trajectory(float(speed), float(angle)), color)
    image[ground:ground + 2, :] = (0.5, 0.5, 0.5)
    for x in targets:
        col = int(np.clip(10 + x * scale, 0, width - 3))
        image[ground - 6:ground + 6, col:col + 2] = TARGET_COLOR
    left = width - LEGEND_WIDTH
    for number, (text, color) in enumerate(LEGEND):
        draw_text(image, text, left, 6 + number * LEGEND_SIZE, LEGEND_SIZE, np.array(color, np.float32))


def simulate(steps: int, state: dict | None = None, report: bool = False):
    """`steps` gradient steps from 12 m/s, yielding a Frame every FRAME_EVERY steps and after the last. Each
    iteration's loss (the mean squared miss its forward pass measured, in m^2) is recorded; with `report`, some
    are printed. `state`, when given, receives the fields, the first speeds and the list of losses."""
    speed, angle, target, landing, loss, fire, descend = build()
    rng = np.random.default_rng(1)
    speed.from_numpy(np.full(CANNONS, 12.0, np.float32))
    angles = np.linspace(math.radians(20), math.radians(70), CANNONS).astype(np.float32)
    angle.from_numpy(angles)
    targets = rng.uniform(8.0, 30.0, CANNONS).astype(np.float32)
    target.from_numpy(targets)
    first = speed.to_numpy()
    losses: list[float] = []
    if state is not None:
        state.update(speed=speed, angle=angle, target=target, landing=landing, loss=loss, first=first,
                     losses=losses)
    for step in range(1, steps + 1):
        loss[None] = 0.0
        with wk.ad.Tape(loss=loss):
            fire()
        descend(LEARNING_RATE)
        losses.append(loss[None] / CANNONS)
        if report and ((step - 1) % max(steps // 8, 1) == 0 or step == steps):
            print(f"  iteration {step:3d}: loss {format_loss(losses[-1])} m^2")
        if step % FRAME_EVERY == 0 or step == steps:
            yield Frame(step, lambda: render(first, speed.to_numpy(), angles, targets, losses),
                        (f"loss {format_loss(losses[-1])} m^2",))


def train(steps: int, state: dict | None = None) -> tuple[np.ndarray, ...]:
    """Run `steps` gradient steps; (angles, first speeds, trained speeds, targets)."""
    state = {} if state is None else state
    for _ in simulate(steps, state):
        pass
    return state["angle"].to_numpy(), state["first"], state["speed"].to_numpy(), state["target"].to_numpy()


def main(arch=None, headless: bool = True, out: str | None = None, steps: int | None = None) -> int:
    program = wk.init(arch=arch)
    steps = steps or 100
    print(f"aim: {CANNONS} cannons, {steps} gradient steps on {program.arch!r} ({program.description})")
    demo = Demo("aim", TITLE, f"{CANNONS} cannons", program.arch.name, unit="iteration")
    return run_frames(demo, functools.partial(simulate, report=True), steps, headless, out)


if __name__ == "__main__":
    sys.exit(main())
