"""@wk.data_oriented classes (lang/kernel.py): kernels and funcs as methods using `self`'s fields, one
specialisation per instance, gradients through a method kernel under a Tape."""
from __future__ import annotations

import numpy as np

import wgkern as wk


@wk.data_oriented
class Springs:
    def __init__(self, n: int, stiffness: float):
        self.stiffness = stiffness
        self.x = wk.field(wk.f32, shape=n, needs_grad=True)
        self.v = wk.Vector.field(2, wk.f32, shape=n)
        self.energy = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.func
    def force(self, i):
        return -self.stiffness * self.x[i]

    @wk.kernel
    def step(self, dt: wk.f32):
        for i in self.x:
            self.v[i] += wk.Vector([self.force(i), 0.0]) * dt

    @wk.kernel
    def potential(self):
        for i in self.x:
            self.energy[None] += 0.5 * self.stiffness * self.x[i] ** 2


def test_methods_use_their_instance(arch):
    soft, stiff = Springs(4, 1.0), Springs(4, 10.0)
    for s in (soft, stiff):
        s.x.from_numpy(np.arange(4, dtype=np.float32))
    soft.step(0.5)
    stiff.step(0.5)
    stiff.step(0.5)
    np.testing.assert_allclose(soft.v.to_numpy()[:, 0], -0.5 * np.arange(4))
    np.testing.assert_allclose(stiff.v.to_numpy()[:, 0], -10.0 * np.arange(4))
    with wk.ad.Tape(loss=stiff.energy):
        stiff.potential()
    np.testing.assert_allclose(stiff.x.grad.to_numpy(), 10.0 * np.arange(4))
    assert soft.step.name == "step" and "step" in repr(Springs.step)
