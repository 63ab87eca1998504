"""Taichi's older spellings (lang/legacy.py): ti.var, ti.Vector(n, dt=...), @ti.layout, ti.Tape,
ti.complex_kernel, and clear errors for Taichi internals."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk


def test_var_and_old_vector_matrix_field_forms(arch):
    a = wk.var(dt=wk.f32)
    b = wk.global_var(wk.i32, shape=4)
    u = wk.Vector(2, dt=wk.f32)
    w = wk.Vector(3, dt=wk.f32, shape=5)
    m = wk.Matrix(2, 2, dt=wk.f32)
    n = wk.Vector.var(2, wk.f32)
    q = wk.Matrix.var(2, 3, dt=wk.f32, shape=4)
    wk.root.dense(wk.i, 8).place(a, u, m, n)
    assert (a.shape, b.shape, u.shape, w.shape, m.shape, n.shape, q.shape) == ((8,), (4,), (8,), (5,), (8,), (8,),
                                                                                (4,))
    assert (u.n, w.n, m.n, m.m, q.n, q.m) == (2, 3, 2, 2, 2, 3)
    assert a.grad is not None          # declared without a shape: Taichi's placeable .grad
    # the value forms are unchanged
    assert wk.Vector([1, 2], dt=wk.f32).dtype == np.float32
    assert wk.Matrix([[1.0, 2.0], [3.0, 4.0]], wk.f64).dtype == np.float64
    with pytest.raises(TypeError, match="wk.Matrix.field"):
        wk.Matrix(2, 2)
    with pytest.raises(TypeError, match="wk.Vector.field"):
        wk.Vector([1.0, 2.0], shape=3)


def test_layout_runs_before_the_first_kernel_and_may_read_later_sizes(arch):
    x = wk.var(dt=wk.f32)
    y = wk.var(dt=wk.f32)
    sizes = {}

    @wk.layout
    def place():
        wk.root.dense(wk.i, sizes["n"]).place(x, x.grad, y)

    @wk.kernel
    def double():
        for i in x:
            y[i] = 2 * x[i]

    sizes["n"] = 6                     # set after the layout is declared, as difftaichi's programs do
    double()
    assert x.shape == (6,) and y.shape == (6,) and x.grad.shape == (6,)


def test_layout_runs_before_host_access(arch):
    x = wk.var(dt=wk.f32)

    @wk.layout
    def place():
        wk.root.dense(wk.ij, (2, 3)).place(x)

    x[1, 2] = 5.0
    assert x.shape == (2, 3) and x.to_numpy()[1, 2] == 5.0


def test_tape_clear_all_gradients_and_complex_kernel(arch):
    x = wk.field(wk.f32, shape=4, needs_grad=True)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def square():
        for i in x:
            loss[None] += x[i] * x[i]

    @wk.complex_kernel
    def forward():
        square()

    @wk.complex_kernel_grad(forward)
    def backward():
        square.grad()

    x.from_numpy(np.arange(4, dtype=np.float32))
    with wk.Tape(loss):
        forward()
    np.testing.assert_allclose(x.grad.to_numpy(), 2 * np.arange(4))
    wk.clear_all_gradients()
    assert not x.grad.to_numpy().any()


@pytest.mark.parametrize("name, replacement", [("get_runtime", "place"), ("set_default_fp", "default_fp")])
def test_taichi_internals_name_the_replacement(name, replacement):
    with pytest.raises(AttributeError, match=replacement):
        getattr(wk, name)


def test_cfg_is_the_running_programs_configuration(arch):
    # Taichi's and Quadrants' `ti.cfg.arch` (Quadrants' tests branch on it); before wk.init it names wk.init
    wk.init(arch=arch, debug=True)
    assert wk.cfg.arch == arch and wk.cfg.debug
    wk.reset()
    with pytest.raises(AttributeError, match=r"exists once wk.init\(...\) has run"):
        wk.cfg


def test_ext_arr_and_any_arr_are_ndarray_parameters(arch):
    # Taichi before 1.0 (its test_numpy): numpy arrays passed as ti.ext_arr() / ti.any_arr() parameters
    @wk.kernel
    def square(arr: wk.ext_arr(), other: wk.any_arr()):
        for i in range(4):
            arr[i] = arr[i] ** 2
            other[i, 1] += i

    a = np.array([0, 2, 4, 6], np.float32)
    b = np.zeros((4, 2), np.int32)
    square(a, b)
    assert a.tolist() == [0, 4, 16, 36] and b[:, 1].tolist() == [0, 1, 2, 3]
    with pytest.raises(wk.WkError, match="element type"):
        wk.any_arr(element_dim=1)


def test_indices_and_block_dim(arch):
    """Taichi 0.7's `ti.indices(n)` (now `ti.axes`) and the in-kernel `ti.block_dim(n)` hint."""
    assert wk.indices(0, 1) == wk.ij and wk.indices(2) == wk.k
    x = wk.field(wk.i32, shape=8)

    @wk.kernel
    def k():
        wk.block_dim(64)
        for i in x:
            x[i] = i

    k()
    np.testing.assert_array_equal(x.to_numpy(), np.arange(8))


def test_augmented_assignment_to_a_zero_d_field_by_name(arch):
    """Older Taichi's `n += 1` on a global 0-d field in a kernel (GAMES201's mass-spring programs): `n[None] += 1`,
    atomic; an undefined name stays an error."""
    global _count, _total          # module globals, as in the programs (a closure's name cannot be assigned)
    _count = wk.var(wk.i32, shape=())
    _total = wk.var(wk.f32, shape=())

    @wk.kernel
    def add(v: wk.f32):
        for i in range(10):
            _count += 1
            _total += v

    @wk.kernel
    def undefined():
        missing += 1  # noqa: F821

    add(0.5)
    add(0.25)
    assert _count[None] == 20 and _total[None] == 7.5
    with pytest.raises(wk.CompileError, match="name 'missing' is not defined"):
        undefined()


def test_calling_a_vector_or_matrix_reads_an_element(arch):
    # older Taichi's v(0) / m(i, j), still in difftaichi-era programs (dist(0) + dist(1)), gradients included
    x = wk.Vector.field(2, wk.f32, shape=(), needs_grad=True)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def compute():
        d = (x[None] - wk.Vector([1.0, 2.0])) ** 2
        m = wk.Matrix([[1.0, 2.0], [3.0, 4.0]])
        loss[None] = 0.5 * (d(0) + d(1)) + m(1, 0)

    x[None] = [4.0, 6.0]
    with wk.ad.Tape(loss=loss):
        compute()
    assert loss[None] == pytest.approx(0.5 * (9.0 + 16.0) + 3.0)
    np.testing.assert_allclose(x.grad[None], [3.0, 4.0])


def test_require_version_accepts_the_taichi_api_followed_and_refuses_later_ones():
    wk.require_version(0, 7, 30)          # an old program's guard passes
    wk.require_version(1, 7)
    wk.require_version("1.7.4")
    with pytest.raises(wk.WkError, match=r"requires Taichi 1\.8\.0; wgkern follows the API of Taichi 1\.7\.4"):
        wk.require_version(1, 8, 0)
    with pytest.raises(wk.WkError, match=r"requires Taichi 2\.0\.0"):
        wk.require_version("2")
    with pytest.raises(wk.WkError, match="integer version numbers"):
        wk.require_version(1, 7.5, 0)


def test_old_top_level_tool_names_are_the_tools_ones(tmp_path):
    assert wk.PLYWriter is wk.tools.PLYWriter and wk.VideoManager is wk.tools.VideoManager
    assert (wk.imread, wk.imresize, wk.imshow) == (wk.tools.imread, wk.tools.imresize, wk.tools.imshow)
    writer = wk.PLYWriter(num_vertices=3, num_faces=1, face_type="tri")     # Taichi 0.8's ti.PLYWriter
    writer.add_vertex_pos(np.zeros(3), np.arange(3.0), np.ones(3))
    writer.add_faces(np.array([0, 1, 2]))
    writer.export_frame_ascii(7, str(tmp_path / "mesh.ply"))
    lines = (tmp_path / "mesh_000007.ply").read_text().splitlines()
    assert "element vertex 3" in lines and lines[-1].split() == ["3", "0", "1", "2"]
    with pytest.raises(AttributeError, match="has no attribute 'PLYWriterX'"):
        wk.PLYWriterX



def test_global_statement_and_atomics_on_a_zero_d_field_by_name(arch):
    """Taichi 0.x's `global L` and `ti.atomic_add(L, v)` on a 0-d field (meaning `L[None]`): values, the old
    value an atomic returns, and gradients through a Tape."""
    global _loss, _peak, _xs
    _xs = wk.field(wk.f32, shape=6, needs_grad=True)
    _loss = wk.field(wk.f32, shape=(), needs_grad=True)
    _peak = wk.field(wk.f32, shape=())

    @wk.kernel
    def reduce():
        global _loss, _peak
        for i in range(6):
            wk.atomic_add(_loss, 0.5 * _xs[i] ** 2)

    @wk.kernel
    def running():
        global _peak
        for i in range(6):
            wk.atomic_max(_peak, _xs[i])

    values = np.linspace(-1, 2, 6, dtype=np.float32)
    _xs.from_numpy(values)
    with wk.ad.Tape(loss=_loss):
        reduce()
    np.testing.assert_allclose(_loss[None], 0.5 * (values ** 2).sum(), rtol=1e-6)
    np.testing.assert_allclose(_xs.grad.to_numpy(), values, rtol=1e-6)
    _peak[None] = -10.0
    running()
    assert _peak[None] == 2.0


def test_global_statement_naming_a_non_field_is_refused():
    wk.init(arch=wk.cpu)
    global _plain
    _plain = 3

    @wk.kernel
    def rebinds():
        global _plain
        _plain = 4

    with pytest.raises(wk.CompileError, match="'global _plain' inside a kernel: only fields may be named there"):
        rebinds()


def test_to_numpy_as_vector_is_the_components_last_layout(arch):
    v = wk.Vector.field(3, wk.f32, shape=(4, 2))
    v.from_numpy(np.arange(24, dtype=np.float32).reshape(4, 2, 3))
    np.testing.assert_array_equal(v.to_numpy(as_vector=True), v.to_numpy())
    assert v.to_numpy(as_vector=True).shape == (4, 2, 3)
    with pytest.raises(wk.WkError, match=r"to_numpy\(as_vector=False\) is not available"):
        v.to_numpy(as_vector=False)


def test_atomic_methods_on_global_elements(arch):
    # Taichi 0.x's `x[i].atomic_add(v)` (a particle grid's slot counter, as taichi_sph writes it): the method
    # updates the element atomically and returns its old value, on fields, vector fields and ndarrays
    counts = wk.field(wk.i32, shape=(2, 2))
    slots = wk.field(wk.i32, shape=(2, 2, 8))
    total = wk.Vector.field(2, wk.f32, shape=())

    @wk.kernel
    def bin_particles(arr: wk.types.ndarray()):
        for p in range(16):
            cell = wk.Vector([p % 2, p // 8])
            slot = counts[cell].atomic_add(1)
            slots[cell, slot] = p
            total[None].atomic_add(wk.Vector([1.0, 0.5]))
            arr[p % 4].atomic_max(p)
            counts[0, 0].atomic_or(0)

    arr = np.zeros(4, np.int32)
    bin_particles(arr)
    assert counts.to_numpy().tolist() == [[4, 4], [4, 4]]
    for i in range(2):
        for j in range(2):
            assert sorted(slots.to_numpy()[i, j, :4].tolist()) == [p for p in range(16) if p % 2 == i and p // 8 == j]
    assert total.to_numpy().tolist() == [16.0, 8.0]
    assert arr.tolist() == [12, 13, 14, 15]

    @wk.kernel
    def two_values():
        counts[0, 0].atomic_add(1, 2)

    with pytest.raises(wk.CompileError, match=r"atomic_add\(value\) on an element of 'counts' takes one value"):
        two_values()
