"""Sparse SNodes (lang/snode.py, lang/sparse.py, frontend/sparse.py): pointer, bitmasked and dynamic nodes with
Taichi's semantics — writes activate, struct-for loops visit active cells only, deactivation zeroes what lies
below, node coordinates are each node's own — on every arch. Expected values are what Taichi 1.7 gives for the
same programs."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk


def _docs_tree():
    x = wk.field(dtype=wk.i32)
    block1 = wk.root.pointer(wk.ij, (4, 4))
    block2 = block1.pointer(wk.ij, (2, 2))
    pixel = block2.dense(wk.ij, (2, 2))
    pixel.place(x)
    return x, block1, block2, pixel


def test_tree_shapes_and_names(arch):
    x, block1, block2, pixel = _docs_tree()
    assert x.shape == pixel.shape == (16, 16) and block1.shape == (4, 4) and block2.shape == (8, 8)
    assert x.parent() is pixel and x.snode.parent() is pixel and block2.parent() is block1
    assert repr(pixel) == "wk.root => pointer [4, 4] => pointer [8, 8] => dense [16, 16]"
    assert x.parent(3) is block1 and block1.parent() is wk.root
    assert x.parent(4) is wk.root and x.parent(5) is None and wk.root.parent() is None   # None past the root


def test_activate_struct_for_and_is_active_use_node_coordinates(arch):
    x, block1, block2, _ = _docs_tree()
    cells = wk.field(wk.i32, shape=(16, 3))
    count = wk.field(wk.i32, shape=())
    flags = wk.field(wk.i32, shape=4)
    rescaled = wk.Vector.field(2, wk.i32, shape=())

    @wk.kernel
    def demo():
        wk.activate(block1, [0, 1])
        wk.activate(block2, [1, 2])
        for i, j in x:
            n = wk.atomic_add(count[None], 1)
            cells[n, 0] = 0
            cells[n, 1] = i
            cells[n, 2] = j
        for i, j in block2:
            n = wk.atomic_add(count[None], 1)
            cells[n, 0] = 2
            cells[n, 1] = i
            cells[n, 2] = j
        for i, j in block1:
            n = wk.atomic_add(count[None], 1)
            cells[n, 0] = 1
            cells[n, 1] = i
            cells[n, 2] = j
        for j in range(4):
            flags[j] = wk.is_active(block2, [1, j])
        rescaled[None] = wk.rescale_index(x, block1, wk.Vector([9, 17]))

    demo()
    found = {tuple(row) for row in cells.to_numpy()[:count[None]]}
    assert found == {(0, 2, 4), (0, 2, 5), (0, 3, 4), (0, 3, 5), (2, 1, 2), (1, 0, 1)}
    assert flags.to_numpy().tolist() == [0, 0, 1, 0]
    assert rescaled[None].tolist() == [2, 4]


def test_writes_activate_every_enclosing_cell_and_deactivation_zeroes(arch):
    x, block1, block2, _ = _docs_tree()
    out = wk.field(wk.i32, shape=3)

    @wk.kernel
    def write():
        x[13, 6] = 5

    @wk.kernel
    def probe():
        out[0] = wk.is_active(block1, [3, 1])
        out[1] = wk.is_active(block2, [6, 3])
        out[2] = wk.is_active(block1, [13, 6])          # outside block1's 4 x 4 cells: inactive

    @wk.kernel
    def count() -> wk.i32:
        c = 0
        for i, j in x:
            c += 1
        return c

    write()
    probe()
    assert out.to_numpy().tolist() == [1, 1, 0]
    assert count() == 4 and x[13, 6] == 5 and x.to_numpy().sum() == 5
    block2.deactivate_all()
    assert count() == 0 and x[13, 6] == 0
    probe()
    assert out.to_numpy().tolist() == [1, 0, 0]        # block1's cell stays active


def test_kernel_deactivate_frees_the_block_and_the_cells_below(arch):
    x, block1, block2, _ = _docs_tree()

    @wk.kernel
    def fill_all():
        for i, j in wk.ndrange(16, 16):
            x[i, j] = i * 16 + j

    @wk.kernel
    def drop(a: wk.i32, b: wk.i32):
        wk.deactivate(block1, [a, b])

    @wk.kernel
    def active_blocks() -> wk.i32:
        c = 0
        for i, j in block2:
            c += 1
        return c

    fill_all()
    assert active_blocks() == 64
    drop(1, 2)
    expected = np.arange(256).reshape(16, 16)
    expected[4:8, 8:12] = 0
    np.testing.assert_array_equal(x.to_numpy(), expected)
    assert active_blocks() == 60 and wk.is_active(block1, [1, 2]) == 0 and wk.is_active(block2, [2, 4]) == 0


def test_bitmasked_paints_only_active_pixels(arch):
    # Taichi's bitmasked example: deactivate all, activate a rectangle by writing, paint with a struct-for
    n = 32
    x = wk.field(wk.f32)
    wk.root.bitmasked(wk.ij, (n, n)).place(x)

    @wk.kernel
    def activate():
        for i, j in wk.ndrange((10, 14), (20, 25)):
            x[i, j] = 0

    @wk.kernel
    def paint(t: wk.f32):
        for i, j in x:
            x[i, j] = t

    for t in (0.25, 0.75):
        wk.root.deactivate_all()
        activate()
        paint(t)
        expected = np.zeros((n, n), np.float32)
        expected[10:14, 20:25] = t
        np.testing.assert_array_equal(x.to_numpy(), expected)


def test_dynamic_lists_append_length_and_deactivate(arch):
    y = wk.field(wk.i32)
    lists = wk.root.dense(wk.i, 3).dynamic(wk.j, 8, chunk_size=4)
    lists.place(y)
    lengths = wk.field(wk.i32, shape=4)
    visited = wk.field(wk.i32, shape=())
    assert y.shape == (3, 8) and y.parent() is lists

    @wk.kernel
    def build():
        for i in range(3):
            for j in range(i + 2):
                wk.append(y.parent(), i, j * 10)

    @wk.kernel
    def edit():
        y[1].append(5)
        y[0, 6] = 99                   # a write past the end grows the list to cover it
        y[2].deactivate()
        for i in range(3):
            lengths[i] = y[i].length()
        lengths[3] = wk.length(lists, 0)
        for i, j in y:
            visited[None] += 1

    build()
    assert [wk.length(lists, i) for i in range(3)] == [2, 3, 4]
    edit()
    assert lengths.to_numpy().tolist() == [7, 4, 0, 7] and visited[None] == 11
    np.testing.assert_array_equal(y.to_numpy(), [[0, 10, 0, 0, 0, 0, 99, 0], [0, 10, 20, 5, 0, 0, 0, 0],
                                                 [0] * 8])


def test_dynamic_list_below_the_root_and_its_capacity(arch):
    z = wk.field(wk.f32)
    node = wk.root.dynamic(wk.i, 4)
    node.place(z)
    slots = wk.field(wk.i32, shape=6)

    @wk.kernel
    def push():
        for k in range(6):                       # in parallel: every append gets its own position
            slots[k] = z.append(k * 1.5)

    @wk.kernel
    def size() -> wk.i32:
        return z.length()

    push()
    assert sorted(slots.to_numpy().tolist()) == list(range(6))
    assert size() == 4 and wk.length(node, []) == 4              # appends past the capacity store nothing
    stored = z.to_numpy()
    for k, slot in enumerate(slots.to_numpy()):
        if slot < 4:
            assert stored[slot] == k * 1.5
    node.deactivate_all()
    assert size() == 0 and not z.to_numpy().any()


def test_host_access_activates_and_fill_from_numpy_touch_active_elements(arch):
    x = wk.field(wk.f32)
    cells = wk.root.pointer(wk.i, 4)
    cells.dense(wk.i, 2).place(x)
    x[5] = 3.0
    assert wk.is_active(cells, [2]) == 1 and wk.is_active(cells, 1) == 0
    x.fill(7.0)
    np.testing.assert_array_equal(x.to_numpy(), [0, 0, 0, 0, 7, 7, 0, 0])
    x.from_numpy(np.arange(8, dtype=np.float32))
    np.testing.assert_array_equal(x.to_numpy(), [0, 0, 0, 0, 4, 5, 0, 0])
    wk.activate(cells, [0])
    wk.deactivate(cells, [2])
    assert wk.is_active(cells, [0]) == 1 and wk.is_active(cells, [2]) == 0
    np.testing.assert_array_equal(x.to_numpy(), np.zeros(8))
    x[1] = 1.0
    wk.deactivate_all_snodes()
    assert wk.is_active(cells, [0]) == 0 and x[1] == 0


def test_sparse_grid_scatter_and_gradient(arch):
    # an MPM-style scatter into a pointer grid, a struct-for over the touched cells, and its gradient
    grid = wk.field(wk.f32)
    block = wk.root.pointer(wk.ij, 4)
    block.dense(wk.ij, 4).place(grid)
    wk.root.lazy_grad()
    points = wk.Vector.field(2, wk.f32, shape=3, needs_grad=True)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)
    blocks = wk.field(wk.i32, shape=())

    @wk.kernel
    def scatter():
        for p in points:
            cell = wk.cast(points[p] * 16, wk.i32)
            grid[cell] += points[p].x * points[p].y

    @wk.kernel
    def total():
        for i, j in grid:
            loss[None] += grid[i, j] * grid[i, j]

    @wk.kernel
    def count_blocks():
        for i, j in block:
            blocks[None] += 1

    points.from_numpy(np.array([[0.1, 0.1], [0.12, 0.11], [0.9, 0.5]], np.float32))
    with wk.ad.Tape(loss=loss):
        scatter()
        total()
    count_blocks()
    assert blocks[None] == 2
    p = points.to_numpy().astype(np.float64)
    shared = p[0, 0] * p[0, 1] + p[1, 0] * p[1, 1]          # the first two points share a cell
    np.testing.assert_allclose(loss[None], shared ** 2 + (p[2, 0] * p[2, 1]) ** 2, rtol=1e-5)
    expected = np.array([[2 * shared * p[0, 1], 2 * shared * p[0, 0]], [2 * shared * p[1, 1], 2 * shared * p[1, 0]],
                         [2 * p[2, 0] * p[2, 1] ** 2, 2 * p[2, 0] ** 2 * p[2, 1]]])
    np.testing.assert_allclose(points.grad.to_numpy(), expected, rtol=1e-5)


def test_sparse_errors_name_the_node(arch):
    x, block1, _, pixel = _docs_tree()
    lists = wk.field(wk.i32)
    wk.root.dense(wk.i, 2).dynamic(wk.j, 4).place(lists)

    @wk.kernel
    def dense_query() -> wk.i32:
        return wk.is_active(pixel, [0, 0])

    @wk.kernel
    def wrong_count():
        wk.activate(block1, [0])

    @wk.kernel
    def append_to_pointer():
        wk.append(block1, [0, 0], 1)

    with pytest.raises(wk.CompileError, match=r"is_active\(\) takes a pointer or bitmasked node, not wk.root => "
                                              r"pointer \[4, 4\] => pointer \[8, 8\] => dense \[16, 16\]"):
        dense_query()
    with pytest.raises(wk.CompileError, match=r"activate\(\) on wk.root => pointer \[4, 4\] needs 2 index"):
        wrong_count()
    with pytest.raises(wk.CompileError, match=r"append\(\) takes a dynamic node"):
        append_to_pointer()
    with pytest.raises(wk.WkError, match="hash\\(\\) nodes are not available"):
        wk.root.hash(wk.i, 4)
    with pytest.raises(wk.WkError, match="cannot hang below a dynamic node"):
        wk.root.dynamic(wk.i, 4).dense(wk.j, 2)
    assert wk.length(lists.parent(), [1]) == 0


def test_struct_field_lists(arch):
    # Taichi's marching-squares example: a struct field placed under a dynamic node, appended to in parallel
    Edge = wk.types.struct(p0=wk.math.vec2, p1=wk.math.vec2)
    edges = Edge.field()
    wk.root.dynamic(wk.i, 64, chunk_size=8).place(edges)
    rows = Edge.field()
    wk.root.dense(wk.i, 2).dynamic(wk.j, 4).place(rows)
    assert edges.shape == (64,) and edges.parent().kind == "dynamic"

    @wk.kernel
    def build(n: wk.i32) -> wk.i32:
        edges.deactivate()
        for k in range(n):
            edges.append(Edge(wk.math.vec2(k, 0), wk.math.vec2(k, 1)))
        rows[1].append(Edge(wk.math.vec2(5, 6), wk.math.vec2(7, 8)))
        return edges.length()

    @wk.kernel
    def total() -> wk.f32:
        s = 0.0
        for k in range(edges.length()):
            s += edges[k].p0.x + edges[k].p1.y
        return s

    assert build(10) == 10 and total() == 45.0 + 10
    assert build(3) == 3 and total() == 3.0 + 3
    assert wk.length(rows.parent(), [1]) == 2 and rows.p1.to_numpy()[1, 1].tolist() == [7, 8]


def test_deactivating_a_dense_cell_does_nothing(arch):
    # Taichi: a dense cell is always active, so ti.deactivate on a dense node (say x.parent() under a pointer)
    # leaves the data and the sparse nodes above it alone
    y = wk.field(wk.i32)
    blk = wk.root.pointer(wk.i, 4)
    cells = blk.dense(wk.i, 4)
    cells.place(y)

    @wk.kernel
    def k() -> wk.i32:
        y[5] = 7
        for i in y:
            wk.deactivate(y.parent(), [i])
        return wk.is_active(blk, [1]) * 10 + wk.is_active(blk, [2])

    assert k() == 10 and y[5] == 7
    wk.deactivate(cells, [5])
    assert y[5] == 7
    with pytest.raises(wk.CompileError, match="needs 1 index"):
        @wk.kernel
        def bad():
            wk.deactivate(cells, [1, 2])
        bad()


def test_append_activates_the_pointer_cells_above_the_list(arch):
    # taichi_elements' MPM solver: particles binned into per-block lists under pointer nodes that are cleared
    # every step; appending must activate the blocks (as in Taichi), or the struct-for over the lists sees none
    pid = wk.field(wk.i32)
    grid = wk.root.pointer(wk.ij, 2)
    block = grid.pointer(wk.ij, 2)
    block.dynamic(wk.axes(2), 8).place(pid, offset=(-2, -2, 0))
    points = wk.Vector.field(2, wk.i32, shape=3)
    points.from_numpy(np.array([[0, 0], [3, 1], [3, 1]], dtype=np.int32))
    seen = wk.field(wk.i32, shape=(4, 4))

    @wk.kernel
    def bin_points():
        for p in points:
            wk.append(pid.parent(), points[p], p)

    @wk.kernel
    def visit():
        for I in wk.grouped(pid):
            seen[I[0] + 2, I[1] + 2] += 1 + pid[I]

    for _ in range(2):
        grid.deactivate_all()
        seen.fill(0)
        bin_points()
        visit()
        expected = np.zeros((4, 4), np.int32)
        expected[0, 0], expected[3, 1] = 1, 2 + 3
        np.testing.assert_array_equal(seen.to_numpy(), expected)
        assert wk.is_active(grid, [1, 0]) and wk.is_active(block, [3, 1]) and not wk.is_active(block, [1, 1])


@pytest.mark.parametrize("grouped", [False, True])
def test_struct_for_over_dynamic_lists_visits_each_element_once(arch, grouped):
    # the loop runs over active cells and, in each, over its list's length (not every slot of every list)
    x = wk.field(wk.i32)
    cells = wk.root.pointer(wk.ij, (3, 2))
    cells.dynamic(wk.k, 4).place(x, offset=(1, -1, 0))
    total = wk.field(wk.i32, shape=())
    visits = wk.field(wk.i32, shape=(3, 2, 4))

    @wk.kernel
    def fill():
        for n in range(7):                      # 7 appends to a list of capacity 4: 4 stored
            wk.append(x.parent(), [2, 1], 100 + n)
        wk.append(x.parent(), [0, 0], 7)

    @wk.kernel
    def visit():
        if wk.static(grouped):
            for I in wk.grouped(x):
                if x[I] == 102:
                    continue
                total[None] += x[I]
                visits[I[0] - 1, I[1] + 1, I[2]] += 1
        else:
            for i, j, k in x:
                if x[i, j, k] == 102:
                    continue
                total[None] += x[i, j, k]
                visits[i - 1, j + 1, k] += 1

    fill()
    visit()
    assert total[None] == 7 + 100 + 101 + 103
    expected = np.zeros((3, 2, 4), np.int32)
    expected[2, 1, [0, 1, 3]] = 1
    expected[0, 0, 0] = 1
    np.testing.assert_array_equal(visits.to_numpy(), expected)
    cells.deactivate_all()
    total[None] = 0
    visit()
    assert total[None] == 0


def test_a_sparse_domain_past_what_dense_storage_holds_is_refused_naming_it(arch):
    """A per-pixel dynamic list of thousands of slots over a full-HD image is fine in Taichi (memory is taken as
    lists grow) but stored densely here it is billions of elements: the error says why."""
    color = wk.Vector.field(3, wk.f32)
    with pytest.raises(wk.WkError, match=r"stores sparse nodes densely.*1920 x 1080 x 4096.*dynamic node's capacity"):
        wk.root.dense(wk.ij, (1920, 1080)).dynamic(wk.k, 4096, chunk_size=64).place(color)
    small = wk.field(wk.f32)
    wk.root.dense(wk.ij, (4, 4)).dynamic(wk.k, 8).place(small)
    assert small.shape == (4, 4, 8)


