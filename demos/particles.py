"""Particle fountain: 32k particles with gravity, bouncy walls and respawning, splatted with atomics, to a PNG.

Run: python -m wgkern demo particles [--headless --out particles.png] [--arch cpu|vulkan] [--steps N]"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import wgkern as wk  # noqa: E402
from _common import Demo, Frame, run_frames  # noqa: E402

TITLE = "Particle fountain"  # drawn on every frame, and the window's title

COUNT = 32768
HEIGHT, WIDTH = 256, 384
GRAVITY = -2.5
RESTITUTION = 0.8


LIFETIME = 2.0          # seconds a particle lives before it is emitted again
EMIT_SPAN = 2.0         # particles are emitted evenly over this many seconds


@wk.func
def respawn(px: wk.template(), py: wk.template(), vx: wk.template(), vy: wk.template(), i: wk.i32):
    px[i] = 0.5 + 0.02 * (wk.random() - 0.5)
    py[i] = 0.02 * wk.random()
    angle = 1.5707963 + 0.5 * (wk.random() - 0.5)
    speed = 1.3 + 0.5 * wk.random()
    vx[i] = wk.cos(angle) * speed
    vy[i] = wk.sin(angle) * speed


@wk.kernel
def emit(px: wk.template(), py: wk.template(), vx: wk.template(), vy: wk.template(), age: wk.template()):
    for i in px:
        respawn(px, py, vx, vy, i)
        age[i] = -EMIT_SPAN * wk.cast(i, wk.f32) / px.shape[0]


@wk.kernel
def advance(px: wk.template(), py: wk.template(), vx: wk.template(), vy: wk.template(), age: wk.template(),
            dt: wk.f32):
    for i in px:
        age[i] += dt
        if age[i] > LIFETIME:
            respawn(px, py, vx, vy, i)
            age[i] = 0.0
        elif age[i] >= 0.0:
            vy[i] += GRAVITY * dt
            x = px[i] + vx[i] * dt
            y = py[i] + vy[i] * dt
            if x < 0.0 or x > 1.0:
                vx[i] = -vx[i] * RESTITUTION
                x = wk.clamp(x, 0.0, 1.0)
            if y < 0.0:
                vy[i] = -vy[i] * RESTITUTION
                y = 0.0
            px[i] = x
            py[i] = y


@wk.kernel
def splat(px: wk.template(), py: wk.template(), age: wk.template(), density: wk.template()):
    for i, j in density:
        density[i, j] = 0.0
    for k in px:
        col = wk.cast(px[k] * (density.shape[1] - 1), wk.i32)
        row = wk.cast((1.0 - py[k] * 1.35) * (density.shape[0] - 1), wk.i32)
        if age[k] >= 0.0 and 0 <= row < density.shape[0] and 0 <= col < density.shape[1]:
            wk.atomic_add(density[row, col], 1.0)


@wk.kernel
def colorize(density: wk.template(), image: wk.template()):
    for i, j in density:
        v = 1.0 - wk.exp(-0.35 * density[i, j])
        image[i, j] = wk.math.vec3(v * v, v, 0.35 + 0.65 * v)


def simulate(steps: int, state: dict | None = None):
    """Yield a Frame every 5 steps and after the last; `state`, when given, receives the particle fields."""
    px, py, vx, vy, age = (wk.field(wk.f32, shape=COUNT, name=n) for n in ("px", "py", "vx", "vy", "age"))
    if state is not None:
        state.update(px=px, py=py, vx=vx, vy=vy, age=age)
    density = wk.field(wk.f32, shape=(HEIGHT, WIDTH), name="density")
    image = wk.Vector.field(3, wk.f32, shape=(HEIGHT, WIDTH), name="image")
    emit(px, py, vx, vy, age)
    for step in range(steps):
        advance(px, py, vx, vy, age, 1.0 / 240.0)
        if step % 5 == 4 or step == steps - 1:
            yield Frame(step + 1, lambda: picture(px, py, age, density, image))


def picture(px, py, age, density, image) -> np.ndarray:
    splat(px, py, age, density)
    colorize(density, image)
    return image.to_numpy()


def main(arch=None, headless: bool = True, out: str | None = None, steps: int | None = None) -> int:
    program = wk.init(arch=arch)
    steps = steps or 600
    print(f"particles: {COUNT} particles, {steps} steps on {program.arch!r} ({program.description})")
    demo = Demo("particles", TITLE, f"{COUNT} particles", program.arch.name)
    return run_frames(demo, simulate, steps, headless, out)

if __name__ == "__main__":
    sys.exit(main())
