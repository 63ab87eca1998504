"""Range checks of unproven accesses in WGSL (backends/wgsl/bounds.py): what depends on the launch arguments alone
(an ndarray's strides and element count, the per-axis bounds that keep the i32 offset from wrapping, the term of a
constant index) is computed once at the top of a task, not once per access, and the accesses still follow the
out-of-range rule (docs/internals.md): a store outside the container is dropped, a load there reads 0."""
from __future__ import annotations

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
        # 9 unproven accesses (3 stores, 6 loads), each with its own test of the offset against the count
        assert wgsl.count("let inside") == 9
        # one division per (ndarray, axis with a run-time stride): a's and b's first two axes, however many
        # accesses use them (the third axis has stride 1: a constant bound)
        divisions = [line.strip() for line in wgsl.splitlines() if "/ u32(" in line]
        assert len(divisions) == 4, divisions
        # the element counts and the 1 * stride of the middle index (b[i, 1, c], a[i, 1, c]) once per task too
        assert len([line for line in wgsl.splitlines() if "let wk_elements" in line]) == 2
        assert len([line for line in wgsl.splitlines() if "let wk_term_ok" in line]) == 2
