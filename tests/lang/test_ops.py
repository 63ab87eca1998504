"""wk.lang.ops: Taichi's `ti.lang.ops.*` spellings, in kernels and in Python scope."""
from __future__ import annotations

import numpy as np

import wgkern as wk


def test_lang_ops_names_work_in_kernels_and_python(arch):
    ops = wk.lang.ops
    x = wk.Vector.field(3, wk.i32, shape=(8, 8))
    r = wk.field(wk.f32, shape=5)
    offsets = [wk.Vector([1, 2]), wk.Vector([2, 3])]

    @wk.kernel
    def run(a: wk.f32, n: wk.i32):
        at = ops.add(wk.Vector([4, 3]), wk.static(offsets)[1])
        x[at] = [1, 10, 100]
        r[0] = ops.sqrt(a)
        r[1] = ops.cmp_lt(n, 3) + ops.logical_and(n > 0, n < 9) * 2
        r[2] = ops.bit_and(n, 6) + ops.neg(a)
        r[3] = ops.ifte(n > 2, 1.5, 2.5)
        r[4] = ops.floordiv(n, 2) + ops.mod(n, 3) + ops.bit_shl(1, 3)

    run(16.0, 5)
    assert x[6, 6].tolist() == [1, 10, 100]
    assert np.array_equal(r.to_numpy(), np.array([4.0, 2.0, -12.0, 1.5, 12.0], np.float32))
    assert ops.add(1, 2) == 3 and ops.cmp_eq(2, 2) and ops.sqrt(4.0) == 2.0


def test_logical_not_and_round_keep_vectors_in_python_scope(arch):
    # Quadrants' test_scalar_op: ti.lang.ops.logical_not(v) and ti.round(v) of a Python-scope vector are
    # element-wise vectors (logical_not raised numpy's ambiguous-truth error, round gave a bare numpy array)
    v = wk.Vector([2, 0, -1])
    assert wk.lang.ops.logical_not(v).tolist() == [False, True, False]
    assert wk.lang.ops.logical_not(0) and not wk.lang.ops.logical_not(3)
    rounded = wk.round(wk.Vector([0.5, -1.5, 0.2]))
    assert isinstance(rounded, wk.Vector) and rounded.to_numpy().tolist() == [1.0, -2.0, 0.0]

    @wk.kernel
    def in_a_kernel(a: wk.i32, b: wk.f32) -> wk.i32:
        w = wk.lang.ops.logical_not(wk.Vector([a, 0]))
        return wk.lang.ops.logical_not(a) + 2 * wk.lang.ops.logical_not(b) + 4 * w[0] + 8 * w[1]

    assert in_a_kernel(0, 0.0) == 15 and in_a_kernel(3, 1.5) == 8
