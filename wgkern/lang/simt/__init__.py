"""`wk.simt` (Taichi's `ti.simt`): code that knows the threads it runs beside — a block's shared arrays and
barriers (`block`), subgroup and warp exchanges (`subgroup`, `warp`), launch-wide fences (`grid`). GPU arches
only; docs/simt.md says what each arch has."""
from wgkern.lang.simt import block, grid, subgroup, warp
from wgkern.lang.simt._intrinsic import SIMT_CALLS

__all__ = ["block", "grid", "subgroup", "warp", "SIMT_CALLS"]
