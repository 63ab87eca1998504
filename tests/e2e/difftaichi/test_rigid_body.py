"""Port of difftaichi examples/rigid_body.py; shortened, checked as the package docstring says."""
from __future__ import annotations

import math

import pytest

import wgkern as ti

from tests.e2e.difftaichi.gradcheck import _real
from tests.e2e.difftaichi.training import _check_and_train, _init_controller

# ---- difftaichi examples/rigid_body.py ---------------------------------------------------------------------------

def _rigid_body_robot():
    """robot_config.robotA: a body on three feet, six actuated springs and one joint."""
    objects = [[[0.3, 0.25], [0.15, 0.03], 0], [[0.2, 0.15], [0.03, 0.02], 0], [[0.3, 0.15], [0.03, 0.02], 0],
               [[0.4, 0.15], [0.03, 0.02], 0], [[0.4, 0.3], [0.005, 0.03], 0]]
    length, stiffness = 0.12, 15
    springs = [[0, 1, [-0.03, 0.0], [0.0, 0.0], length, stiffness, 0.0],
               [0, 1, [-0.1, 0.0], [0.0, 0.0], length, stiffness, 0.0],
               [0, 2, [-0.03, 0.0], [0.0, 0.0], length, stiffness, 0.0],
               [0, 2, [0.03, 0.0], [0.0, 0.0], length, stiffness, 0.0],
               [0, 3, [0.03, 0.0], [0.0, 0.0], length, stiffness, 0.0],
               [0, 3, [0.1, 0.0], [0.0, 0.0], length, stiffness, 0.0],
               [0, 4, [0.1, 0], [0, -0.05], -1, stiffness, 0.0]]
    return objects, springs, 0


@pytest.mark.parametrize("use_toi", [False, True], ids=["no_toi", "toi"])
def test_rigid_body(arch, use_toi):
    real = _real(arch)
    max_steps = 128
    steps = 40
    scalar = lambda: ti.field(dtype=real)           # noqa: E731
    vec = lambda: ti.Vector.field(2, dtype=real)    # noqa: E731
    loss = scalar()
    x, v = vec(), vec()
    rotation, omega = scalar(), scalar()
    halfsize = vec()
    inverse_mass, inverse_inertia = scalar(), scalar()
    v_inc, x_inc = vec(), vec()
    rotation_inc, omega_inc = scalar(), scalar()
    goal = vec()
    elasticity = 0.0
    ground_height = 0.1
    gravity = -9.8
    friction = 1.0
    penalty = 1e4
    damping = 10
    spring_omega = 30
    default_actuation = 0.05
    spring_anchor_a = ti.field(ti.i32)
    spring_anchor_b = ti.field(ti.i32)
    spring_length = scalar()
    spring_offset_a, spring_offset_b = vec(), vec()
    spring_phase, spring_actuation, spring_stiffness = scalar(), scalar(), scalar()
    n_sin_waves = 4
    n_hidden = 8
    weights1, bias1, hidden, weights2, bias2, actuation = (scalar() for _ in range(6))
    objects, springs, head_id = _rigid_body_robot()
    n_objects, n_springs = len(objects), len(springs)
    n_input_states = n_sin_waves + 6 * n_objects + 2
    dt = 0.001
    learning_rate = 1.0

    ti.root.dense(ti.i, max_steps).dense(ti.j, n_objects).place(x, v, rotation, rotation_inc, omega, v_inc, x_inc,
                                                                omega_inc)
    ti.root.dense(ti.i, n_objects).place(halfsize, inverse_mass, inverse_inertia)
    ti.root.dense(ti.i, n_springs).place(spring_anchor_a, spring_anchor_b, spring_length, spring_offset_a,
                                         spring_offset_b, spring_stiffness, spring_phase, spring_actuation)
    ti.root.dense(ti.ij, (n_hidden, n_input_states)).place(weights1)
    ti.root.dense(ti.ij, (n_springs, n_hidden)).place(weights2)
    ti.root.dense(ti.i, n_hidden).place(bias1)
    ti.root.dense(ti.i, n_springs).place(bias2)
    ti.root.dense(ti.ij, (max_steps, n_springs)).place(actuation)
    ti.root.dense(ti.ij, (max_steps, n_hidden)).place(hidden)
    ti.root.place(loss, goal)
    ti.root.lazy_grad()

    @ti.kernel
    def nn1(t: ti.i32):
        for i in range(n_hidden):
            actuation = 0.0
            for j in ti.static(range(n_sin_waves)):
                actuation += weights1[i, j] * ti.sin(spring_omega * t * dt + 2 * math.pi / n_sin_waves * j)
            for j in ti.static(range(n_objects)):
                offset = x[t, j] - x[t, head_id]
                actuation += weights1[i, j * 6 + n_sin_waves] * offset[0] * 0.05
                actuation += weights1[i, j * 6 + n_sin_waves + 1] * offset[1] * 0.05
                actuation += weights1[i, j * 6 + n_sin_waves + 2] * v[t, j][0] * 0.05
                actuation += weights1[i, j * 6 + n_sin_waves + 3] * v[t, j][1] * 0.05
                actuation += weights1[i, j * 6 + n_sin_waves + 4] * rotation[t, j] * 0.05
                actuation += weights1[i, j * 6 + n_sin_waves + 5] * omega[t, j] * 0.05
            actuation += weights1[i, n_objects * 6 + n_sin_waves] * goal[None][0]
            actuation += weights1[i, n_objects * 6 + n_sin_waves + 1] * goal[None][1]
            actuation += bias1[i]
            actuation = ti.tanh(actuation)
            hidden[t, i] = actuation

    @ti.kernel
    def nn2(t: ti.i32):
        for i in range(n_springs):
            act = 0.0
            for j in ti.static(range(n_hidden)):
                act += weights2[i, j] * hidden[t, j]
            act += bias2[i]
            act = ti.tanh(act)
            actuation[t, i] = act

    @ti.func
    def rotation_matrix(r):
        return ti.Matrix([[ti.cos(r), -ti.sin(r)], [ti.sin(r), ti.cos(r)]])

    @ti.kernel
    def initialize_properties():
        for i in range(n_objects):
            inverse_mass[i] = 1.0 / (4 * halfsize[i][0] * halfsize[i][1])
            inverse_inertia[i] = 1.0 / (4 / 3 * halfsize[i][0] * halfsize[i][1] *
                                        (halfsize[i][0] * halfsize[i][0] + halfsize[i][1] * halfsize[i][1]))

    @ti.func
    def to_world(t, i, rela_x):
        rot = rotation[t, i]
        rot_matrix = rotation_matrix(rot)
        rela_pos = rot_matrix @ rela_x
        rela_v = omega[t, i] * ti.Vector([-rela_pos[1], rela_pos[0]])
        world_x = x[t, i] + rela_pos
        world_v = v[t, i] + rela_v
        return world_x, world_v, rela_pos

    @ti.func
    def apply_impulse(t, i, impulse, location, toi_input):
        delta_v = impulse * inverse_mass[i]
        delta_omega = (location - x[t, i]).cross(impulse) * inverse_inertia[i]
        toi = ti.min(ti.max(0.0, toi_input), dt)
        ti.atomic_add(x_inc[t + 1, i], toi * (-delta_v))
        ti.atomic_add(rotation_inc[t + 1, i], toi * (-delta_omega))
        ti.atomic_add(v_inc[t + 1, i], delta_v)
        ti.atomic_add(omega_inc[t + 1, i], delta_omega)

    @ti.kernel
    def collide(t: ti.i32):
        for i in range(n_objects):
            hs = halfsize[i]
            for k in ti.static(range(4)):
                offset_scale = ti.Vector([k % 2 * 2 - 1, k // 2 % 2 * 2 - 1])
                corner_x, corner_v, rela_pos = to_world(t, i, offset_scale * hs)
                corner_v = corner_v + dt * gravity * ti.Vector([0.0, 1.0])
                normal = ti.Vector([0.0, 1.0])
                tao = ti.Vector([1.0, 0.0])
                rn = rela_pos.cross(normal)
                rt = rela_pos.cross(tao)
                impulse_contribution = inverse_mass[i] + (rn) ** 2 * inverse_inertia[i]
                timpulse_contribution = inverse_mass[i] + (rt) ** 2 * inverse_inertia[i]
                rela_v_ground = normal.dot(corner_v)
                impulse = 0.0
                timpulse = 0.0
                new_corner_x = corner_x + dt * corner_v
                toi = 0.0
                if rela_v_ground < 0 and new_corner_x[1] < ground_height:
                    impulse = -(1 + elasticity) * rela_v_ground / impulse_contribution
                    if impulse > 0:
                        timpulse = -corner_v.dot(tao) / timpulse_contribution
                        timpulse = ti.min(friction * impulse, ti.max(-friction * impulse, timpulse))
                        if corner_x[1] > ground_height:
                            toi = -(corner_x[1] - ground_height) / ti.min(corner_v[1], -1e-3)
                apply_impulse(t, i, impulse * normal + timpulse * tao, new_corner_x, toi)
                penalty = 0.0
                if new_corner_x[1] < ground_height:
                    penalty = -dt * penalty * (new_corner_x[1] - ground_height) / impulse_contribution
                apply_impulse(t, i, penalty * normal, new_corner_x, 0)

    @ti.kernel
    def apply_spring_force(t: ti.i32):
        for i in range(n_springs):
            a = spring_anchor_a[i]
            b = spring_anchor_b[i]
            pos_a, vel_a, rela_a = to_world(t, a, spring_offset_a[i])
            pos_b, vel_b, rela_b = to_world(t, b, spring_offset_b[i])
            dist = pos_a - pos_b
            length = dist.norm() + 1e-4
            act = actuation[t, i]
            is_joint = spring_length[i] == -1
            target_length = spring_length[i] * (1.0 + spring_actuation[i] * act)
            if is_joint:
                target_length = 0.0
            impulse = dt * (length - target_length) * spring_stiffness[i] / length * dist
            if is_joint:
                rela_vel = vel_a - vel_b
                rela_vel_norm = rela_vel.norm() + 1e-1
                impulse_dir = rela_vel / rela_vel_norm
                impulse_contribution = inverse_mass[a] + impulse_dir.cross(rela_a) ** 2 * inverse_inertia[a] + \
                    inverse_mass[b] + impulse_dir.cross(rela_b) ** 2 * inverse_inertia[b]
                impulse += rela_vel_norm / impulse_contribution * impulse_dir
            apply_impulse(t, a, -impulse, pos_a, 0.0)
            apply_impulse(t, b, impulse, pos_b, 0.0)

    @ti.kernel
    def advance_toi(t: ti.i32):
        for i in range(n_objects):
            s = math.exp(-dt * damping)
            v[t, i] = s * v[t - 1, i] + v_inc[t, i] + dt * gravity * ti.Vector([0.0, 1.0])
            x[t, i] = x[t - 1, i] + dt * v[t, i] + x_inc[t, i]
            omega[t, i] = s * omega[t - 1, i] + omega_inc[t, i]
            rotation[t, i] = rotation[t - 1, i] + dt * omega[t, i] + rotation_inc[t, i]

    @ti.kernel
    def advance_no_toi(t: ti.i32):
        for i in range(n_objects):
            s = math.exp(-dt * damping)
            v[t, i] = s * v[t - 1, i] + v_inc[t, i] + dt * gravity * ti.Vector([0.0, 1.0])
            x[t, i] = x[t - 1, i] + dt * v[t, i]
            omega[t, i] = s * omega[t - 1, i] + omega_inc[t, i]
            rotation[t, i] = rotation[t - 1, i] + dt * omega[t, i]

    @ti.kernel
    def compute_loss(t: ti.i32):
        loss[None] = (x[t, head_id] - goal[None]).norm()

    @ti.kernel
    def clear_states():
        for t in range(0, max_steps):
            for i in range(0, n_objects):
                v_inc[t, i] = ti.Vector([0.0, 0.0])
                x_inc[t, i] = ti.Vector([0.0, 0.0])
                rotation_inc[t, i] = 0.0
                omega_inc[t, i] = 0.0

    def forward():
        initialize_properties()
        goal[None] = [0.9, 0.15]
        for t in range(1, steps):
            nn1(t - 1)
            nn2(t - 1)
            collide(t - 1)
            apply_spring_force(t - 1)
            if use_toi:
                advance_toi(t)
            else:
                advance_no_toi(t)
        loss[None] = 0
        compute_loss(steps - 1)

    for i in range(n_objects):
        x[0, i] = objects[i][0]
        halfsize[i] = objects[i][1]
        rotation[0, i] = objects[i][2]
    for i in range(n_springs):
        s = springs[i]
        spring_anchor_a[i] = s[0]
        spring_anchor_b[i] = s[1]
        spring_offset_a[i] = s[2]
        spring_offset_b[i] = s[3]
        spring_length[i] = s[4]
        spring_stiffness[i] = s[5]
        spring_actuation[i] = s[6] if s[6] else default_actuation
    _init_controller(weights1, weights2, n_hidden, n_input_states, n_springs, seed=2, scales=(0.5, 1))
    _check_and_train(clear_states, forward, loss, [weights1, bias1, weights2, bias2], real,
                     lambda norm: learning_rate * min(1.0, 0.2 / (norm + 1e-4)))
