"""Demoted atomics (wgkern/passes/demote_atomics.py): on each arch, which atomics the compiled kernel still holds
(updates owned by one loop index, gradient accumulations of a DiffTaichi-style step, serial tasks: none; updates
two indices share: all) and that the results are the same. The values are small integers and halves, so every
sum and product here is exact in f32 and is compared exactly."""
from __future__ import annotations

import numpy as np

import wgkern as wk
from wgkern.ir import nodes as ir
from wgkern.ir.visitor import walk


def compiled_atomics(kernel) -> dict[str, int]:
    """Atomic statements per field name in what the backend compiled for the kernel's last launch."""
    counts: dict[str, int] = {}
    for task in kernel.last_compiled.compiled.kernel.tasks:
        for stmt in walk(task.body):
            if isinstance(stmt, ir.AtomicOp):
                counts[stmt.ptr.container.name] = counts.get(stmt.ptr.container.name, 0) + 1
    return counts


def test_updates_owned_by_the_loop_index_are_plain(arch) -> None:
    n = 64
    acc = wk.field(wk.f32, shape=(3, n, 2), name="acc")
    v = wk.field(wk.f32, shape=n, name="v")
    v.from_numpy(np.arange(n, dtype=np.float32) / 2)

    @wk.kernel
    def add(f: wk.i32):
        for p in range(n):
            acc[f, p, 0] += v[p]
            acc[f, p, 1] -= 2 * v[p]
            acc[f + 1, p, 1] += 1.0     # another row: the loop stays inside axis 1, so p still owns it

    add(0)
    add(0)
    add(1)
    assert compiled_atomics(add) == {}
    expected = np.zeros((3, n, 2), np.float32)
    halves = np.arange(n, dtype=np.float32) / 2
    expected[0, :, 0] = 2 * halves
    expected[0, :, 1] = -4 * halves
    expected[1, :, 1] = 2 - 2 * halves
    expected[1, :, 0] = halves
    expected[2, :, 1] = 1
    np.testing.assert_array_equal(acc.to_numpy(), expected)


def test_updates_two_indices_share_stay_atomic(arch) -> None:
    n = 64
    hist = wk.field(wk.f32, shape=4, name="hist")
    rows = wk.field(wk.f32, shape=(2, n), name="rows")
    small = wk.field(wk.i8, shape=n, name="small")

    @wk.kernel
    def count():
        for p in range(n):
            hist[p % 4] += 1.0

    @wk.kernel
    def spill():
        # 2n indices over axis 1 of extent n: rows[0, n + k] is row 1's element k (the flat offset is what
        # decides), which index k also updates through rows[1, k]
        for i in range(2 * n):
            rows[0, i] += 1.0
            rows[1, i] += 1.0

    @wk.kernel
    def narrow():
        for p in range(n):
            small[p] += 1               # owned by p, but 8-bit elements may share a word with their neighbours

    count()
    assert compiled_atomics(count) == {"hist": 1}
    narrow()
    assert compiled_atomics(narrow) == {"small": 1}
    np.testing.assert_array_equal(small.to_numpy(), np.ones(n, np.int8))
    np.testing.assert_array_equal(hist.to_numpy(), np.full(4, n / 4, np.float32))
    spill()
    assert compiled_atomics(spill) == {"rows": 2}


def test_serial_tasks_have_no_atomics(arch) -> None:
    total = wk.field(wk.f32, shape=(), name="total")

    @wk.kernel
    def bump(k: wk.f32):
        total[None] += k
        total[None] += 2 * k

    bump(1.5)
    assert compiled_atomics(bump) == {}
    assert total[None] == 4.5


def test_gradients_of_a_checkpointed_step_accumulate_without_atomics(arch) -> None:
    """x[f + 1, p] = x[f, p]^2 + v[f, p] (DiffTaichi's diffmpm steps read row f and write row f + 1): the reverse
    kernel reads x.grad[f + 1, p] and accumulates into x.grad[f, p] and v.grad[f, p], each owned by p."""
    n, steps = 32, 3
    x = wk.Vector.field(2, wk.f32, shape=(steps, n), name="x", needs_grad=True)
    v = wk.Vector.field(2, wk.f32, shape=(steps, n), name="v", needs_grad=True)
    start = (np.arange(n * 2, dtype=np.float32).reshape(n, 2) % 5) / 2
    x.from_numpy(np.concatenate([start[None], np.zeros((steps - 1, n, 2), np.float32)]))

    @wk.kernel
    def step(f: wk.i32):
        for p in range(n):
            x[f + 1, p] = x[f, p] ** 2 + v[f, p]

    step(0)
    seed = np.zeros((steps, n, 2), np.float32)
    seed[1] = 1.0
    x.grad.from_numpy(seed)
    step.grad(0)
    assert compiled_atomics(step) == {}
    # d x[1] / d x[0] = 2 x[0], d x[1] / d v[0] = 1
    np.testing.assert_array_equal(x.grad.to_numpy()[0], 2 * start)
    np.testing.assert_array_equal(v.grad.to_numpy()[0], np.ones((n, 2), np.float32))
