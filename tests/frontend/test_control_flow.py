"""Loops (range, ndrange, struct-for, static), while, if, break/continue, kernel return values."""
from __future__ import annotations

import numpy as np
import pytest

from tests.frontend.helpers import FakeField, build, of_type, run, wk
from wgkern.ir import nodes as ir
from wgkern.ir.ops import BinaryOpKind
from wgkern.lang import types as T

x = FakeField(wk.f32, 16, "x")
grid = FakeField(wk.i32, (4, 5), "grid")
acc = FakeField(wk.i32, 64, "acc")
scalar = FakeField(wk.f32, (), "scalar")


def test_range_one_two_args():
    @wk.kernel
    def k(n: wk.i32):
        for i in range(n):
            x[i] = i
        for j in range(2, n):
            x[j] += 1.0

    kir = build(k, 0)
    loops = [s for s in kir.body.stmts if isinstance(s, ir.RangeFor)]
    assert len(loops) == 2
    assert isinstance(loops[0].begin, ir.Const) and loops[0].begin.value == 0
    assert isinstance(loops[0].end, ir.ArgLoad)
    assert loops[1].begin.value == 2


@pytest.mark.parametrize("begin, end, step", [(0, 10, 3), (10, 0, -3), (5, 5, 2), (1, 2, 5), (0, 7, 1),
                                              (-3, 4, 2), (3, -4, -2)])
def test_range_with_step_matches_python(begin, end, step):
    @wk.kernel
    def k(b: wk.i32, e: wk.i32):
        c = 0
        for i in range(b, e, wk.static(step)):
            acc[c] = i
            c += 1
        acc[63] = c

    out = run(build(k, 0, 0), scalars=[begin, end])
    expected = list(range(begin, end, step))
    assert out["acc"][63] == len(expected)
    assert list(out["acc"][:len(expected)]) == expected


def test_ndrange_is_one_flattened_loop():
    @wk.kernel
    def k(n: wk.i32):
        for i, j in wk.ndrange(n, (1, 4)):
            acc[i * 3 + j - 1] = i * 10 + j

    kir = build(k, 0)
    loops = of_type(kir, ir.RangeFor)
    assert len(loops) == 1
    ops = {s.op for s in of_type(loops[0].body, ir.BinaryOp)}
    assert BinaryOpKind.MOD in ops and BinaryOpKind.FLOORDIV in ops
    out = run(kir, scalars=[3])
    assert list(out["acc"][:9]) == [i * 10 + j for i in range(3) for j in range(1, 4)]


def test_grouped_loops_bind_an_index_vector():
    """`for I in wk.grouped(x)` (Taichi's ti.grouped) over a field or a wk.ndrange: I is an i32 vector."""
    @wk.kernel
    def k(n: wk.i32):
        for I in wk.grouped(grid):
            grid[I] = I[0] * 5 + I.y
        for I in wk.grouped(wk.ndrange((1, n), 2)):
            acc[I[0] * 2 + I[1]] = (I + 1).dot(wk.Vector([10, 1]))

    out = run(build(k, 0), scalars=[3])
    assert out["grid"].tolist() == [[i * 5 + j for j in range(grid.shape[1])] for i in range(grid.shape[0])]
    assert list(out["acc"][2:6]) == [21, 22, 31, 32]
    # in Python scope the indices are integer vectors, as Taichi's ti.Vector ones
    assert [tuple(I) for I in wk.grouped(wk.ndrange(2, 2))] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert [tuple(I) for I in wk.grouped(range(3))] == [(0,), (1,), (2,)]


def test_grouped_needs_a_container_or_ndrange():
    @wk.kernel
    def k():
        for I in wk.grouped(range(3)):
            acc[0] += 1

    with pytest.raises(wk.CompileError, match="wk.grouped\\(\\) loops over a field"):
        build(k)


def test_ndrange_negative_extent_runs_nothing():
    @wk.kernel
    def k(a: wk.i32, b: wk.i32):
        for i, j in wk.ndrange((a, 0), (b, 0)):
            acc[0] += 1

    out = run(build(k, 0, 0), scalars=[3, 3])
    assert out["acc"][0] == 0


def test_struct_for_over_field_uses_static_shape():
    @wk.kernel
    def k():
        for i, j in grid:
            grid[i, j] = i * 5 + j

    kir = build(k)
    (loop,) = of_type(kir, ir.RangeFor)
    assert isinstance(loop.end, ir.Const) and loop.end.value == 20
    out = run(kir)
    assert (out["grid"] == np.arange(20).reshape(4, 5)).all()


def test_struct_for_over_ndarray_uses_shape_of():
    @wk.kernel
    def k(a: wk.types.ndarray()):
        for i, j in a:
            a[i, j] = i + j

    kir = build(k, (T.f32, 2, ()))
    shapes = of_type(kir, ir.ShapeOf)
    assert sorted(s.axis for s in shapes) == [0, 1]
    (slot,) = kir.containers
    assert slot.kind == "ndarray" and slot.arg_index == 0 and slot.ndim == 2 and slot.shape is None
    out = run(kir, {"a": np.zeros((2, 3), np.float32)})
    assert (out["a"] == np.add.outer(np.arange(2), np.arange(3))).all()


def test_ndarray_shape_and_grad_slots():
    @wk.kernel
    def k(a: wk.types.ndarray()):
        for i in range(a.shape[0]):
            a.grad[i] = a[i] + len(a)

    kir = build(k, (T.f32, 1, ()))
    names = sorted((c.name, c.is_grad) for c in kir.containers)
    assert names == [("a", False), ("a.grad", True)]


def test_static_range_is_unrolled():
    @wk.kernel
    def k():
        for i in wk.static(range(3)):
            x[i] = i * 2

    kir = build(k)
    assert not of_type(kir, ir.RangeFor)
    stores = of_type(kir, ir.GlobalStore)
    assert [s.value.value for s in stores] == [0.0, 2.0, 4.0]


def test_static_loop_over_tuple_of_fields():
    a = FakeField(wk.f32, 4, "a")
    b = FakeField(wk.f32, 4, "b")

    @wk.kernel
    def k():
        for f in wk.static((a, b)):
            f[0] = 1.0

    kir = build(k)
    assert [c.name for c in kir.containers] == ["a", "b"]


def test_python_range_object_needs_static():
    @wk.kernel
    def k():
        for f in (x, grid):
            pass

    with pytest.raises(wk.CompileError, match="needs wk.static"):
        build(k)


def test_while_break_continue():
    @wk.kernel
    def k(n: wk.i32):
        i = 0
        while i < n:
            i += 1
            if i % 2 == 0:
                continue
            if i > 7:
                break
            acc[i] = 1

    kir = build(k, 0)
    (loop,) = of_type(kir, ir.While)
    first = loop.body.stmts
    assert any(isinstance(s, ir.If) and isinstance(s.then_block.stmts[0], ir.Break) for s in first)
    assert of_type(kir, ir.Continue)
    out = run(kir, scalars=[20])
    assert list(np.nonzero(out["acc"])[0]) == [1, 3, 5, 7]


def test_while_false_is_dropped_and_while_true_has_no_exit_test():
    @wk.kernel
    def k():
        while False:
            acc[0] = 1
        while True:
            break

    kir = build(k)
    (loop,) = of_type(kir, ir.While)
    assert isinstance(loop.body.stmts[0], ir.Break)


def test_if_elif_else_and_static_if():
    flag = True

    @wk.kernel
    def k(a: wk.i32):
        if a > 0:
            acc[0] = 1
        elif a < 0:
            acc[0] = 2
        else:
            acc[0] = 3
        if wk.static(flag):
            acc[1] = 4
        else:
            acc[1] = 5

    kir = build(k, 0)
    ifs = [s for s in kir.body.stmts if isinstance(s, ir.If)]
    assert len(ifs) == 1 and isinstance(ifs[0].else_block.stmts[-1], ir.If)
    for a, expected in ((5, 1), (-5, 2), (0, 3)):
        out = run(kir, scalars=[a])
        assert list(out["acc"][:2]) == [expected, 4]


def test_loop_config_serialize_marks_next_loop_only():
    @wk.kernel
    def k():
        wk.loop_config(serialize=True)
        for i in range(4):
            acc[i] = i
        for i in range(4):
            acc[i] = i

    loops = of_type(build(k), ir.RangeFor)
    assert [lp.serialize for lp in loops] == [True, False]


def test_loop_config_parallelize_one_serializes_and_unknown_keywords_are_errors():
    @wk.kernel
    def k():
        wk.loop_config(parallelize=1)          # Taichi: serialize=True "equals to setting parallelize to 1"
        for i in range(4):
            acc[i] = i
        wk.loop_config(parallelize=8, block_dim_adaptive=False, bit_vectorize=False, name="label")
        for i in range(4):
            acc[i] = i

    assert [lp.serialize for lp in of_type(build(k), ir.RangeFor)] == [True, False]

    @wk.kernel
    def misspelt():
        wk.loop_config(serialise=True)         # ignored, the loop would have run in parallel
        for i in range(4):
            acc[i] = i

    with pytest.raises(wk.CompileError, match=r"wk.loop_config\(\) takes the keywords bit_vectorize, block_dim, "
                                           r"block_dim_adaptive, name, parallelize, serialize; got serialise"):
        build(misspelt)


def test_nested_loops_and_loop_index():
    @wk.kernel
    def k():
        for i in range(4):
            for j in range(i):
                acc[i * 4 + j] = 1

    kir = build(k)
    assert len(of_type(kir, ir.RangeFor)) == 2
    out = run(kir)
    assert out["acc"][:16].sum() == 6


def test_kernel_return_value():
    @wk.kernel
    def k(a: wk.f32) -> wk.f32:
        return a * 2

    kir = build(k, 0)
    assert len(kir.returns) == 1 and kir.returns[0].kind == "temp" and kir.returns[0].shape == (1,)
    assert kir.returns[0] in kir.containers
    out = run(kir, scalars=[1.5])
    assert out["__return__"][0] == 3.0


def test_kernel_return_vector():
    @wk.kernel
    def k() -> wk.math.vec3:
        return wk.math.vec3(1, 2, 3)

    kir = build(k)
    assert kir.returns[0].shape == (3,)
    assert list(run(kir)["__return__"]) == [1.0, 2.0, 3.0]


def test_kernel_returns_a_tuple_of_values(arch):
    @wk.kernel
    def pair(a: wk.f32) -> tuple[wk.f32, wk.i32]:
        return a * 2, wk.cast(a, wk.i32)

    @wk.kernel
    def triple(a: wk.f32) -> (wk.f32, wk.math.vec2, wk.u1):
        return a, wk.math.vec2(a, 1), a > 1

    @wk.kernel
    def wrong(a: wk.f32) -> tuple[wk.f32, wk.i32]:
        return a

    assert pair(3.5) == (7.0, 3)
    value, vector, flag = triple(3.5)
    assert value == 3.5 and vector.tolist() == [3.5, 1.0] and vector.x == 3.5 and flag == 1 and type(flag) is int
    with pytest.raises(wk.CompileError, match="annotated to return 2 values but returns a f32 value"):
        wrong(1.0)


def test_zero_d_field_access():
    @wk.kernel
    def k():
        scalar[None] = 1.0
        scalar[None] += x[0]

    kir = build(k)
    (ptr, *_) = [p for p in of_type(kir, ir.GlobalPtr) if p.container.name == "scalar"]
    assert ptr.indices == []


def test_block_scoped_variable_is_not_visible_after_if():
    @wk.kernel
    def k(a: wk.i32):
        if a > 0:
            v = 1
        acc[0] = v

    with pytest.raises(wk.CompileError, match="local to that body"):
        build(k, 0)


def test_loop_variable_bounds_reads_field():
    @wk.kernel
    def k():
        for i in range(acc[0]):
            x[i] = 1.0

    kir = build(k)
    (loop,) = of_type(kir, ir.RangeFor)
    assert isinstance(loop.end, ir.GlobalLoad)


def test_kernel_scope_accumulator_in_parallel_loop_is_atomic():
    @wk.kernel
    def k(a: wk.types.ndarray()) -> wk.f32:
        s = 0.0
        count = 0
        for i in range(a.shape[0]):
            s += a[i]
            wk.atomic_add(count, 1)
        t = 1.0
        for i in range(3):
            t *= 2.0
        return s + count + t

    kir = build(k, (T.f32, 1, ()))
    temps = sorted(c.name for c in kir.containers if c.kind == "temp")
    assert temps == ["__return__", "count", "s"]
    assert len(of_type(kir, ir.AtomicOp)) == 2
    assert [al.name for al in of_type(kir, ir.Alloca)] == ["t"]
    out = run(kir, {"a": np.arange(4, dtype=np.float32)})
    assert out["__return__"][0] == 6.0 + 4 + 8.0


def test_struct_for_over_zero_d_field_is_error():
    @wk.kernel
    def k():
        for i in scalar:
            pass

    with pytest.raises(wk.CompileError, match="cannot loop over the 0-d field 'scalar'"):
        build(k)


def test_break_in_parallel_top_level_loop_is_error():
    @wk.kernel
    def k():
        for i in range(4):
            if i == 2:
                break

    with pytest.raises(wk.CompileError, match="'break' is not allowed in a kernel's outermost"):
        build(k)


def test_break_in_serialized_or_nested_loop_is_fine():
    @wk.kernel
    def k():
        wk.loop_config(serialize=True)
        for i in range(4):
            if i == 2:
                break
            acc[i] = 1
        for i in range(2):
            for j in range(9):
                if j == 1:
                    break

    kir = build(k)
    assert run(kir)["acc"][:4].tolist() == [1, 1, 0, 0]
