"""Port of difftaichi examples/smoke_taichi.py; shortened, checked as the package docstring says."""
from __future__ import annotations


import numpy as np

import wgkern as ti

from tests.e2e.difftaichi.gradcheck import _real, check_gradients

# ---- difftaichi examples/smoke_taichi.py -------------------------------------------------------------------------

def test_smoke(arch):
    real = _real(arch)
    n_grid = 12
    dx = 1.0 / n_grid
    num_iterations_gauss_seidel = 3
    p_dims = num_iterations_gauss_seidel + 1
    steps = 5
    learning_rate = 400 * (n_grid / 128) ** 2     # the original's rate, for the loss's 1 / n_grid ** 2 at 128 x 128
    scalar = lambda: ti.field(dtype=real)           # noqa: E731
    vector = lambda: ti.Vector.field(2, dtype=real)  # noqa: E731
    v, div, p, v_updated, target, smoke, loss = vector(), scalar(), scalar(), vector(), scalar(), scalar(), scalar()
    ti.root.dense(ti.i, steps * p_dims).dense(ti.jk, n_grid).place(p)
    ti.root.dense(ti.i, steps).dense(ti.jk, n_grid).place(v, v_updated, smoke, div)
    ti.root.dense(ti.ij, n_grid).place(target)
    ti.root.place(loss)
    ti.root.lazy_grad()

    # The original tests `n > 0`, so imod(0, n) is n: one row past the grid, which on a dense layout reads the
    # next time step's data (left over from the previous run). This port tests `n >= 0`.
    @ti.func
    def imod(n, divisor):
        ret = 0
        if n >= 0:
            ret = n - divisor * (n // divisor)
        else:
            ret = divisor + n - divisor * (-n // divisor)
        return ret

    @ti.func
    def dec_index(index):
        new_index = index - 1
        if new_index < 0:
            new_index = n_grid - 1
        return new_index

    @ti.func
    def inc_index(index):
        new_index = index + 1
        if new_index >= n_grid:
            new_index = 0
        return new_index

    @ti.kernel
    def compute_div(t: ti.i32):
        for y in range(n_grid):
            for x in range(n_grid):
                div[t, y, x] = -0.5 * dx * (v_updated[t, inc_index(y), x][0] - v_updated[t, dec_index(y), x][0] +
                                            v_updated[t, y, inc_index(x)][1] - v_updated[t, y, dec_index(x)][1])

    @ti.kernel
    def compute_p(t: ti.i32, k: ti.i32):
        for y in range(n_grid):
            for x in range(n_grid):
                a = k + t * num_iterations_gauss_seidel
                p[a + 1, y, x] = (div[t, y, x] + p[a, dec_index(y), x] + p[a, inc_index(y), x] +
                                  p[a, y, dec_index(x)] + p[a, y, inc_index(x)]) / 4.0

    @ti.kernel
    def update_v(t: ti.i32):
        for y in range(n_grid):
            for x in range(n_grid):
                a = num_iterations_gauss_seidel * t - 1
                v[t, y, x][0] = v_updated[t, y, x][0] - 0.5 * (p[a, inc_index(y), x] - p[a, dec_index(y), x]) / dx
                v[t, y, x][1] = v_updated[t, y, x][1] - 0.5 * (p[a, y, inc_index(x)] - p[a, y, dec_index(x)]) / dx

    @ti.kernel
    def advect(field: ti.template(), field_out: ti.template(), t_offset: ti.template(), t: ti.i32):
        """Move field smoke according to x and y velocities (vx and vy) using an implicit Euler integrator."""
        for y in range(n_grid):
            for x in range(n_grid):
                center_x = y - v[t + t_offset, y, x][0]
                center_y = x - v[t + t_offset, y, x][1]
                left_ix = ti.cast(ti.floor(center_x), ti.i32)
                top_ix = ti.cast(ti.floor(center_y), ti.i32)
                rw = center_x - left_ix
                bw = center_y - top_ix
                left_ix = imod(left_ix, n_grid)
                right_ix = left_ix + 1
                right_ix = imod(right_ix, n_grid)
                top_ix = imod(top_ix, n_grid)
                bot_ix = top_ix + 1
                bot_ix = imod(bot_ix, n_grid)
                field_out[t, y, x] = (1 - rw) * ((1 - bw) * field[t - 1, left_ix, top_ix] +
                                                 bw * field[t - 1, left_ix, bot_ix]) + \
                    rw * ((1 - bw) * field[t - 1, right_ix, top_ix] + bw * field[t - 1, right_ix, bot_ix])

    @ti.kernel
    def compute_loss():
        for i in range(n_grid):
            for j in range(n_grid):
                loss[None] += (target[i, j] - smoke[steps - 1, i, j]) ** 2 * (1 / n_grid ** 2)

    @ti.kernel
    def apply_grad():
        for i in range(n_grid):
            for j in range(n_grid):
                v[0, i, j] -= learning_rate * v.grad[0, i, j]

    def forward():
        for t in range(1, steps):
            advect(v, v_updated, -1, t)
            compute_div(t)
            for k in range(num_iterations_gauss_seidel):
                compute_p(t, k)
            update_v(t)
            advect(smoke, smoke, 0, t)
        compute_loss()

    for i in range(n_grid):
        for j in range(n_grid):
            target[i, j] = float(4 <= i < 8 and 3 <= j < 9)
            smoke[0, i, j] = (i // 4 + j // 4) % 2
    rng = np.random.default_rng(5)
    v0 = v.to_numpy()
    v0[0] = rng.standard_normal((n_grid, n_grid, 2)) * 0.3
    v.from_numpy(v0)

    def run_tape():
        with ti.Tape(loss):
            forward()

    def loss_value():
        loss[None] = 0
        forward()
        return loss[None]

    check_gradients(run_tape, loss_value, [v], probes=8, real=real)
    losses = []
    for _ in range(4):
        run_tape()
        losses.append(loss[None])
        apply_grad()
    assert all(b < a for a, b in zip(losses, losses[1:]))
