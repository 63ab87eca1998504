"""Compile-time evaluation: wk.static, template arguments, captured globals/closures, module attributes."""
from __future__ import annotations

import math as pymath

import numpy as np
import pytest

import wgkern.lang.math as wmath
from tests.frontend.helpers import FakeField, build, of_type, run, wk
from wgkern.ir import nodes as ir
from wgkern.ir.ops import UnaryOpKind
from wgkern.lang import types as T

out = FakeField(wk.f32, 16, "out")
iout = FakeField(wk.i32, 16, "iout")
GLOBAL_SCALE = 3


def test_template_number_folds():
    @wk.kernel
    def k(n: wk.template()):
        for i in range(n):
            iout[i] = n * 2

    kir = build(k, 4)
    (loop,) = of_type(kir, ir.RangeFor)
    assert isinstance(loop.end, ir.Const) and loop.end.value == 4
    assert run(kir)["iout"][:5].tolist() == [8, 8, 8, 8, 0]


def test_template_field_argument():
    other = FakeField(wk.f32, 4, "other")

    @wk.kernel
    def k(f: wk.template()):
        for i in f:
            f[i] = 1.0

    kir = build(k, other)
    assert [c.name for c in kir.containers] == ["other"] and kir.containers[0].host is other


def test_template_tuple_static_loop():
    a = FakeField(wk.f32, 2, "a")
    b = FakeField(wk.f32, 2, "b")

    @wk.kernel
    def k(fs: wk.template()):
        for j, f in wk.static(enumerate(fs)):
            f[0] = j

    kir = build(k, (a, b))
    result = run(kir)
    assert result["a"][0] == 0.0 and result["b"][0] == 1.0


def test_static_if_picks_one_branch():
    @wk.kernel
    def k(mode: wk.template()):
        if wk.static(mode == "sin"):
            out[0] = wk.sin(out[1])
        else:
            out[0] = wk.cos(out[1])

    (op,) = of_type(build(k, "sin"), ir.UnaryOp)
    assert op.op is UnaryOpKind.SIN
    (op,) = of_type(build(k, "cos"), ir.UnaryOp)
    assert op.op is UnaryOpKind.COS


def test_static_of_field_shape_and_globals():
    @wk.kernel
    def k():
        for i in wk.static(range(out.shape[0] // 8)):
            out[i] = GLOBAL_SCALE

    kir = build(k)
    assert len(of_type(kir, ir.GlobalStore)) == 2


def test_closure_variables_and_static_binding():
    scale = 2.5
    count = 3

    @wk.kernel
    def k():
        c = wk.static(count + 1)
        for i in range(c):
            out[i] = scale

    kir = build(k)
    (loop,) = of_type(kir, ir.RangeFor)
    assert loop.end.value == 4
    assert not [a for a in of_type(kir, ir.Alloca) if a.name == "c"]


def test_module_aliases_resolve():
    @wk.kernel
    def k(a: wk.f32):
        out[0] = wmath.sin(a) + wk.math.cos(a) + pymath.exp(a) + np.sqrt(a)

    ops = [u.op for u in of_type(build(k, 0), ir.UnaryOp)]
    assert ops == [UnaryOpKind.SIN, UnaryOpKind.COS, UnaryOpKind.EXP, UnaryOpKind.SQRT]


def test_numpy_scalar_type_cast_and_constants():
    @wk.kernel
    def k(a: wk.i32):
        out[0] = np.float32(a) * pymath.pi

    kir = build(k, 0)
    assert [c.dtype for c in of_type(kir, ir.Cast)] == [T.f32]


def test_static_number_binding_updated_at_compile_time():
    @wk.kernel
    def k():
        n = wk.static(1)
        n += 2
        iout[0] = n

    kir = build(k)
    assert not of_type(kir, ir.Alloca)
    assert run(kir)["iout"][0] == 3


def test_static_with_multiple_arguments():
    @wk.kernel
    def k():
        a, b = wk.static(1, 2)
        iout[a] = b

    assert run(build(k))["iout"][1] == 2


def test_captured_python_tuple_indexed_statically():
    table = (1.0, 2.0, 4.0)

    @wk.kernel
    def k():
        for i in wk.static(range(3)):
            out[i] = table[i]

    assert run(build(k))["out"][:3].tolist() == [1.0, 2.0, 4.0]


def test_runtime_index_into_python_tuple_is_error():
    table = (1.0, 2.0)

    @wk.kernel
    def k(i: wk.i32):
        out[0] = table[i]

    with pytest.raises(wk.CompileError, match="needs a compile-time index"):
        build(k, 0)


def test_len_and_builtin_folding():
    grid = FakeField(wk.f32, (6, 2), "grid")

    @wk.kernel
    def k():
        iout[0] = len(grid) + max(1, 2) + int(2.7) + abs(-1)

    kir = build(k)
    assert run(kir)["iout"][0] == 6 + 2 + 2 + 1
    assert not of_type(kir, ir.BinaryOp)


def test_string_annotations_resolve():
    # this module uses `from __future__ import annotations`, so every annotation here is a string
    @wk.func
    def half(v: wk.f32) -> wk.f32:
        return v / 2

    @wk.kernel
    def k(a: wk.i32) -> wk.f32:
        return half(a)

    assert run(build(k, 0), scalars=[3])["__return__"][0] == 1.5


def test_vector_annotated_argument_becomes_constants_of_its_dtype():
    from wgkern.frontend import build_kernel
    from wgkern.ir.verifier import verify

    @wk.kernel
    def k(v: wk.types.vector(2, wk.f64)):
        out[0] = v.x + v.y

    spec = ir.ArgSpec(name="v", kind="template", dtype=T.f64, element_shape=(2,))
    kir = build_kernel(k, [spec], {0: np.array([1.5, 2.0])})
    verify(kir)
    assert [c.dtype for c in of_type(kir, ir.Const)][:2] == [T.f64, T.f64]
    assert run(kir)["out"][0] == 3.5


def test_static_print_and_static_assert(capsys):
    @wk.kernel
    def k():
        wk.static_print("compiling with", 3 * 2)
        wk.static_assert(2 + 2 == 4, "arithmetic")
        out[0] = 1

    @wk.kernel
    def failing():
        wk.static_assert(out.shape[0] > 1000, "needs a big field")

    build(k)
    assert capsys.readouterr().out == "compiling with 6\n"

    @wk.kernel
    def runtime_values():
        a = out[0] * 2
        wk.static_print("a is", a, wk.Vector([a, a]))    # Taichi prints an expression placeholder
    build(runtime_values)
    assert capsys.readouterr().out == "a is <wk.Expr f32> <wk.Expr 2 f32>\n"
    with pytest.raises(wk.CompileError, match="needs a big field"):
        build(failing)


def test_taichi_dtype_and_arch_spellings():
    assert (wk.float32, wk.int32, wk.uint8, wk.uint1, wk.float64) == (wk.f32, wk.i32, wk.u8, wk.u1, wk.f64)
    assert wk.x64 is wk.cpu and wk.arm64 is wk.cpu


def test_a_compile_time_branch_that_returns_ends_the_function(arch):
    # Taichi's dispatch-on-element-shape idiom: after `if wk.static(...): return ...` nothing more is compiled,
    # so the static_assert below it does not fire for 2-vectors
    @wk.real_func
    def norm2(a: wk.types.ndarray(ndim=1), i: wk.i32) -> wk.f32:
        return a[i].norm()

    @wk.func
    def size_of(a: wk.template(), i):
        if wk.static(a.element_shape() == [2]):
            return norm2(a, i)
        wk.static_assert(a.element_shape() == [], "scalars or 2-vectors only")
        return wk.abs(a[i])

    @wk.kernel
    def measure(a: wk.types.ndarray(ndim=1)) -> wk.f32:
        return size_of(a, 1)

    vectors = wk.Vector.ndarray(2, wk.f32, shape=3)
    vectors[1] = [3.0, 4.0]
    scalars = wk.ndarray(wk.f32, shape=3)
    scalars[1] = -2.5
    assert measure(vectors) == 5.0 and measure(scalars) == 2.5
    with pytest.raises(wk.CompileError, match="scalars or 2-vectors only"):
        measure(wk.Vector.ndarray(3, wk.f32, shape=3))


def test_static_range_over_the_size_of_a_func_vector_argument(arch):
    # `wk.static(range(m.n))` where m is a func's vector/matrix parameter: its shape is known at compile time
    # (Quadrants' test_math_module check_epsilon_equal).
    @wk.func
    def count(m, r) -> int:
        assert m.n == r.n and m.m == r.m
        s = 0
        for i in wk.static(range(m.n)):
            for j in wk.static(range(m.m)):
                s += 1
        return s

    @wk.func
    def length(v) -> int:
        return wk.static(v.n)

    @wk.kernel
    def run() -> int:
        a = wk.math.mat4(1.0)
        return count(a, a) * 10 + length(wk.math.vec3(1.0, 2.0, 3.0))

    assert run() == 163


def test_static_isinstance_expr_tells_a_vector_variable_from_a_field(arch):
    # A sorting-network program sizes its input with `isinstance(data, ti.lang.expr.Expr) or
    # isinstance(data, ti.lang.Vector)` inside wk.static: `data.n` of a kernel vector, `data.shape[0]` of a
    # field. As in Taichi, a kernel-scope vector or matrix is an Expr; a field, a number and a host vector are
    # not, and `ti.lang.Vector` / `ti.lang.Matrix` are wk.Vector / wk.Matrix.
    def size(data):
        if isinstance(data, wk.lang.expr.Expr) or isinstance(data, wk.lang.Vector):
            return data.n
        return data.shape[0]

    values = wk.field(wk.f32, 5)

    @wk.func
    def count(data: wk.template()) -> int:
        return wk.static(size(data))

    @wk.kernel
    def run() -> int:
        v = wk.Vector([1.0, 2.0, 3.0])
        m = wk.math.mat2(1.0)
        kinds = wk.static(isinstance(v, wk.lang.expr.Expr) + 2 * isinstance(m, wk.lang.expr.Expr)
                          + 4 * isinstance(values, wk.lang.expr.Expr) + 8 * isinstance(v, wk.Matrix))
        return count(v) * 100 + count(values) * 10 + kinds

    assert run() == 353
    assert wk.lang.Vector is wk.Vector and wk.lang.Matrix is wk.Matrix
    assert not isinstance(wk.math.vec3(1.0), wk.lang.expr.Expr) and not isinstance(2.0, wk.lang.expr.Expr)
    with pytest.raises(TypeError, match="isinstance checks"):
        wk.lang.expr.Expr()
