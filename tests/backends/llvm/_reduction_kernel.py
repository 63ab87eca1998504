"""The kernel the GPU targets' register-reduction tests compile: three reductions into 0-d fields from a
1000-element loop (an f32 add, an i32 max and an f64 add, so 32- and 64-bit registers), with 100 threads a block
so that the last warp or wave of each block is partial."""
from __future__ import annotations

import wgkern as wk


def register_reductions():
    """A new `reduce` kernel over new fields (call it inside a program)."""
    x = wk.field(wk.f32, shape=1000)
    total = wk.field(wk.f32, shape=())
    largest = wk.field(wk.i32, shape=())
    wide = wk.field(wk.f64, shape=())

    @wk.kernel
    def reduce():
        wk.loop_config(block_dim=100)            # a partial last warp: 4 launched lanes of 32
        for i in x:
            total[None] += x[i]
            wk.atomic_max(largest[None], i)
            wide[None] += wk.f64(x[i])

    return reduce
