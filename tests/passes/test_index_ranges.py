"""Which accesses are proven inside their container (wgkern/passes/index_ranges.py): every proof must be sound
(an unproven access is only slower, a wrongly proven one writes outside its container)."""
from __future__ import annotations

from wgkern.ir import nodes as ir
from wgkern.ir.builder import IRBuilder
from wgkern.ir.ops import BinaryOpKind as B
from wgkern.lang import types as T
from wgkern.passes.index_ranges import in_range_ptrs, nonnegative_values, trailing_in_range

F = ir.ContainerSlot(name="f", kind="field", dtype=T.f32, ndim=1, shape=(16,))
G = ir.ContainerSlot(name="g", kind="field", dtype=T.f32, ndim=2, shape=(4, 8))
A = ir.ContainerSlot(name="a", kind="ndarray", dtype=T.f32, ndim=2, arg_index=0)
A_GRAD = ir.ContainerSlot(name="a.grad", kind="ndarray", dtype=T.f32, ndim=2, arg_index=0, is_grad=True)
C = ir.ContainerSlot(name="c", kind="ndarray", dtype=T.f32, ndim=2, arg_index=1)
# an ndarray of 3-vectors and one of 2x2 matrices: their element axes have static extents
V = ir.ContainerSlot(name="v", kind="ndarray", dtype=T.f32, ndim=2, element_shape=(3,), arg_index=2)
M = ir.ContainerSlot(name="m", kind="ndarray", dtype=T.f32, ndim=3, element_shape=(2, 2), arg_index=3)


def _i32(b: IRBuilder, value: int) -> ir.Stmt:
    return b.const(value, T.i32)


def _proven(b: IRBuilder, ptrs: dict[str, ir.GlobalPtr]) -> set[str]:
    found = in_range_ptrs([b.block])
    return {name for name, ptr in ptrs.items() if ptr in found}


def test_loop_indices_over_a_fields_extent_constants_and_shifts():
    b = IRBuilder()
    loop = b.range_for(_i32(b, 0), _i32(b, 16))
    ptrs = {}
    with b.at(loop.body):
        i = b.loop_index(loop)
        ptrs["f[i]"] = b.global_ptr(F, [i])
        ptrs["f[i + 1]"] = b.global_ptr(F, [b.add(i, _i32(b, 1))])
        ptrs["f[i - 1]"] = b.global_ptr(F, [b.sub(i, _i32(b, 1))])
        ptrs["f[15]"] = b.global_ptr(F, [_i32(b, 15)])
        ptrs["f[16]"] = b.global_ptr(F, [_i32(b, 16)])
        ptrs["f[-1]"] = b.global_ptr(F, [_i32(b, -1)])
        clamped = b.binary(B.MIN, b.binary(B.MAX, b.add(i, _i32(b, 3)), _i32(b, 0)), _i32(b, 15))
        ptrs["f[clamp(i + 3)]"] = b.global_ptr(F, [clamped])
        ptrs["f[i % 16]"] = b.global_ptr(F, [b.binary(B.MOD, b.add(i, _i32(b, 5)), _i32(b, 16))])
        ptrs["f[i % 17]"] = b.global_ptr(F, [b.binary(B.MOD, i, _i32(b, 17))])
        ptrs["g[i // 4, i % 8]"] = b.global_ptr(G, [b.binary(B.FLOORDIV, i, _i32(b, 4)),
                                                     b.binary(B.MOD, i, _i32(b, 8))])
        ptrs["g[i // 2, 0]"] = b.global_ptr(G, [b.binary(B.FLOORDIV, i, _i32(b, 2)), _i32(b, 0)])
    assert _proven(b, ptrs) == {"f[i]", "f[15]", "f[clamp(i + 3)]", "f[i % 16]", "g[i // 4, i % 8]"}


def test_additions_that_wrap_around_i32_prove_nothing():
    b = IRBuilder()
    loop = b.range_for(_i32(b, 0), _i32(b, 16))
    with b.at(loop.body):
        i = b.loop_index(loop)
        wrapped = b.add(i, _i32(b, 2 ** 31 - 1))         # i >= 1 wraps to a negative value
        ptr = b.global_ptr(F, [b.binary(B.MIN, wrapped, _i32(b, 15))])
    assert not _proven(b, {"f[min(i + 2**31 - 1, 15)]": ptr})


def test_an_ndarrays_struct_for_decomposition_is_proven_for_it_and_its_gradient_only():
    """`for i, j in a` runs one index over max(a.shape[0], 0) * max(a.shape[1], 0) and splits it with // and %."""
    b = IRBuilder()
    zero = _i32(b, 0)
    rows = b.binary(B.MAX, b.insert(ir.ShapeOf(container=A, axis=0, dtype=T.i32)), zero)
    cols = b.binary(B.MAX, b.insert(ir.ShapeOf(container=A, axis=1, dtype=T.i32)), zero)
    loop = b.range_for(zero, b.mul(rows, cols))
    ptrs = {}
    with b.at(loop.body):
        k = b.loop_index(loop)
        i, j = b.binary(B.FLOORDIV, k, cols), b.binary(B.MOD, k, cols)
        ptrs["a[i, j]"] = b.global_ptr(A, [i, j])
        ptrs["a.grad[i, j]"] = b.global_ptr(A_GRAD, [i, j])
        ptrs["c[i, j]"] = b.global_ptr(C, [i, j])          # another argument: its shape may differ
        ptrs["a[j, i]"] = b.global_ptr(A, [j, i])
        ptrs["a[i, j - 1]"] = b.global_ptr(A, [i, b.sub(j, _i32(b, 1))])
        ptrs["a[i % cols, 0]"] = b.global_ptr(A, [b.binary(B.MOD, _i32(b, 3), cols), zero])
    assert _proven(b, ptrs) == {"a[i, j]", "a.grad[i, j]"}


def test_a_range_over_a_shape_proves_that_axis_and_a_serial_loop_counts_too():
    b = IRBuilder()
    rows = b.insert(ir.ShapeOf(container=A, axis=0, dtype=T.i32))
    cols = b.insert(ir.ShapeOf(container=A, axis=1, dtype=T.i32))
    outer = b.range_for(_i32(b, 0), rows)
    ptrs = {}
    with b.at(outer.body):
        i = b.loop_index(outer)
        inner = b.range_for(_i32(b, 0), cols, reversed=True)
        with b.at(inner.body):
            j = b.loop_index(inner)
            ptrs["a[i, j]"] = b.global_ptr(A, [i, j])
            ptrs["a[j, i]"] = b.global_ptr(A, [j, i])
    assert _proven(b, ptrs) == {"a[i, j]"}


def test_element_axes_of_an_ndarray_are_proven_by_their_static_extents():
    """`v[i][c]` in a loop over v's own axis is in range; at an unknown row only its component axis is proven
    (trailing_in_range: the backends then check the row alone), and a component outside the element is not."""
    b = IRBuilder()
    zero = _i32(b, 0)
    loop = b.range_for(zero, b.insert(ir.ShapeOf(container=V, axis=0, dtype=T.i32)))
    unknown = b.insert(ir.ArgLoad(arg_index=0, dtype=T.i32))
    ptrs = {}
    with b.at(loop.body):
        i = b.loop_index(loop)
        ptrs["v[i][2]"] = b.global_ptr(V, [i, _i32(b, 2)])
        ptrs["v[i][3]"] = b.global_ptr(V, [i, _i32(b, 3)])
        ptrs["v[k][0]"] = b.global_ptr(V, [unknown, zero])
        ptrs["v[k][k]"] = b.global_ptr(V, [unknown, unknown])
        ptrs["m[k][1, 0]"] = b.global_ptr(M, [unknown, _i32(b, 1), zero])
        ptrs["m[k][k, 1]"] = b.global_ptr(M, [unknown, unknown, _i32(b, 1)])
        ptrs["m[k][2, 1]"] = b.global_ptr(M, [unknown, _i32(b, 2), _i32(b, 1)])
    assert _proven(b, ptrs) == {"v[i][2]"}
    trailing = trailing_in_range([b.block])
    assert {name: trailing.get(ptr, 0) for name, ptr in ptrs.items()} == {
        "v[i][2]": 2, "v[i][3]": 0, "v[k][0]": 1, "v[k][k]": 0, "m[k][1, 0]": 2, "m[k][k, 1]": 1,
        "m[k][2, 1]": 1}


def test_nonnegative_values_of_an_ndrange_decomposition_and_what_may_be_negative():
    """An ndrange's flat index over rows * cols and its `//` and `%` by max(cols, 0) are >= 0; a scalar argument,
    an index shifted down, and an addition past i32 (which wraps) are not known to be."""
    b = IRBuilder()
    rows = b.binary(B.MAX, b.insert(ir.ShapeOf(container=A, axis=0, dtype=T.i32)), _i32(b, 0))
    cols = b.binary(B.MAX, b.insert(ir.ShapeOf(container=A, axis=1, dtype=T.i32)), _i32(b, 0))
    scalar = b.insert(ir.ArgLoad(arg_index=4, dtype=T.i32))
    loop = b.range_for(_i32(b, 0), b.binary(B.MUL, rows, cols))
    with b.at(loop.body):
        i = b.loop_index(loop)
        values = {"i": i, "i // cols": b.binary(B.FLOORDIV, i, cols), "i % cols": b.binary(B.MOD, i, cols),
                  "i % 7": b.binary(B.MOD, b.sub(i, _i32(b, 3)), _i32(b, 7)), "rows": rows,
                  "i - 3": b.sub(i, _i32(b, 3)), "scalar": scalar, "i // scalar": b.binary(B.FLOORDIV, i, scalar),
                  "i + 2**31 - 1": b.add(i, _i32(b, 2 ** 31 - 1))}
    found = nonnegative_values([b.block])
    assert {name for name, stmt in values.items() if stmt in found} == {"i", "i // cols", "i % cols", "i % 7",
                                                                         "rows"}
