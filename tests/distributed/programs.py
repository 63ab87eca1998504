"""Kernel programs the tests ship to DevicePool actors, by module path and by function: a quadratic energy
sum_i w_i (x_i - t_i)^2 whose gradient 2 w_i (x_i - t_i) is known in closed form."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

import wgkern as wk

N = 16


def build() -> SimpleNamespace:
    """Fields x (needs_grad), the energy's loss, and kernels; targets t_i = i / N."""
    x = wk.field(wk.f32, shape=N, needs_grad=True)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def energy(weight: wk.f32):
        for i in x:
            d = x[i] - i / N
            loss[None] += weight * d * d

    @wk.kernel
    def step(rate: wk.f32):
        for i in x:
            x[i] -= rate * x.grad[i]

    @wk.kernel
    def index_error(n: wk.i32):
        for i in range(n):
            x[i * 1000] = 1.0            # out of bounds past i = 0 under debug=True

    return SimpleNamespace(x=x, loss=loss, energy=energy, step=step, index_error=index_error)


def gradient_at(program, weight: float):
    """d loss / d x at x = 0 with this weight: the field x.grad (it travels back as numpy)."""
    program.x.fill(0.0)
    program.loss[None] = 0.0
    with wk.ad.Tape(loss=program.loss):
        program.energy(weight)
    return program.x.grad


def expected_gradient(weight: float) -> np.ndarray:
    return 2.0 * weight * (0.0 - np.arange(N) / N)
