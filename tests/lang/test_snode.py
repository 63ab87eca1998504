"""Dense placement (lang/snode.py; sparse nodes are tests/lang/test_sparse.py's): `wk.root.dense(...).place(...)` shapes fields declared without a shape,
as Taichi programs (difftaichi's) declare them; gradients flow through placed fields; errors name the field."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk


def test_placed_fields_have_the_chain_shape_and_gradients(arch):
    steps, bodies = 16, 4
    x = wk.Vector.field(2, dtype=wk.f32, needs_grad=True)
    v = wk.Vector.field(2, dtype=wk.f32, needs_grad=True)
    loss = wk.field(wk.f32, needs_grad=True)
    wk.root.dense(wk.k, steps).dense(wk.l, bodies).place(x, v)
    wk.root.place(loss)
    wk.root.lazy_grad()
    assert x.shape == v.shape == x.grad.shape == (steps, bodies) and loss.shape == ()

    @wk.kernel
    def step(t: wk.i32):
        for i in range(bodies):
            v[t, i] = v[t - 1, i] + wk.Vector([0.0, -9.8]) * 0.01
            x[t, i] = x[t - 1, i] + v[t, i] * 0.01

    @wk.kernel
    def height():
        for i in range(bodies):
            loss[None] += x[steps - 1, i].y

    for b in range(bodies):
        x[0, b] = [0.1 * b, 1.0]
    with wk.ad.Tape(loss=loss):
        for t in range(1, steps):
            step(t)
        height()
    np.testing.assert_allclose(x.grad.to_numpy()[0, :, 1], 1.0, rtol=1e-6)
    np.testing.assert_allclose(v.grad.to_numpy()[0, :, 1], 0.01 * (steps - 1), rtol=1e-5)


def test_axes_order_the_shape_whatever_the_nesting(arch):
    f = wk.field(wk.i32)
    wk.root.dense(wk.j, 3).dense(wk.i, 5).place(f)
    g = wk.field(wk.i32)
    wk.root.dense(wk.ij, 4).place(g)
    assert f.shape == (5, 3) and g.shape == (4, 4)
    h = wk.field(wk.f32)
    wk.root.dense(wk.i, 2).dense(wk.axes(1, 2), (3, 4)).place(h)      # Taichi's ti.axes
    assert h.shape == (2, 3, 4) and wk.axes(0, 1) == wk.ij
    with pytest.raises(wk.WkError, match="axis numbers"):
        wk.axes(7)


def test_placement_errors_name_the_problem(arch):
    shaped = wk.field(wk.f32, shape=3)
    used = wk.field(wk.f32)

    @wk.kernel
    def touch():
        used[None] = 1.0

    touch()
    with pytest.raises(wk.WkError, match="'shaped' already has shape \\(3,\\)"):
        wk.root.dense(wk.i, 4).place(shaped)
    with pytest.raises(wk.WkError, match="'used' is already used by a kernel"):
        wk.root.dense(wk.i, 4).place(used)
    with pytest.raises(wk.WkError, match="hash\\(\\) nodes are not available"):
        wk.root.hash(wk.i, 4)
    with pytest.raises(wk.WkError, match="an axis is named twice"):
        wk.root.dense((0, 0), 3)
    with pytest.raises(wk.WkError, match="2 axes need 2 extents"):
        wk.root.dense(wk.ij, (2, 3, 4))


def test_blocked_layouts_have_the_product_shape(arch):
    """`dense(ij, 4).dense(ij, 8)` (Taichi's blocked layout) indexes one 32 x 32 array; so does the field here."""
    x = wk.field(wk.f32)
    wk.root.dense(wk.ij, (4, 2)).dense(wk.ij, (8, 3)).dense(wk.j, 2).place(x)
    assert x.shape == (32, 12)

    @wk.kernel
    def fill():
        for i, j in x:
            x[i, j] = i * 100 + j

    fill()
    np.testing.assert_array_equal(x.to_numpy(), np.add.outer(np.arange(32) * 100, np.arange(12)))
    y = wk.field(wk.i32)
    wk.root.dense(wk.i, np.int32(5)).dense(wk.j, np.int64(2)).place(y)     # numpy integers as extents
    assert y.shape == (5, 2)


def test_every_axis_combination_has_taichi_s_name(fake_program):
    assert wk.jk == (1, 2) and wk.il == (0, 3) and wk.jkl == (1, 2, 3) and wk.ikl == (0, 2, 3)
    f = wk.field(wk.f32)
    wk.root.dense(wk.i, 2).dense(wk.jk, 3).place(f)
    assert f.shape == (2, 3, 3)


def test_fields_builder_places_fields_after_kernels_ran(arch):
    # Taichi's test_fields_builder: each FieldsBuilder is a root of its own, finalized once; deactivate_all
    # clears its own sparse nodes only; a tree is destroyed once
    x = wk.field(wk.f32)
    fb1 = wk.FieldsBuilder()
    fb1.pointer(wk.i, 5).place(x)
    fb1.finalize()

    @wk.kernel
    def fill_x():
        for i in range(5):
            x[i] = i * 3

    fill_x()
    y = wk.field(wk.f32)
    fb2 = wk.FieldsBuilder()
    fb2.bitmasked(wk.i, 5).place(y)
    tree = fb2.finalize()

    @wk.kernel
    def fill_y_and_count() -> int:
        for i in range(5):
            y[i] = x[i] + 1
        c = 0
        for i in y:
            c += 1
        for i in x:
            c += 100
        return c

    assert fill_y_and_count() == 505
    assert y.to_numpy().tolist() == [1, 4, 7, 10, 13]
    fb2.deactivate_all()

    @wk.kernel
    def count() -> int:
        c = 0
        for i in y:
            c += 1
        for i in x:
            c += 100
        return c

    assert count() == 500
    with pytest.raises(wk.WkError, match="finalized"):
        fb2.dense(wk.i, 3)
    tree.destroy()
    with pytest.raises(wk.WkError, match="destroyed"):
        tree.destroy()
    with pytest.warns(UserWarning, match="empty FieldsBuilder"):
        wk.FieldsBuilder().finalize()


def test_roots_take_the_fields_builder_keyword_names(arch):
    # A Barnes-Hut quadtree program builds its particle table as root.dense(indices=wk.i, dimensions=n): Taichi's
    # roots are FieldsBuilders, whose arguments are named indices / dimensions (index / dimension for dynamic);
    # a node below the root names them axes, and refuses indices= as Taichi's SNode does
    pos = wk.Vector.field(2, dtype=wk.f32)
    mass = wk.field(wk.f32)
    wk.root.dense(indices=wk.i, dimensions=8).place(pos).place(mass)
    kids = wk.field(wk.i32)
    table = wk.root.dense(indices=wk.i, dimensions=4)
    table.dense(axes=wk.jk, dimensions=2).place(kids)
    with pytest.raises(TypeError, match="indices"):
        table.dense(indices=wk.jk, dimensions=2)
    flags = wk.field(wk.i32)
    wk.root.bitmasked(indices=wk.i, dimensions=3).place(flags)
    items = wk.field(wk.i32)
    fb = wk.FieldsBuilder()
    fb.dynamic(index=wk.i, dimension=6, chunk_size=2).place(items)
    fb.finalize()

    @wk.kernel
    def fill() -> int:
        for i in range(8):
            pos[i] = [i, -i]
            mass[i] = i * 0.5
        for i, j, k in kids:
            kids[i, j, k] = i * 100 + j * 10 + k
        flags[1] = 7
        for i in range(3):
            items[i] = i + 1
        c = 0
        for i in flags:
            c += 1
        return c + items.length() * 10

    assert fill() == 31
    assert pos.shape == (8,) and kids.shape == (4, 2, 2) and items.shape == (6,)
    assert pos.to_numpy()[3].tolist() == [3, -3] and mass.to_numpy()[6] == 3.0
    assert kids.to_numpy()[2, 1, 0] == 210


def test_place_with_offset_shifts_indices_of_dense_and_sparse_placements(arch):
    # Taichi's test_offset: place(x, offset=...) as wk.field(offset=...) does; struct-for loops give offset indices
    a = wk.field(wk.i32)
    wk.root.dense(wk.ij, 32).place(a, offset=(16, -16))
    x = wk.field(wk.i32)
    wk.root.pointer(wk.ij, 4).dense(wk.ij, 4).place(x, offset=(-8, 4))
    g = wk.field(wk.f32)
    wk.root.dense(wk.i, 5).place(g, g.grad, offset=-2)
    s = wk.field(wk.i32, shape=())

    @wk.kernel
    def fill():
        for i, j in a:
            a[i, j] = i + j * 10
        x[-8, 4] = 1
        x[7, 19] = 2
        x[-1, 8] = 3
        for i in g:
            g[i] = i

    @wk.kernel
    def count():
        for i, j in x:
            s[None] += x[i, j] * 100 + 1

    fill()
    count()
    assert a[16, -16] == 16 - 160 and a[47, 15] == 47 + 150
    assert s[None] == 648 and x[-1, 8] == 3
    assert g.to_numpy().tolist() == [-2, -1, 0, 1, 2] and g.grad.shape == (5,)
    with pytest.raises(wk.WkError, match="one integer per axis"):
        wk.root.dense(wk.ij, 2).place(wk.field(wk.f32), offset=3)


def test_place_takes_lists_and_objects_that_place_themselves(arch):
    # Taichi's place([x, y]); older Taichi's ti.root.place(obj) calling obj.place(root) (its
    # test_complex_kernels places a @ti.data_oriented object so)
    x, y = wk.field(wk.f32), wk.field(wk.i32)
    wk.root.dense(wk.i, 4).place([x, y])

    class Particles:
        def __init__(self):
            self.pos = wk.Vector.field(2, wk.f32)

        def place(self, root):
            root.dense(wk.i, 8).place(self.pos)

    p = Particles()
    wk.root.place(p)
    assert x.shape == y.shape == (4,) and p.pos.shape == (8,)


def test_get_scalar_field_places_the_vector_field(arch):
    """taichi_elements places each component of its grid velocity with `v.get_scalar_field(d)`; fields keep
    components together here, so placing them puts the whole field under that node (and block_local takes
    them)."""
    v = wk.Vector.field(2, dtype=wk.f32)
    m = wk.field(wk.f32)
    block = wk.root.dense(wk.ij, 2).dense(wk.ij, 4)
    block.place(m, offset=(-4, -4))
    for d in range(2):
        block.place(v.get_scalar_field(d), offset=(-4, -4))
    assert v.shape == (8, 8) and v.offset == (-4, -4)

    @wk.kernel
    def fill(grid_v: wk.template()):
        wk.block_local(m)
        for d in wk.static(range(2)):
            wk.block_local(grid_v.get_scalar_field(d))
        for I in wk.grouped(grid_v):
            grid_v[I] = [I[0], I[1] * 2]

    fill(v)
    assert v[-4, 3][1] == 6 and v.get_scalar_field(0)[-3, 0] == -3
    np.testing.assert_array_equal(v.get_scalar_field(1).to_numpy(), v.to_numpy()[..., 1])
    with pytest.raises(wk.WkError, match="one index per element axis"):
        v.get_scalar_field(0, 0)


def test_a_place_that_runs_out_of_memory_leaves_the_field_usable(arch):
    """The storage is re-allocated when a field is placed; when that fails the field keeps storage of its own
    (still without a shape) instead of the buffer it gave up, and the program goes on."""
    wk.init(arch=arch, device_memory_limit=1 << 20)
    x = wk.field(wk.f32, needs_grad=True)
    with pytest.raises(wk.OutOfMemoryError):
        wk.root.dense(wk.i, 1 << 18).dynamic(wk.j, 4).place(x)
    assert x.shape == () and x.to_numpy() == 0.0 and x.grad.to_numpy() == 0.0
    y = wk.field(wk.f32)
    wk.root.dense(wk.i, 4).place(y)

    @wk.kernel
    def fill():
        for i in y:
            y[i] = i * 2.0

    fill()
    np.testing.assert_array_equal(y.to_numpy(), [0.0, 2.0, 4.0, 6.0])
