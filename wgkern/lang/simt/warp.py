"""`wk.simt.warp`: CUDA's warp intrinsics (32 lanes; `mask` names the participating lanes)."""
from __future__ import annotations

from wgkern.lang.simt._intrinsic import intrinsic

all_nonzero = intrinsic("warp", "all_nonzero", ('mask', 'predicate'),
                        "1 when predicate is nonzero on every thread of `mask`.")
any_nonzero = intrinsic("warp", "any_nonzero", ('mask', 'predicate'),
                        "1 when predicate is nonzero on some thread of `mask`.")
unique = intrinsic("warp", "unique", ('mask', 'predicate'), "1 when predicate is the same on every thread of `mask`.")
ballot = intrinsic("warp", "ballot", ('predicate',),
                   "Bit k set where thread k of the warp has a nonzero predicate (i32).")
shfl_sync_i32 = intrinsic("warp", "shfl_sync_i32", ('mask', 'val', 'offset'), "val (i32) of lane `offset`.")
shfl_sync_f32 = intrinsic("warp", "shfl_sync_f32", ('mask', 'val', 'offset'), "val (f32) of lane `offset`.")
shfl_up_i32 = intrinsic("warp", "shfl_up_i32", ('mask', 'val', 'offset'),
                        "val (i32) of lane - offset (own value where that is < 0).")
shfl_up_f32 = intrinsic("warp", "shfl_up_f32", ('mask', 'val', 'offset'),
                        "val (f32) of lane - offset (own value where that is < 0).")
shfl_down_i32 = intrinsic("warp", "shfl_down_i32", ('mask', 'val', 'offset'),
                          "val (i32) of lane + offset (own value past the warp's end).")
shfl_down_f32 = intrinsic("warp", "shfl_down_f32", ('mask', 'val', 'offset'),
                          "val (f32) of lane + offset (own value past the warp's end).")
shfl_xor_i32 = intrinsic("warp", "shfl_xor_i32", ('mask', 'val', 'offset'), "val (i32) of lane ^ offset.")
match_any = intrinsic("warp", "match_any", ('mask', 'value'),
                      "Bits of the threads of `mask` whose value equals this thread's.")
match_all = intrinsic("warp", "match_all", ('mask', 'value'),
                      "`mask` when value is the same on every thread of `mask`, else 0.")
active_mask = intrinsic("warp", "active_mask", (), "Bits of the warp's threads that run this call.")
sync = intrinsic("warp", "sync", ('mask',), "Barrier over the threads of `mask`.")
