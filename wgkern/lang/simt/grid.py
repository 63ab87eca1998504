"""`wk.simt.grid`: the whole launch."""
from __future__ import annotations

from wgkern.lang.simt._intrinsic import intrinsic

memfence = intrinsic("grid", "memfence", (), "Memory fence over global memory for the whole launch (no waiting).")
mem_fence = intrinsic("grid", "mem_fence", (), "Quadrants' name of memfence().")
