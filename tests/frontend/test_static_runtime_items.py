"""wk.static(...) loops whose items are runtime variables: `wk.static(enumerate((i_x, i_y)))`, `zip`, tuples in
comprehensions (Genesis's contact sort), with Taichi's and Quadrants' semantics: the loop variable is the variable
itself (reads see its current value, assignments write it)."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from tests.quadrants_compare import same_output_as_quadrants


def test_enumerate_zip_and_comprehension_over_runtime_variables(arch):
    a = wk.field(wk.f32, shape=8)
    out = wk.field(wk.f32, shape=(8, 2))

    @wk.kernel
    def k():
        for i in range(8):
            i_x = i
            i_y = 7 - i
            for k_, c in wk.static(enumerate((i_x, i_y))):
                out[i, k_] = a[c] * (k_ + 1)
            s = 0.0
            for u, w in wk.static(zip((i_x, i_y), (1.0, 2.0))):
                s += a[u] * w
            picked = [a[j] for j in wk.static((i_x, i_y))]
            out[i, 0] += s + picked[1]

    values = np.arange(8, dtype=np.float32) * 0.5
    a.from_numpy(values)
    k()
    i = np.arange(8)
    expected = np.stack([values[i] + (values[i] + 2 * values[7 - i]) + values[7 - i], 2 * values[7 - i]], axis=1)
    np.testing.assert_array_equal(out.to_numpy(), expected)     # sums of halves of small integers: exact


def test_the_loop_variable_is_the_variable_itself(arch):
    out = wk.field(wk.i32, shape=(4, 4))

    @wk.kernel
    def k():
        for i in range(4):
            a = i
            b = 10 * i
            for v in wk.static((a, b)):
                v += 1                      # writes a, then b
                out[i, 2] = v
            out[i, 0] = a
            out[i, 1] = b
            for q, v in wk.static(enumerate((b, a))):
                b = 100                     # the first item is b itself: read after this assignment
                out[i, 3] += v * (q + 1)

    k()
    i = np.arange(4)
    # first item: v is b, read after `b = 100`; second: a (i + 1), weighted 2
    expected = np.stack([i + 1, 10 * i + 1, 10 * i + 1, 100 + 2 * (i + 1)], axis=1)
    np.testing.assert_array_equal(out.to_numpy(), expected)


def test_runtime_items_in_a_func_sorting_two_keys(arch):
    """Genesis's pattern: a func fills a 2 x 3 key matrix from two runtime indices, then compares the rows."""
    data = wk.field(wk.f32, shape=(6, 3))
    after = wk.field(wk.i32, shape=(6, 6))

    @wk.func
    def is_after(i_x: wk.i32, i_y: wk.i32) -> wk.i32:
        keys = wk.Matrix.zero(wk.f32, 2, 3)
        for i_k, i_c in wk.static(enumerate((i_x, i_y))):
            for i_3 in wk.static(range(3)):
                keys[i_k, i_3] = data[i_c, i_3]
        result = 0
        tied = True
        for i_3 in wk.static(range(3)):
            if tied:
                if keys[0, i_3] > keys[1, i_3]:
                    result = 1
                    tied = False
                elif keys[0, i_3] < keys[1, i_3]:
                    tied = False
        return result

    @wk.kernel
    def table():
        for x, y in wk.ndrange(6, 6):
            after[x, y] = is_after(x, y)

    rows = np.array([[1, 2, 3], [1, 2, 4], [0, 9, 9], [1, 1, 9], [1, 2, 3], [2, 0, 0]], np.float32)
    data.from_numpy(rows)
    table()
    expected = [[int(tuple(rows[x]) > tuple(rows[y])) for y in range(6)] for x in range(6)]
    assert after.to_numpy().tolist() == expected


def test_gradients_flow_through_runtime_items(arch):
    x = wk.field(wk.f32, shape=5, needs_grad=True)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def energy():
        for i in range(4):
            left = i
            right = i + 1
            for k_, c in wk.static(enumerate((left, right))):
                loss[None] += (k_ + 1.0) * x[c] * x[c]

    values = np.array([0.5, -1.0, 2.0, 0.25, 3.0], np.float32)
    x.from_numpy(values)
    with wk.ad.Tape(loss=loss):
        energy()
    # d/dx_c of sum_i x_i^2 + 2 x_{i+1}^2: 2 x_c (1 if c < 4) + 4 x_c (1 if c > 0); all products of halves and
    # quarters by small integers, exact in f32
    count_left = np.array([1, 1, 1, 1, 0])
    count_right = np.array([0, 1, 1, 1, 1])
    expected = 2 * values * count_left + 4 * values * count_right
    np.testing.assert_array_equal(x.grad.to_numpy(), expected)


def test_computing_with_a_runtime_item_is_refused_with_its_name(arch):
    out = wk.field(wk.i32, shape=4)

    @wk.kernel
    def arithmetic():
        for i in range(4):
            for v in wk.static((i + 1, 2)):
                out[i] = v

    @wk.kernel
    def bare():
        for i in range(4):
            j = wk.static(i)
            out[i] = j

    @wk.kernel
    def truth():
        for i in range(4):
            for v in wk.static([c for c in (i, 1) if c]):
                out[i] = v

    for kernel in (arithmetic, bare):
        with pytest.raises(wk.CompileError, match="wk.static\\(\\) needs compile-time values, but 'i' is a runtime"):
            kernel()
    with pytest.raises(wk.CompileError, match="'c' is a runtime value|'i' is a runtime value"):
        truth()


def test_vector_variables_as_items_keep_their_shape(arch):
    out = wk.field(wk.f32, shape=(3,))

    @wk.kernel
    def k():
        p = wk.Vector([1.0, 2.0, 3.0])
        q = wk.Vector([10.0, 20.0, 30.0])
        for j, v in wk.static(enumerate((p, q))):
            for e in wk.static(range(v.n)):
                out[e] += v[e] * (j + 1)

    k()
    np.testing.assert_array_equal(out.to_numpy(), [21.0, 42.0, 63.0])


PROGRAM = """
import numpy as np
import {module} as qd
qd.init(arch=qd.cpu)
a = qd.field(qd.f32, shape=(8,))
out = qd.field(qd.f32, shape=(8, 3))

@qd.kernel
def k():
    for i in range(8):
        i_x = i
        i_y = 7 - i
        for k_, c in qd.static(enumerate((i_x, i_y))):
            out[i, k_] = a[c] * (k_ + 1)
        for v in qd.static((i_x, i_y)):
            v += 1
        for u, w in qd.static(zip((i_x, i_y), (1.0, 2.0))):
            out[i, 2] += a[u % 8] * w
        out[i, 2] += sum([a[j % 8] for j in qd.static((i_x, i_y))])

a.from_numpy(np.arange(8, dtype=np.float32) * 0.5)
k()
print(out.to_numpy().tolist())
"""


def test_same_program_as_quadrants(tmp_path):
    ours = same_output_as_quadrants(tmp_path, PROGRAM)
    assert len(ours) == 1
