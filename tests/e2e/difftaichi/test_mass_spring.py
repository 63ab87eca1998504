"""Port of difftaichi examples/mass_spring.py; shortened, checked as the package docstring says."""
from __future__ import annotations

import math

import pytest

import wgkern as ti

from tests.e2e.difftaichi.gradcheck import _real
from tests.e2e.difftaichi.training import _check_and_train, _init_controller

# ---- difftaichi examples/mass_spring.py --------------------------------------------------------------------------

def _mass_spring_robot():
    objects = [[0.1 + 0.1 * i, 0.11 + 0.1 * j] for j in range(2) for i in range(3)]
    springs = []
    for a, b, actuation in [(0, 1, 0.0), (1, 2, 0.0), (3, 4, 0.0), (4, 5, 0.0), (0, 3, 0.2), (1, 4, 0.2),
                            (2, 5, 0.2), (0, 4, 0.0), (1, 5, 0.0)]:
        length = math.dist(objects[a], objects[b])
        springs.append([a, b, length, 14.0, actuation])
    return objects, springs


@pytest.mark.parametrize("use_toi", [False, True], ids=["no_toi", "toi"])
def test_mass_spring(arch, use_toi):
    real = _real(arch)
    max_steps = 64
    steps = 32
    scalar = lambda: ti.field(dtype=real)           # noqa: E731 - as the original writes them
    vec = lambda: ti.Vector.field(2, dtype=real)    # noqa: E731

    loss = scalar()
    x, v, v_inc = vec(), vec(), vec()
    head_id = 4
    goal = vec()
    ground_height = 0.1
    gravity = -4.8
    spring_omega = 10
    damping = 15
    spring_anchor_a = ti.field(ti.i32)
    spring_anchor_b = ti.field(ti.i32)
    spring_length, spring_stiffness, spring_actuation = scalar(), scalar(), scalar()
    n_sin_waves = 4
    weights1, bias1 = scalar(), scalar()
    n_hidden = 8
    weights2, bias2, hidden = scalar(), scalar(), scalar()
    center = vec()
    act = scalar()
    objects, springs = _mass_spring_robot()
    n_objects, n_springs = len(objects), len(springs)
    n_input_states = n_sin_waves + 4 * n_objects + 2
    dt = 0.004

    ti.root.dense(ti.i, max_steps).dense(ti.j, n_objects).place(x, v, v_inc)
    ti.root.dense(ti.i, n_springs).place(spring_anchor_a, spring_anchor_b, spring_length, spring_stiffness,
                                         spring_actuation)
    ti.root.dense(ti.ij, (n_hidden, n_input_states)).place(weights1)
    ti.root.dense(ti.i, n_hidden).place(bias1)
    ti.root.dense(ti.ij, (n_springs, n_hidden)).place(weights2)
    ti.root.dense(ti.i, n_springs).place(bias2)
    ti.root.dense(ti.ij, (max_steps, n_hidden)).place(hidden)
    ti.root.dense(ti.ij, (max_steps, n_springs)).place(act)
    ti.root.dense(ti.i, max_steps).place(center)
    ti.root.place(loss, goal)
    ti.root.lazy_grad()

    @ti.kernel
    def compute_center(t: ti.i32):
        for _ in range(1):
            c = ti.Vector([0.0, 0.0])
            for i in ti.static(range(n_objects)):
                c += x[t, i]
            center[t] = (1.0 / n_objects) * c

    @ti.kernel
    def nn1(t: ti.i32):
        for i in range(n_hidden):
            actuation = 0.0
            for j in ti.static(range(n_sin_waves)):
                actuation += weights1[i, j] * ti.sin(spring_omega * t * dt + 2 * math.pi / n_sin_waves * j)
            for j in ti.static(range(n_objects)):
                offset = x[t, j] - center[t]
                actuation += weights1[i, j * 4 + n_sin_waves] * offset[0] * 0.05
                actuation += weights1[i, j * 4 + n_sin_waves + 1] * offset[1] * 0.05
                actuation += weights1[i, j * 4 + n_sin_waves + 2] * v[t, j][0] * 0.05
                actuation += weights1[i, j * 4 + n_sin_waves + 3] * v[t, j][1] * 0.05
            actuation += weights1[i, n_objects * 4 + n_sin_waves] * (goal[None][0] - center[t][0])
            actuation += weights1[i, n_objects * 4 + n_sin_waves + 1] * (goal[None][1] - center[t][1])
            actuation += bias1[i]
            actuation = ti.tanh(actuation)
            hidden[t, i] = actuation

    @ti.kernel
    def nn2(t: ti.i32):
        for i in range(n_springs):
            actuation = 0.0
            for j in ti.static(range(n_hidden)):
                actuation += weights2[i, j] * hidden[t, j]
            actuation += bias2[i]
            actuation = ti.tanh(actuation)
            act[t, i] = actuation

    @ti.kernel
    def apply_spring_force(t: ti.i32):
        for i in range(n_springs):
            a = spring_anchor_a[i]
            b = spring_anchor_b[i]
            pos_a = x[t, a]
            pos_b = x[t, b]
            dist = pos_a - pos_b
            length = dist.norm() + 1e-4
            target_length = spring_length[i] * (1.0 + spring_actuation[i] * act[t, i])
            impulse = dt * (length - target_length) * spring_stiffness[i] / length * dist
            ti.atomic_add(v_inc[t + 1, a], -impulse)
            ti.atomic_add(v_inc[t + 1, b], impulse)

    @ti.kernel
    def advance_toi(t: ti.i32):
        for i in range(n_objects):
            s = math.exp(-dt * damping)
            old_v = s * v[t - 1, i] + dt * gravity * ti.Vector([0.0, 1.0]) + v_inc[t, i]
            old_x = x[t - 1, i]
            new_x = old_x + dt * old_v
            toi = 0.0
            new_v = old_v
            if new_x[1] < ground_height and old_v[1] < -1e-4:
                toi = -(old_x[1] - ground_height) / old_v[1]
                new_v = ti.Vector([0.0, 0.0])
            new_x = old_x + toi * old_v + (dt - toi) * new_v
            v[t, i] = new_v
            x[t, i] = new_x

    @ti.kernel
    def advance_no_toi(t: ti.i32):
        for i in range(n_objects):
            s = math.exp(-dt * damping)
            old_v = s * v[t - 1, i] + dt * gravity * ti.Vector([0.0, 1.0]) + v_inc[t, i]
            old_x = x[t - 1, i]
            new_v = old_v
            depth = old_x[1] - ground_height
            if depth < 0 and new_v[1] < 0:
                new_v[0] = 0
                new_v[1] = 0
            new_x = old_x + dt * new_v
            v[t, i] = new_v
            x[t, i] = new_x

    @ti.kernel
    def compute_loss(t: ti.i32):
        loss[None] = -x[t, head_id][0]

    @ti.kernel
    def clear_states():
        for t in range(0, max_steps):
            for i in range(0, n_objects):
                v_inc[t, i] = ti.Vector([0.0, 0.0])

    def forward():
        goal[None] = [0.9, 0.2]
        for t in range(1, steps):
            compute_center(t - 1)
            nn1(t - 1)
            nn2(t - 1)
            apply_spring_force(t - 1)
            if use_toi:
                advance_toi(t)
            else:
                advance_no_toi(t)
        loss[None] = 0
        compute_loss(steps - 1)

    for i in range(n_objects):
        x[0, i] = objects[i]
    for i in range(n_springs):
        s = springs[i]
        spring_anchor_a[i] = s[0]
        spring_anchor_b[i] = s[1]
        spring_length[i] = s[2]
        spring_stiffness[i] = s[3]
        spring_actuation[i] = s[4]
    _init_controller(weights1, weights2, n_hidden, n_input_states, n_springs, seed=0, scales=(2, 3))
    _check_and_train(clear_states, forward, loss, [weights1, bias1, weights2, bias2], real,
                     lambda norm: 0.2 / (norm + 1e-6))
