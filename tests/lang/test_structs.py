"""Struct fields (lang/structs.py): Taichi's two spellings, member access in kernels (reads, writes, +=,
vector members, copies `p = s[i]`), host access, gradients through members, errors naming the member."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk


def test_struct_fields_in_kernels_and_on_the_host(arch):
    particle = wk.types.struct(pos=wk.math.vec3, vel=wk.math.vec3, mass=wk.f32)
    particles = particle.field(shape=8)
    grid = wk.Struct.field({"a": wk.f32, "b": wk.i32}, shape=(2, 3))
    assert particles.shape == (8,) and particles.pos.shape == (8,) and grid.a.shape == (2, 3)

    @wk.kernel
    def step(dt: wk.f32):
        for i in particles:
            before = particles[i]                      # a copy, read before the writes below
            particles[i].vel += wk.Vector([0.0, -9.8, 0.0]) * dt
            particles[i].pos += particles[i].vel * dt
            particles[i].mass = before.mass + i
            particles[i].pos.x = 0.5
        for I in wk.grouped(grid):
            grid[I].a = I[0] * 10.0 + I[1]
            grid[I].b = I[0] + I[1]

    particles.from_numpy({"pos": np.zeros((8, 3), np.float32), "mass": np.full(8, 2.0, np.float32)})
    particles.vel.fill(0.0)
    step(0.1)
    got = particles.to_numpy()
    np.testing.assert_allclose(got["vel"][:, 1], -0.98, rtol=1e-6)
    np.testing.assert_allclose(got["pos"][:, 1], -0.098, rtol=1e-5)
    assert got["pos"][:, 0].tolist() == [0.5] * 8 and got["mass"].tolist() == [2.0 + i for i in range(8)]
    assert grid.a.to_numpy().tolist() == [[0.0, 1.0, 2.0], [10.0, 11.0, 12.0]]
    assert grid.b.to_numpy().tolist() == [[0, 1, 2], [1, 2, 3]]
    assert particles[3].mass == 5.0
    particles[3].mass = 9.0
    assert particles.mass[3] == 9.0


def test_gradients_flow_through_float_members(arch):
    body = wk.Struct.field({"x": wk.f32, "count": wk.i32}, shape=4, needs_grad=True)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)
    assert body.x.grad is not None and body.count.grad is None

    @wk.kernel
    def energy():
        for i in body:
            loss[None] += body[i].x * body[i].x * wk.cast(body[i].count, wk.f32)

    body.from_numpy({"x": np.arange(4, dtype=np.float32), "count": np.array([1, 2, 3, 4], np.int32)})
    with wk.ad.Tape(loss=loss):
        energy()
    np.testing.assert_allclose(body.x.grad.to_numpy(), 2 * np.arange(4) * np.array([1, 2, 3, 4]))


def test_struct_errors_name_the_member(arch):
    s = wk.Struct.field({"a": wk.f32}, shape=4)

    @wk.kernel
    def unknown():
        for i in s:
            s[i].b = 1.0

    @wk.kernel
    def write_copy():
        for i in s:
            p = s[i]
            p.a = 3.0

    with pytest.raises(wk.CompileError, match="has no member 'b'"):
        unknown()
    with pytest.raises(wk.CompileError, match="is a copy of the struct element s\\[...\\]: assign to s\\[...\\].a"):
        write_copy()
    with pytest.raises(AttributeError, match="has no member 'c'"):
        s.c
    with pytest.raises(wk.WkError, match="assign to elements"):
        s.a = 1.0
    with pytest.raises(wk.WkError, match="no member"):
        s.from_numpy({"zz": np.zeros(4)})


def test_dataclass_declares_a_struct_type(arch):
    @wk.dataclass
    class Particle:
        pos: wk.math.vec2
        vel: wk.math.vec2
        mass: wk.f32

    particles = Particle.field(shape=4)
    assert repr(Particle) == "Particle" and list(Particle.members) == ["pos", "vel", "mass"]

    @wk.kernel
    def step():
        for i in particles:
            particles[i].pos = wk.math.vec2(i, 0.0)
            particles[i].vel = wk.math.vec2(1.0, 2.0)
            particles[i].mass = 1.0 + i
        for i in particles:
            particles[i].pos += particles[i].vel * 0.5 / particles[i].mass

    step()
    masses = 1.0 + np.arange(4, dtype=np.float32)
    want = np.stack([np.arange(4) + 0.5 / masses, 1.0 / masses], axis=1)
    np.testing.assert_allclose(particles.pos.to_numpy(), want, rtol=1e-6)


def test_dataclass_errors_name_the_class():
    with pytest.raises(wk.WkError, match="Body: methods \\(energy\\) are not available"):
        @wk.dataclass
        class Body:
            mass: wk.f32

            def energy(self):
                return 0.0
    with pytest.raises(wk.WkError, match="Empty has no annotated members"):
        @wk.dataclass
        class Empty:
            pass

    @wk.dataclass
    class Point:
        x: wk.f32
    with pytest.raises(wk.WkError, match="struct Point: whole struct values are not available"):
        Point(x=1.0)
