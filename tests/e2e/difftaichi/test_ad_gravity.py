"""Port of python/taichi/examples/simulation/ad_gravity.py; shortened, checked as the package docstring says."""
from __future__ import annotations

import numpy as np

import wgkern as ti

from tests.e2e.difftaichi.gradcheck import _real, check_gradients

# ---- python/taichi/examples/simulation/ad_gravity.py ------------------------------------------------------------

def test_ad_gravity(arch):
    real = _real(arch)
    N = 8
    dt = 1e-5
    x = ti.Vector.field(2, dtype=real, shape=N, needs_grad=True)
    v = ti.Vector.field(2, dtype=real, shape=N)
    U = ti.field(dtype=real, shape=(), needs_grad=True)

    @ti.kernel
    def compute_U():
        for i, j in ti.ndrange(N, N):
            r = x[i] - x[j]
            U[None] += -1 / r.norm(1e-3)

    @ti.kernel
    def advance():
        for i in x:
            v[i] += dt * -x.grad[i]
        for i in x:
            x[i] += dt * v[i]

    def substep():
        with ti.ad.Tape(loss=U):
            compute_U()
        advance()

    @ti.kernel
    def init():
        for i in x:
            x[i] = [ti.random(), ti.random()]

    init()
    start = x.to_numpy().astype(np.float64)
    assert start.min() >= 0 and start.max() < 1 and np.unique(start).size == 2 * N

    def loss_value():
        U[None] = 0
        compute_U()
        return U[None]

    check_gradients(substep, loss_value, [x], real=real)
    x.from_numpy(start)
    v.fill(0)
    expected_x, expected_v = start.copy(), np.zeros_like(start)
    for _ in range(20):
        substep()
        r = expected_x[:, None, :] - expected_x[None, :, :]
        norm = np.sqrt((r ** 2).sum(-1) + 1e-3)
        grad = 2 * (r / norm[..., None] ** 3).sum(1)       # dU/dx_i, both (i, j) and (j, i) terms
        expected_v += dt * -grad
        expected_x += dt * expected_v
    np.testing.assert_allclose(x.to_numpy(), expected_x, rtol=1e-4 if real == ti.f32 else 1e-10)
