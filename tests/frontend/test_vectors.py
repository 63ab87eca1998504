"""Scalarised vectors and matrices: construction, arithmetic, methods, vector fields and locals."""
from __future__ import annotations

import numpy as np
import pytest

from tests.frontend.helpers import FakeField, build, of_type, run, wk
from wgkern.ir import nodes as ir
from wgkern.ir.ops import AtomicOpKind, UnaryOpKind
from wgkern.lang import types as T

pos = FakeField(wk.math.vec3, 8, "pos")
mats = FakeField(wk.math.mat2, 4, "mats")
out = FakeField(wk.f32, 16, "out")


def test_vector_field_slot_has_trailing_element_axes():
    @wk.kernel
    def k():
        pos[1] = wk.math.vec3(1, 2, 3)

    kir = build(k)
    (slot,) = kir.containers
    assert slot.ndim == 2 and slot.shape == (8, 3) and slot.dtype == T.f32
    stores = of_type(kir, ir.GlobalStore)
    assert len(stores) == 3
    assert [s.ptr.indices[1].value for s in stores] == [0, 1, 2]
    assert run(kir)["pos"][1].tolist() == [1.0, 2.0, 3.0]


def test_vector_element_access_forms():
    @wk.kernel
    def k():
        pos[0] = wk.math.vec3(1, 2, 3)
        out[0] = pos[0][1]
        out[1] = pos[0].z
        v = pos[0]
        out[2] = v[0] + v.y
        pos[1][2] = 5.0
        pos[1].x = 4.0

    result = run(build(k))
    assert result["out"][:3].tolist() == [2.0, 3.0, 3.0]
    assert result["pos"][1].tolist() == [4.0, 0.0, 5.0]


def test_augmented_assign_on_vector_field_is_atomic_per_component():
    @wk.kernel
    def k():
        pos[2] += wk.math.vec3(1, 2, 3)
        pos[3] += 1.0

    kir = build(k)
    atomics = of_type(kir, ir.AtomicOp)
    assert len(atomics) == 6 and all(a.op is AtomicOpKind.ADD for a in atomics)
    result = run(kir)["pos"]
    assert result[2].tolist() == [1.0, 2.0, 3.0] and result[3].tolist() == [1.0, 1.0, 1.0]


def test_arithmetic_broadcasts_scalars():
    @wk.kernel
    def k(s: wk.f32):
        v = wk.math.vec3(1, 2, 3) * s + 1
        w = 2 - v
        out[0] = w.x
        out[1] = (-v).y
        out[2] = (v / 2).z

    result = run(build(k, 0), scalars=[2.0])["out"]
    assert result[:3].tolist() == [-1.0, -5.0, 3.5]


def test_methods_dot_norm_normalized_cross():
    @wk.kernel
    def k():
        a = wk.math.vec3(1.0, 0.0, 0.0)
        b = wk.math.vec3(0.0, 2.0, 0.0)
        out[0] = a.dot(b)
        out[1] = b.norm()
        out[2] = b.norm_sqr()
        out[3] = b.normalized().y
        c = a.cross(b)
        out[4] = c.z
        out[5] = wk.math.dot(b, b)
        out[6] = (a + b).sum()
        out[7] = b.max()

    result = run(build(k))["out"]
    assert result[:8].tolist() == [0.0, 2.0, 4.0, 1.0, 2.0, 4.0, 3.0, 2.0]


def test_methods_called_on_the_class_take_the_receiver_first():
    """Taichi programs call methods through the class (difftaichi's billiards: `ti.Vector.normalized(dist)`)."""
    @wk.kernel
    def k():
        b = wk.math.vec3(0.0, 2.0, 0.0)
        out[0] = wk.Vector.normalized(b).y
        out[1] = wk.Vector.norm(b)
        out[2] = wk.Vector.dot(b, b)
        m = wk.Matrix([[1.0, 2.0], [3.0, 4.0]])
        out[3] = wk.Matrix.transpose(m)[0, 1]

    result = run(build(k))["out"]
    assert result[:4].tolist() == [1.0, 2.0, 4.0, 3.0]

    @wk.kernel
    def bad():
        out[0] = wk.Vector.norm(1.0)

    with pytest.raises(wk.CompileError, match=r"wk.Vector.norm\(v, ...\).*takes a vector"):
        build(bad)


def test_normalized_eps_and_norm_inv_as_taichi():
    """v.normalized(eps) = v / (norm(v) + eps) (eps on the norm, not its square); v.norm_inv() = 1 / norm."""
    @wk.kernel
    def k():
        v = wk.math.vec2(3.0, 4.0)
        out[0] = v.normalized(1.0).x
        out[1] = v.norm_inv()
        out[2] = v.norm_inv(11.0)
        offset = wk.Vector.unit(2, 1)          # integers, as Taichi's: usable as an index offset
        out[3] = wk.cast(offset.y * 7, wk.f32)

    result = run(build(k))["out"]
    np.testing.assert_allclose(result[:4], [0.5, 0.2, 1 / 6, 7.0], rtol=1e-6)


def test_matrix_ops():
    @wk.kernel
    def k():
        m = wk.math.mat2([[1.0, 2.0], [3.0, 4.0]])
        v = wk.math.vec2(1.0, 1.0)
        mv = m @ v
        out[0] = mv[0]
        out[1] = mv[1]
        mt = m.transpose()
        out[2] = mt[0, 1]
        mm = m @ m
        out[3] = mm[1, 1]
        out[4] = m.determinant()
        out[5] = m[1][0]
        mats[0] = m
        mats[1][0, 1] = 9.0

    result = run(build(k))
    assert result["out"][:6].tolist() == [3.0, 7.0, 3.0, 22.0, -2.0, 3.0]
    assert result["mats"][0].tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert result["mats"][1][0, 1] == 9.0


def test_vector_local_component_assignment_and_swizzle():
    @wk.kernel
    def k():
        v = wk.math.vec4(0.0)
        v.x = 1.0
        v[1] = 2.0
        v.zw = wk.math.vec2(3.0, 4.0)
        v += 1.0
        out[0] = v.w
        out[1] = v.xy.sum()

    result = run(build(k))["out"]
    assert result[:2].tolist() == [5.0, 5.0]


def test_runtime_index_into_vector_uses_select_chain():
    @wk.kernel
    def k():
        v = wk.math.vec3(10.0, 20.0, 30.0)
        for i in range(3):
            out[i] = v[i]
            v[i] = 0.0
        out[3] = v.sum()

    kir = build(k)
    assert of_type(kir, ir.TernarySelect)
    result = run(kir)["out"]
    assert result[:4].tolist() == [10.0, 20.0, 30.0, 0.0]


def test_static_loop_indexes_vector():
    @wk.kernel
    def k():
        v = pos[0]
        for d in wk.static(range(3)):
            v[d] = d * 2.0
        pos[0] = v

    kir = build(k)
    assert not of_type(kir, ir.TernarySelect)
    assert run(kir)["pos"][0].tolist() == [0.0, 2.0, 4.0]


def test_vector_math_function_is_elementwise():
    @wk.kernel
    def k():
        v = wk.sqrt(wk.math.vec2(4.0, 9.0))
        out[0] = v.x + v.y

    kir = build(k)
    assert len([u for u in of_type(kir, ir.UnaryOp) if u.op is UnaryOpKind.SQRT]) == 2
    assert run(kir)["out"][0] == 5.0


def test_vector_type_constructor_and_cast():
    ivec = wk.types.vector(2, wk.i32)

    @wk.kernel
    def k():
        v = ivec(1.7, 2)
        w = wk.cast(v, wk.f32) * 0.5
        out[0] = w.x + w.y

    kir = build(k)
    assert run(kir)["out"][0] == 1.5


def test_vector_with_dt_casts_each_element_on_its_own():
    small = FakeField(wk.i8, 1, "small")
    big = FakeField(wk.u32, 1, "big")
    wide = FakeField(wk.i64, 2, "wide")

    @wk.kernel
    def k():
        v = wk.Vector([small[0], big[0]], dt=wk.i64)      # promoted together first, -128 became 2**32 - 128
        wide[0] = v[0]
        wide[1] = v[1]

    got = run(build(k), {"small": np.array([-128], np.int8), "big": np.array([7], np.uint32)})
    assert got["wide"].tolist() == [-128, 7]


def test_vector_ndarray_argument():
    @wk.kernel
    def k(a: wk.types.ndarray()):
        for i in a:
            a[i] = a[i] * 2.0

    kir = build(k, (T.f32, 1, (3,)))
    (slot,) = kir.containers
    assert slot.ndim == 2
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert (run(kir, {"a": arr})["a"] == np.arange(6).reshape(2, 3) * 2).all()


def test_vector_comparison_and_select():
    @wk.kernel
    def k():
        v = wk.math.vec3(1.0, 5.0, 3.0)
        w = wk.select(v > 2.0, v, 0.0)
        out[0] = w.sum()

    assert run(build(k))["out"][0] == 8.0


def test_shape_mismatch_is_compile_error():
    @wk.kernel
    def k():
        v = wk.math.vec3(1.0) + wk.math.vec2(1.0)

    with pytest.raises(wk.CompileError, match="shapes 3 and 2 do not match"):
        build(k)


def test_captured_numpy_vector_becomes_constants():
    direction = np.array([0.0, 1.0, 0.0], dtype=np.float32)

    @wk.kernel
    def k():
        pos[0] = direction * 3.0

    assert run(build(k))["pos"][0].tolist() == [0.0, 3.0, 0.0]


def test_vector_atomic_function_returns_old_vector():
    @wk.kernel
    def k():
        pos[0] = wk.math.vec3(1.0)
        old = wk.atomic_add(pos[0], wk.math.vec3(1.0, 2.0, 3.0))
        out[0] = old.sum()

    result = run(build(k))
    assert result["out"][0] == 3.0 and result["pos"][0].tolist() == [2.0, 3.0, 4.0]


def test_matrix_vector_shape_error():
    @wk.kernel
    def k():
        m = wk.math.mat2(1.0)
        v = wk.math.vec3(1.0)
        out[0] = (m @ v).x

    with pytest.raises(wk.CompileError, match="cannot multiply a 2x2 matrix by a size-3 vector"):
        build(k)


def test_any_all():
    @wk.kernel
    def k():
        v = wk.math.vec3(1.0, 0.0, 2.0)
        out[0] = (v > 0.5).any()
        out[1] = (v > 0.5).all()
        if (v >= 0.0).all():
            out[2] = 1.0

    assert run(build(k))["out"][:3].tolist() == [1.0, 0.0, 1.0]


def test_kernel_scope_vector_accumulator_is_atomic():
    @wk.kernel
    def k() -> wk.math.vec3:
        total = wk.math.vec3(0.0)
        for i in pos:
            total += pos[i]
        return total

    kir = build(k)
    (slot,) = [c for c in kir.containers if c.name == "total"]
    assert slot.kind == "temp" and slot.shape == (3,)
    assert len(of_type(kir, ir.AtomicOp)) == 3
    values = np.arange(24, dtype=np.float32).reshape(8, 3)
    assert run(kir, {"pos": values})["__return__"].tolist() == values.sum(axis=0).tolist()


def test_kernel_scope_vector_accumulator_components():
    @wk.kernel
    def k():
        total = wk.math.vec3(0.0)
        for i in pos:
            total[0] += 1.0
            total.y += 2.0
            wk.atomic_max(total[2], pos[i].z)
        pos[0] = total

    kir = build(k)
    assert len(of_type(kir, ir.AtomicOp)) == 3
    values = np.arange(24, dtype=np.float32).reshape(8, 3)
    assert run(kir, {"pos": values})["pos"][0].tolist() == [8.0, 16.0, 23.0]


def test_atomic_on_local_vector_element_is_plain_update():
    @wk.kernel
    def k():
        for i in range(1):
            v = wk.math.vec2(1.0, 5.0)
            old = wk.atomic_add(v[1], 2.0)
            wk.atomic_min(v.x, -1.0)
            out[0] = old
            out[1] = v.x + v.y

    kir = build(k)
    assert not of_type(kir, ir.AtomicOp)
    assert run(kir)["out"][:2].tolist() == [5.0, 6.0]


def test_inverse_and_constant_constructors():
    @wk.kernel
    def k():
        m = wk.math.mat2([[4.0, 7.0], [2.0, 6.0]])
        inv = m.inverse()
        prod = m @ inv
        mats[0] = prod
        m3 = wk.math.mat3([[2.0, 0.0, 1.0], [1.0, 3.0, 0.0], [0.0, 1.0, 4.0]])
        i3 = m3 @ m3.inverse() - wk.Matrix.identity(wk.f32, 3)
        out[0] = wk.abs(i3).max()
        z = wk.Vector.zero(wk.f32, 3) + wk.Vector.unit(3, 1)
        out[1] = z.y + z.x

    result = run(build(k))
    assert np.allclose(result["mats"][0], np.eye(2), atol=1e-6)
    assert result["out"][0] < 1e-6 and result["out"][1] == 1.0


def test_static_range_over_vector_size():
    @wk.kernel
    def k():
        v = wk.math.vec4(1.0, 2.0, 3.0, 4.0)
        s = 0.0
        for c in wk.static(range(v.n)):
            s += v[c]
        out[0] = s

    kir = build(k)
    assert not of_type(kir, ir.RangeFor)
    assert run(kir)["out"][0] == 10.0


def test_list_literals_are_vectors_and_matrices_where_a_value_is_needed():
    """Taichi programs write `x[i] = [a, b]` and `[[a, b], [c, d]] @ v`; a list kept as a name stays a Python
    list for static indexing (`w = [u, v]; w[0]`)."""
    @wk.kernel
    def k():
        pos[0] = [1, 2.5, 3]
        mats[0] = [[1, 2], [3, 4]]
        w = [wk.math.vec3(1, 1, 1), wk.math.vec3(2, 2, 2)]
        pos[1] = w[1] + [0.5, 0, 0]
        m = wk.math.mat2(1, 0, 0, 2)
        r = m @ wk.math.vec2(3, 4)
        out[0] = r.y
        out[1] = ([[0, 1], [1, 0]] @ wk.math.vec2(5, 6))[0]

    got = run(build(k))
    assert got["pos"][0].tolist() == [1.0, 2.5, 3.0] and got["pos"][1].tolist() == [2.5, 2.0, 2.0]
    assert got["mats"][0].tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert got["out"][:2].tolist() == [8.0, 6.0]


def test_a_ragged_list_literal_is_an_error_naming_the_line():
    @wk.kernel
    def k():
        mats[0] = [[1, 2], [3]]

    with pytest.raises(wk.CompileError, match="same length") as info:
        build(k)
    assert "mats[0] = [[1, 2], [3]]" in str(info.value)


def test_matrix_of_a_flat_list_is_a_vector_and_cast_converts_elements():
    """Taichi idioms from mpm99: `ti.Matrix([0, 0])` is a vector; `(x * 3.7).cast(int)` truncates each element."""
    @wk.kernel
    def k():
        v = wk.Matrix([1.5, -2.5, 3.0])
        pos[0] = v
        base = (v * 2.0).cast(int)
        out[0] = base[0] + base[1] * 10 + base[2] * 100
        out[1] = base.cast(wk.f32).sum() / 2

    got = run(build(k))
    assert got["pos"][0].tolist() == [1.5, -2.5, 3.0]
    assert got["out"][:2].tolist() == [3 - 50 + 600, (3 - 5 + 6) / 2]


def test_cast_method_needs_a_dtype():
    @wk.kernel
    def k():
        pos[0] = pos[1].cast(3)

    with pytest.raises(wk.CompileError, match="cast\\(\\) needs a dtype"):
        build(k)


def test_print_builds_one_statement_with_text_pieces(capsys):
    @wk.kernel
    def k():
        v = wk.math.vec3(1, 2, 3)
        print("v", v, 2.5, sep="|")

    kir = build(k)
    (stmt,) = of_type(kir, ir.Print)
    assert stmt.pieces == ("v|[", ", ", ", ", "]|2.500000\n") and len(stmt.values) == 3
    run(kir)
    assert capsys.readouterr().out == "v|[1.000000, 2.000000, 3.000000]|2.500000\n"


def test_fill_sets_every_component_of_a_local_vector_or_matrix(arch):
    # Taichi's in-place m.fill(v) on a local: the scalar converts to the variable's dtype.
    @wk.kernel
    def filled(k: wk.i32) -> wk.types.matrix(2, 3, wk.f32):
        m = wk.Matrix([[0.0 for _ in range(3)] for _ in range(2)])
        m.fill(1.5)
        if k > 0:
            m.fill(k)
        return m

    @wk.kernel
    def filled_ints() -> wk.types.vector(3, wk.i32):
        v = wk.Vector([1, 2, 3])
        v.fill(2.7)
        return v

    assert np.array_equal(filled(0), np.full((2, 3), 1.5, np.float32))
    assert np.array_equal(filled(3), np.full((2, 3), 3.0, np.float32))
    assert filled_ints().tolist() == [2, 2, 2]
    with pytest.raises(wk.CompileError, match="fill"):
        @wk.kernel
        def two_values():
            v = wk.Vector([1, 2])
            v.fill(1, 2)

        two_values()


def test_four_by_four_inverse_and_determinant_and_matrix_one(arch):
    # Taichi inverts and takes determinants of matrices up to 4x4 in kernels (Quadrants' test_mat_inverse_size).
    m = wk.Matrix.field(4, 4, wk.f32, shape=())
    det = wk.field(wk.f32, shape=())
    ones = wk.Matrix.field(2, 3, wk.f32, shape=())
    values = np.array([[i * j + i * 3 + j + 1 + (i == j) * 4 for j in range(4)] for i in range(4)], np.float32)
    m.from_numpy(values)

    @wk.kernel
    def invert():
        det[None] = m[None].determinant()
        m[None] = m[None].inverse()
        ones[None] = wk.Matrix.one(wk.f32, 2, 3)

    invert()
    assert np.allclose(m.to_numpy(), np.linalg.inv(values), atol=1e-5)
    assert det[None] == pytest.approx(np.linalg.det(values), rel=1e-5)
    assert np.array_equal(ones.to_numpy(), np.ones((2, 3), np.float32))


def test_fill_sets_every_component_of_a_vector_element_in_memory(arch):
    # `x[i].b.fill(v)` on a struct field's vector member (Quadrants' test_custom_struct test_struct_fill), and
    # `v[i].fill(v)` on a vector field's element: the scalar converts to the element dtype.
    s = wk.Struct.field({"a": wk.f32, "b": wk.types.vector(3, wk.i32)}, shape=4)
    v = wk.Vector.field(2, wk.f32, shape=4)

    @wk.kernel
    def fill_elements():
        for i in s:
            s[i].a = i + 0.5
            s[i].b.fill(i + 0.5)
            v[i].fill(i * 2.0)

    fill_elements()
    assert s.b.to_numpy().tolist() == [[i] * 3 for i in range(4)]
    assert v.to_numpy().tolist() == [[i * 2.0] * 2 for i in range(4)]


def test_not_of_a_vector_is_element_wise(arch):
    # Taichi: `not m` of a matrix is the element-wise logical not (Quadrants' test_element_wise test_unary).
    y = wk.Matrix.field(3, 2, wk.i32, shape=())
    x = wk.Matrix.field(3, 2, wk.i32, shape=())
    y.from_numpy(np.array([[3, 2], [9, 0], [7, 0]], np.int32))

    @wk.kernel
    def negate():
        x[None] = not y[None]

    negate()
    assert x.to_numpy().tolist() == [[0, 0], [0, 1], [0, 1]]


def test_slices_beside_a_runtime_index_read_and_write_locals_and_field_elements(arch):
    # Taichi's test_matrix_slice: m[:, j] and m[j, 1:] with j a loop variable, on a local matrix and on a field
    # element, read and assigned (values checked against Taichi 1.7)
    r = wk.Vector.field(3, wk.f32, shape=3)
    q = wk.Matrix.field(3, 3, wk.f32, shape=3)
    f = wk.Matrix.field(2, 3, wk.f32, shape=())

    @wk.kernel
    def k():
        m = wk.Matrix([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
        for j in range(3):
            n = wk.Matrix.zero(wk.f32, 3, 3)
            r[j] = m[:, j] + m[j, :] * 10
            for c in range(3):
                n[:, c] = wk.Vector([j, c, 1])
                n[c, 1:] += 100.0
            q[j] = n
            q[j][:, j] = q[j][j, :] * 2
        f[None][:, 1] = [5, 6]
        f[None][1, :] += wk.Vector([1, 1, 1])

    k()
    m = np.arange(1, 10, dtype=np.float32).reshape(3, 3)
    np.testing.assert_array_equal(r.to_numpy(), [m[:, j] + m[j, :] * 10 for j in range(3)])
    for j in range(3):
        n = np.zeros((3, 3), np.float32)
        for c in range(3):
            n[:, c] = [j, c, 1]
            n[c, 1:] += 100.0
        n[:, j] = n[j, :] * 2
        np.testing.assert_array_equal(q.to_numpy()[j], n)
    np.testing.assert_array_equal(f.to_numpy(), [[0, 5, 0], [1, 7, 1]])


def test_augmented_assignment_to_swizzles_and_slices_of_field_elements_is_atomic(arch):
    # `v[i].xy += d` and `m[None][:, j] += d` from many threads: each component is updated atomically, as an
    # element's `+=` is (they were read-modify-writes that lost updates)
    v = wk.Vector.field(3, wk.f32, shape=2)
    m = wk.Matrix.field(2, 2, wk.i32, shape=())

    @wk.kernel
    def k():
        for i in range(1000):
            v[i % 2].xy += wk.Vector([1.0, 2.0])
            v[i % 2].z += 1
            m[None][:, i % 2] += 1
            m[None][1, :] += wk.Vector([i % 2, 1])

    k()
    assert v.to_numpy().tolist() == [[500.0, 1000.0, 500.0]] * 2
    assert m.to_numpy().tolist() == [[500, 500], [1000, 1500]]


def test_debug_checks_run_time_indices_into_local_vectors_and_matrices(arch):
    """wk.init(debug=True): a run-time index outside a local vector or matrix fails the launch naming the
    axis and the line, on reads and writes (Quadrants' test_matrix_oob); the first failed check is the one
    reported, also where an assert on the value read follows. Without debug nothing is checked."""
    wk.init(arch=arch, debug=True)

    @wk.kernel
    def write_vector(i: wk.i32):
        x = wk.Vector([1, 0])
        x[i] = 42
        assert x[i] == 42

    @wk.kernel
    def read_matrix(i: wk.i32, j: wk.i32) -> wk.i32:
        y = wk.Matrix([[1, 1, 1], [2, 2, 2], [3, 3, 3]])
        return y[i, j]

    write_vector(1)
    assert read_matrix(2, 1) == 3
    for i in (2, -1):
        with pytest.raises(wk.KernelAssertionError,
                           match=r"index out of range for a vector of 2 elements \(Out of bound access\): a "
                                 r"run-time index must lie in "
                                 r"0\.\.1") as caught:
            write_vector(i)
            wk.sync()
        assert "x[i] = 42" in str(caught.value)
    for (i, j), axis in [((2, 3), "column"), ((3, 0), "row"), ((-1, 0), "row")]:
        with pytest.raises(wk.KernelAssertionError, match=rf"for a 3x3 matrix \({axis}\)"):
            read_matrix(i, j)
            wk.sync()
    wk.init(arch=arch)

    @wk.kernel
    def unchecked(i: wk.i32) -> wk.i32:
        return wk.Vector([5, 6, 7])[i]

    assert unchecked(1) == 6


def test_too_many_indices_name_the_vector_or_matrix():
    out = wk.field(wk.i32, shape=())

    @wk.kernel
    def two_on_a_vector():
        v = wk.Vector([1, 2, 3, 4])
        out[None] = v[0, 0]

    @wk.kernel
    def three_on_a_matrix():
        m = wk.Matrix([[1, 2], [3, 4]])
        out[None] = m[0, 0, 1]

    with pytest.raises(wk.CompileError, match="a vector of 4 elements takes 1 index, got 2"):
        build(two_on_a_vector)
    with pytest.raises(wk.CompileError, match=r"a 2x2 matrix takes 1 or 2 indices \(a row, or a row and a column\), "
                                              r"got 3"):
        build(three_on_a_matrix)


def test_stpq_swizzles_and_components_a_vector_lacks_in_kernels(arch):
    out = wk.Vector.field(3, wk.f32, shape=2)

    @wk.kernel
    def k():
        v = wk.math.vec3(0, 0, 0)
        v.stp += 1
        v.p = 3
        v.ts = wk.math.vec2(2, 5)
        out[0] = v.tps
        out[1].s = v.p
        out[1].tp = v.ss

    k()
    assert out.to_numpy().tolist() == [[2.0, 3.0, 5.0], [3.0, 5.0, 5.0]]

    @wk.kernel
    def read_z() -> wk.f32:
        b = wk.math.vec2(1, 2)
        return b.z

    @wk.kernel
    def write_xyz():
        b = wk.math.vec2(1, 2)
        b.xyz = [1, 2, 3]

    @wk.kernel
    def field_q() -> wk.f32:
        return out[0].q

    with pytest.raises(wk.CompileError, match=r"vec2 only has attributes=\('x', 'y'\), got=\('z',\)"):
        read_z()
    with pytest.raises(wk.CompileError, match=r"vec2 only has attributes=\('x', 'y'\), got=\('x', 'y', 'z'\)"):
        write_xyz()
    with pytest.raises(wk.CompileError, match=r"vec3 only has attributes=\('p', 's', 't'\), got=\('q',\)"):
        field_q()
