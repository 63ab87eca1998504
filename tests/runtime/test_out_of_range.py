"""Out-of-range accesses on every arch (docs/internals.md, "Out-of-range accesses"): an access whose flat element
offset lies outside its container is dropped (a store or an atomic, which then returns 0) or reads 0, and
nothing else in memory changes. Each test states the expected contents with numpy, so the arches agree with
each other by agreeing with it. Offsets include ones far outside (i + 10**8, i - 10**9) and i + 2**31 - 1,
which wraps to a negative index for i >= 1 (kernel integers are 32-bit on every arch)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import wgkern as wk

REPO = Path(__file__).resolve().parents[2]

N = 16
OFFSETS = [1000, 10 ** 8, -10 ** 9, 2 ** 31 - 1, 3, -5]


def _wrap_i32(value: int) -> int:
    return (value + 2 ** 31) % 2 ** 32 - 2 ** 31


def _targets(offset: int, n: int = N) -> np.ndarray:
    """i + offset as a kernel computes it (32-bit), for i in range(n)."""
    return np.array([_wrap_i32(i + offset) for i in range(n)], dtype=np.int64)


@pytest.mark.parametrize("offset", OFFSETS)
def test_field_stores_loads_and_atomics(arch, offset):
    x = wk.field(wk.f32, shape=N)
    seen = wk.field(wk.f32, shape=N)
    old = wk.field(wk.f32, shape=N)

    @wk.kernel
    def shifted(k: wk.i32):
        for i in x:
            x[i + k] = 10.0 + i
            seen[i] = x[i + k]
            old[i] = wk.atomic_add(x[i + k], 0.5)

    x.fill(-1.0)
    shifted(offset)
    targets = _targets(offset)
    inside = (targets >= 0) & (targets < N)
    want = np.full(N, -1.0, np.float32)
    for i in np.flatnonzero(inside):          # no two indices share a target: no race decides a value
        want[targets[i]] = 10.0 + i + 0.5
    np.testing.assert_array_equal(x.to_numpy(), want)
    np.testing.assert_array_equal(seen.to_numpy()[~inside], 0.0)
    np.testing.assert_array_equal(old.to_numpy()[~inside], 0.0)
    got_old = old.to_numpy()[inside]
    np.testing.assert_array_equal(got_old, 10.0 + np.flatnonzero(inside))


@pytest.mark.parametrize("offset", [1000, -10 ** 9, 2 ** 31 - 1])
def test_ndarray_rows_and_columns_use_the_flat_offset(arch, offset):
    """a[i, j + k] with j + k outside its axis but the flat offset inside the array is that element (as robust
    buffer access would give); outside the whole array it is dropped."""
    rows, cols = 4, 5
    a = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
    out = np.zeros((rows, cols), np.float32)

    @wk.kernel
    def read_shifted(src: wk.types.ndarray(dtype=wk.f32, ndim=2), dst: wk.types.ndarray(dtype=wk.f32, ndim=2),
                     k: wk.i32):
        for i, j in src:
            dst[i, j] = src[i, j + k]
            src[i + k, j] = -1.0

    read_shifted(a, out, offset)
    flat = np.arange(rows * cols).reshape(rows, cols)
    want = np.zeros((rows, cols), np.float32)
    for i in range(rows):
        for j in range(cols):
            target = i * cols + _wrap_i32(j + offset)
            if 0 <= target < rows * cols:
                want[i, j] = flat.reshape(-1)[target]
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(a, flat.astype(np.float32))   # every row i + k is outside


def test_small_shift_stays_within_ndarray(arch):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = np.zeros((3, 4), np.float32)

    @wk.kernel
    def next_row(src: wk.types.ndarray(dtype=wk.f32, ndim=2), dst: wk.types.ndarray(dtype=wk.f32, ndim=2)):
        for i, j in src:
            dst[i, j] = src[i + 1, j]

    next_row(a, out)
    np.testing.assert_array_equal(out, np.concatenate([a[1:], np.zeros((1, 4), np.float32)]))


@pytest.mark.parametrize("offset", [1000, -10 ** 9])
def test_vector_matrix_and_struct_fields(arch, offset):
    v = wk.Vector.field(3, wk.f32, shape=N)
    m = wk.Matrix.field(2, 2, wk.i32, shape=N)
    s = wk.Struct.field({"a": wk.f32, "b": wk.i32}, shape=N)
    z = wk.field(wk.f32, shape=())
    got = wk.Vector.field(4, wk.f32, shape=N)

    @wk.kernel
    def touch(k: wk.i32):
        for i in v:
            v[i + k] = wk.Vector([1.0, 2.0, 3.0])
            v[i][2 + k] = 7.0                  # a component far outside: outside the whole field too
            m[i + k][1, 1] = 9
            wk.atomic_max(m[i + k][0, 1], 4)
            s[i + k].a = 5.0
            s[i + k].b += 6
            z[None] += 1.0
            got[i] = wk.Vector([v[i + k][1], m[i + k][1, 1], s[i + k].a, s[i + k].b])

    v.fill(-1.0)
    m.fill(-2)
    touch(offset)
    np.testing.assert_array_equal(v.to_numpy(), -1.0)
    np.testing.assert_array_equal(m.to_numpy(), -2)
    np.testing.assert_array_equal(s.a.to_numpy(), 0.0)
    np.testing.assert_array_equal(s.b.to_numpy(), 0)
    np.testing.assert_array_equal(got.to_numpy(), 0.0)
    assert z[None] == N


def test_vector_and_matrix_ndarrays_at_rows_read_from_memory(arch):
    """Every component of a vector or matrix element at an out-of-range row reads 0 and is not written, and
    rows inside (the first, the last) are whole, whether the row is a loop index or read from memory."""
    rows = np.array([0, N - 1, -1, N, 3, 2 ** 31 - 1, -2 ** 31, 10 ** 8], np.int32)
    v = wk.Vector.ndarray(3, wk.f32, shape=N)
    m = wk.Matrix.ndarray(2, 2, wk.i32, shape=N)
    which = wk.ndarray(wk.i32, shape=len(rows))
    got = wk.Vector.ndarray(4, wk.f32, shape=len(rows))

    @wk.kernel
    def gather_and_scatter(v: wk.types.ndarray(), m: wk.types.ndarray(), which: wk.types.ndarray(),
                           got: wk.types.ndarray()):
        for i in which:
            j = which[i]
            p, q = v[j], m[j]
            got[i] = wk.Vector([p[0] + p[1] + p[2], q[0, 0], q[1, 1], q[0, 1] + q[1, 0]])
            v[j + N] = wk.Vector([-1.0, -2.0, -3.0])          # inside for j = -1 alone
            m[j][1, 0] = 100 + i

    table = np.arange(3 * N, dtype=np.float32).reshape(N, 3)
    mats = np.arange(4 * N, dtype=np.int32).reshape(N, 2, 2)
    v.from_numpy(table)
    m.from_numpy(mats)
    which.from_numpy(rows)
    gather_and_scatter(v, m, which, got)
    want = np.zeros((len(rows), 4), np.float32)
    want_v, want_m = table.copy(), mats.copy()
    for i, r in enumerate(rows):
        if 0 <= r < N:
            want[i] = [table[r].sum(), mats[r, 0, 0], mats[r, 1, 1], mats[r, 0, 1] + mats[r, 1, 0]]
            want_m[r, 1, 0] = 100 + i
        if 0 <= _wrap_i32(int(r) + N) < N:
            want_v[_wrap_i32(int(r) + N)] = [-1.0, -2.0, -3.0]
    np.testing.assert_array_equal(got.to_numpy(), want)
    np.testing.assert_array_equal(v.to_numpy(), want_v)
    np.testing.assert_array_equal(m.to_numpy(), want_m)


@pytest.mark.parametrize("layout", ["pointer", "bitmasked", "dynamic"])
def test_sparse_fields_activate_nothing_out_of_range(arch, layout):
    x = wk.field(wk.f32)
    if layout == "dynamic":
        block = wk.root.dense(wk.i, 4)
        block.dynamic(wk.j, 8).place(x)
    else:
        block = getattr(wk.root, layout)(wk.i, 4)
        block.dense(wk.i, 4).place(x)
    count = wk.field(wk.i32, shape=())
    got = wk.field(wk.f32, shape=4)

    @wk.kernel
    def write(k: wk.i32):
        for i in range(4):
            if wk.static(layout == "dynamic"):
                x[i + k, 0] = 1.0
                got[i] = x[i + k, 0]
            else:
                x[i + k] = 1.0
                got[i] = x[i + k]
        for I in wk.grouped(x):
            count[None] += 1

    write(10 ** 8)
    assert count[None] == 0
    np.testing.assert_array_equal(got.to_numpy(), 0.0)
    np.testing.assert_array_equal(x.to_numpy(), 0.0)


@pytest.mark.parametrize("offset", [1000, -10 ** 9, 2])
def test_gradients_of_out_of_range_reads_are_dropped(arch, offset):
    """y[i] = x[i + k]^2: the reverse kernel adds 2 x y.grad into x.grad[i + k], an atomic dropped outside."""
    x = wk.field(wk.f32, shape=N, needs_grad=True)
    y = wk.field(wk.f32, shape=N, needs_grad=True)

    @wk.kernel
    def square(k: wk.i32):
        for i in y:
            y[i] = x[i + k] * x[i + k]

    x.from_numpy(np.arange(N, dtype=np.float32))
    square(offset)
    y.grad.fill(1.0)
    square.grad(offset)
    targets = _targets(offset)
    inside = (targets >= 0) & (targets < N)
    want_y = np.where(inside, np.clip(targets, 0, N - 1) ** 2, 0).astype(np.float32)
    np.testing.assert_array_equal(y.to_numpy(), want_y)
    want_grad = np.zeros(N, np.float32)
    want_grad[targets[inside]] = 2.0 * targets[inside]
    np.testing.assert_array_equal(x.grad.to_numpy(), want_grad)


def test_a_reduction_into_an_out_of_range_element_is_dropped(arch):
    total = wk.ndarray(wk.f32, shape=3)
    x = wk.field(wk.f32, shape=1024)

    @wk.kernel
    def add_up(t: wk.types.ndarray(dtype=wk.f32, ndim=1)):
        for i in x:
            t[5] += x[i]
            t[1] += x[i]

    x.fill(1.0)
    add_up(total)
    np.testing.assert_array_equal(total.to_numpy(), [0.0, 1024.0, 0.0])


def test_a_kernel_binding_many_containers_keeps_each_one_apart(arch):
    """Past the device's storage-binding limit (32 on lavapipe) the WGSL backend packs containers of one type into
    one arena buffer: a write past the end of one must still not reach its neighbours."""
    fields = [wk.field(wk.f32, shape=64) for _ in range(40)]
    first, total = fields[0], fields[1]

    @wk.kernel
    def spill(k: wk.i32):
        for i in first:
            first[i + k] = 5.0
            first[i - k] = 6.0
        for i in total:
            s = 0.0
            for f in wk.static(fields[2:]):
                s += f[i]
            total[i] = s

    for f in fields:
        f.fill(0.0)
    spill(64)
    for f in fields:
        np.testing.assert_array_equal(f.to_numpy(), 0.0)


@pytest.mark.parametrize("offset", [1000, 10 ** 8, -1])
def test_debug_still_reports_the_line_and_container(arch, offset):
    wk.init(arch=arch, debug=True)
    x = wk.field(wk.f32, shape=N)

    @wk.kernel
    def poke(k: wk.i32):
        for i in x:
            x[i + k] = 1.0       # the reported line

    # "Out of bound access" is Quadrants' phrase for the same check
    with pytest.raises(wk.BoundsCheckError, match=r"(?s)index out of range for x of shape \(16,\) \(Out of bound "
                                                  r"access; .*x\[i \+ k\] = 1\.0"):
        poke(offset)
        wk.sync()
    targets = _targets(offset)
    want = np.zeros(N, np.float32)
    want[targets[(targets >= 0) & (targets < N)]] = 1.0      # the accesses inside still ran
    np.testing.assert_array_equal(x.to_numpy(), want)


_SCRIPT = textwrap.dedent("""
    import numpy as np, wgkern as wk
    wk.init(arch=getattr(wk, "{arch}"))
    x = wk.field(wk.f32, shape=1024)
    y = wk.field(wk.f32, shape=1024)

    @wk.kernel
    def scatter(k: wk.i32):
        for i in x:
            x[i + k] = 1.0
            y[i] = x[i + k] + 2.0
            wk.atomic_add(x[i - k], 1.0)

    for k in (1000, 10 ** 8, -10 ** 9, 2 ** 31 - 1, 10 ** 9):
        scatter(k)
        print(k, float(x.to_numpy().sum()), float(y.to_numpy().sum()))
    """)


def test_far_out_of_range_writes_do_not_crash_the_process(arch, tmp_path):
    """A new user's segfault: writes at i + 10**8 (and more) into a 1024-element field, in a fresh process."""
    script = tmp_path / "scatter.py"
    script.write_text(_SCRIPT.format(arch=arch.value))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get(
                              "PYTHONPATH")]))})
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.split()
    # k = 1000: x[i + 1000] hits x[1000..1023] (24 ones); y = x[i + 1000] + 2 is 3 there, 2 elsewhere;
    # x[i - 1000] += 1 adds one at 0..23 (24 more). The farther offsets touch nothing but y (2 each).
    assert lines[:3] == ["1000", "48.0", str(24 * 3.0 + 1000 * 2.0)]
    for k, line in zip((10 ** 8, -10 ** 9, 2 ** 31 - 1, 10 ** 9), np.array(lines[3:]).reshape(-1, 3)):
        assert list(line) == [str(k), "48.0", "2048.0"]


def test_a_blocks_shared_array_drops_out_of_range_writes(gpu):
    """wk.simt.block.SharedArray follows the same rule: a write past its end reaches neither the array's other
    elements nor anything else, a read there gives 0."""
    block = 64
    x = wk.field(wk.f32, shape=block)
    got = wk.field(wk.f32, shape=block)
    past = wk.field(wk.f32, shape=block)

    @wk.kernel
    def stage(k: wk.i32):
        wk.loop_config(block_dim=block)
        for i in x:
            t = i % block
            shared = wk.simt.block.SharedArray(block, wk.f32)
            shared[t] = x[i]
            wk.simt.block.sync()
            shared[t + k] = -1.0
            wk.simt.block.sync()
            got[i] = shared[t]
            past[i] = shared[t + k]

    x.from_numpy(np.arange(block, dtype=np.float32))
    stage(block)
    np.testing.assert_array_equal(got.to_numpy(), np.arange(block, dtype=np.float32))
    np.testing.assert_array_equal(past.to_numpy(), 0.0)


@pytest.mark.parametrize("offset", [1, -3, 2047, 2048, -4999, 5000])
def test_shifted_copies_across_many_blocks(arch, offset):
    """The CPU runs `x[i + k]` in blocks of 2048 indices, unguarded where a block's ends are in range: every
    block boundary and both ends of the field must still come out right."""
    n = 5000
    x = wk.field(wk.i32, shape=n)
    y = wk.field(wk.i32, shape=n)
    z = wk.field(wk.i32, shape=n)

    @wk.kernel
    def shift(k: wk.i32):
        for i in y:
            y[i] = x[i + k] + 1
            z[i - k] = -i

    x.from_numpy(np.arange(n, dtype=np.int32))
    z.fill(7)
    shift(offset)
    source = np.arange(n) + offset
    inside = (source >= 0) & (source < n)
    np.testing.assert_array_equal(y.to_numpy(), np.where(inside, source, 0) + 1)
    want_z = np.full(n, 7)
    target = np.arange(n) - offset
    kept = (target >= 0) & (target < n)
    want_z[target[kept]] = -np.arange(n)[kept]
    np.testing.assert_array_equal(z.to_numpy(), want_z)


def test_the_flat_offset_follows_axis_order_whatever_the_nesting(arch):
    """Placed fields are stored row-major in axis order (i, j, k, l) whatever the nesting of their dense nodes,
    and the flat offset that decides an access outside an axis is over that layout. difftaichi's
    misc/rigid_body_* examples place x with dense(l, steps).dense(i, 1) (shape (1, steps)) and write x[t, 0]:
    for t >= 1 its flat offset t * steps is outside the field, so the write is dropped and a read gives 0, on
    every arch. (Taichi's release build computes the offset along the nesting, l outer, and reaches x[0, t]
    instead; its debug mode reports the access, as wgkern's does.)"""
    steps = 8
    x = wk.field(wk.f32)
    y = wk.field(wk.f32)
    wk.root.dense(wk.l, steps).dense(wk.i, 1).place(x)
    wk.root.dense(wk.l, steps).dense(wk.i, 3).place(y)
    assert x.shape == (1, steps) and y.shape == (3, steps)

    @wk.kernel
    def write():
        for t in range(steps):
            x[t, 0] = t + 1.0
            y[t, 1] = 10.0 + t

    @wk.kernel
    def read(t: wk.i32) -> wk.f32:
        return x[t, 0]

    write()
    want_x = np.zeros((1, steps), np.float32)
    want_x[0, 0] = 1.0                          # t = 0 only
    want_y = np.zeros((3, steps), np.float32)
    for t in range(steps):
        flat = t * steps + 1                    # row-major over (i, l)
        if flat < y.to_numpy().size:
            want_y.reshape(-1)[flat] = 10.0 + t
    np.testing.assert_array_equal(x.to_numpy(), want_x)
    np.testing.assert_array_equal(y.to_numpy(), want_y)
    assert [read(t) for t in range(3)] == [1.0, 0.0, 0.0]

    wk.init(arch=arch, debug=True)
    z = wk.field(wk.f32)
    wk.root.dense(wk.l, steps).dense(wk.i, 1).place(z)

    @wk.kernel
    def write_debug():
        for t in range(steps):
            z[t, 0] = 1.0       # the reported line

    with pytest.raises(wk.BoundsCheckError, match=r"(?s)index out of range for z of shape \(1, 8\).*z\[t, 0\]"):
        write_debug()
        wk.sync()
