"""The workgroup size of range tasks follows the device's limits (codegen.default_workgroup_size): 256 where
allowed, else the largest power of two within max_compute_invocations_per_workgroup / max_compute_workgroup_size_x.

`limited` runs wk.init on a real lavapipe device requested with 128 invocations per workgroup (Dawn's
compatibility-mode limit), so a shader declaring more would be refused by wgpu itself."""
from __future__ import annotations

import os

import numpy as np
import pytest

import wgkern as wk
from wgkern.backends.wgsl import adapters as wadapters
from wgkern.backends.wgsl.codegen import default_workgroup_size
from wgkern.backends.wgsl.shader_common import MASKED_BRANCHES
from wgkern.errors import DeviceFeatureError
from wgkern.runtime import program as program_module

LIMIT = 128


def test_default_workgroup_size_within_the_limit() -> None:
    assert [default_workgroup_size(n) for n in (1024, 256, 255, 128, 100, 64)] == [256, 256, 128, 128, 64, 64]


@pytest.fixture(scope="module")
def limited_device():
    try:
        adapter = wadapters.find_adapter("vulkan")
    except (wk.ArchUnavailableError, ImportError) as exc:
        pytest.skip(f"no Vulkan wgpu adapter: {exc}")
    if os.environ.get("WK_WEBGPU_PROFILE") == "baseline":      # what wk.init's device would offer, as device_for
        features = []
        limits = {name: value for name, value in wadapters.WEBGPU_DEFAULT_LIMITS.items() if name in adapter.limits}
    else:
        features = [f for f in wadapters.WANTED_FEATURES if f in adapter.features]
        limits = {name: adapter.limits[name] for name in wadapters.WANTED_LIMITS if name in adapter.limits}
    limits.update({"max-compute-invocations-per-workgroup": LIMIT, "max-compute-workgroup-size-x": LIMIT})
    return adapter.request_device_sync(required_features=features, required_limits=limits)


@pytest.fixture
def limited(limited_device, monkeypatch):
    """wk.init on Vulkan whose device allows LIMIT invocations per workgroup; yields the backend."""
    monkeypatch.setattr(wadapters, "device_for", lambda adapter, profile=None: limited_device)
    wk.init(arch=wk.vulkan)
    backend = program_module.current().backend
    assert int(backend.limits["max-compute-invocations-per-workgroup"]) == LIMIT
    try:
        yield backend
    finally:
        wk.reset()


def test_range_tasks_use_the_largest_size_the_device_allows(limited) -> None:
    n = 100_000
    x = wk.field(wk.f32, shape=n)

    @wk.kernel
    def ramp():
        for i in x:
            x[i] = 2.0 * i

    ramp()
    np.testing.assert_array_equal(x.to_numpy(), 2.0 * np.arange(n, dtype=np.float32))
    shaders = [wgsl for wgsl in limited.shader_modules if "kernel 'ramp'" in wgsl]
    assert shaders and all(f"@workgroup_size({LIMIT})" in wgsl for wgsl in shaders)
    assert limited.workgroup_size == LIMIT


@pytest.mark.parametrize("block_dim", [None, 96])
def test_register_reductions_combine_over_blocks_of_the_chosen_size(limited, monkeypatch, block_dim) -> None:
    """The workgroup tree reduction (off on CPU adapters, forced here) over blocks of LIMIT invocations and of a
    block_dim that is not a power of two: every lane's value counts once and no slot outside the block does
    (a minimum of values >= 5 would see a zero there). Integers: exact."""
    monkeypatch.setattr(limited, "features", limited.features - {MASKED_BRANCHES})
    n = 10_000
    total = wk.field(wk.i32, shape=())
    top = wk.field(wk.i32, shape=())
    low = wk.field(wk.i32, shape=())

    @wk.kernel
    def reduce():
        if wk.static(block_dim is not None):
            wk.loop_config(block_dim=block_dim)
        for i in range(n):
            total[None] += i % 7
            wk.atomic_max(top[None], (i * 37) % 1009)
            wk.atomic_min(low[None], 5 + (i * 13) % 11)

    low[None] = 1 << 30
    reduce()
    values = np.arange(n)
    assert total[None] == int((values % 7).sum())
    assert top[None] == int(((values * 37) % 1009).max())
    assert low[None] == 5
    shaders = [wgsl for wgsl in limited.shader_modules if "kernel 'reduce'" in wgsl]
    assert shaders and all("register reductions" in wgsl for wgsl in shaders)


def test_a_block_dim_past_the_limit_names_the_kernel(limited) -> None:
    out = wk.field(wk.f32, shape=256)

    @wk.kernel
    def wide():
        wk.loop_config(block_dim=256)
        for i in range(256):
            out[i] = 1.0

    with pytest.raises(DeviceFeatureError, match=rf"kernel 'wide': block_dim=256 is more than the {LIMIT} "
                                                 "invocations per workgroup"):
        wide()


def test_reverse_kernels_with_adstacks_size_their_heap_with_the_chosen_size(limited) -> None:
    """d/dx of x * 2^(i % 3) (a loop of run-time trip count) is 2^(i % 3), exact."""
    n = 5000
    x = wk.field(wk.f32, shape=n, needs_grad=True)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def doubled_sum():
        for i in x:
            v = x[i]
            for _ in range(i % 3):
                v = v * 2.0
            loss[None] += v

    x.from_numpy(np.ones(n, np.float32))
    with wk.ad.Tape(loss=loss):
        doubled_sum()
    np.testing.assert_array_equal(x.grad.to_numpy(), (2.0 ** (np.arange(n) % 3)).astype(np.float32))
