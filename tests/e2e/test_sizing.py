"""Launch-time adstack sizing through the public API on every arch: exact capacities (heap bytes equal the
formula), the sizer's counters on host and kernel mutation, static kernels, ndarray-argument bounds."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk


def _heap_bytes(capacities_times_slot_bytes: int, range_size: int) -> int:
    backend = wk.runtime.program.current().backend
    return backend.adstack_threads(range_size) * capacities_times_slot_bytes


def _iterate_kernel(x, n, y):
    @wk.kernel
    def iterate():
        for i in x:
            v = x[i]
            for _ in range(n[i]):
                v = wk.sin(v) + 0.1
            y[i] = v
    return iterate


def _fields(size: int = 64):
    x = wk.field(wk.f32, shape=size, needs_grad=True)
    n = wk.field(wk.i32, shape=size)
    y = wk.field(wk.f32, shape=size, needs_grad=True)
    x.from_numpy(np.linspace(0, 1, size, dtype=np.float32))
    y.grad.fill(1.0)
    return x, n, y


def test_capacity_is_exactly_the_largest_trip_count(arch):
    """Also: only a real GPU compiles the WGSL max-reducer; CPU adapters (lavapipe) read bounds back and reduce
    them with numpy (runtime/sizing_context.py)."""
    x, n, y = _fields()
    n.from_numpy((np.arange(64) % 23).astype(np.int32))
    iterate = _iterate_kernel(x, n, y)
    iterate()
    iterate.grad()
    wk.sync()
    # one f32 stack holding cos(v) of every trip (passes/autodiff/derivative_cache.py): max(n) pushes; 4 bytes
    # a slot (the adjoint of a stack's top lives in a register)
    assert wk.stats()["adstack_heap_bytes"] == _heap_bytes(22 * 4, 64)
    backend = wk.runtime.program.current().backend
    gpu_reducer = getattr(backend, "device", None) is not None and not backend.host_sizing
    assert (getattr(backend, "max_reducer_pipeline", None) is not None) == gpu_reducer


def test_counters_stay_flat_in_steady_state_and_advance_on_mutation(arch):
    x, n, y = _fields()
    n.fill(5)
    iterate = _iterate_kernel(x, n, y)

    @wk.kernel
    def grow():
        for i in n:
            n[i] += 3

    iterate()
    iterate.grad()
    wk.sync()
    first = wk.stats()
    assert first["sizer_host_evals"] == 1
    for _ in range(3):
        iterate()
        iterate.grad()
    wk.sync()
    steady = wk.stats()
    assert steady["sizer_host_evals"] == first["sizer_host_evals"]
    assert steady["max_reducer_dispatches"] == first["max_reducer_dispatches"]
    n[7] = 40                                     # a host write bumps the generation
    iterate()
    iterate.grad()
    wk.sync()
    after_host = wk.stats()
    assert after_host["sizer_host_evals"] == steady["sizer_host_evals"] + 1
    assert after_host["adstack_heap_bytes"] == _heap_bytes(40 * 4, 64)
    grow()                                         # so does a kernel that may write n
    iterate()
    iterate.grad()
    wk.sync()
    after_kernel = wk.stats()
    assert after_kernel["sizer_host_evals"] == after_host["sizer_host_evals"] + 1
    assert after_kernel["adstack_heap_bytes"] == _heap_bytes(43 * 4, 64)
    expected = []
    for v, k in zip(x.to_numpy().astype(np.float64), n.to_numpy()):
        d = 1.0
        for _ in range(k):
            d *= np.cos(v)
            v = np.sin(v) + 0.1
        expected.append(d)
    x.grad.fill(0.0)
    y.grad.fill(1.0)
    iterate.grad()
    np.testing.assert_allclose(x.grad.to_numpy(), expected, rtol=1e-4, atol=1e-6)


def test_static_kernels_dispatch_nothing(arch):
    x, _, y = _fields()

    @wk.kernel
    def fixed():
        for i in x:
            v = x[i]
            for _ in range(7):
                v = wk.sin(v)
            y[i] = v

    fixed()
    fixed.grad()
    wk.sync()
    stats = wk.stats()
    assert stats["max_reducer_dispatches"] == 0 and stats["sizer_host_evals"] == 0
    assert stats["adstack_heap_bytes"] == _heap_bytes(7 * 4, 64)


def test_ndarray_bounds_written_by_a_kernel_resize_the_next_launch(arch):
    x = wk.ndarray(wk.f32, shape=32, needs_grad=True)
    n = wk.ndarray(wk.i32, shape=32)
    y = wk.ndarray(wk.f32, shape=32, needs_grad=True)

    @wk.kernel
    def set_trips(n: wk.types.ndarray(), count: wk.i32):
        for i in n:
            n[i] = (i * 7) % count

    @wk.kernel
    def iterate(x: wk.types.ndarray(), n: wk.types.ndarray(), y: wk.types.ndarray()):
        for i in x:
            v = x[i]
            for _ in range(n[i]):
                v = wk.abs(v) * 0.9 + 0.05      # abs reads v: a stack with trips + 1 pushes
            y[i] = v

    x.from_numpy(np.linspace(0, 1, 32, dtype=np.float32))
    for count in (5, 30, 11):
        set_trips(n, count)
        iterate(x, n, y)
        y.grad.fill(1.0)
        x.grad.fill(0.0)
        iterate.grad(x, n, y)
        wk.sync()
        trips = (np.arange(32) * 7) % count
        assert wk.stats()["adstack_heap_bytes"] == _heap_bytes((int(trips.max()) + 1) * 4, 32)
        np.testing.assert_allclose(x.grad.to_numpy(), 0.9 ** trips, rtol=1e-5)


def test_bounds_changed_between_forward_and_grad_raise_not_overflow(arch):
    x, n, y = _fields()
    n.fill(2)
    iterate = _iterate_kernel(x, n, y)
    iterate()
    n.fill(50)
    with pytest.raises(wk.WkError, match="trip count"):
        iterate.grad()


def test_scalar_bounds_and_swapped_ndarrays_resize_each_launch(arch):
    """The per-launch memo (runtime/stack_capacities.py) is keyed by what the size expressions read: a new
    scalar bound or another ndarray of the same shape must be sized afresh, the same ones must not."""
    x = wk.ndarray(wk.f32, shape=16, needs_grad=True)
    y = wk.ndarray(wk.f32, shape=16, needs_grad=True)
    first, second = wk.ndarray(wk.i32, shape=16), wk.ndarray(wk.i32, shape=16)
    first.from_numpy(np.full(16, 3, np.int32))
    second.from_numpy(np.full(16, 9, np.int32))

    @wk.kernel
    def iterate(x: wk.types.ndarray(), n: wk.types.ndarray(), y: wk.types.ndarray(), extra: wk.i32):
        for i in x:
            v = x[i]
            for _ in range(n[i] + extra):
                v = wk.abs(v) * 0.9 + 0.05      # abs reads v: a stack with trips + 1 pushes
            y[i] = v

    x.from_numpy(np.linspace(0.1, 1, 16, dtype=np.float32))
    cases = ((3, 0, first), (5, 2, first), (11, 2, second), (11, 2, second), (3, 0, first))
    for step, (trips, extra, bound) in enumerate(cases):
        iterate(x, bound, y, extra)
        y.grad.fill(1.0)
        x.grad.fill(0.0)
        evals = wk.stats()["sizer_host_evals"]
        iterate.grad(x, bound, y, extra)
        wk.sync()
        assert wk.stats()["adstack_heap_bytes"] == _heap_bytes((trips + 1) * 4, 16)
        np.testing.assert_allclose(x.grad.to_numpy(), np.full(16, 0.9 ** trips), rtol=1e-5)
        if step == 3:     # the same bounds as the launch before: no sizing work at all
            assert wk.stats()["sizer_host_evals"] == evals



def test_bounds_from_offset_pairs_are_sized_exactly(arch):
    """`for k in range(off[i], off[i + 1])` (a CSR row) is no contiguous slice: the reducers evaluate the
    bytecode of off[i + 1] - off[i] over i (on CUDA and AMDGPU in the job kernel, backends/llvm/gpu_sizing_reducer.py);
    the capacity is exactly the longest row, and the gradient is the chain rule's product of cosines."""
    rows = 48
    lengths = (np.arange(rows) * 7) % 11
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    x = wk.field(wk.f32, shape=rows, needs_grad=True)
    y = wk.field(wk.f32, shape=rows, needs_grad=True)
    off = wk.field(wk.i32, shape=rows + 1)
    off.from_numpy(offsets)
    start = np.linspace(0, 1, rows, dtype=np.float32)
    x.from_numpy(start)
    y.grad.fill(1.0)

    @wk.kernel
    def rows_chain():
        for i in x:
            v = x[i]
            for _ in range(off[i], off[i + 1]):
                v = wk.sin(v) + 0.1
            y[i] = v

    rows_chain()
    rows_chain.grad()
    wk.sync()
    assert wk.stats()["adstack_heap_bytes"] == _heap_bytes(int(lengths.max()) * 4, rows)
    expected = np.ones(rows)
    for i in range(rows):
        v = float(start[i])
        for _ in range(lengths[i]):
            expected[i] *= np.cos(v)
            v = np.sin(v) + 0.1
    np.testing.assert_allclose(x.grad.to_numpy(), expected, rtol=1e-4, atol=1e-6)
    kernels = getattr(wk.runtime.program.current().backend, "_reducer_kernels", None)
    if kernels is not None:              # CUDA, AMDGPU: the bound ran as bytecode on the device, not from a read-back
        assert kernels.runs["job"] >= 1


# ---- loop shapes sized exactly (or to a stated sound bound) with default_ad_stack_size=1 -------------------------
# Every kernel iterates v <- sin(v) + 0.1, which keeps cos(v) of each trip on one f32 stack (4-byte slots), so the
# capacity is the largest number of trips one parallel index makes. With default_ad_stack_size=1 a stack left
# unsized would start at one slot and grow (runtime/adstack_regrow.py): re-runs are counted and the heap would
# not be the exact one, so both are checked.

def _chain_reference(start: np.ndarray, trips: np.ndarray) -> np.ndarray:
    """f64 forward values of `trips` iterations of v <- sin(v) + 0.1 from `start`, elementwise."""
    v = start.astype(np.float64).copy()
    for step in range(int(trips.max(initial=0))):
        live = trips > step
        v[live] = np.sin(v[live]) + 0.1
    return v


def _central_difference(start: np.ndarray, trips: np.ndarray) -> np.ndarray:
    # y[p] depends on x[p] alone, so the gradient of sum(y) is the elementwise derivative. Truncation error
    # h^2 / 6 * |y'''| <= 1e-10 / 6 * 12^3 < 3e-8 (each trip's map has derivatives <= 1, at most 12 trips),
    # rounding 1e-16 / h = 1e-11: far below the kernel's f32 error.
    h = 1e-5
    return (_chain_reference(start + h, trips) - _chain_reference(start - h, trips)) / (2 * h)


def _check_chain(kernel, x, y, start: np.ndarray, trips: np.ndarray, capacity: int, threads: int,
                 written: np.ndarray | bool = True, other_stack_bytes: int = 0) -> None:
    """`capacity`: of the f32 stack; `other_stack_bytes`: slot bytes x capacity of the kernel's other stacks;
    `written`: where the kernel writes y (elsewhere the gradient is 0)."""
    x.from_numpy(start.astype(np.float32))
    kernel()
    y.grad.fill(1.0)
    x.grad.fill(0.0)
    kernel.grad()
    wk.sync()
    stacks = [line for line in kernel.ir().splitlines() if "AdStackAlloca" in line]
    assert stacks and all("size_expr=" in line or "capacity=" in line for line in stacks), stacks
    assert wk.stats()["adstack_heap_bytes"] == _heap_bytes(capacity * 4 + other_stack_bytes, threads)
    assert wk.stats()["adstack_reruns"] == 0
    # f32 forward and backward: each of <= 12 trips adds a relative error of a few ulp (6e-8) to the product
    # of cosines and to v (|d cos / dv| <= 1), so the gradient's error stays below 12 * 4 * 6e-8 < 3e-6 relative
    # plus the absolute rounding of values near 0; rtol 1e-4 / atol 1e-6 leave a wide margin.
    expected = np.where(written, _central_difference(start, trips), 0.0)
    np.testing.assert_allclose(x.grad.to_numpy(), expected, rtol=1e-4, atol=1e-6)


def test_two_d_loops_size_each_coordinate_exactly(arch):
    wk.init(arch=arch, default_ad_stack_size=1)
    x = wk.field(wk.f32, shape=(6, 5), needs_grad=True)
    y = wk.field(wk.f32, shape=(6, 5), needs_grad=True)
    n = wk.field(wk.i32, shape=(6, 5))
    m = wk.field(wk.i32, shape=6)
    trips2 = (np.arange(30).reshape(6, 5) * 7) % 11 - 2
    rows = np.array([3, 0, 5, 1, 2, 4], np.int32)
    n.from_numpy(trips2.astype(np.int32))
    m.from_numpy(rows)

    @wk.kernel
    def struct_for():
        for i, j in x:
            v = x[i, j]
            for _ in range(n[i, j]):
                v = wk.sin(v) + 0.1
            for _ in range(m[i]):
                v = wk.sin(v) + 0.1
            y[i, j] = v

    start = np.linspace(-1, 1, 30).reshape(6, 5)
    trips = np.maximum(trips2, 0) + rows[:, None]
    # two loops: the stack keeps v itself (one push before them, one per trip): 1 + the largest row of trips
    _check_chain(struct_for, x, y, start, trips, 1 + int(trips.max()), 30)


def test_ndrange_box_and_modulo_index_are_exact(arch):
    wk.init(arch=arch, default_ad_stack_size=1)
    x = wk.field(wk.f32, shape=(5, 4), needs_grad=True)
    y = wk.field(wk.f32, shape=(5, 4), needs_grad=True)
    n = wk.field(wk.i32, shape=(5, 4))
    bound = np.full((5, 4), 40, np.int32)                   # outside the box: 40 trips nobody makes
    bound[1:4, 1:3] = [[3, 7], [0, 5], [9, 2]]
    n.from_numpy(bound)

    @wk.kernel
    def box():
        for i, j in wk.ndrange((1, 4), (1, 3)):
            v = x[i, j]
            for _ in range(n[(i + 1) % 3 + 1, j]):         # the next row of the box, cyclically
                v = wk.sin(v) + 0.1
            y[i, j] = v

    start = np.linspace(0, 1, 20).reshape(5, 4)
    trips = np.zeros((5, 4), np.int64)
    written = np.zeros((5, 4), bool)
    for i in range(1, 4):
        for j in range(1, 3):
            trips[i, j] = bound[(i + 1) % 3 + 1, j]
            written[i, j] = True
    _check_chain(box, x, y, start, trips, 9, 6, written)


def test_func_locals_steps_and_min_are_sized(arch):
    wk.init(arch=arch, default_ad_stack_size=1)
    x = wk.field(wk.f32, shape=16, needs_grad=True)
    y = wk.field(wk.f32, shape=16, needs_grad=True)
    n = wk.field(wk.i32, shape=16)
    counts = (np.arange(16) * 5) % 13 - 3
    n.from_numpy(counts.astype(np.int32))

    @wk.func
    def chain(v, count):
        m = wk.min(count, 8)
        if v > 0.5:
            m += 2
        for _ in range(1, m, 2):
            v = wk.sin(v) + 0.1
        return v

    @wk.kernel
    def funcs():
        for i in x:
            y[i] = chain(x[i], n[i])

    start = np.linspace(0, 1, 16)
    m = np.minimum(counts, 8) + np.where(start.astype(np.float32) > 0.5, 2, 0)
    trips = np.maximum(-(-(m - 1) // 2), 0)
    # the local is min(n, 8) or min(n, 8) + 2: bounded by max over i of min(n, 8) + 2 = 10, (10 - 1) / 2 -> 5
    _check_chain(funcs, x, y, start, trips, 5, 16)


def test_triangular_loops_and_whole_axis_bounds(arch):
    wk.init(arch=arch, default_ad_stack_size=1)
    x = wk.field(wk.f32, shape=8, needs_grad=True)
    y = wk.field(wk.f32, shape=8, needs_grad=True)
    n = wk.field(wk.i32, shape=8)
    k = wk.field(wk.i32, shape=8)
    counts = np.array([2, 4, 1, 0, 3, 4, 2, 1], np.int32)
    n.from_numpy(counts)
    k.from_numpy(np.arange(8, dtype=np.int32)[::-1].copy())

    @wk.kernel
    def triangle():
        for i in x:
            v = x[i]
            for j in range(n[k[i] & 7]):           # `&` is outside the grammar: bounded by max(n)
                for _ in range(j):
                    v = wk.sin(v) + 0.1
            y[i] = v

    start = np.linspace(0, 1, 8)
    c = counts[(np.arange(8)[::-1]) & 7]
    trips = c * (c - 1) // 2
    # per-level maxima: max(n) = 4 trips of an inner loop of at most 3 (the exact need is 4 * 3 / 2 = 6)
    _check_chain(triangle, x, y, start, trips, 4 * 3, 8)


def test_loop_carried_counts_are_bounded_by_their_increments(arch):
    wk.init(arch=arch, default_ad_stack_size=1)
    x = wk.field(wk.f32, shape=8, needs_grad=True)
    y = wk.field(wk.f32, shape=8, needs_grad=True)
    n = wk.field(wk.i32, shape=8)
    counts = np.array([3, 0, 2, 4, 1, 3, 2, 4], np.int32)
    n.from_numpy(counts)

    @wk.kernel
    def growing():
        for i in x:
            v = x[i]
            m = 0
            for _ in range(n[i]):
                m += 1
                for _ in range(m):
                    v = wk.sin(v) + 0.1
            y[i] = v

    start = np.linspace(0, 1, 8)
    trips = counts * (counts + 1) // 2
    # m is carried on an i32 stack; it starts at 0 and gains 1 per outer trip, so the inner bound m + 1 read
    # from the stack is at most max(n) + 1 = 5: 4 outer trips x 5 (the exact need is 4 * 5 / 2 = 10). The i32
    # stack of m holds 1 + max(n) = 5 values, the i32 stack replaying the inner bound max(n) = 4.
    _check_chain(growing, x, y, start, trips, 4 * 5, 8, other_stack_bytes=4 * (5 + 4))


def test_sparse_struct_for_is_sized_per_block(arch):
    """A struct-for over a pointer block runs one unit per block, its cells serially: the stack holds the pushes
    of every cell of the block, bounded by 4 cells x the largest bound of any cell (active or not)."""
    wk.init(arch=arch, default_ad_stack_size=1)
    x = wk.field(wk.f32, needs_grad=True)
    n = wk.field(wk.i32)
    block = wk.root.pointer(wk.i, 4).dense(wk.i, 4)
    block.place(x, x.grad)
    block.place(n)
    y = wk.field(wk.f32, shape=16, needs_grad=True)
    active = np.array([0, 3, 9, 13, 14])                  # blocks 0, 2 and 3 (cells 4-7 stay inactive)
    counts = np.zeros(16, np.int64)
    counts[active] = [2, 5, 1, 4, 3]

    @wk.kernel
    def activate(values: wk.types.ndarray(), cells: wk.types.ndarray()):
        for c in range(cells.shape[0]):
            n[cells[c]] = values[c]
            x[cells[c]] = 0.0

    @wk.kernel
    def chain():
        for i in x:
            v = x[i]
            for _ in range(n[i]):
                v = wk.sin(v) + 0.1
            y[i] = v

    activate(counts[active].astype(np.int32), active.astype(np.int32))
    start = np.zeros(16)
    start[active] = np.linspace(0.2, 0.9, len(active))
    visited = np.arange(16) // 4 != 1                    # every cell of an active block
    _check_chain(chain, x, y, start, counts, 4 * 5, 4, visited)



def test_fuzz_shaped_nesting_is_sized_exactly(arch):
    """The shape the fuzzer generates: a func called in a loop, sibling loops inside its loop, every bound a
    table read at a computed index, several push sites. Each push site repeats the same inner maxima
    (`max_{j0} ... * max_{j0} max_{j1} ...`); a reducer job gives each distinct one a single axis
    (sizing/reducers.py), so the job stays small enough to enumerate exactly instead of one axis per copy."""
    wk.init(arch=arch, default_ad_stack_size=1)
    size = 8
    x = wk.field(wk.f32, shape=size, needs_grad=True)
    y = wk.field(wk.f32, shape=size, needs_grad=True)
    tables = {name: wk.field(wk.i32, shape=size) for name in "dabc"}
    data = {"d": np.array([6, 1, 3, 0, 2, 5, 1, 2]), "a": np.array([1, 6, 2, 2, 0, 3, 1, 2]),
            "b": np.array([0, 2, 1, 0, 1, 0, 2, 0]), "c": np.array([2, 0, 0, 1, 0, 2, 1, 0])}
    for name, values in data.items():
        tables[name].from_numpy(values.astype(np.int32))
    d, a, b, c = (tables[name] for name in "dabc")

    @wk.func
    def visit(v, i):
        for t in range(a[(i * 3 + 2) % size]):
            for _ in range(b[(t + 2) % size]):
                v = wk.sin(v) + 0.1
            for _ in range(c[(t * 3 + 2) % size]):
                v = wk.sin(v) + 0.1
                v = wk.sin(v) + 0.1
                v = wk.sin(v) + 0.1
                v = wk.sin(v) + 0.1
        return v

    @wk.kernel
    def nested():
        for i in x:
            v = x[i]
            for t in range(d[(2 * i) % size]):
                v = visit(v, (t + i) % size)
            y[i] = v

    trips = np.zeros(size, np.int64)
    for i in range(size):
        for t in range(data["d"][(2 * i) % size]):
            for s in range(data["a"][(((t + i) % size) * 3 + 2) % size]):
                trips[i] += data["b"][(s + 2) % size] + 4 * data["c"][(s * 3 + 2) % size]
    assert trips.max() == 66                           # the tolerance below assumes at most 66 trips
    start = np.linspace(0, 1, size)
    x.from_numpy(start.astype(np.float32))
    nested()
    y.grad.fill(1.0)
    x.grad.fill(0.0)
    nested.grad()
    wk.sync()
    assert wk.stats()["adstack_reruns"] == 0           # every stack was sized soundly in advance
    assert wk.stats()["adstack_heap_bytes"] >= _heap_bytes(int(trips.max()) * 4, size)
    # y[p] depends on x[p] alone: the gradient of sum(y) is elementwise, y = f^K(x) with f(v) = sin(v) + 0.1 and
    # K = trips[p] <= 66. With |f'|, |f''|, |f'''| <= 1: |(f^K)''| <= K and |(f^K)'''| <= sum over k of
    # (1 + 3 (k - 1)) <= 1.5 K^2, so the central difference's truncation error h^2 / 6 * 1.5 * 66^2 < 2e-9 at
    # h = 1e-6; rounding 1e-16 / h = 1e-10. The kernel's f32 error: each trip adds a few ulp (6e-8) relative
    # to v and to the product of cosines, 66 * 4 * 6e-8 < 1.6e-5 relative: rtol 1e-4, atol 1e-6.
    h = 1e-6
    expected = (_chain_reference(start + h, trips) - _chain_reference(start - h, trips)) / (2 * h)
    np.testing.assert_allclose(x.grad.to_numpy(), expected, rtol=1e-4, atol=1e-6)
