"""Lane-vectorised range tasks (backends/llvm/lanes.py): masked inner loops of per-index trip counts, branches
taken by some lanes, local and global stores under masks, chunk reductions, guarded accesses and per-lane
adstacks give what one index at a time gives (checked against float64 references on every arch; on the CPU
with fast_math the kernels run LANES indices at a time), and tasks without a rule stay scalar."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from wgkern.backends.llvm import lanes

from tests.error_bounds import U, assert_within, f32_bound

N = 1003          # not a multiple of LANES: the last group of every chunk is masked


def _expect_lanes(kernel, arch) -> None:
    """On the CPU with fast_math, the kernel's tasks ran lane-vectorised."""
    if arch == wk.cpu and wk.runtime.program.current().backend.fast_math:
        assert kernel.last_compiled.compiled.lanes == lanes.LANES


def test_masked_loops_branches_stores_and_reductions(arch) -> None:
    rng = np.random.default_rng(3)
    xs = rng.uniform(-4, 4, N).astype(np.float32)
    trips = rng.integers(0, 13, N).astype(np.int32)
    x, y = wk.field(wk.f32, shape=N), wk.field(wk.f32, shape=N)
    n, odd = wk.field(wk.i32, shape=N), wk.field(wk.i32, shape=N)
    total, count = wk.field(wk.f32, shape=()), wk.field(wk.i32, shape=())

    @wk.kernel
    def masked():
        for i in x:
            v = x[i]
            acc = 0.0
            others = 0
            for k in range(n[i]):
                if k % 3 == 1:
                    acc += wk.sin(v * k)
                else:
                    acc -= 0.5 * wk.cos(v + k)
                    others += 1
            if acc > 0.0 and i + 5 < N:
                y[i] = acc + x[i + 5]
            else:
                y[i] = acc
            odd[i] = others
            total[None] += acc
            count[None] += others

    x.from_numpy(xs)
    n.from_numpy(trips)
    masked()
    _expect_lanes(masked, arch)

    wide = xs.astype(np.float64)
    acc = np.zeros(N)
    others = np.zeros(N, np.int64)
    for k in range(int(trips.max())):
        active = trips > k
        if k % 3 == 1:
            acc += np.where(active, np.sin(wide * k), 0.0)
        else:
            acc -= np.where(active, 0.5 * np.cos(wide + k), 0.0)
            others += active
    shifted = np.concatenate([wide[5:], np.zeros(5)])
    expected = np.where((acc > 0) & (np.arange(N) + 5 < N), acc + shifted, acc)
    # each of up to 12 terms: an argument of magnitude <= 48 (|v| <= 4 times k <= 12, or v + k), its sin or
    # cos (within 1 ulp), a product and a sum: ~4 ops each, 48 ops at magnitude 48
    bound = f32_bound(48, 48.0)
    np.testing.assert_array_equal(odd.to_numpy(), others)
    assert int(count[None]) == int(others.sum())
    # a sign decided within the bound may take the other branch: those elements add x[i + 5] or not
    decided = np.abs(acc) > bound
    assert_within(y.to_numpy()[decided], expected[decided], bound, "y")
    # the sum of N results each within `bound`, plus N additions at magnitude |sum| <= 12 N
    assert_within(total[None], acc.sum(), N * bound + f32_bound(N, 12 * N), "total")


def test_guarded_reads_past_the_end_read_zero_in_every_lane() -> None:
    """bounds.py: an access outside its container that index analysis cannot rule out is dropped (a load
    gives 0); in a lane-vectorised task the lanes whose index is out of range drop theirs alone."""
    wk.init(arch=wk.cpu, offline_cache=False, fast_math=True)
    try:
        x, y = wk.field(wk.f32, shape=N), wk.field(wk.f32, shape=N)

        @wk.kernel
        def shifted(offset: wk.i32):
            for i in x:
                y[i] = wk.sin(x[i + offset]) + 2.0

        xs = np.linspace(-1, 1, N, dtype=np.float32)
        x.from_numpy(xs)
        shifted(6)
        assert shifted.last_compiled.compiled.lanes == lanes.LANES
        expected = np.concatenate([np.sin(xs[6:].astype(np.float64)), np.zeros(6)]) + 2.0
        assert_within(y.to_numpy(), expected, 2 * U * 3.0, "y")    # sin within 1 ulp, then one rounded add
    finally:
        wk.reset()


def test_gradient_through_per_lane_adstacks(arch) -> None:
    """The bench's adstack workload: v = sin(v) + 0.1 for 0-31 trips by index; x.grad = prod cos(v_k)."""
    x = wk.field(wk.f32, shape=N, needs_grad=True)
    n = wk.field(wk.i32, shape=N)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def chain():
        for i in x:
            v = x[i]
            for _ in range(n[i]):
                v = wk.sin(v) + 0.1
            loss[None] += v

    xs = np.linspace(0, 1, N, dtype=np.float32)
    trips = (np.arange(N) * 7 % 32).astype(np.int32)
    x.from_numpy(xs)
    n.from_numpy(trips)
    chain()
    loss.grad[None] = 1.0
    chain.grad()
    _expect_lanes(chain, arch)

    v = xs.astype(np.float64)
    derivative = np.ones(N)
    step = float(np.float32(0.1))
    for k in range(32):
        active = trips > k
        derivative = np.where(active, derivative * np.cos(v), derivative)
        v = np.where(active, np.sin(v) + step, v)
    # v stays in [0, 1.1]: up to 31 steps of sin (1 ulp) and an add keep v within 62 ops at magnitude 1.1;
    # the product of 31 cosines (each within 1 ulp of cos of a v off by that much: |d cos| <= |dv|) and 31
    # multiplications adds 62 more ops at magnitude 1
    assert_within(x.grad.to_numpy(), derivative, f32_bound(124, 1.1), "x.grad")
    assert_within(loss[None], v.sum(), N * f32_bound(62, 1.1) + f32_bound(N, 1.1 * N), "loss")


@pytest.mark.parametrize("body", ["no_sin", "while_loop"])
def test_tasks_without_a_rule_stay_scalar(body: str) -> None:
    wk.init(arch=wk.cpu, offline_cache=False, fast_math=True)
    try:
        x, y = wk.field(wk.f32, shape=64), wk.field(wk.f32, shape=64)

        @wk.kernel
        def no_sin():
            for i in x:
                y[i] = x[i] * 2.0

        @wk.kernel
        def while_loop():
            for i in x:
                v = x[i]
                while v < 3.0:
                    v = v + wk.sin(v) + 1.0
                y[i] = v

        kernel = {"no_sin": no_sin, "while_loop": while_loop}[body]
        x.from_numpy(np.linspace(0, 1, 64, dtype=np.float32))
        kernel()
        assert kernel.last_compiled.compiled.lanes == 1
    finally:
        wk.reset()
