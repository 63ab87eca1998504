"""Differentiable aiming: 64 cannons learn their launch speed by gradient descent through a while loop.

Each cannon fires a ball with air drag and steps it until it lands (a trip count known only at run time);
reverse mode through that loop (adstacks) gives d(miss distance)/d(speed). Rendered to a PNG.
Run: python -m wgkern demo aim [--headless --out aim.png] [--arch cpu|vulkan] [--steps N]"""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import wgkern as wk  # noqa: E402
from _common import output_path, show, to_rgba, write_png  # noqa: E402

CANNONS = 64
DT = 0.01
DRAG = 0.02
GRAVITY = 9.81
WIDTH, HEIGHT = 640, 360
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


def render(first: np.ndarray, final: np.ndarray, angles: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Side view: the first volley in blue, the trained one in orange, targets as green ticks."""
    image = np.zeros((HEIGHT, WIDTH, 3), np.float32)
    image[:] = (0.05, 0.07, 0.12)
    scale = (WIDTH - 20) / 36.0
    ground = HEIGHT - 20

    def plot(points: np.ndarray, color: tuple[float, float, float]) -> None:
        cols = np.clip((10 + points[:, 0] * scale).astype(int), 0, WIDTH - 2)
        rows = np.clip((ground - points[:, 1] * scale).astype(int), 0, HEIGHT - 2)
        for dr in (0, 1):
            for dc in (0, 1):
                image[rows + dr, cols + dc] = color

    for speed, angle in zip(first, angles):
        plot(trajectory(float(speed), float(angle)), (0.2, 0.35, 0.8))
    for speed, angle in zip(final, angles):
        plot(trajectory(float(speed), float(angle)), (1.0, 0.6, 0.15))
    image[ground:ground + 2, :] = (0.5, 0.5, 0.5)
    for x in targets:
        col = int(np.clip(10 + x * scale, 0, WIDTH - 3))
        image[ground - 6:ground + 6, col:col + 2] = (0.3, 1.0, 0.4)
    return to_rgba(image)


def train(steps: int, state: dict | None = None, report: bool = False) -> tuple[np.ndarray, ...]:
    """`steps` gradient steps from 12 m/s; (angles, first speeds, trained speeds, targets). `state`, when
    given, receives the fields."""
    speed, angle, target, landing, loss, fire, descend = build()
    if state is not None:
        state.update(speed=speed, landing=landing, loss=loss)
    rng = np.random.default_rng(1)
    speed.from_numpy(np.full(CANNONS, 12.0, np.float32))
    angle.from_numpy(np.linspace(math.radians(20), math.radians(70), CANNONS).astype(np.float32))
    targets = rng.uniform(8.0, 30.0, CANNONS).astype(np.float32)
    target.from_numpy(targets)
    first_speeds = speed.to_numpy()
    for step in range(steps):
        loss[None] = 0.0
        with wk.ad.Tape(loss=loss):
            fire()
        descend(0.02)
        if report and (step % max(steps // 8, 1) == 0 or step == steps - 1):
            print(f"  step {step:3d}: mean squared miss {loss[None] / CANNONS:.4f} m^2")
    return angle.to_numpy(), first_speeds, speed.to_numpy(), targets


def main(arch=None, headless: bool = True, out: str | None = None, steps: int | None = None) -> int:
    program = wk.init(arch=arch)
    steps = steps or 100
    print(f"aim: {CANNONS} cannons, {steps} gradient steps on {program.arch!r} ({program.description})")
    start = time.perf_counter()
    angles, first_speeds, speeds, targets = train(steps, report=True)
    elapsed = time.perf_counter() - start
    frame = render(first_speeds, speeds, angles, targets)
    if not headless and show(iter([frame]), "wgkern differentiable aiming"):
        return 0
    out = output_path("aim", out)
    write_png(out, frame)
    print(f"aim: {steps} forward+backward steps in {elapsed:.2f} s; wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
