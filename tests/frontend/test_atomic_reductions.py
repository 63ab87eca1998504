"""Atomic reductions: many indices into one address, register reductions combined per workgroup on GPUs, f16
fields under augmented assignment and atomics, f16 min/max rounding, an atomic called through another name."""
from __future__ import annotations

import numpy as np
import pytest
from tests.frontend.test_atomics import _skip_without_device_support

import wgkern as wk


def test_reductions_to_one_address_over_many_indices(arch) -> None:
    """`total[None] += v` and atomic min/max over a range far larger than a thread block (register
    accumulation, per-warp combining on CUDA): integers exact, floats to rounding."""
    n = 100_003
    values = wk.field(wk.i32, shape=n)
    sums = wk.field(wk.i32, shape=2)
    extremes = wk.field(wk.i32, shape=2)
    fsum = wk.field(wk.f32, shape=())
    data = (np.arange(n, dtype=np.int64) * 7919 % 1000 - 500).astype(np.int32)
    values.from_numpy(data)
    extremes.from_numpy(np.array([1 << 30, -(1 << 30)], np.int32))

    @wk.kernel
    def reduce():
        for i in values:
            sums[0] += values[i]
            sums[1] -= 1
            wk.atomic_min(extremes[0], values[i] * 3)
            wk.atomic_max(extremes[1], values[i] * 3)
            fsum[None] += wk.cast(values[i], wk.f32) * 0.5

    reduce()
    assert sums.to_numpy().tolist() == [int(data.sum()), -n]
    assert extremes.to_numpy().tolist() == [int(data.min()) * 3, int(data.max()) * 3]
    assert fsum[None] == pytest.approx(float(data.sum()) * 0.5, abs=1.0)


def test_register_reductions_combine_over_each_workgroup_on_gpus(arch, monkeypatch) -> None:
    """WGSL on a GPU: each invocation accumulates in a register, the workgroup combines them in workgroup
    memory and one invocation makes the atomic. lavapipe does not use that path (barriers are slow there),
    so this test takes its CPU-adapter mark away to run it here too."""
    from wgkern.backends.wgsl.shader_common import MASKED_BRANCHES
    from wgkern.runtime import program as program_module
    backend = program_module.get_program().backend
    if arch == wk.vulkan:
        monkeypatch.setattr(backend, "features", backend.features - {MASKED_BRANCHES})
    n = 5000                       # not a multiple of the workgroup size: idle invocations add identities
    values = wk.field(wk.f32, shape=n)
    total = wk.field(wk.f32, shape=())
    counts = wk.field(wk.i32, shape=3)
    values.from_numpy(np.linspace(-1, 1, n, dtype=np.float32))
    counts.from_numpy(np.array([0, 1 << 30, -(1 << 30)], np.int32))

    @wk.kernel
    def reduce():
        for i in values:
            if i % 7 == 0:
                continue               # an index that ends early still reaches the workgroup's combine
            total[None] += values[i]
            counts[0] += 1
            wk.atomic_min(counts[1], i)
            wk.atomic_max(counts[2], i)

    reduce()
    kept = np.arange(n)[np.arange(n) % 7 != 0]
    assert counts.to_numpy().tolist() == [len(kept), int(kept.min()), int(kept.max())]
    assert total[None] == pytest.approx(float(np.linspace(-1, 1, n, dtype=np.float64)[kept].sum()), abs=1e-3)
    if arch == wk.vulkan:
        assert "workgroupBarrier();" in reduce.source(arch)


def test_f16_fields_take_augmented_assignment_and_atomics_on_every_arch(arch) -> None:
    """`x[i % 3] += 1` and wk.atomic_max on an f16 field from many threads, plus an f16 gradient accumulated by
    the reverse kernel (WGSL: compare-exchange on the word holding two halves; LLVM: native). Counts stay
    below 2048, where f16 holds every integer."""
    counts = wk.field(wk.f16, shape=3)
    peak = wk.field(wk.f16, shape=3)
    x = wk.field(wk.f16, shape=5, needs_grad=True)
    loss = wk.field(wk.f16, shape=(), needs_grad=True)

    @wk.kernel
    def tally():
        for i in range(1500):
            counts[i % 3] += 1.0
            wk.atomic_max(peak[i % 3], wk.cast(i % 700, wk.f16))

    @wk.kernel
    def total():
        for i in range(40):
            loss[None] += 0.5 * x[i % 5]

    try:
        tally()
    except wk.CompileError as exc:        # a GPU adapter without shader-f16
        _skip_without_device_support(exc)
    np.testing.assert_array_equal(counts.to_numpy(), [500, 500, 500])
    i = np.arange(1500)
    np.testing.assert_array_equal(peak.to_numpy(), [(i[i % 3 == r] % 700).max() for r in range(3)])
    x.from_numpy(np.arange(5, dtype=np.float16))
    total()
    assert loss[None] == 0.5 * 8 * 10
    loss.grad[None] = 1.0
    total.grad()
    np.testing.assert_array_equal(x.grad.to_numpy(), np.full(5, 4.0, np.float16))


def test_f16_min_and_max_fold_values_rounded_to_half(arch) -> None:
    """atomic_min/max of f16 values converted from a loop index, into one element (a chunk-local reduction on
    the CPU) and into a kernel-local serial minimum (Quadrants' test_atomic_float_ops): LLVM's loop vectorizer
    aborted the process on such a loop while the f16 min/max was the f32 intrinsic between conversions."""
    low = wk.field(wk.f16, shape=())
    high = wk.field(wk.f16, shape=())
    smallest = wk.field(wk.f16, shape=())
    low[None] = 100.0
    high[None] = -100.0

    @wk.kernel
    def fold():
        for i in range(128):
            wk.atomic_min(low[None], wk.cast(i * 0.5 - 7.0, wk.f16))
            wk.atomic_max(high[None], wk.cast(i * 0.25, wk.f16))
        m = wk.f16(100.0)
        wk.loop_config(serialize=True)
        for i in range(64):
            m = wk.min(m, wk.cast(i * 0.5 + 2.0, wk.f16))
        smallest[None] = m

    try:
        fold()
    except wk.CompileError as exc:        # a GPU adapter without shader-f16
        _skip_without_device_support(exc)
    assert (low[None], high[None], smallest[None]) == (-7.0, 31.75, 2.0)


@pytest.mark.parametrize("name", ["atomic_add", "atomic_max", "atomic_xor"])
def test_an_atomic_called_through_another_name_reduces_a_kernel_local(arch, name) -> None:
    """Quadrants' test_reduction picks its atomic from a table (`op = ti.atomic_add; op(s, a[i])`): a kernel-scope
    local updated that way in a parallel loop is a reduction as `wk.atomic_add(s, ...)` is (it was a plain
    read-modify-write shared by every thread, losing updates)."""
    n = 1 << 16
    values = wk.field(wk.i64, shape=n)
    data = (np.arange(n, dtype=np.int64) * 7919) % 100_003
    values.from_numpy(data)
    op = getattr(wk, name)
    table = {"op": op}
    chosen = table["op"]

    @wk.kernel
    def through_closure() -> wk.i64:
        s = wk.i64(0)
        for i in values:
            op(s, values[i])
        return s

    @wk.kernel
    def through_another_closure() -> wk.i64:
        s = wk.i64(0)
        for i in values:
            chosen(s, values[i])
        return s

    expected = {"atomic_add": data.sum(), "atomic_max": data.max(),
                "atomic_xor": np.bitwise_xor.reduce(data)}[name]
    for kernel in (through_closure, through_another_closure):
        assert kernel() == expected
        assert f"atomic_{name.removeprefix('atomic_')} " in kernel.ir()
