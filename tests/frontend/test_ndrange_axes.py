"""`wk.ndrange(..., axes=perm)` (Quadrants): the nesting order of the dimensions, outermost first; the loop
variables stay the dimensions' own indices."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import wgkern as wk
from tests.quadrants_compare import same_output_as_quadrants


def visit_order(shape, axes):
    """Position of each canonical index tuple in the visit order: the permuted dimensions, last fastest."""
    out = np.zeros(shape, np.int32)
    for position, physical in enumerate(itertools.product(*(range(shape[a]) for a in axes))):
        index = [0] * len(shape)
        for axis, value in zip(axes, physical):
            index[axis] = value
        out[tuple(index)] = position
    return out


@pytest.mark.parametrize("axes", [(1, 0), (0, 1), None])
def test_a_serial_loop_visits_in_the_permuted_order(arch, axes):
    order = wk.field(wk.i32, shape=(3, 5))
    count = wk.field(wk.i32, shape=())

    @wk.kernel
    def k():
        wk.loop_config(serialize=True)
        for i, j in wk.ndrange(3, 5, axes=axes):
            order[i, j] = count[None]
            count[None] += 1

    k()
    np.testing.assert_array_equal(order.to_numpy(), visit_order((3, 5), axes or (0, 1)))


def test_three_axes_with_offsets_runtime_extents_and_grouped(arch):
    order = wk.field(wk.i32, shape=(4, 3, 2))
    label = wk.field(wk.i32, shape=(4, 3, 2))
    count = wk.field(wk.i32, shape=())

    @wk.kernel
    def k(n: wk.i32):
        wk.loop_config(serialize=True)
        for i, j, m in wk.ndrange((1, 4), n, 2, axes=(2, 0, 1)):
            order[i, j, m] = count[None]
            count[None] += 1
        for I in wk.grouped(wk.ndrange((1, 4), n, 2, axes=(1, 2, 0))):     # in parallel: every index once
            label[I] += I[0] * 100 + I[1] * 10 + I[2] + 1

    order.fill(-1)
    k(3)
    expected = np.full((4, 3, 2), -1, np.int32)
    expected[1:] = visit_order((3, 3, 2), (2, 0, 1))
    np.testing.assert_array_equal(order.to_numpy(), expected)
    i, j, m = np.meshgrid(np.arange(4), np.arange(3), np.arange(2), indexing="ij")
    np.testing.assert_array_equal(label.to_numpy(), np.where(i >= 1, i * 100 + j * 10 + m + 1, 0))


def test_python_scope_yields_canonical_tuples_in_the_permuted_order():
    assert list(wk.ndrange(2, 3, axes=(1, 0))) == [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]
    assert list(wk.ndrange(2, (1, 3), axes=[0, 1])) == [(0, 1), (0, 2), (1, 1), (1, 2)]
    with pytest.raises(ValueError, match=r"is not a permutation of range\(2\)"):
        wk.ndrange(2, 3, axes=(1, 1))


def test_bad_axes_are_compile_errors_with_quadrants_phrases(arch):
    out = wk.field(wk.i32, shape=(2, 2))

    def kernel_with(axes):
        @wk.kernel
        def k():
            for i, j in wk.ndrange(2, 2, axes=axes):
                out[i, j] = 1
        return k

    with pytest.raises(wk.CompileError, match=r"has 3 entries but ndrange was called with 2 dimension argument"):
        kernel_with((0, 1, 2))()
    with pytest.raises(wk.CompileError, match="entries must be Python ints; got bool"):
        kernel_with((True, False))()
    with pytest.raises(wk.CompileError, match=r"is not a permutation of range\(2\)"):
        kernel_with((0, 2))()

    @wk.kernel
    def other_keyword():
        for i, j in wk.ndrange(2, 2, order=(1, 0)):
            out[i, j] = 1

    with pytest.raises(wk.CompileError, match="takes dimensions and axes=, not order="):
        other_keyword()


PROGRAM = """
import {module} as qd
qd.init(arch=qd.cpu)
order = qd.field(qd.i32, shape=(3, 4, 2))
count = qd.field(qd.i32, shape=())

@qd.kernel
def k(n: qd.i32):
    qd.loop_config(serialize=True)
    for i, j, m in qd.ndrange(3, (1, n), 2, axes=qd.static((1, 2, 0))):
        order[i, j, m] = count[None]
        count[None] += 1

k(4)
print(order.to_numpy().tolist())
print(list(qd.ndrange(2, 3, axes=(1, 0))))
"""


def test_same_program_as_quadrants(tmp_path):
    ours = same_output_as_quadrants(tmp_path, PROGRAM)
    assert len(ours) == 2
