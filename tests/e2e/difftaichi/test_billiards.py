"""Port of difftaichi examples/billiards.py; shortened, checked as the package docstring says."""
from __future__ import annotations

import wgkern as ti

from tests.e2e.difftaichi.gradcheck import _real, check_gradients

# ---- difftaichi examples/billiards.py ----------------------------------------------------------------------------

def test_billiards(arch):
    real = _real(arch)
    max_steps = 128
    steps = 64
    scalar = lambda: ti.field(dtype=real)           # noqa: E731
    vec = lambda: ti.Vector.field(2, dtype=real)    # noqa: E731
    loss = scalar()
    init_x, init_v = vec(), vec()
    x, x_inc, v, impulse = vec(), vec(), vec(), vec()
    billiard_layers = 2
    n_balls = 1 + (1 + billiard_layers) * billiard_layers // 2
    target_ball = n_balls - 1
    goal = [0.9, 0.75]
    radius = 0.03
    elasticity = 0.8
    ti.root.dense(ti.i, max_steps).dense(ti.j, n_balls).place(x, v, x_inc, impulse)
    ti.root.place(init_x, init_v)
    ti.root.place(loss)
    ti.root.lazy_grad()
    dt = 0.006
    learning_rate = 0.01

    @ti.func
    def collide_pair(t, i, j):
        imp = ti.Vector([0.0, 0.0])
        x_inc_contrib = ti.Vector([0.0, 0.0])
        if i != j:
            dist = (x[t, i] + dt * v[t, i]) - (x[t, j] + dt * v[t, j])
            dist_norm = dist.norm()
            rela_v = v[t, i] - v[t, j]
            if dist_norm < 2 * radius:
                dir = ti.Vector.normalized(dist)
                projected_v = dir.dot(rela_v)
                if projected_v < 0:
                    imp = -(1 + elasticity) * 0.5 * projected_v * dir
                    toi = (dist_norm - 2 * radius) / min(-1e-3, projected_v)
                    x_inc_contrib = min(toi - dt, 0) * imp
        x_inc[t + 1, i] += x_inc_contrib
        impulse[t + 1, i] += imp

    @ti.kernel
    def collide(t: ti.i32):
        for i in range(n_balls):
            for j in range(i):
                collide_pair(t, i, j)
        for i in range(n_balls):
            for j in range(i + 1, n_balls):
                collide_pair(t, i, j)

    @ti.kernel
    def advance(t: ti.i32):
        for i in range(n_balls):
            v[t, i] = v[t - 1, i] + impulse[t, i]
            x[t, i] = x[t - 1, i] + dt * v[t, i] + x_inc[t, i]

    @ti.kernel
    def compute_loss(t: ti.i32):
        loss[None] = (x[t, target_ball][0] - goal[0]) ** 2 + (x[t, target_ball][1] - goal[1]) ** 2

    @ti.kernel
    def initialize():
        x[0, 0] = init_x[None]
        v[0, 0] = init_v[None]

    def forward():
        initialize()
        count = 0
        for i in range(billiard_layers):
            for j in range(i + 1):
                count += 1
                x[0, count] = [i * 2 * radius + 0.3, j * 2 * radius + 0.5 - i * radius * 0.7]
        for t in range(1, steps):
            collide(t - 1)
            advance(t)
        compute_loss(steps - 1)

    @ti.kernel
    def clear():
        for t, i in ti.ndrange(max_steps, n_balls):
            impulse[t, i] = ti.Vector([0.0, 0.0])
            x_inc[t, i] = ti.Vector([0.0, 0.0])

    init_x[None] = [0.1, 0.5]
    init_v[None] = [0.7, 0.05]

    def run_tape():
        clear()
        with ti.Tape(loss):
            forward()

    def loss_value():
        clear()
        forward()
        return loss[None]

    check_gradients(run_tape, loss_value, [init_x, init_v], real=real)
    run_tape()
    assert x.to_numpy()[steps - 1, target_ball, 0] > 0.365       # the cue ball hit the rack (it starts at 0.36)
    losses = []
    for _ in range(5):
        run_tape()
        losses.append(loss[None])
        for d in range(2):
            init_x[None][d] -= learning_rate * init_x.grad[None][d]
            init_v[None][d] -= learning_rate * init_v.grad[None][d]
    assert all(b < a for a, b in zip(losses, losses[1:]))
