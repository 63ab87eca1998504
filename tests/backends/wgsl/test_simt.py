"""wk.simt on the WGSL backend (backends/wgsl/simt.py): the workgroup size a loop's block_dim gives, shared
arrays as workgroup memory, the loop over whole blocks, subgroup builtins only where the task uses them; and the
errors: warp intrinsics, an adapter without subgroups, a block_dim past the adapter's limit."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from wgkern.runtime import program as program_module


@pytest.fixture
def vulkan():
    try:
        wk.init(arch=wk.vulkan)
    except wk.ArchUnavailableError as exc:
        pytest.skip(f"no Vulkan adapter: {exc}")
    yield program_module.get_program().backend
    wk.reset()


def test_block_dim_sets_the_workgroup_size_and_shared_arrays_are_workgroup_memory(vulkan):
    out = wk.field(wk.f32, shape=96)

    @wk.kernel
    def tiles():
        wk.loop_config(block_dim=48)
        for i in range(96):
            shared = wk.simt.block.SharedArray((6, 8), wk.f32)
            t = wk.simt.block.thread_idx()
            shared[t // 8, t % 8] = wk.cast(i, wk.f32)
            wk.simt.block.sync()
            out[i] = shared[5 - t // 8, t % 8]
        for i in range(96):            # no block_dim, no simt: the default workgroup and per-thread loop
            out[i] += 0.5

    tiles()
    first, second = tiles.source().split("fn main(")[1:3]
    text = tiles.source()
    assert "@workgroup_size(48)" in text and "@workgroup_size(256)" in text
    assert "var<workgroup> wk_shared1: array<f32, 48>;" in text
    assert "workgroupBarrier();" in first and "var wk_base" in first
    assert "var wk_base" not in second and "subgroup_size" not in text
    i = np.arange(96)
    t = i % 48
    np.testing.assert_array_equal(out.to_numpy(), (i - t) + (5 - t // 8) * 8 + t % 8 + 0.5)


def test_subgroup_builtins_are_declared_only_where_used(vulkan):
    if "subgroup" not in vulkan.features:
        pytest.skip("the adapter has no 'subgroup' feature")
    out = wk.field(wk.i32, shape=64)

    @wk.kernel
    def lanes():
        for i in range(64):
            out[i] = wk.simt.subgroup.invocation_id()

    lanes()
    assert "@builtin(subgroup_invocation_id) wk_subgroup_id: u32" in lanes.source()


def test_partial_last_block_runs_its_threads_and_never_hangs(vulkan):
    """Threads past the range's end skip the body; a barrier in it counts the block's other threads, whose
    results are exact (lavapipe; docs/simt.md)."""
    n, block = 100, 64
    x = wk.field(wk.i32, shape=n)
    out = wk.field(wk.i32, shape=n)

    @wk.kernel
    def neighbours():
        wk.loop_config(block_dim=block)
        for i in range(n):
            t = wk.simt.block.thread_idx()
            shared = wk.simt.block.SharedArray(block, wk.i32)
            shared[t] = x[i]
            wk.simt.block.sync()
            running = wk.min(block, n - (i - t))      # the threads of this block that run the body
            out[i] = shared[t] + shared[(t + 1) % running]

    values = np.arange(n, dtype=np.int32) * 3
    x.from_numpy(values)
    neighbours()
    expected = np.empty(n, np.int32)
    for start in range(0, n, block):
        chunk = values[start:start + block]
        expected[start:start + len(chunk)] = chunk + np.roll(chunk, -1)
    np.testing.assert_array_equal(out.to_numpy(), expected)


def test_warp_intrinsics_are_refused_on_wgsl(vulkan):
    out = wk.field(wk.i32, shape=32)

    @wk.kernel
    def warp():
        for i in range(32):
            out[i] = wk.simt.warp.shfl_down_i32(wk.u32(0xFFFFFFFF), i, 1)

    with pytest.raises(wk.CompileError, match=r"wk\.simt\.warp\.shfl_down_i32\(\) is CUDA's warp intrinsic.*"
                                              r"adapter.*use wk\.simt\.subgroup") as info:
        warp()
    assert "out[i] = wk.simt.warp.shfl_down_i32(" in str(info.value)


def test_subgroups_need_the_adapter_feature(vulkan, monkeypatch):
    monkeypatch.setattr(vulkan, "features", vulkan.features - {"subgroup"})
    out = wk.field(wk.i32, shape=32)

    @wk.kernel
    def reduce():
        for i in range(32):
            out[i] = wk.simt.subgroup.reduce_max(i)

    with pytest.raises(wk.CompileError, match=r"wk\.simt\.subgroup\.reduce_max\(\) needs the device feature "
                                              r"'subgroup', which adapter .* lacks") as info:
        reduce()
    assert "out[i] = wk.simt.subgroup.reduce_max(i)" in str(info.value)


def test_block_dim_past_the_adapter_limit_is_an_error(vulkan, monkeypatch):
    monkeypatch.setattr(vulkan, "max_workgroup_size", 128)
    out = wk.field(wk.i32, shape=32)

    @wk.kernel
    def wide():
        wk.loop_config(block_dim=512)
        for i in range(32):
            out[i] = i

    with pytest.raises(wk.CompileError, match=r"block_dim=512 is more than the 128 invocations per workgroup "
                                              r"adapter .* allows"):
        wide()


def test_shared_arrays_past_the_adapter_workgroup_memory_are_an_error(vulkan, monkeypatch):
    monkeypatch.setattr(vulkan, "max_workgroup_storage", 1024)
    out = wk.field(wk.f32, shape=64)

    @wk.kernel
    def big():
        for i in range(64):
            first = wk.simt.block.SharedArray(200, wk.f32)
            second = wk.simt.block.SharedArray((8, 8), wk.i8)       # widened to 32 bits: 256 bytes
            first[i] = 1.0
            second[i // 8, i % 8] = 1
            out[i] = first[i] + second[i // 8, i % 8]

    with pytest.raises(wk.CompileError, match=r"shared arrays of one block \(SharedArray at line\(s\) \d+, \d+\) "
                                              r"take 1056 bytes, more than the 1024 bytes of workgroup memory"):
        big()


def test_block_dim_past_lavapipe_limit_is_an_error(vulkan):
    out = wk.field(wk.i32, shape=8)
    limit = vulkan.max_workgroup_size

    @wk.kernel
    def wide():
        wk.loop_config(block_dim=limit + 1)
        for i in range(8):
            out[i] = i

    with pytest.raises(wk.CompileError, match=rf"block_dim={limit + 1} is more than the {limit} invocations"):
        wide()


def test_a_partial_block_of_a_run_time_range_runs_masked_lanes_through_its_barriers(vulkan, capfd):
    """n = 100 over blocks of 32: the last block has 4 real invocations and 28 masked lanes. The barrier stays
    in uniform control flow (no per-invocation `if` around the body, as WGSL requires), and the masked lanes
    store nothing, count in no vote, print nothing and raise no bounds error."""
    block, n = 32, 100
    x = wk.field(wk.i32, shape=n + 1)
    out = wk.field(wk.i32, shape=(n, 3))
    touched = wk.field(wk.i32, shape=())

    @wk.kernel
    def partial(n: wk.i32):
        wk.loop_config(block_dim=block)
        for i in range(n):
            shared = wk.simt.block.SharedArray((block,), wk.i32)
            t = wk.simt.block.thread_idx()
            shared[t] = x[i] + x[i + 1]           # x[n] exists: the last real index reads it
            real = wk.simt.block.sync_count_nonzero(1)      # a barrier too
            total = 0
            for k in range(real):                # the slots of masked lanes hold whatever was there before
                total += shared[k]
            out[i, 0] = total
            out[i, 1] = real
            out[i, 2] = t
            wk.atomic_add(touched[None], 1)
            if i == n - 1:
                print("last", i)

    x.from_numpy(np.arange(n + 1, dtype=np.int32))
    partial(n)
    wk.sync()
    source = partial.source()
    assert "let wk_active = wk_k < wk_count;" in source and "if (wk_k < wk_count) {" not in source
    got = out.to_numpy()
    pair = np.arange(n) * 2 + 1                                  # x[i] + x[i + 1]
    for start in range(0, n, block):
        real = min(block, n - start)
        assert (got[start:start + real, 0] == pair[start:start + real].sum()).all(), start
        assert (got[start:start + real, 1] == real).all()
        assert (got[start:start + real, 2] == np.arange(real)).all()
    assert touched[None] == n
    assert capfd.readouterr().out.count("last 99") == 1


def test_masked_lanes_raise_no_bounds_error_under_debug(capfd):
    try:
        wk.init(arch=wk.vulkan, debug=True)
    except wk.ArchUnavailableError as exc:
        pytest.skip(f"no Vulkan adapter: {exc}")
    try:
        x = wk.field(wk.f32, shape=40)
        out = wk.field(wk.f32, shape=40)

        @wk.kernel
        def neighbours(n: wk.i32):
            wk.loop_config(block_dim=32)
            for i in range(n):
                wk.simt.block.sync()
                if i + 1 < n:
                    out[i] = x[i + 1]

        x.from_numpy(np.arange(40, dtype=np.float32))
        neighbours(40)           # 8 masked lanes in the second block
        wk.sync()
        np.testing.assert_array_equal(out.to_numpy()[:39], np.arange(1, 40, dtype=np.float32))
    finally:
        wk.reset()
