"""wk.Layout (Quadrants' qd.Layout.AOS / SOA) on vector, matrix and struct fields: accepted where Quadrants takes
it, checked, and never a change in what kernels or the host read."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from tests.quadrants_compare import same_output_as_quadrants


def test_layout_enum_matches_quadrants_values():
    assert [(m.name, int(m)) for m in wk.Layout] == [("AOS", 0), ("SOA", 1), ("NULL", 2)]


@pytest.mark.parametrize("layout", [wk.Layout.AOS, wk.Layout.SOA])
def test_struct_and_vector_fields_read_the_same_with_either_layout(arch, layout):
    particle = wk.types.struct(pos=wk.types.vector(3, wk.f32), mass=wk.f32, tag=wk.i32)
    particles = particle.field(shape=(5, 2), layout=layout)
    velocity = wk.Vector.field(3, wk.f32, shape=(5, 2), layout=layout)
    inertia = wk.field(wk.types.matrix(2, 2, wk.f32), shape=4, layout=layout)
    members = wk.Struct.field({"a": wk.f32, "b": wk.types.vector(2, wk.i32)}, shape=3, layout=layout)

    @wk.kernel
    def fill():
        for i, b in particles:
            particles[i, b].pos = wk.Vector([i, b, i + b], wk.f32)
            particles[i, b].mass = 0.5 * i
            particles[i, b].tag = 10 * i + b
            velocity[i, b] = particles[i, b].pos * particles[i, b].mass
        for k in inertia:
            inertia[k] = wk.Matrix([[k, 1], [2, k * k]], wk.f32)
        for k in members:
            members[k].a = k * 0.25
            members[k].b = wk.Vector([k, -k])

    fill()
    i, b = np.meshgrid(np.arange(5), np.arange(2), indexing="ij")
    pos = np.stack([i, b, i + b], axis=-1).astype(np.float32)
    data = particles.to_numpy()
    np.testing.assert_array_equal(data["pos"], pos)
    np.testing.assert_array_equal(data["mass"], 0.5 * i)
    np.testing.assert_array_equal(data["tag"], 10 * i + b)
    np.testing.assert_array_equal(velocity.to_numpy(), pos * (0.5 * i)[..., None])   # halves of integers: exact
    k = np.arange(4, dtype=np.float32)
    expected = np.stack([np.stack([k, np.ones(4)], -1), np.stack([2 * np.ones(4), k * k], -1)], axis=1)
    np.testing.assert_array_equal(inertia.to_numpy(), expected)
    np.testing.assert_array_equal(members.to_numpy()["b"], np.stack([np.arange(3), -np.arange(3)], -1))
    velocity.from_numpy(np.ones((5, 2, 3), np.float32))
    assert velocity[4, 1].tolist() == [1.0, 1.0, 1.0]


def test_layout_is_checked_and_scalar_fields_refuse_it():
    particle = wk.types.struct(mass=wk.f32)
    with pytest.raises(TypeError, match="give wk.Layout.AOS or wk.Layout.SOA"):
        particle.field(shape=2, layout="soa")
    with pytest.raises(TypeError, match=r"wk.field\(layout=1\): give wk.Layout"):
        wk.Vector.field(2, wk.f32, shape=2, layout=1)
    with pytest.raises(TypeError, match="unexpected keyword arguments: layout"):
        wk.field(wk.f32, shape=2, layout=wk.Layout.SOA)


PROGRAM = """
import numpy as np
import {module} as qd
qd.init(arch=qd.cpu)
particle = qd.types.struct(pos=qd.types.vector(3, qd.f32), mass=qd.f32)
soa = particle.field(shape=(4, 2), layout=qd.Layout.SOA)
aos = particle.field(shape=(4, 2), layout=qd.Layout.AOS)
vel = qd.Vector.field(3, qd.f32, shape=(4, 2), layout=qd.Layout.SOA)

@qd.kernel
def k():
    for i, b in soa:
        soa[i, b].pos = qd.Vector([i, b, i * b], qd.f32)
        soa[i, b].mass = i + 0.5
        aos[i, b] = soa[i, b]
        vel[i, b] = aos[i, b].pos * aos[i, b].mass

k()
print(int(qd.Layout.SOA), int(qd.Layout.AOS))
for f in (soa, aos):
    d = f.to_numpy()
    print(d["pos"].tolist(), d["mass"].tolist())
print(vel.to_numpy().tolist())
"""


def test_same_program_as_quadrants(tmp_path):
    ours = same_output_as_quadrants(tmp_path, PROGRAM)
    assert ours[0] == "1 0" and ours[1] == ours[2]


def test_struct_field_options_reach_every_member(arch):
    """offset= and needs_dual= of a struct field apply to its members (as in Quadrants); an option it does not
    have is a TypeError instead of being dropped."""
    particle = wk.types.struct(pos=wk.types.vector(2, wk.f32), tag=wk.i32)
    shifted = particle.field(shape=4, offset=-2, needs_dual=True, layout=wk.Layout.SOA)

    @wk.kernel
    def fill():
        for i in shifted:
            shifted[i].pos = wk.Vector([i, 2 * i], wk.f32)
            shifted[i].tag = i

    fill()
    assert shifted.tag.to_numpy().tolist() == [-2, -1, 0, 1] and shifted[-2].tag == -2
    assert shifted.pos.dual is not None and shifted.tag.dual is None
    with pytest.raises(TypeError, match="unexpected keyword argument 'order'"):
        particle.field(shape=4, order="ji")
