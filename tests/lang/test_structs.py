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
    def wrong_store():
        for i in s:
            s[i] = 1.0

    @wk.kernel
    def unknown_local_member():
        for i in s:
            p = s[i]
            p.zz = 3.0

    with pytest.raises(wk.CompileError, match="has no member 'b'"):
        unknown()
    with pytest.raises(wk.CompileError, match="'s\\[...\\]' takes a struct value of type .*got a Python float"):
        wrong_store()
    with pytest.raises(wk.CompileError, match="has no member 'zz'"):
        unknown_local_member()
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


def test_dataclass_plain_methods_are_host_methods(arch):
    """As in Taichi: a plain method works on Python-scope values; a kernel calling it gets an error naming it."""
    @wk.dataclass
    class Body:
        mass: wk.f32

        def describe(self):
            return f"Body of mass {self.mass}"

    assert Body(mass=2.0).describe() == "Body of mass 2.0"
    bodies = Body.field(shape=2)

    @wk.kernel
    def k():
        for i in bodies:
            bodies[i].describe()

    with pytest.raises(wk.CompileError, match="'describe' is a plain Python method of @wk.dataclass Body"):
        k()


def test_dataclass_errors_name_the_class():
    with pytest.raises(wk.WkError, match="Empty has no annotated members"):
        @wk.dataclass
        class Empty:
            pass

    @wk.dataclass
    class Point:
        x: wk.f32
    with pytest.raises(wk.WkError, match="Point has no member 'y' \\(members: x\\)"):
        Point(y=1.0)
    with pytest.raises(wk.WkError, match="Point has 1 members \\(x\\); got 2 positional values"):
        Point(1.0, 2.0)


def test_struct_values_are_copied_modified_made_and_stored(arch):
    particle = wk.types.struct(pos=wk.math.vec3, m=wk.f32)
    particles = particle.field(shape=4)
    mirror = particle.field(shape=4)
    out = wk.field(wk.f32, shape=4)

    @wk.kernel
    def run():
        for i in particles:
            made = particle(pos=wk.math.vec3(i, 1, 2), m=2.0)     # members by name, converted to f32
            out[i] = made.pos.x * made.m
            p = particles[i]                                     # a copy: modifying it leaves the field
            p.m = i + 1.0
            p.pos += wk.math.vec3(1.0)
            p.pos.y = 5.0
            p.pos[2] = made.pos[2] + p.pos[0]
            particles[i] = p                                     # until it is stored back
        for i in mirror:
            mirror[i] = particles[3 - i]

    run()
    np.testing.assert_allclose(out.to_numpy(), [0, 2, 4, 6])
    got = particles.to_numpy()
    np.testing.assert_allclose(got["m"], [1, 2, 3, 4])
    np.testing.assert_allclose(got["pos"], [[1, 5, 3]] * 4)
    np.testing.assert_allclose(mirror.to_numpy()["m"], [4, 3, 2, 1])


def test_nested_struct_fields(arch):
    inner = wk.types.struct(a=wk.f32, b=wk.math.vec2)
    outer = wk.types.struct(inner=inner, c=wk.i32)
    f = outer.field(shape=3)
    assert f.inner.a.shape == (3,) and f.inner.b.shape == (3,)

    @wk.kernel
    def fill():
        for i in f:
            f[i].inner.a = i * 2.0
            f[i].c = i + 10
            q = f[i]
            q.inner.b.x = 7.0 + q.inner.a
            f[i] = q

    fill()
    got = f.to_numpy()
    np.testing.assert_allclose(got["inner"]["a"], [0, 2, 4])
    np.testing.assert_allclose(got["inner"]["b"][:, 0], [7, 9, 11])
    assert got["c"].tolist() == [10, 11, 12]
    f[1] = outer(inner=inner(a=-1.0), c=5)          # host: a struct value (members not given are zero)
    f[2].inner.b = [3.0, 4.0]
    assert f[1].inner.a == -1.0 and f[1].c == 5 and f[1].inner.b.tolist() == [0.0, 0.0]
    assert f[2].inner.b.tolist() == [3.0, 4.0]


PARTICLE = wk.types.struct(pos=wk.math.vec3, m=wk.f32)    # module level: annotations name it (PEP 563)


def test_funcs_take_and_return_struct_values(arch):
    particle = PARTICLE
    out = wk.field(wk.f32, shape=4)

    @wk.func
    def make(i) -> PARTICLE:
        q = particle(wk.math.vec3(i, i, i))          # positional, in member order
        if i > 1:
            return particle(m=5.0)                    # an early return (flag mode)
        return q

    @wk.func
    def heavier(p: PARTICLE) -> wk.f32:
        p.m += 1.0                                    # the parameter is a copy
        return p.m

    @wk.kernel
    def run():
        for i in out:
            q = make(i)
            out[i] = q.pos.z + heavier(q) + q.m

    run()
    np.testing.assert_allclose(out.to_numpy(), [1, 2, 11, 11])


def test_dataclass_methods_act_on_values_and_elements(arch):
    @wk.dataclass
    class Sphere:
        center: wk.math.vec3
        radius: wk.f32

        @wk.func
        def area(self):
            return 4 * np.pi * self.radius ** 2

        @wk.func
        def grow(self, d: wk.f32):
            self.radius += d

    spheres = Sphere.field(shape=3)
    area = wk.field(wk.f32, shape=3)

    @wk.kernel
    def run():
        for i in spheres:
            spheres[i].radius = i + 1.0
            area[i] = spheres[i].area()
            local = Sphere(center=wk.math.vec3(0.0), radius=1.0)
            local.grow(1.0)                           # changes the local variable
            spheres[i].grow(local.radius)             # changes the field element

    run()
    np.testing.assert_allclose(area.to_numpy(), 4 * np.pi * np.array([1, 4, 9]), rtol=1e-6)
    np.testing.assert_allclose(spheres.radius.to_numpy(), [3, 4, 5])


def test_struct_and_vector_kernel_arguments_are_runtime_values(arch):
    out = wk.field(wk.f32, shape=3)

    @wk.kernel
    def apply(p: PARTICLE, offset: wk.math.vec3, scale: wk.math.mat2):
        p.m += 1.0
        for i in out:
            out[i] = p.pos[i] * p.m + offset[i] + scale[1, 1]

    apply(PARTICLE(pos=wk.math.vec3(1, 2, 3), m=1.0), wk.math.vec3(0.5), wk.math.mat2([[0, 0], [0, 1]]))
    np.testing.assert_allclose(out.to_numpy(), [3.5, 5.5, 7.5])
    compiles = wk.stats()["kernel_compiles"]
    apply({"pos": [1, 1, 1], "m": 2.0}, [0.0, 1.0, 2.0], np.eye(2) * 3)     # new values, no new compile
    np.testing.assert_allclose(out.to_numpy(), [6, 7, 8])
    assert wk.stats()["kernel_compiles"] == compiles
    with pytest.raises(wk.ArgumentError, match="parameter 'p' expects a .*got float"):
        apply(1.0, wk.math.vec3(0.5), np.eye(2))


HOLDER = wk.types.struct(p=PARTICLE, k=wk.f32)


def test_struct_argument_with_a_nested_value_of_other_shapes_is_rejected(arch):
    # A nested member of another struct type (pos a vec2 where PARTICLE's is a vec3) used to be flattened and
    # cut short, shifting its components into the next members; now it is an ArgumentError.
    flat = wk.types.struct(pos=wk.math.vec2, m=wk.f32)
    out = wk.field(wk.f32, shape=())

    @wk.kernel
    def total(h: HOLDER):
        out[None] = h.p.pos.sum() + h.p.m + h.k

    total(HOLDER(p=PARTICLE(pos=wk.math.vec3(1, 2, 3), m=4.0), k=5.0))
    assert out[None] == 15.0
    with pytest.raises(wk.ArgumentError, match=r"parameter 'h' expects .*other shapes \(component 2 is "
                       r"'h.p.pos\[2\]' in the parameter, 'h.p.m' in the value\)"):
        total(HOLDER(p=flat(pos=wk.math.vec2(1, 2), m=4.0), k=5.0))


def test_annotated_struct_variables(arch):
    out = wk.field(wk.f32, shape=2)

    @wk.kernel
    def run():
        zero: PARTICLE
        made: PARTICLE = PARTICLE(m=2.0)
        made.pos.y = 3.0
        out[0] = zero.m + zero.pos.sum()
        out[1] = made.m * made.pos.y

    run()
    assert out.to_numpy().tolist() == [0.0, 6.0]


def test_anonymous_struct_values_in_kernels(arch):
    """`wk.Struct({...})` / `wk.Struct(name=value)` in kernel code (Taichi's debugging docs use it): member
    types come from the values; they nest and are modifiable variables."""
    out = wk.field(wk.f32, shape=3)

    @wk.kernel
    def k():
        ray = wk.Struct({"ori": wk.Vector([0.0, 1.0, 2.0]), "len": 1.5})
        outer = wk.Struct(n=3, ray=ray)
        outer.ray.len += 1.0
        out[0] = ray.len
        out[1] = outer.ray.len + outer.n
        out[2] = ray.ori.z

    k()
    assert out.to_numpy().tolist() == [1.5, 5.5, 2.0]


def test_kernels_return_struct_values(arch):
    """`-> S` with S a struct type or a @wk.dataclass: a HostStruct, nested members and vectors included."""
    inner = wk.types.struct(n=wk.i32, w=wk.types.vector(2, wk.f32))
    outer = wk.types.struct(a=wk.f32, inner=inner)
    s = wk.Struct.field({"a": wk.f32, "b": wk.i32}, shape=4)

    @wk.dataclass
    class P:
        x: wk.f32
        n: wk.i32

    @wk.kernel
    def make(x: wk.f32) -> outer:
        return outer(a=x * 2, inner=inner(n=3, w=wk.Vector([x, -1.0])))

    @wk.kernel
    def element(i: wk.i32) -> s.struct_type:
        return s[i]

    @wk.kernel
    def dataclass_value() -> P:
        return P(x=0.5)

    r = make(1.5)
    assert r.a == 3.0 and r.inner.n == 3
    np.testing.assert_array_equal(r.inner.w, [1.5, -1.0])
    assert str(r) == "{'a': 3.0, 'inner': {'n': 3, 'w': [1.5, -1.0]}}"
    s[2] = {"a": 4.25, "b": 9}
    e = element(2)
    assert (e.a, e.b) == (4.25, 9)
    p = dataclass_value()
    assert (p.x, p.n) == (0.5, 0)        # members not given are zero


RETURNED = wk.types.struct(a=wk.f32)
OTHER = wk.types.struct(a=wk.f32)


def test_struct_return_of_another_type_is_an_error(arch):
    @wk.kernel
    def wrong() -> RETURNED:
        return OTHER(a=1.0)

    with pytest.raises(wk.CompileError, match="annotated to return"):
        wrong()


def test_struct_field_keys_dtype_grad_copy_from_and_printed_elements(arch):
    S = wk.types.struct(a=wk.f32, b=wk.i32, v=wk.math.vec2)
    s1, s2 = S.field(shape=3), S.field(shape=3)
    s1[1] = {"a": 1.5, "b": 2, "v": [1, 2]}
    s2.copy_from(s1)
    assert s1.keys == ["a", "b", "v"] and s1.dtype is S
    assert str(s2[1]) == "{'a': 1.5, 'b': 2, 'v': [1.0, 2.0]}"
    assert s1.grad is None
    with pytest.raises(wk.WkError, match="copy_from\\(\\) takes a struct field with the members a, b, v"):
        s1.copy_from(wk.types.struct(a=wk.f32).field(shape=3))

    @wk.dataclass
    class P:
        x: wk.f32
        n: wk.i32
    ps = P.field(shape=3, needs_grad=True)
    assert ps.grad.keys == ["x"] and ps.grad.x is ps.x.grad        # the int member has no gradient
    # Quadrants' test_api: get_member_field, has_grad() / has_dual() (called or read), and a struct value's
    # keys, items and entries (a member of one of those names comes first)
    assert ps.get_member_field("n") is ps.n and ps.has_grad() and ps.has_grad and not s1.has_grad()
    assert not ps.has_dual() and not s1.has_dual
    with pytest.raises(KeyError, match="no member 'q'"):
        ps.get_member_field("q")
    value = S(a=2.0, b=3, v=[1.0, 4.0])
    assert value.keys == ["a", "b", "v"] and dict(value.items)["b"] == 3
    assert value.entries["a"] == 2.0 and value.entries["v"].tolist() == [1.0, 4.0]
    assert wk.types.struct(keys=wk.i32)(keys=7).keys == 7


def test_struct_constructor_values_nest_and_copy(arch):
    """A nested struct member given one value takes it as its first member (`outer(1)`), `wk.Struct({...})`
    makes a value in Python scope, and one struct field's element can be assigned to another's member on the
    host."""
    line = wk.types.struct(direction=wk.math.vec3, length=float)
    outer = wk.types.struct(line=line, idx=int)
    x = outer.field(shape=4)
    lines = line.field(shape=4)
    consts = wk.Struct({"a": 2, "b": {"c": 1.5}})
    out = wk.field(wk.f32, shape=2)

    @wk.kernel
    def fill():
        for i in x:
            x[i] = outer(i + 1)
        local = line(7)
        out[0] = local.direction.y + local.length
        out[1] = consts.a + consts.b.c

    fill()
    assert np.allclose(x.line.direction.to_numpy()[:, 0], [1, 2, 3, 4])
    assert np.all(x.line.length.to_numpy() == 0) and np.all(x.idx.to_numpy() == 0)
    assert np.allclose(out.to_numpy(), [7.0, 3.5])

    host = outer(3)
    assert np.allclose(host.line.direction, 3.0) and host.idx == 0

    lines[2] = line(direction=wk.math.vec3(1, 2, 3), length=4.0)
    x[1].line = lines[2]
    x[3] = {"line": lines[2], "idx": 9}
    assert np.allclose(x[1].line.direction.to_numpy(), [1, 2, 3]) and x[1].line.length == 4.0
    assert x[3].idx == 9 and x[3].line.length == 4.0
    x.fill(5)
    assert x[0].idx == 5 and np.allclose(x[0].line.direction.to_numpy(), 5.0)


TUPLE_MEMBER = wk.types.struct(a=wk.math.vec3, b=wk.i16)


def test_kernel_returns_a_tuple_holding_a_struct(arch):
    # Quadrants' test_return test_real_func_tuple_ret: `-> tuple[f32, s0]` with s0 a struct type.
    s0 = TUPLE_MEMBER

    @wk.real_func
    def make() -> tuple[wk.f32, TUPLE_MEMBER]:
        return 1, s0(a=wk.math.vec3([100, 0.2, 3]), b=65537)

    @wk.kernel
    def bar() -> tuple[wk.f32, TUPLE_MEMBER, wk.i32]:
        first, second = make()
        return first, second, 7

    one, made, seven = bar()
    assert one == 1.0 and seven == 7
    assert made.b == 1 and np.allclose(made.a, [100, 0.2, 3])


def test_a_dataclass_member_with_a_default_value_is_an_error_naming_it():
    # Taichi and Quadrants refuse defaults too; wgkern dropped them (Foo(2).b was 0.0, not 3.14)
    with pytest.raises(wk.CompileError, match=r"@wk.dataclass Foo: default values of members are not supported "
                                              r"\(b\); members start at zero") as caught:
        @wk.dataclass
        class Foo:
            a: int
            b: float = 3.14

    assert caught.value.lineno is not None and "b: float = 3.14" in str(caught.value)
    assert "Default value in @dataclass is not supported." in str(caught.value)      # Quadrants' phrase
