"""wk.linalg.vector_ops: the blocked device dot product over fields of every shape, and the workspace cache."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from tests.error_bounds import f32_bound
from wgkern.linalg import vector_ops


@pytest.mark.parametrize("dtype", [wk.f32, wk.f64], ids=str)
@pytest.mark.parametrize("shape, element, offset", [
    ((7,), None, None),
    ((600,), None, (-5,)),               # more than two blocks, an offset field
    ((33, 21), None, None),
    ((3, 5, 40), None, (1, -2, 0)),
    ((9, 31), (3,), None),               # vectors: all components
    ((70,), (2, 2), None),               # matrices
])
def test_dot_matches_numpy(arch, dtype, shape, element, offset):
    rng = np.random.default_rng(0)
    if element is None:
        a = wk.field(dtype, shape=shape, offset=offset)
        b = wk.field(dtype, shape=shape, offset=offset)
    elif len(element) == 1:
        a = wk.Vector.field(element[0], dtype, shape=shape)
        b = wk.Vector.field(element[0], dtype, shape=shape)
    else:
        a = wk.Matrix.field(*element, dtype, shape=shape)
        b = wk.Matrix.field(*element, dtype, shape=shape)
    values_a = rng.standard_normal(shape + (element or ()))
    values_b = rng.standard_normal(shape + (element or ()))
    a.from_numpy(values_a)
    b.from_numpy(values_b)
    space = vector_ops.workspace(a, ("unused",))
    space.state[vector_ops.STATUS] = vector_ops.RUNNING
    vector_ops.dot_into(a, b, space.partials, space.s, vector_ops.DOT_A, space.state, space.layout.as_template())
    products = a.to_numpy().astype(np.float64) * b.to_numpy()
    expected = float(products.sum())
    # each product passes through its element's dot (m terms), its block's running sum (BLOCK elements) and the
    # sum of the partials (one per block): that many roundings, each at most U (f32) or 2^-53 (f64) of the
    # running sums, which are bounded by sum |a b|
    elements = products.reshape(products.shape[:len(shape)] + (-1,))
    m, blocks = elements.shape[-1], -(-int(np.prod(shape)) // vector_ops.BLOCK)
    ops = m + 1 + min(vector_ops.BLOCK, int(np.prod(shape))) + blocks
    bound = (f32_bound(ops, np.abs(products).sum()) if dtype == wk.f32
             else ops * 2.0 ** -53 * np.abs(products).sum())
    assert float(space.s[vector_ops.DOT_A]) == pytest.approx(expected, abs=bound)
    space.state[vector_ops.STATUS] = vector_ops.CONVERGED     # a stopped solve skips the work
    a.fill(0)
    vector_ops.dot_into(a, b, space.partials, space.s, vector_ops.DOT_A, space.state, space.layout.as_template())
    assert float(space.s[vector_ops.DOT_A]) == pytest.approx(expected, abs=bound)


def test_workspace_cache_follows_shape_type_and_program(arch):
    x = wk.field(wk.f32, shape=(4, 6))
    first = vector_ops.workspace(x, ("r", "p"))
    assert vector_ops.workspace(wk.field(wk.f32, shape=(4, 6)), ("r", "p")) is first
    assert vector_ops.workspace(wk.field(wk.f64, shape=(4, 6)), ("r", "p")) is not first
    assert vector_ops.workspace(wk.field(wk.f32, shape=(6, 4)), ("r", "p")) is not first
    assert vector_ops.workspace(wk.field(wk.f32, shape=(4, 6), offset=(1, 1)), ("r", "p")) is not first
    assert first.vectors["r"].shape == (4, 6) and first.s.dtype == wk.f32
    assert first.layout == vector_ops.Layout(24, (6, 1), (0, 0), (4, 6), 1)
    assert first.partials.shape == (vector_ops.PARTIAL_ROWS,)
