"""Struct-for loops over sparse trees: a thread per cell below a pointer, blocked struct-fors testing deeper flags,
device fills of active elements, which stores set activity flags, host writes at every level and axis."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk


def _range_of_first_task(kernel):
    from wgkern.ir.host_eval import evaluate_bounds
    task = kernel.last_compiled.offloaded.tasks[0]
    return evaluate_bounds(task, [None] * 8, {})


def _inner_serial_trip_counts(kernel):
    from wgkern.ir import nodes as ir
    from wgkern.ir.visitor import walk
    body = kernel.last_compiled.offloaded.tasks[0].body
    return sorted(stmt.end.value - stmt.begin.value for stmt in walk(body)
                  if isinstance(stmt, ir.RangeFor) and isinstance(stmt.end, ir.Const))


@pytest.mark.parametrize("grouped", [False, True])
def test_struct_for_below_a_pointer_runs_a_thread_per_cell_over_its_block(arch, grouped):
    # mgpcg's layout (pointer over dense blocks), offset: the parallel loop spans the pointer's cells and each
    # active cell runs its 4 x 2 elements serially, so inactive cells cost one flag test; every active element
    # is visited once, with the indices a flat loop gives
    x = wk.field(wk.i32)
    y = wk.field(wk.i32)
    cells = wk.root.pointer(wk.ij, (5, 3))
    cells.dense(wk.ij, (4, 2)).place(x, y, offset=(-3, 2))
    visits = wk.field(wk.i32, shape=(20, 6))

    @wk.kernel
    def visit():
        if wk.static(grouped):
            for I in wk.grouped(x):
                if I[1] == 4:
                    continue
                visits[I[0] + 3, I[1] - 2] += 1
                y[I] = I[0] * 100 + I[1]
        else:
            for i, j in x:
                if j == 4:
                    continue
                visits[i + 3, j - 2] += 1
                y[i, j] = i * 100 + j

    x[-3 + 9, 2 + 5] = 1          # cell (2, 2)
    x[-3 + 17, 2 + 0] = 1         # cell (4, 0)
    visit()
    assert _range_of_first_task(visit) == (0, 15)
    assert _inner_serial_trip_counts(visit) == [8]
    expected = np.zeros((20, 6), np.int32)
    expected[8:12, 4:6] = 1
    expected[16:20, 0:2] = 1
    expected[:, 2] = 0                           # j == 4: continue
    np.testing.assert_array_equal(visits.to_numpy(), expected)
    i, j = np.meshgrid(np.arange(20) - 3, np.arange(6) + 2, indexing="ij")
    np.testing.assert_array_equal(y.to_numpy(), np.where(expected == 1, i * 100 + j, 0))


def test_blocked_struct_for_tests_deeper_flags_per_element_and_keeps_break_refused(arch):
    # pointer over bitmasked over single elements: the pointer's cells run in parallel, the bitmask is tested
    # per element; nested pointers (Taichi's sparse example) run over the deepest pointer holding a block
    x = wk.field(wk.i32)
    wk.root.pointer(wk.ij, 4).bitmasked(wk.ij, 4).place(x)
    z = wk.field(wk.i32)
    wk.root.pointer(wk.ij, 2).pointer(wk.ij, 2).pointer(wk.ij, 2).dense(wk.ij, 2).place(z)
    count = wk.field(wk.i32, shape=2)

    @wk.kernel
    def write():
        x[1, 2] = 5
        x[14, 15] = 6
        z[3, 12] = 7

    @wk.kernel
    def visit_x():
        for i, j in x:
            count[0] += x[i, j] + 100 * i + 1000 * j

    @wk.kernel
    def visit_z():
        for i, j in z:
            count[1] += 1 + z[i, j]

    write()
    visit_x()
    visit_z()
    assert count[0] == 5 + 6 + 100 * 15 + 1000 * 17
    assert count[1] == 4 + 7                     # the 2 x 2 block around (3, 12)
    assert _range_of_first_task(visit_x) == (0, 16) and _inner_serial_trip_counts(visit_x) == [16]
    assert _range_of_first_task(visit_z) == (0, 64) and _inner_serial_trip_counts(visit_z) == [4]

    @wk.kernel
    def leaves():
        for i, j in x:
            if x[i, j] > 0:
                break

    with pytest.raises(wk.CompileError, match="'break' is not allowed"):
        leaves()


def test_fill_of_a_sparse_field_runs_on_the_device_and_touches_active_elements_only(arch):
    # Taichi's fill: active elements only, nothing activated; done by a kernel, not a download and upload
    x = wk.field(wk.i32)
    v = wk.Vector.field(2, wk.f32)
    cells = wk.root.pointer(wk.i, 4)
    cells.dense(wk.i, 2).place(x, v)
    x[5] = 3
    launches = wk.stats()["launches"]
    x.fill(-7.9)                                 # converted as a dense fill converts it: -7
    v.fill(1.5)
    assert wk.stats()["launches"] == launches + 2
    np.testing.assert_array_equal(x.to_numpy(), [0, 0, 0, 0, -7, -7, 0, 0])
    np.testing.assert_array_equal(v.to_numpy()[:, 1], [0, 0, 0, 0, 1.5, 1.5, 0, 0])
    assert [wk.is_active(cells, [k]) for k in range(4)] == [0, 0, 1, 0]
    v.fill(np.array([1.0, 2.0], np.float32))     # one value per component: the host path
    np.testing.assert_array_equal(v.to_numpy()[4:6], [[1, 2], [1, 2]])
    np.testing.assert_array_equal(v.to_numpy()[:4], np.zeros((4, 2)))


def _flag_stores(kernel):
    from wgkern.ir import nodes as ir
    from wgkern.ir.visitor import walk
    return sum(1 for task in kernel.last_compiled.offloaded.tasks for stmt in walk(task.body)
               if isinstance(stmt, (ir.GlobalStore, ir.AtomicOp)) and stmt.ptr.container.name.endswith(".active"))


def test_writes_into_the_cell_a_struct_for_visits_store_no_flag_unless_the_body_deactivates(arch):
    # the guard found the cell active and nothing clears a flag while the loop runs, so r[i, j] = ... and
    # z[i, j] += ... (same cell) need no flag store; a write elsewhere, or a body that deactivates, keeps it
    r = wk.field(wk.f32)
    z = wk.field(wk.f32)
    other = wk.field(wk.f32)
    cells = wk.root.pointer(wk.ij, 4)
    cells.dense(wk.ij, 2).place(r, z)
    wk.root.pointer(wk.ij, 8).place(other)
    bits = wk.field(wk.i32)
    mask = wk.root.bitmasked(wk.i, 8)
    mask.place(bits)

    @wk.kernel
    def same_cells():
        for i, j in r:
            r[i, j] = r[i, j] * 2.0
            z[i, j] += 1.0

    @wk.kernel
    def elsewhere():
        for i, j in r:
            other[j, i] = r[i, j]

    @wk.kernel
    def deactivate_then_write():
        for i in bits:
            wk.deactivate(mask, i)
            bits[i] = 5

    r[3, 4] = 1.5
    bits[2] = 1
    bits[6] = 1
    same_cells()
    elsewhere()
    deactivate_then_write()
    assert _flag_stores(same_cells) == 0 and _flag_stores(elsewhere) == 1
    assert _flag_stores(deactivate_then_write) == 2           # the deactivation's 0 and the write's 1
    expected = np.zeros((8, 8), np.float32)
    expected[3, 4] = 3.0
    np.testing.assert_array_equal(r.to_numpy(), expected)
    np.testing.assert_array_equal(z.to_numpy()[2:4, 4:6], np.ones((2, 2)))
    assert float(z.to_numpy().sum()) == 4.0
    assert other[4, 3] == 3.0 and float(other.to_numpy().sum()) == 3.0
    np.testing.assert_array_equal(bits.to_numpy(), [0, 0, 5, 0, 0, 0, 5, 0])
    assert [wk.is_active(mask, [k]) for k in range(8)] == [0, 0, 1, 0, 0, 0, 1, 0]


def test_host_writes_find_the_active_elements_of_every_level_and_axis(arch):
    # from_numpy writes active elements only: an element is active when its cell is at every sparse level,
    # including levels over a subset of the axes (pointer over i, dense over j) and bitmasks further down
    x = wk.field(wk.i32)
    outer = wk.root.pointer(wk.ij, (2, 3))
    inner = outer.bitmasked(wk.ij, (2, 2))
    inner.place(x)
    y = wk.field(wk.i32)
    rows = wk.root.pointer(wk.i, 3)
    rows.dense(wk.j, 4).place(y)
    wk.activate(outer, [1, 2])
    for cell in ([2, 4], [3, 5], [0, 0]):
        wk.activate(inner, cell)            # activating [0, 0] activates its pointer cell too, as in Taichi
    wk.deactivate(outer, [0, 0])            # and this clears it again, with the bitmask below
    wk.activate(rows, [1])
    x.from_numpy(np.arange(24, dtype=np.int32).reshape(4, 6) + 1)
    y.from_numpy(np.ones((3, 4), np.int32))
    expected = np.zeros((4, 6), np.int32)
    expected[2, 4], expected[3, 5] = 2 * 6 + 4 + 1, 3 * 6 + 5 + 1
    np.testing.assert_array_equal(x.to_numpy(), expected)
    np.testing.assert_array_equal(y.to_numpy(), [[0] * 4, [1] * 4, [0] * 4])
