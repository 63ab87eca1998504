"""2-D heat diffusion: moving hot spots on a cold plate, explicit finite differences, rendered to a PNG.

Run: python -m wgkern demo heat [--headless --out heat.png] [--arch cpu|vulkan] [--steps N]"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import wgkern as wk  # noqa: E402
from _common import Demo, Frame, run_frames  # noqa: E402

TITLE = "Heat diffusion"  # drawn on every frame, and the window's title

HEIGHT, WIDTH = 256, 384
ALPHA = 0.24            # diffusion number; explicit 2-D scheme is stable below 0.25


@wk.kernel
def diffuse(src: wk.template(), dst: wk.template(), alpha: wk.f32):
    for i, j in src:
        if i == 0 or j == 0 or i == src.shape[0] - 1 or j == src.shape[1] - 1:
            dst[i, j] = 0.0
        else:
            laplacian = src[i - 1, j] + src[i + 1, j] + src[i, j - 1] + src[i, j + 1] - 4.0 * src[i, j]
            dst[i, j] = src[i, j] + alpha * laplacian


@wk.kernel
def heat_sources(t: wk.template(), phase: wk.f32):
    for i, j in t:
        for k in range(3):
            angle = phase + k * 2.0943951
            cy = t.shape[0] * (0.5 + 0.3 * wk.sin(angle))
            cx = t.shape[1] * (0.5 + 0.3 * wk.cos(angle))
            dy = wk.cast(i, wk.f32) - cy
            dx = wk.cast(j, wk.f32) - cx
            if dx * dx + dy * dy < 64.0:
                t[i, j] = 1.0


@wk.kernel
def colorize(t: wk.template(), image: wk.template()):
    for i, j in t:
        v = wk.sqrt(wk.clamp(t[i, j], 0.0, 1.0))
        image[i, j][0] = wk.clamp(3.0 * v, 0.0, 1.0)
        image[i, j][1] = wk.clamp(3.0 * v - 1.0, 0.0, 1.0)
        image[i, j][2] = wk.clamp(3.0 * v - 2.0, 0.0, 1.0) * 0.8 + 0.2 * (1.0 - v)


def simulate(steps: int, state: dict | None = None):
    """Yield a Frame every 10 steps and after the last; `state`, when given, receives the two temperature fields."""
    a = wk.field(wk.f32, shape=(HEIGHT, WIDTH), name="temperature")
    b = wk.field(wk.f32, shape=(HEIGHT, WIDTH), name="temperature_next")
    if state is not None:
        state.update(temperature=a, temperature_next=b)
    image = wk.Vector.field(3, wk.f32, shape=(HEIGHT, WIDTH), name="image")
    for step in range(steps):
        heat_sources(a, step * 0.02)
        diffuse(a, b, ALPHA)
        a, b = b, a
        if step % 10 == 9 or step == steps - 1:
            yield Frame(step + 1, lambda: picture(a, image))


def picture(temperature, image) -> np.ndarray:
    colorize(temperature, image)
    return image.to_numpy()


def main(arch=None, headless: bool = True, out: str | None = None, steps: int | None = None) -> int:
    program = wk.init(arch=arch)
    steps = steps or 400
    print(f"heat: {WIDTH}x{HEIGHT} plate, {steps} steps on {program.arch!r} ({program.description})")
    demo = Demo("heat", TITLE, f"{WIDTH}x{HEIGHT} plate", program.arch.name)
    return run_frames(demo, simulate, steps, headless, out)

if __name__ == "__main__":
    sys.exit(main())
