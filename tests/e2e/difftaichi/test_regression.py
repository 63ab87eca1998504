"""Port of python/taichi/examples/autodiff/regression.py; shortened, checked as the package docstring says."""
from __future__ import annotations

import random

import wgkern as ti

from tests.e2e.difftaichi.gradcheck import _real, check_gradients

# ---- python/taichi/examples/autodiff/regression.py --------------------------------------------------------------

def test_regression(arch):
    real = _real(arch)
    number_coeffs = 4
    learning_rate = 1e-4
    N = 32
    x, y = ti.field(real, shape=N, needs_grad=True), ti.field(real, shape=N, needs_grad=True)
    coeffs = ti.field(real, shape=number_coeffs, needs_grad=True)
    loss = ti.field(real, shape=(), needs_grad=True)

    @ti.kernel
    def regress():
        for i in x:
            v = x[i]
            est = 0.0
            for j in ti.static(range(number_coeffs)):
                est += coeffs[j] * (v ** j)
            loss[None] += 0.5 * (y[i] - est) ** 2

    @ti.kernel
    def update():
        for i in ti.static(range(number_coeffs)):
            coeffs[i] -= learning_rate * coeffs.grad[i]

    rng = random.Random(1)
    for i in range(N):
        v = rng.random() * 5 - 2.5
        x[i] = v
        y[i] = (v - 1) * (v - 2) * (v + 2) + rng.random() - 0.5
    regress()
    for i in range(N):
        y.grad[i] = 1

    def run_tape():
        with ti.ad.Tape(loss=loss):
            regress()

    def loss_value():
        loss[None] = 0
        regress()
        return loss[None]

    check_gradients(run_tape, loss_value, [coeffs, x], real=real)
    losses = []
    for step in range(30):
        if step % 2:
            with ti.ad.Tape(loss=loss):
                regress()
        else:                                  # the original's path without a Tape
            ti.clear_all_gradients()
            loss[None] = 0
            loss.grad[None] = 1
            regress()
            regress.grad()
        losses.append(loss[None])
        update()
    assert all(b < a for a, b in zip(losses, losses[1:])) and losses[-1] < 0.95 * losses[0]
