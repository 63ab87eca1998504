"""Port of difftaichi examples/wave.py; shortened, checked as the package docstring says."""
from __future__ import annotations

import math

import numpy as np

import wgkern as ti

from tests.e2e.difftaichi.gradcheck import _real, check_gradients

# ---- difftaichi examples/wave.py ---------------------------------------------------------------------------------

def test_wave(arch):
    real = _real(arch)
    n_grid = 16
    dx = 1 / n_grid
    inv_dx = 1 / dx
    max_steps = 32
    steps = 12
    scalar = lambda: ti.field(dtype=real)           # noqa: E731
    p, target, initial, loss = scalar(), scalar(), scalar(), scalar()
    ti.root.dense(ti.i, max_steps).dense(ti.jk, n_grid).place(p)
    ti.root.dense(ti.i, max_steps).dense(ti.jk, n_grid).place(p.grad)
    ti.root.dense(ti.ij, n_grid).place(target)
    ti.root.dense(ti.ij, n_grid).place(target.grad)
    ti.root.dense(ti.ij, n_grid).place(initial)
    ti.root.dense(ti.ij, n_grid).place(initial.grad)
    ti.root.place(loss)
    ti.root.place(loss.grad)
    c = 340
    alpha = 0.00000
    inv_dx2 = inv_dx * inv_dx
    dt = (math.sqrt(alpha * alpha + dx * dx / 3) - alpha) / c
    learning_rate = 1

    # The original reads one cell past the grid's edges (its "TODO: there may be out-of-bound accesses"); this
    # port updates the interior only, keeping a zero border.
    @ti.func
    def laplacian(t, i, j):
        return inv_dx2 * (-4 * p[t, i, j] + p[t, i, j - 1] + p[t, i, j + 1] + p[t, i + 1, j] + p[t, i - 1, j])

    @ti.kernel
    def initialize():
        for i in range(n_grid):
            for j in range(n_grid):
                p[0, i, j] = initial[i, j]

    @ti.kernel
    def fdtd(t: ti.i32):
        for i in range(1, n_grid - 1):
            for j in range(1, n_grid - 1):
                laplacian_p = laplacian(t - 2, i, j)
                laplacian_q = laplacian(t - 1, i, j)
                p[t, i, j] = 2 * p[t - 1, i, j] + (c * c * dt * dt + c * alpha * dt) * laplacian_q - \
                    p[t - 2, i, j] - c * alpha * dt * laplacian_p

    @ti.kernel
    def compute_loss(t: ti.i32):
        for i in range(n_grid):
            for j in range(n_grid):
                loss[None] += dx * dx * (target[i, j] - p[t, i, j]) ** 2

    @ti.kernel
    def apply_grad():
        for i, j in initial.grad:
            initial[i, j] -= learning_rate * initial.grad[i, j]

    def forward():
        initialize()
        for t in range(2, steps):
            fdtd(t)
        compute_loss(steps - 1)

    rng = np.random.default_rng(4)
    target_img = np.zeros((n_grid, n_grid))
    target_img[4:12, 6:10] = 1.0
    target_img -= target_img.mean()
    for i in range(n_grid):
        for j in range(n_grid):
            target[i, j] = float(target_img[i, j])
    initial.from_numpy(rng.standard_normal((n_grid, n_grid)) * 0.1)

    def run_tape():
        with ti.Tape(loss):
            forward()

    def loss_value():
        loss[None] = 0
        forward()
        return loss[None]

    check_gradients(run_tape, loss_value, [initial], probes=8, real=real)
    losses = []
    for _ in range(5):
        run_tape()
        losses.append(loss[None])
        apply_grad()
    assert all(b < a for a, b in zip(losses, losses[1:]))
