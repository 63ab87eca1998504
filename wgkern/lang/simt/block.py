"""`wk.simt.block`: the threads of one block (a WGSL workgroup, a CUDA thread block) — shared arrays, barriers
and the thread's place in its block. The threads per block are `wk.loop_config(block_dim=N)`'s N."""
from __future__ import annotations

from typing import Any

from wgkern.errors import WkError
from wgkern.lang.simt._intrinsic import intrinsic

sync = intrinsic("block", "sync", (), "Barrier: every thread of the block waits here; shared-array writes "
                 "before it are visible to the block's threads after it.")
mem_sync = intrinsic("block", "mem_sync", (), "Memory fence over the block's shared arrays and global memory "
                     "(no waiting for other threads).")
mem_fence = intrinsic("block", "mem_fence", (), "Quadrants' name of mem_sync().")
thread_idx = intrinsic("block", "thread_idx", (), "The thread's index within its block (i32): iteration i of a "
                       "parallel range(begin, end) is thread (i - begin) % block_dim.")
global_thread_idx = intrinsic("block", "global_thread_idx", (), "block index * block_dim + thread_idx() (i32).")
sync_all_nonzero = intrinsic("block", "sync_all_nonzero", ("predicate",), "Barrier that returns 1 on every "
                             "thread when the predicate is nonzero on all threads of the block, else 0.")
sync_any_nonzero = intrinsic("block", "sync_any_nonzero", ("predicate",), "Barrier that returns 1 on every "
                             "thread when the predicate is nonzero on some thread of the block, else 0.")
sync_count_nonzero = intrinsic("block", "sync_count_nonzero", ("predicate",), "Barrier that returns on every "
                               "thread how many threads of the block have a nonzero predicate.")


class SharedArray:
    """`wk.simt.block.SharedArray(shape, dtype)` in a kernel's parallel loop: an array that the threads of a
    block share (WGSL workgroup memory, CUDA shared memory). `shape` is an int or a tuple of ints, `dtype` a
    scalar dtype or a vector/matrix type; elements start uninitialised. Index it like a local array."""

    def __init__(self, shape: Any, dtype: Any):
        raise WkError("wk.simt.block.SharedArray(...) is made inside a kernel (a block's threads share it)")
