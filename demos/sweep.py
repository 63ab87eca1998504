"""A parameter sweep on every device Ray reports: the aim demo's cannons re-aimed for each air-drag coefficient.

Each point of the sweep is one drag coefficient: 64 cannons (the aim demo's angles and targets) learn their
launch speeds by gradient descent through the flight's while loop, on whichever actor is free (wgkern.distributed:
one actor per GPU, or CPU actors on a machine without GPUs). The frame shows the loss reached and the mean
launch speed learnt, against the drag.
Run: python -m wgkern demo sweep [--actors N] [--sweep N] [--steps N] [--arch cpu|vulkan|cuda] [--out sweep.png]"""
from __future__ import annotations

import functools
import math
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import wgkern as wk  # noqa: E402
from _chart import draw_line_chart  # noqa: E402
from _common import Demo, Frame, compose, output_path  # noqa: E402
from _overlay import BAND_HEIGHT, format_loss  # noqa: E402
from wgkern.png import write_png  # noqa: E402

TITLE = "Sweep: aiming under air drag"
REQUIRES = ("ray",)                  # `demo --all` skips this demo, saying so, where Ray is not installed
DRAG_MIN, DRAG_MAX = 0.0, 0.06       # per metre: the aim demo flies at 0.02
DEFAULT_POINTS, DEFAULT_STEPS = 8, 100
WIDTH, HEIGHT = 960, 360
GAP = 8
BAR_WIDTH = 30                       # characters of the progress bar


def program() -> SimpleNamespace:
    """What each actor loads: the aim demo's cannons (its constants, angles and targets) with the drag as a
    kernel argument."""
    from wgkern.resources import resource_dir
    folder = str(resource_dir("demos"))
    if folder not in sys.path:
        sys.path.insert(0, folder)
    import aim

    speed = wk.field(wk.f32, shape=aim.CANNONS, needs_grad=True)
    angle = wk.field(wk.f32, shape=aim.CANNONS)
    target = wk.field(wk.f32, shape=aim.CANNONS)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def fire(drag: wk.f32):
        for c in speed:
            vx = speed[c] * wk.cos(angle[c])
            vy = speed[c] * wk.sin(angle[c])
            px = 0.0
            py = 0.0
            while py >= 0.0:                       # until the ball lands: a dynamic trip count
                v = wk.sqrt(vx * vx + vy * vy)
                vx = vx - aim.DT * drag * v * vx
                vy = vy - aim.DT * (aim.GRAVITY + drag * v * vy)
                px = px + aim.DT * vx
                py = py + aim.DT * vy
            miss = px - target[c]
            loss[None] += miss * miss

    @wk.kernel
    def descend(rate: wk.f32):
        for c in speed:
            speed[c] = wk.clamp(speed[c] - rate * speed.grad[c], aim.SPEED_MIN, aim.SPEED_MAX)

    angle.from_numpy(np.linspace(math.radians(20), math.radians(70), aim.CANNONS).astype(np.float32))
    target.from_numpy(np.random.default_rng(1).uniform(8.0, 30.0, aim.CANNONS).astype(np.float32))
    return SimpleNamespace(speed=speed, loss=loss, fire=fire, descend=descend, cannons=aim.CANNONS,
                           rate=aim.LEARNING_RATE)


def optimise(p: SimpleNamespace, drag: float, steps: int) -> dict:
    """One point of the sweep, on an actor: `steps` gradient steps from 12 m/s under this drag; the loss of each
    step (mean squared miss, m^2) and the speeds learnt."""
    p.speed.fill(12.0)
    losses = []
    for _ in range(steps):
        p.loss[None] = 0.0
        with wk.ad.Tape(loss=p.loss):
            p.fire(drag)
        p.descend(p.rate)
        losses.append(p.loss[None] / p.cannons)
    return {"drag": drag, "losses": np.array(losses), "speed": p.speed}


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def drags(points: int) -> list[float]:
    return np.linspace(DRAG_MIN, DRAG_MAX, points).tolist()


def run_sweep(pool, values: list[float], steps: int, progress=None) -> list[dict]:
    """optimise() for each drag in `values` across the pool's actors; the results in the order of `values`."""
    return pool.map(functools.partial(optimise, steps=steps), values, progress=progress)


def progress_bar(done: int, total: int, start: float) -> None:
    filled = BAR_WIDTH * done // total
    print(f"\r  [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{total} sweep points, "
          f"{time.perf_counter() - start:.1f} s", end="\n" if done == total else "", flush=True)


def render(results: list[dict]) -> np.ndarray:
    """Float RGB rows (HEIGHT, WIDTH, 3): the final loss against the drag, and the mean launch speed learnt."""
    image = np.empty((HEIGHT, WIDTH, 3), np.float32)
    image[:] = (0.05, 0.07, 0.12)
    drags = np.array([r["drag"] for r in results])
    final = np.array([r["losses"][-1] for r in results])
    speeds = np.array([float(np.mean(r["speed"])) for r in results])
    top, half = BAND_HEIGHT + GAP, WIDTH // 2
    height = HEIGHT - top - GAP
    draw_line_chart(image, GAP, top, half - 2 * GAP, height, drags, np.maximum(final, 1e-12),
                    "loss reached: mean squared miss, m^2", "drag coefficient, 1/m")
    draw_line_chart(image, half + GAP, top, half - 2 * GAP, height, drags, speeds,
                    "mean launch speed learnt, m/s", "drag coefficient, 1/m")
    return image


def start_ray() -> bool:
    """Ray for the sweep: the cluster of $RAY_ADDRESS, else a local instance; True when started here."""
    from wgkern.distributed.pool import require_ray
    ray = require_ray()
    if ray.is_initialized():
        return False
    if os.environ.get("RAY_ADDRESS"):
        ray.init()
    else:
        ray.init(include_dashboard=False, log_to_driver=False)
    return True


def main(arch=None, headless: bool = True, out: str | None = None, steps: int | None = None,
         actors: int | None = None, sweep: int | None = None) -> int:
    from wgkern.distributed import DevicePool
    steps, points = steps or DEFAULT_STEPS, sweep or DEFAULT_POINTS
    try:
        started = start_ray()
    except ImportError as exc:
        print(f"sweep: {exc}", file=sys.stderr)
        return 1
    try:
        begin = time.perf_counter()
        with DevicePool(program, arch=arch, actors=actors) as pool:
            pool.run_all(optimise, DRAG_MIN, 1)     # compile (or load from the cache) before the timed sweep
            where = sorted({f"{d['arch']}: {d['device']}" for d in pool.devices})
            print(f"sweep: {points} drag coefficients x {steps} gradient steps on {plural(len(pool), 'actor')} "
                  f"({'; '.join(where)}), ready in {time.perf_counter() - begin:.1f} s")
            start = time.perf_counter()
            results = run_sweep(pool, drags(points), steps, functools.partial(progress_bar, start=start))
            elapsed = time.perf_counter() - start
            arch_name, count = pool.devices[0]["arch"], len(pool)
    finally:
        if started:
            import ray
            ray.shutdown()
    best = min(results, key=lambda r: r["losses"][-1])
    frame = Frame(points, lambda: render(results), (f"best loss {format_loss(best['losses'][-1])} m^2 "
                                                     f"at drag {best['drag']:.3f}", plural(count, "actor")))
    demo = Demo("sweep", TITLE, f"64 cannons x {points} drags", arch_name, unit="sweep point")
    out = output_path("sweep", out)
    write_png(out, compose(demo, frame, frame.draw(), points, points / elapsed))
    print(f"sweep: {points} sweep points in {elapsed:.2f} s ({elapsed / points:.2f} s/point on "
          f"{plural(count, 'actor')}); wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
