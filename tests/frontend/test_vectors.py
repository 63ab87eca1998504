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


