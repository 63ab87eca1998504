"""2-D MLS-MPM: a block of jelly and a block of snow dropped into a box (the classic Taichi-style demo),
with vector/matrix fields, `wk.svd`, `wk.grouped` and atomic particle-to-grid scatter. Rendered to a PNG.

Run: python -m wgkern demo mpm [--headless --out mpm.png] [--arch cpu|vulkan] [--steps N]"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import wgkern as wk  # noqa: E402
from _common import Demo, Frame, run_frames  # noqa: E402

TITLE = "MLS-MPM: jelly and snow"  # drawn on every frame, and the window's title

HEIGHT, WIDTH = 256, 384
PARTICLES = 6000
GRID = 96
DX = 1.0 / GRID
DT = 1.5e-4
VOLUME = (DX * 0.5) ** 2
MASS = VOLUME
YOUNG, POISSON = 3.0e3, 0.2
MU = YOUNG / (2 * (1 + POISSON))
LAMBDA = YOUNG * POISSON / ((1 + POISSON) * (1 - 2 * POISSON))
SNOW = 1                 # material ids: 0 jelly, 1 snow
# Snow hardens as it is compressed (exp(10 (1 - plastic))); bounded as the classic MLS-MPM demos bound it, so a
# strongly compressed or stretched particle neither stiffens without limit (the explicit step would then blow up)
# nor goes soft as water.
HARDENING_MIN, HARDENING_MAX = 0.1, 5.0
# The particles stay where their 3 x 3 stencil lies inside the grid (base >= 0, base + 2 <= GRID - 1), and move
# less than half a cell per step (the explicit scheme's CFL limit; the walls' velocities are far below it).
X_MIN, X_MAX = DX, (GRID - 2) * DX
V_MAX = 0.5 * DX / DT


def fields():
    f = {
        "x": wk.Vector.field(2, wk.f32, shape=PARTICLES), "v": wk.Vector.field(2, wk.f32, shape=PARTICLES),
        "affine": wk.Matrix.field(2, 2, wk.f32, shape=PARTICLES),
        "deformation": wk.Matrix.field(2, 2, wk.f32, shape=PARTICLES),
        "plastic": wk.field(wk.f32, shape=PARTICLES), "material": wk.field(wk.i32, shape=PARTICLES),
        "grid_v": wk.Vector.field(2, wk.f32, shape=(GRID, GRID)), "grid_m": wk.field(wk.f32, shape=(GRID, GRID)),
    }
    return f


@wk.func
def weights(fx):
    return [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1.0) ** 2, 0.5 * (fx - 0.5) ** 2]


@wk.kernel
def seed(x: wk.template(), v: wk.template(), deformation: wk.template(), plastic: wk.template(),
         material: wk.template()):
    for p in x:
        block = p * 2 // x.shape[0]                    # first half jelly, second half snow
        x[p] = [0.15 + 0.25 * wk.random() + 0.4 * block, 0.45 + 0.25 * wk.random() - 0.1 * block]
        v[p] = [0.0, -1.0]
        deformation[p] = wk.Matrix.identity(wk.f32, 2)
        plastic[p] = 1.0
        material[p] = block


@wk.kernel
def substep(x: wk.template(), v: wk.template(), affine: wk.template(), deformation: wk.template(),
            plastic: wk.template(), material: wk.template(), grid_v: wk.template(), grid_m: wk.template()):
    for I in wk.grouped(grid_m):
        grid_v[I] = [0.0, 0.0]
        grid_m[I] = 0.0
    for p in x:                                        # particles -> grid
        base = (x[p] / DX - 0.5).cast(int)
        fx = x[p] / DX - base.cast(float)
        w = weights(fx)
        F = (wk.Matrix.identity(wk.f32, 2) + DT * affine[p]) @ deformation[p]
        hardening = 0.4
        if material[p] == SNOW:
            hardening = wk.clamp(wk.exp(10.0 * (1.0 - plastic[p])), HARDENING_MIN, HARDENING_MAX)
        U, sigma, V = wk.svd(F)
        J = 1.0
        for d in wk.static(range(2)):
            stretch = sigma[d, d]
            if material[p] == SNOW:                    # snow yields: clamp the principal stretches
                stretch = wk.clamp(sigma[d, d], 1.0 - 2.5e-2, 1.0 + 4.5e-3)
            plastic[p] *= sigma[d, d] / stretch
            sigma[d, d] = stretch
            J *= stretch
        if material[p] == SNOW:
            F = U @ sigma @ V.transpose()
        deformation[p] = F
        mu, la = MU * hardening, LAMBDA * hardening
        stress = 2.0 * mu * (F - U @ V.transpose()) @ F.transpose() + wk.Matrix.identity(wk.f32, 2) * la * J * (J - 1.0)
        momentum = (-DT * VOLUME * 4.0 / (DX * DX)) * stress + MASS * affine[p]
        for i, j in wk.static(wk.ndrange(3, 3)):
            offset = wk.Vector([i, j])
            weight = w[i][0] * w[j][1]
            grid_v[base + offset] += weight * (MASS * v[p] + momentum @ ((offset.cast(float) - fx) * DX))
            grid_m[base + offset] += weight * MASS
    for i, j in grid_m:                                # grid update: gravity and walls
        if grid_m[i, j] > 0:
            velocity = grid_v[i, j] / grid_m[i, j] + DT * wk.Vector([0.0, -40.0])
            if (i < 3 and velocity.x < 0) or (i > GRID - 3 and velocity.x > 0):
                velocity.x = 0.0
            if (j < 3 and velocity.y < 0) or (j > GRID - 3 and velocity.y > 0):
                velocity.y = 0.0
            grid_v[i, j] = velocity
    for p in x:                                        # grid -> particles
        base = (x[p] / DX - 0.5).cast(int)
        fx = x[p] / DX - base.cast(float)
        w = weights(fx)
        new_v = wk.Vector.zero(wk.f32, 2)
        new_affine = wk.Matrix.zero(wk.f32, 2, 2)
        for i, j in wk.static(wk.ndrange(3, 3)):
            offset = wk.Vector([i, j])
            g = grid_v[base + offset]
            weight = w[i][0] * w[j][1]
            new_v += weight * g
            new_affine += (4.0 / DX) * weight * g.outer_product(offset.cast(float) - fx)
        speed = new_v.norm()
        if speed > V_MAX:
            new_v *= V_MAX / speed
        v[p] = new_v
        affine[p] = new_affine
        x[p] = wk.math.clamp(x[p] + DT * new_v, X_MIN, X_MAX)


@wk.kernel
def render(x: wk.template(), material: wk.template(), image: wk.template()):
    for i, j in image:
        image[i, j] = wk.math.vec3(0.07, 0.08, 0.11)
    for p in x:
        col = int(x[p].x * (image.shape[1] - 1) * 0.75 + image.shape[1] * 0.125)
        row = int((1.0 - x[p].y) * (image.shape[0] - 1))
        if 0 <= row < image.shape[0] and 0 <= col < image.shape[1]:
            image[row, col] = wk.math.vec3(0.95, 0.55, 0.3) if material[p] == 0 else wk.math.vec3(0.85, 0.9, 1.0)


def simulate(steps: int, state: dict | None = None):
    """Yield a Frame every 20 steps and after the last; `state`, when given, receives the fields. Raises
    FloatingPointError at the first frame whose particle positions are not all finite."""
    f = fields()
    if state is not None:
        state.update(f)
    image = wk.Vector.field(3, wk.f32, shape=(HEIGHT, WIDTH))
    seed(f["x"], f["v"], f["deformation"], f["plastic"], f["material"])
    for step in range(steps):
        substep(f["x"], f["v"], f["affine"], f["deformation"], f["plastic"], f["material"], f["grid_v"],
                f["grid_m"])
        if step % 20 == 19 or step == steps - 1:
            if not np.isfinite(f["x"].to_numpy()).all():
                raise FloatingPointError(f"mpm: the simulation diverged by step {step + 1}")
            yield Frame(step + 1, lambda: picture(f, image))


def picture(f: dict, image) -> np.ndarray:
    render(f["x"], f["material"], image)
    return image.to_numpy()


def main(arch=None, headless: bool = True, out: str | None = None, steps: int | None = None) -> int:
    program = wk.init(arch=arch)
    steps = steps or 1500
    print(f"mpm: {PARTICLES} particles on a {GRID}x{GRID} grid, {steps} steps on {program.arch!r} "
          f"({program.description})")
    demo = Demo("mpm", TITLE, f"{PARTICLES} particles", program.arch.name)
    return run_frames(demo, simulate, steps, headless, out)

if __name__ == "__main__":
    sys.exit(main())
