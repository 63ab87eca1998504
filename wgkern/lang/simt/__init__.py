"""`wk.simt` (Taichi's `ti.simt`): code that knows the threads it runs beside — a block's shared arrays and
barriers (`block`), subgroup and warp exchanges (`subgroup`, `warp`), launch-wide fences (`grid`), and Quadrants'
register tiles (`Tile16x16`, `Tile32x32`, tile.py). GPU arches only; docs/simt.md says what each arch has."""
from wgkern.lang.simt import block, grid, subgroup, warp
from wgkern.lang.simt._intrinsic import SIMT_CALLS, intrinsic
from wgkern.lang.simt.tile import Tile16x16, Tile32x32

# Taichi's top-level `ti.global_thread_idx()`: the running thread's id, on every arch (the CPU's worker id).
global_thread_idx = intrinsic("thread", "global_thread_idx", (), "The running thread's global id: block index * "
                              "block_dim + thread index on GPUs, the worker thread's number on the CPU.")

__all__ = ["block", "grid", "subgroup", "warp", "SIMT_CALLS", "global_thread_idx", "Tile16x16", "Tile32x32"]
