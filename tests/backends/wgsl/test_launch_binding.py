"""A launch on the buffers of the kernel's previous launch reuses its bind group (WgslCompiledKernel's
last_binding); a launch on other buffers, or after one of them was freed, binds its own."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import wgkern as wk


@pytest.fixture
def vulkan():
    try:
        wk.init(arch=wk.vulkan, offline_cache=False)
    except wk.ArchUnavailableError as exc:
        pytest.skip(str(exc))
    yield
    wk.reset()


def test_the_same_buffers_reuse_the_bind_group_and_others_get_their_own(vulkan) -> None:
    @wk.kernel
    def add(a: wk.types.ndarray(dtype=wk.f32, ndim=1), v: wk.f32):
        for i in a:
            a[i] += v

    backend = wk.runtime.program.current().backend
    a, b = wk.ndarray(wk.f32, 16), wk.ndarray(wk.f32, 16)
    add(a, 1.0)
    groups = len(backend.bind_groups)
    add(a, 2.0)
    assert len(backend.bind_groups) == groups            # reused, not made again
    add(b, 10.0)
    add(a, 4.0)
    add(b, 20.0)
    np.testing.assert_array_equal(a.to_numpy(), np.full(16, 7.0, np.float32))
    np.testing.assert_array_equal(b.to_numpy(), np.full(16, 30.0, np.float32))
    del b
    gc.collect()
    c = wk.ndarray(wk.f32, 16)                            # may take the freed memory: a new buffer either way
    add(c, 5.0)
    add(a, 1.0)
    np.testing.assert_array_equal(c.to_numpy(), np.full(16, 5.0, np.float32))
    np.testing.assert_array_equal(a.to_numpy(), np.full(16, 8.0, np.float32))
