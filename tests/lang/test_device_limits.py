"""wk.lang.impl.get_max_shared_memory_bytes() (Quadrants'; lang/device_limits.py) against what a block's shared arrays
may take on each arch."""
from __future__ import annotations

import pytest

import wgkern as wk


def test_max_shared_memory_bytes_is_what_a_block_may_use(arch):
    size = wk.lang.impl.get_max_shared_memory_bytes(is_lowerbound_ok=True)
    if arch == wk.cpu:
        assert size == 0
        with pytest.raises(RuntimeError, match="has no block-shared memory"):
            wk.lang.impl.get_max_shared_memory_bytes(is_lowerbound_ok=False)
        return
    assert size == wk.lang.impl.get_max_shared_memory_bytes(is_lowerbound_ok=False) >= 16384
    n = size // 4                  # a shared array of exactly that many bytes compiles, one more element does not

    def kernel_with(count):
        out = wk.field(wk.f32, shape=64)

        @wk.kernel
        def k():
            wk.loop_config(block_dim=64)
            for i in range(64):
                shared = wk.simt.block.SharedArray((count,), wk.f32)
                shared[i] = 1.0
                wk.simt.block.sync()
                out[i] = shared[63 - i]
        return k, out

    k, out = kernel_with(n)
    k()
    assert out.to_numpy().sum() == 64.0
    k, _ = kernel_with(n + 1)
    with pytest.raises(wk.CompileError, match="shared"):
        k()
