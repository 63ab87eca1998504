"""Port of python/taichi/examples/autodiff/minimization.py; shortened, checked as the package docstring says."""
from __future__ import annotations

import random

import numpy as np

import wgkern as ti

from tests.e2e.difftaichi.gradcheck import _real, check_gradients

# ---- python/taichi/examples/autodiff/minimization.py ------------------------------------------------------------

def test_minimization(arch):
    real = _real(arch)
    n = 8
    x = ti.field(dtype=real, shape=n, needs_grad=True)
    y = ti.field(dtype=real, shape=n)
    L = ti.field(dtype=real, shape=(), needs_grad=True)

    @ti.kernel
    def reduce():
        for i in range(n):
            L[None] += 0.5 * (x[i] - y[i]) ** 2

    @ti.kernel
    def gradient_descent():
        for i in x:
            x[i] -= x.grad[i] * 0.1

    rng = random.Random(0)
    for i in range(n):
        x[i] = rng.random()
        y[i] = rng.random()

    def run_tape():
        with ti.ad.Tape(loss=L):
            reduce()

    def loss_value():
        L[None] = 0
        reduce()
        return L[None]

    check_gradients(run_tape, loss_value, [x], real=real)
    np.testing.assert_allclose(x.grad.to_numpy(), x.to_numpy() - y.to_numpy(), rtol=1e-5)
    losses = []
    for _ in range(20):
        with ti.Tape(loss=L):          # the old spelling of ti.ad.Tape
            reduce()
        losses.append(L[None])
        gradient_descent()
    assert losses[-1] < 0.2 * losses[0]
