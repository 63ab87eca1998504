"""Range checks of unproven accesses in WGSL (backends/wgsl/bounds.py): what depends on the launch arguments alone
(an ndarray's strides and element count, the per-axis bounds that keep the i32 offset from wrapping, the term of a
constant index) is computed once at the top of a task, not once per access, and the accesses still follow the
out-of-range rule (docs/internals.md): a store outside the container is dropped, a load there reads 0."""
from __future__ import annotations

import collections

import numpy as np

import wgkern as wk
from wgkern.runtime import program as program_module

# valid rows, rows past the first axis (their flat offsets lie past the end), a negative row and one far outside
ROWS = np.array([0, 3, 7, -1, 4, 10 ** 8, 2, 1], dtype=np.int32)


def test_unproven_accesses_share_their_launch_invariants(arch):
    a = wk.ndarray(wk.f32, (5, 2, 3))
    b = wk.ndarray(wk.f32, (5, 2, 3))
    rows = wk.ndarray(wk.i32, ROWS.shape)

    @wk.kernel
    def gather(a: wk.types.ndarray(), b: wk.types.ndarray(), rows: wk.types.ndarray()):
        for t in range(rows.shape[0]):
            i = rows[t]                      # in range (t runs over rows' own axis); i is not proven
            for c in wk.static(range(3)):
                a[i, 1, c] = b[i, 0, c] * 2.0 + b[i, 1, c]

    start = np.arange(30, dtype=np.float32).reshape(5, 2, 3)
    source = (np.arange(30, dtype=np.float32) * 0.5 - 3.0).reshape(5, 2, 3)
    a.from_numpy(start)
    b.from_numpy(source)
    rows.from_numpy(ROWS)
    gather(a, b, rows)

    expected = start.copy()
    for i in ROWS:
        if 0 <= i < 5:
            expected[i, 1] = source[i, 0] * 2.0 + source[i, 1]
    np.testing.assert_array_equal(a.to_numpy(), expected)     # one rounding per element, as numpy's

    if hasattr(program_module.current().backend, "features"):     # a WGSL backend: read the shader
        wgsl = gather.source()
        # 9 unproven accesses (3 stores, 6 loads), each with its own test of the offset against the count (the
        # middle and last axes' extents are launch arguments: a constant index proves nothing there)
        assert wgsl.count("let inside") == 9
        # one division per (ndarray, axis with a run-time stride): a's and b's first two axes, however many
        # accesses use them (the third axis has stride 1: a constant bound)
        divisions = [line.strip() for line in wgsl.splitlines() if "/ u32(" in line]
        assert len(divisions) == 4, divisions
        # the element counts and the 1 * stride of the middle index (b[i, 1, c], a[i, 1, c]) once per task too
        assert len([line for line in wgsl.splitlines() if "let wk_elements" in line]) == 2
        assert len([line for line in wgsl.splitlines() if "let wk_term_ok" in line]) == 2


# (row, column) pairs of a 5 x 4 ndarray: inside; the last; a column past its axis whose flat offset is inside
# (the element at that offset); past the end; a negative row whose flat offset is inside; a row whose offset
# wraps i32 (2**30 * 4 == 0 mod 2**32: outside all the same); a negative column
CELLS = [(0, 0), (4, 3), (1, 4), (4, 4), (-1, 5), (2 ** 30, 0), (0, -1), (2 ** 29, 2 ** 31 - 1)]


def _flat(row: int, column: int) -> int | None:
    flat = row * 4 + column
    return flat if 0 <= flat < 20 else None


def test_components_at_unproven_cells_follow_the_flat_offset(arch):
    """A vector ndarray of two axes read and written at (row, column) pairs read from memory: every component
    follows the flat-offset rule, exact for indices whose i32 offset would wrap; the shader tests each cell
    once for all its components (one expression)."""
    cells = wk.Vector.ndarray(3, wk.f32, shape=(5, 4))
    at = wk.ndarray(wk.i32, shape=(len(CELLS), 2))
    got = wk.Vector.ndarray(3, wk.f32, shape=len(CELLS))

    @wk.kernel
    def gather(cells: wk.types.ndarray(), at: wk.types.ndarray(), got: wk.types.ndarray()):
        for t in range(at.shape[0]):
            got[t] = cells[at[t, 0], at[t, 1]]

    @wk.kernel
    def scatter(cells: wk.types.ndarray(), at: wk.types.ndarray()):
        for t in range(at.shape[0]):
            if t != 0:                      # (0, 0) and (-1, 5) reach the same element: write one of them
                cells[at[t, 0], at[t, 1]][1] = 100.0 + t

    table = np.arange(60, dtype=np.float32).reshape(5, 4, 3)
    cells.from_numpy(table)
    at.from_numpy(np.array(CELLS, dtype=np.int32))
    gather(cells, at, got)
    scatter(cells, at)
    want = np.zeros((len(CELLS), 3), np.float32)
    want_cells = table.reshape(20, 3).copy()
    for t, (row, column) in enumerate(CELLS):
        flat = _flat(row, column)
        if flat is not None:
            want[t] = table.reshape(20, 3)[flat]
            if t != 0:
                want_cells[flat, 1] = 100.0 + t
    np.testing.assert_array_equal(got.to_numpy(), want)
    np.testing.assert_array_equal(cells.to_numpy().reshape(20, 3), want_cells)

    if hasattr(program_module.current().backend, "features"):
        # at[t, 0] and at[t, 1] test their offsets; the three components of cells[...] test the cell's offset
        # over its two axes (not the component's), the same expression, and so do got[t]'s on its one axis
        tests = [line.split("=", 1)[1].rsplit("&&", 1)[-1].strip(" ();") for line in gather.source().splitlines()
                 if "let inside" in line]
        assert sorted(collections.Counter(tests).values()) == [1, 1, 3, 3], tests
