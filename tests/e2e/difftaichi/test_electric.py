"""Port of difftaichi examples/electric.py; shortened, checked as the package docstring says."""
from __future__ import annotations

import math
import random

import wgkern as ti

from tests.e2e.difftaichi.gradcheck import _real, check_gradients

# ---- difftaichi examples/electric.py -----------------------------------------------------------------------------

def test_electric(arch):
    real = _real(arch)
    max_steps = 64
    steps = 32
    seg_size = 16
    scalar = lambda: ti.field(dtype=real)           # noqa: E731
    vec = lambda: ti.Vector.field(2, dtype=real)    # noqa: E731
    loss = scalar()
    hidden = scalar()
    damping = 0.2
    x, v = vec(), vec()
    n_gravitation = 8
    goal, goal_v = vec(), vec()
    gravitation = scalar()
    n_hidden = 16
    weight1, bias1, weight2, bias2 = scalar(), scalar(), scalar(), scalar()
    pad = 0.1
    gravitation_position = [[pad, pad], [pad, 1 - pad], [1 - pad, 1 - pad], [1 - pad, pad], [0.5, 1 - pad],
                            [0.5, pad], [pad, 0.5], [1 - pad, 0.5]]
    dt = 0.03
    learning_rate = 2e-2
    K = 1e-3

    ti.root.dense(ti.l, max_steps).place(x, v)
    ti.root.dense(ti.l, max_steps).dense(ti.i, n_hidden).place(hidden)
    ti.root.dense(ti.l, max_steps).dense(ti.i, n_gravitation).place(gravitation)
    ti.root.dense(ti.ij, (8, n_hidden)).place(weight1)
    ti.root.dense(ti.i, n_hidden).place(bias1)
    ti.root.dense(ti.ij, (n_hidden, n_gravitation)).place(weight2)
    ti.root.dense(ti.i, n_gravitation).place(bias2)
    ti.root.place(loss)
    ti.root.dense(ti.i, max_steps).place(goal, goal_v)
    ti.root.lazy_grad()
    assert hidden.shape == (n_hidden, max_steps)     # axes ordered i, l whatever the nesting order

    # The original's nn1 reads x[t] and v[t], which advance(t) writes afterwards: it sees the previous
    # iteration's values, and the Tape's nn1.grad(t) the overwritten ones (Taichi's grad kernels also recompute
    # from memory), so neither its loss nor its gradient is a function of the weights. This port reads the
    # state advance(t) starts from.
    @ti.kernel
    def nn1(t: ti.i32):
        for i in range(n_hidden):
            act = 0.0
            act += (x[t - 1][0] - 0.5) * weight1[0, i]
            act += (x[t - 1][1] - 0.5) * weight1[1, i]
            act += v[t - 1][0] * weight1[2, i]
            act += v[t - 1][1] * weight1[3, i]
            act += (goal[t][0] - 0.5) * weight1[4, i]
            act += (goal[t][1] - 0.5) * weight1[5, i]
            act += (goal_v[t][0] - 0.5) * weight1[6, i]
            act += (goal_v[t][1] - 0.5) * weight1[7, i]
            act += bias1[i]
            hidden[i, t] = ti.tanh(act)

    @ti.kernel
    def nn2(t: ti.i32):
        for i in range(n_gravitation):
            act = 0.0
            for j in ti.static(range(n_hidden)):
                act += hidden[j, t] * weight2[j, i]
            act += bias2[i]
            gravitation[i, t] = ti.tanh(act)

    @ti.kernel
    def advance(t: ti.i32):
        for _ in range(1):
            gravitational_force = ti.Vector([0.0, 0.0])
            for i in ti.static(range(n_gravitation)):
                r = x[t - 1] - ti.Vector(gravitation_position[i])
                len_r = ti.max(r.norm(), 1e-1)
                gravitational_force += K * gravitation[i, t] / (len_r * len_r * len_r) * r
            v[t] = v[t - 1] * math.exp(-dt * damping) + dt * gravitational_force
            x[t] = x[t - 1] + dt * v[t]

    @ti.kernel
    def compute_loss(t: ti.i32):
        ti.atomic_add(loss[None], dt * (x[t] - goal[t]).norm_sqr())

    def forward():
        for t in range(1, steps):
            nn1(t)
            nn2(t)
            advance(t)
            compute_loss(t)

    rng = random.Random(3)

    def rand():
        return 0.2 + rng.random() * 0.6

    def lerp(x, a, b):
        return (1 - x) * a + x * b

    segments = steps // seg_size
    points = [[rand(), rand()] for _ in range(segments + 1)]

    def initialize():
        for i in range(segments):
            for j in range(steps // segments):
                k = steps // segments * i + j
                goal[k] = [lerp(j / seg_size, points[i][0], points[i + 1][0]),
                           lerp(j / seg_size, points[i][1], points[i + 1][1])]
                goal_v[k] = [points[i + 1][0] - points[i][0], points[i + 1][1] - points[i][1]]
        x[0] = points[0]

    for i in range(8):
        for j in range(n_hidden):
            weight1[i, j] = (rng.random() - 0.5) * 0.3
    for i in range(n_hidden):
        for j in range(n_gravitation):
            weight2[i, j] = (rng.random() - 0.5) * 0.3

    def run_tape():
        initialize()
        with ti.ad.Tape(loss):
            forward()

    def loss_value():
        initialize()
        loss[None] = 0
        forward()
        return loss[None]

    check_gradients(run_tape, loss_value, [weight1, bias1, weight2, bias2], real=real)
    losses = []
    for _ in range(5):
        run_tape()
        losses.append(loss[None])
        for i in range(8):
            for j in range(n_hidden):
                weight1[i, j] = weight1[i, j] - weight1.grad[i, j] * learning_rate * 50
        for j in range(n_hidden):
            bias1[j] = bias1[j] - bias1.grad[j] * learning_rate * 50
        for i in range(n_hidden):
            for j in range(n_gravitation):
                weight2[i, j] = weight2[i, j] - weight2.grad[i, j] * learning_rate * 50
        for j in range(n_gravitation):
            bias2[j] = bias2[j] - bias2.grad[j] * learning_rate * 50
    assert losses[-1] < losses[0]
