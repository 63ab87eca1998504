"""Port of difftaichi examples/diffmpm.py; shortened, checked as the package docstring says."""
from __future__ import annotations

import math

import numpy as np

import wgkern as ti

from tests.e2e.difftaichi.gradcheck import _real, check_gradients

# ---- difftaichi examples/diffmpm.py ------------------------------------------------------------------------------

def test_diffmpm(arch):
    real = _real(arch)
    dim = 2
    n_grid = 32
    dx = 1 / n_grid
    inv_dx = 1 / dx
    dt = 1e-3
    p_vol = 1
    E = 10
    mu = E
    la = E
    max_steps = 16
    steps = 10
    gravity = 3.8
    scalar = lambda: ti.field(dtype=real)                   # noqa: E731
    vec = lambda: ti.Vector.field(dim, dtype=real)          # noqa: E731
    mat = lambda: ti.Matrix.field(dim, dim, dtype=real)     # noqa: E731
    actuator_id = ti.field(ti.i32)
    particle_type = ti.field(ti.i32)
    x, v = vec(), vec()
    grid_v_in, grid_m_in = vec(), scalar()
    grid_v_out = vec()
    C, F = mat(), mat()
    loss = scalar()
    n_sin_waves = 4
    weights = scalar()
    bias = scalar()
    x_avg = vec()
    actuation = scalar()
    actuation_omega = 20
    act_strength = 4

    class Scene:
        def __init__(self):
            self.n_particles = 0
            self.n_solid_particles = 0
            self.x = []
            self.actuator_id = []
            self.particle_type = []
            self.offset_x = 0
            self.offset_y = 0

        def add_rect(self, x, y, w, h, actuation, ptype=1):
            w_count = int(w / dx) * 2
            h_count = int(h / dx) * 2
            real_dx = w / w_count
            real_dy = h / h_count
            for i in range(w_count):
                for j in range(h_count):
                    self.x.append([x + (i + 0.5) * real_dx + self.offset_x, y + (j + 0.5) * real_dy + self.offset_y])
                    self.actuator_id.append(actuation)
                    self.particle_type.append(ptype)
                    self.n_particles += 1
                    self.n_solid_particles += int(ptype == 1)

        def set_offset(self, x, y):
            self.offset_x = x
            self.offset_y = y

    scene = Scene()                     # the original's robot(scene)
    scene.set_offset(0.1, 0.03)
    scene.add_rect(0.0, 0.1, 0.3, 0.1, -1)
    scene.add_rect(0.0, 0.0, 0.05, 0.1, 0)
    scene.add_rect(0.05, 0.0, 0.05, 0.1, 1)
    scene.add_rect(0.2, 0.0, 0.05, 0.1, 2)
    scene.add_rect(0.25, 0.0, 0.05, 0.1, 3)
    scene.add_rect(0.0, 0.2, 0.05, 0.05, -1, ptype=0)     # and a drop of fluid
    n_actuators = 4
    n_particles = scene.n_particles
    n_solid_particles = scene.n_solid_particles

    ti.root.dense(ti.ij, (n_actuators, n_sin_waves)).place(weights)
    ti.root.dense(ti.i, n_actuators).place(bias)
    ti.root.dense(ti.ij, (max_steps, n_actuators)).place(actuation)
    ti.root.dense(ti.i, n_particles).place(actuator_id, particle_type)
    ti.root.dense(ti.k, max_steps).dense(ti.l, n_particles).place(x, v, C, F)
    ti.root.dense(ti.ij, n_grid).place(grid_v_in, grid_m_in, grid_v_out)
    ti.root.place(loss, x_avg)
    ti.root.lazy_grad()

    @ti.kernel
    def clear_grid():
        for i, j in grid_m_in:
            grid_v_in[i, j] = [0, 0]
            grid_m_in[i, j] = 0
            grid_v_in.grad[i, j] = [0, 0]
            grid_m_in.grad[i, j] = 0
            grid_v_out.grad[i, j] = [0, 0]

    @ti.kernel
    def p2g(f: ti.i32):
        for p in range(n_particles):
            base = ti.cast(x[f, p] * inv_dx - 0.5, ti.i32)
            fx = x[f, p] * inv_dx - ti.cast(base, ti.i32)
            w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2]
            new_F = (ti.Matrix.diag(dim=2, val=1) + dt * C[f, p]) @ F[f, p]
            J = (new_F).determinant()
            if particle_type[p] == 0:  # fluid
                sqrtJ = ti.sqrt(J)
                new_F = ti.Matrix([[sqrtJ, 0], [0, sqrtJ]])
            F[f + 1, p] = new_F
            r, s = ti.polar_decompose(new_F)
            act_id = actuator_id[p]
            act = actuation[f, ti.max(0, act_id)] * act_strength
            if act_id == -1:
                act = 0.0
            A = ti.Matrix([[0.0, 0.0], [0.0, 1.0]]) * act
            cauchy = ti.Matrix([[0.0, 0.0], [0.0, 0.0]])
            mass = 0.0
            if particle_type[p] == 0:
                mass = 4
                cauchy = ti.Matrix([[1.0, 0.0], [0.0, 0.1]]) * (J - 1) * E
            else:
                mass = 1
                cauchy = 2 * mu * (new_F - r) @ new_F.transpose() + ti.Matrix.diag(2, la * (J - 1) * J)
            cauchy += new_F @ A @ new_F.transpose()
            stress = -(dt * p_vol * 4 * inv_dx * inv_dx) * cauchy
            affine = stress + mass * C[f, p]
            for i in ti.static(range(3)):
                for j in ti.static(range(3)):
                    offset = ti.Vector([i, j])
                    dpos = (ti.cast(ti.Vector([i, j]), real) - fx) * dx
                    weight = w[i][0] * w[j][1]
                    grid_v_in[base + offset] += weight * (mass * v[f, p] + affine @ dpos)
                    grid_m_in[base + offset] += weight * mass

    bound = 3
    coeff = 0.5

    @ti.kernel
    def grid_op():
        for i, j in grid_m_in:
            inv_m = 1 / (grid_m_in[i, j] + 1e-10)
            v_out = inv_m * grid_v_in[i, j]
            v_out[1] -= dt * gravity
            if i < bound and v_out[0] < 0:
                v_out[0] = 0
                v_out[1] = 0
            if i > n_grid - bound and v_out[0] > 0:
                v_out[0] = 0
                v_out[1] = 0
            if j < bound and v_out[1] < 0:
                v_out[0] = 0
                v_out[1] = 0
                normal = ti.Vector([0.0, 1.0])
                lsq = (normal ** 2).sum()
                if lsq > 0.5:
                    if ti.static(coeff < 0):
                        v_out[0] = 0
                        v_out[1] = 0
                    else:
                        lin = v_out.dot(normal)
                        if lin < 0:
                            vit = v_out - lin * normal
                            lit = vit.norm() + 1e-10
                            if lit + coeff * lin <= 0:
                                v_out[0] = 0
                                v_out[1] = 0
                            else:
                                v_out = (1 + coeff * lin / lit) * vit
            if j > n_grid - bound and v_out[1] > 0:
                v_out[0] = 0
                v_out[1] = 0
            grid_v_out[i, j] = v_out

    @ti.kernel
    def g2p(f: ti.i32):
        for p in range(n_particles):
            base = ti.cast(x[f, p] * inv_dx - 0.5, ti.i32)
            fx = x[f, p] * inv_dx - ti.cast(base, real)
            w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1.0) ** 2, 0.5 * (fx - 0.5) ** 2]
            new_v = ti.Vector([0.0, 0.0])
            new_C = ti.Matrix([[0.0, 0.0], [0.0, 0.0]])
            for i in ti.static(range(3)):
                for j in ti.static(range(3)):
                    dpos = ti.cast(ti.Vector([i, j]), real) - fx
                    g_v = grid_v_out[base[0] + i, base[1] + j]
                    weight = w[i][0] * w[j][1]
                    new_v += weight * g_v
                    new_C += 4 * weight * g_v.outer_product(dpos) * inv_dx
            v[f + 1, p] = new_v
            x[f + 1, p] = x[f, p] + dt * v[f + 1, p]
            C[f + 1, p] = new_C

    @ti.kernel
    def compute_actuation(t: ti.i32):
        for i in range(n_actuators):
            act = 0.0
            for j in ti.static(range(n_sin_waves)):
                act += weights[i, j] * ti.sin(actuation_omega * t * dt + 2 * math.pi / n_sin_waves * j)
            act += bias[i]
            actuation[t, i] = ti.tanh(act)

    @ti.kernel
    def compute_x_avg():
        for i in range(n_particles):
            contrib = 0.0
            if particle_type[i] == 1:
                contrib = 1.0 / n_solid_particles
            ti.atomic_add(x_avg[None], contrib * x[steps - 1, i])

    @ti.kernel
    def compute_loss():
        dist = x_avg[None][0]
        loss[None] = -dist

    @ti.ad.grad_replaced
    def advance(s):
        clear_grid()
        compute_actuation(s)
        p2g(s)
        grid_op()
        g2p(s)

    @ti.ad.grad_for(advance)
    def advance_grad(s):
        clear_grid()
        p2g(s)
        grid_op()
        g2p.grad(s)
        grid_op.grad()
        p2g.grad(s)
        compute_actuation.grad(s)

    def forward(total_steps=steps):
        for s in range(total_steps - 1):
            advance(s)
        x_avg[None] = [0, 0]
        compute_x_avg()
        compute_loss()

    rng = np.random.default_rng(6)
    for i in range(n_actuators):
        for j in range(n_sin_waves):
            weights[i, j] = rng.standard_normal() * 0.01
    for i in range(scene.n_particles):
        x[0, i] = scene.x[i]
        F[0, i] = [[1, 0], [0, 1]]
        actuator_id[i] = scene.actuator_id[i]
        particle_type[i] = scene.particle_type[i]

    def run_tape():
        with ti.ad.Tape(loss):
            forward()

    def loss_value():
        forward()
        return loss[None]

    check_gradients(run_tape, loss_value, [weights, bias], real=real)
    losses = []
    for _ in range(3):
        run_tape()
        losses.append(loss[None])
        learning_rate = 0.1 * 1000       # the original's 0.1, for gradients of 10 steps instead of 1024
        for i in range(n_actuators):
            for j in range(n_sin_waves):
                weights[i, j] -= learning_rate * weights.grad[i, j]
            bias[i] -= learning_rate * bias.grad[i]
    assert all(b < a for a, b in zip(losses, losses[1:]))
