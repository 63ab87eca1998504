"""@wk.data_oriented classes (lang/kernel.py): kernels and funcs as methods using `self`'s fields, one
specialisation per instance, gradients through a method kernel under a Tape."""
from __future__ import annotations

import numpy as np
import pytest

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


@wk.data_oriented
class Buffers:
    """ndarray members (Quadrants' ndarray mode): passed as ndarray arguments at each launch."""

    def __init__(self, n: int):
        self.a = wk.ndarray(wk.i32, shape=n)
        self.inner = Inner(n)
        self.scale = 3

    @wk.func
    def bump(self, i):
        if wk.static(isinstance(self, Buffers)):     # the object as kernel code sees it is still a Buffers
            self.inner.b[i] += self.a[i] * self.scale

    @wk.kernel
    def fill(self):
        for i in range(self.a.shape[0]):
            self.a[i] = i + 1
            self.bump(i)


@wk.data_oriented
class Inner:
    def __init__(self, n: int):
        self.b = wk.ndarray(wk.f32, shape=n)


@wk.kernel
def total(o: wk.template(), out: wk.types.ndarray()):
    for i in range(o.a.shape[0]):
        out[0] += o.a[i] + o.inner.b[i]


def test_ndarray_members_are_passed_as_arguments(arch):
    obj = Buffers(3)
    obj.fill()
    assert list(obj.a.to_numpy()) == [1, 2, 3] and list(obj.inner.b.to_numpy()) == [3.0, 6.0, 9.0]
    out = np.zeros(1, np.float32)
    total(obj, out)
    assert out[0] == 24.0
    obj.a = wk.ndarray(wk.i32, shape=5)     # a member reassigned: the kernel sees the new array (a new variant)
    obj.inner.b = wk.ndarray(wk.f32, shape=5)
    obj.fill()
    assert list(obj.a.to_numpy()) == [1, 2, 3, 4, 5] and obj.inner.b[4] == 15.0
    before = wk.stats()["kernel_compiles"]
    obj.inner.b = wk.ndarray(wk.f32, shape=7)   # same dtype and ndim: no recompile
    obj.fill()
    assert wk.stats()["kernel_compiles"] == before and obj.inner.b[4] == 15.0
    for step in range(3):
        obj.step_count = step                   # other attributes changing: still no recompile
        obj.fill()
    assert wk.stats()["kernel_compiles"] == before


def test_bare_template_and_ndarray_annotations(arch):
    # Quadrants accepts wk.template and wk.types.ndarray without the call, in kernels and funcs
    @wk.func
    def copy(dst: wk.template, src: wk.template):
        dst[None] = src[None] + 2

    @wk.kernel
    def run(dst: wk.template, src: wk.template, arr: wk.types.ndarray):
        copy(dst, src)
        arr[0] = dst[None]

    a, b = wk.field(wk.i32, shape=()), wk.field(wk.i32, shape=())
    b[None] = 5
    arr = wk.ndarray(wk.i32, shape=2)
    run(a, b, arr)
    assert a[None] == 7 and arr[0] == 7


@wk.data_oriented
class Rebuilt:
    def __init__(self):
        self.n = 4

    def allocate(self):
        self.x = wk.field(wk.i32, shape=self.n)
        self.inner = Inner(1)
        self.inner.total = wk.field(wk.i32, shape=())

    @wk.kernel
    def fill(self, m: wk.i32):
        for i in range(self.n):
            self.x[i] = m * i
            self.inner.total[None] += m


def test_fields_made_again_on_the_same_object_are_the_ones_used(arch):
    # Taichi programs re-create an object's fields (a reset method); the kernel must not keep the old ones
    obj = Rebuilt()
    obj.allocate()
    obj.fill(1)
    assert obj.x[3] == 3 and obj.inner.total[None] == 4
    old = obj.x
    obj.allocate()
    obj.fill(2)
    assert obj.x[3] == 6 and obj.inner.total[None] == 8 and old[3] == 3


def test_kernel_methods_need_a_data_oriented_class(arch):
    # as in Quadrants and Taichi: the mark is what lets a kernel find the containers an object holds
    class Plain:
        def __init__(self):
            self.values = wk.field(wk.f32, shape=4)

        @wk.kernel
        def fill(self):
            for i in self.values:
                self.values[i] = 2.0

    plain = Plain()
    with pytest.raises(wk.CompileError, match="Please decorate class Plain with @wk.data_oriented"):
        plain.fill()
    with pytest.raises(wk.CompileError, match="Please decorate class Plain with @wk.data_oriented"):
        plain.fill.grad()
    marked = wk.data_oriented(type("Marked", (Plain,), {}))()
    marked.fill()
    assert marked.values.to_numpy().tolist() == [2.0] * 4
