"""Port of difftaichi's early mass_spring_simple.py, in the old API it was written in; shortened, checked as the
package docstring says."""
from __future__ import annotations

import wgkern as ti

from tests.e2e.difftaichi.gradcheck import _real, check_gradients

# ---- difftaichi's early mass_spring_simple.py, in the old API it was written in ----------------------------------

def test_mass_spring_simple_old_api(arch):
    real = _real(arch)
    max_steps = 64
    steps = 48
    n_objects = 3
    mass = 1
    n_springs = 3
    spring_stiffness = 10
    damping = 20
    dt = 0.004
    scalar = lambda: ti.var(dt=real)               # noqa: E731 - the spellings of Taichi 0.5
    vec = lambda: ti.Vector(2, dt=real)            # noqa: E731
    loss = scalar()
    x, v, force = vec(), vec(), vec()
    spring_anchor_a = ti.global_var(ti.i32)
    spring_anchor_b = ti.global_var(ti.i32)
    spring_length = scalar()

    @ti.layout
    def place():
        ti.root.dense(ti.i, max_steps).dense(ti.j, n_objects).place(x, v, force)
        ti.root.dense(ti.i, n_springs).place(spring_anchor_a, spring_anchor_b, spring_length)
        ti.root.place(loss)
        ti.root.lazy_grad()

    @ti.kernel
    def apply_spring_force(t: ti.i32):
        for i in range(n_springs):
            a = spring_anchor_a[i]
            b = spring_anchor_b[i]
            x_a = x[t - 1, a]
            x_b = x[t - 1, b]
            dist = x_a - x_b
            length = ti.Vector.norm(dist) + 1e-4
            F = (length - spring_length[i]) * spring_stiffness * dist / length
            ti.atomic_add(force[t, a], -F)
            ti.atomic_add(force[t, b], F)

    @ti.kernel
    def time_integrate(t: ti.i32):
        for i in range(n_objects):
            s = ti.exp(-dt * damping)
            new_v = s * v[t - 1, i] + dt * force[t, i] / mass
            new_x = x[t - 1, i] + dt * new_v
            v[t, i] = new_v
            x[t, i] = new_x

    @ti.kernel
    def compute_loss(t: ti.i32):
        x01 = x[t, 0] - x[t, 1]
        x02 = x[t, 0] - x[t, 2]
        area = ti.abs(0.5 * (x01[0] * x02[1] - x01[1] * x02[0]))
        target_area = 0.1
        loss[None] = (area - target_area) ** 2

    @ti.kernel
    def clear_forces():
        for t, i in ti.ndrange(max_steps, n_objects):
            force[t, i] = [0.0, 0.0]

    @ti.complex_kernel
    def step(t):
        apply_spring_force(t)
        time_integrate(t)

    @ti.complex_kernel_grad(step)
    def step_grad(t):
        time_integrate.grad(t)
        apply_spring_force.grad(t)

    def forward():
        for t in range(1, steps):
            step(t)
        compute_loss(steps - 1)

    x[0, 0] = [0.3, 0.5]                 # the first host access runs the layout
    x[0, 1] = [0.3, 0.4]
    x[0, 2] = [0.4, 0.4]
    for i, (a, b, length) in enumerate([(0, 1, 0.1), (1, 2, 0.1), (2, 0, 0.1 * 2 ** 0.5)]):
        spring_anchor_a[i] = a
        spring_anchor_b[i] = b
        spring_length[i] = length

    def run_tape():
        clear_forces()
        with ti.Tape(loss):
            forward()

    def loss_value():
        clear_forces()
        forward()
        return loss[None]

    check_gradients(run_tape, loss_value, [spring_length], real=real)
    losses = []
    for _ in range(5):
        run_tape()
        losses.append(loss[None])
        for i in range(n_springs):
            spring_length[i] -= 0.1 * spring_length.grad[i]
    assert all(b < a for a, b in zip(losses, losses[1:]))
