"""`wk.simt.subgroup`: the invocations that run in lockstep (a WGSL subgroup, a CUDA warp). Taichi's list of
operations; values are 32-bit ints or floats. Quadrants' sized forms add a compile-time log2_size to the reductions,
scans and votes (`inclusive_add(v, 3)`, `all_true(c, 2)`, `exclusive_min(v, 3, identity)`): they work on each group
of 2**log2_size consecutive invocations (frontend/simt.py unrolls them into shuffles). Quadrants 1.3's names for
those sized forms end in `_tiled` (`reduce_all_add_tiled(v, 5)`, `exclusive_min_tiled(v, 3)` with the type's largest
value as the identity), and `segmented_reduce_*_tiled(v, head, log2_size)` scan within segments that start where
`head` is nonzero; `ballot(p)` is the subgroup's u64 bitmask of nonzero predicates."""
from __future__ import annotations

from wgkern.lang.simt._intrinsic import intrinsic

barrier = intrinsic("subgroup", "barrier", (), "Barrier over the thread's subgroup.")
memory_barrier = intrinsic("subgroup", "memory_barrier", (), "Memory fence over the subgroup.")
sync = intrinsic("subgroup", "sync", (), "Quadrants' name of barrier().")
mem_fence = intrinsic("subgroup", "mem_fence", (), "Quadrants' name of memory_barrier().")
elect = intrinsic("subgroup", "elect", (), "1 on the subgroup's lowest active invocation, else 0.")
all_true = intrinsic("subgroup", "all_true", ('cond',),
                     "1 when cond is nonzero on every active invocation of the subgroup.")
any_true = intrinsic("subgroup", "any_true", ('cond',),
                     "1 when cond is nonzero on some active invocation of the subgroup.")
all_equal = intrinsic("subgroup", "all_equal", ('value',),
                      "1 when value is the same on every active invocation of the subgroup.")
broadcast_first = intrinsic("subgroup", "broadcast_first", ('value',),
                            "value of the subgroup's lowest active invocation.")
broadcast = intrinsic("subgroup", "broadcast", ('value', 'index'),
                      "value of invocation `index` (a compile-time or subgroup-uniform index).")
group_size = intrinsic("subgroup", "group_size", (), "Invocations per subgroup (8 on lavapipe, 32 on NVIDIA).")
invocation_id = intrinsic("subgroup", "invocation_id", (), "The invocation's index in its subgroup.")
reduce_add = intrinsic("subgroup", "reduce_add", ('value',),
                       "add of value, over the subgroup; reduce_add(value, log2_size) (Quadrants'): over each group of "
                       "2**log2_size consecutive invocations, the sum valid on the group's first.")
reduce_mul = intrinsic("subgroup", "reduce_mul", ('value',), "mul of value, over the subgroup.")
reduce_min = intrinsic("subgroup", "reduce_min", ('value',),
                       "min of value, over the subgroup; reduce_min(value, log2_size) as reduce_add's sized form.")
reduce_max = intrinsic("subgroup", "reduce_max", ('value',),
                       "max of value, over the subgroup; reduce_max(value, log2_size) as reduce_add's sized form.")
reduce_all_add = intrinsic("subgroup", "reduce_all_add", ('value', 'log2_size'),
                           "add of value over each group of 2**log2_size consecutive invocations, on all of them.")
reduce_all_min = intrinsic("subgroup", "reduce_all_min", ('value', 'log2_size'),
                           "min of value over each group of 2**log2_size consecutive invocations, on all of them.")
reduce_all_max = intrinsic("subgroup", "reduce_all_max", ('value', 'log2_size'),
                           "max of value over each group of 2**log2_size consecutive invocations, on all of them.")
reduce_and = intrinsic("subgroup", "reduce_and", ('value',), "and of value, over the subgroup.")
reduce_or = intrinsic("subgroup", "reduce_or", ('value',), "or of value, over the subgroup.")
reduce_xor = intrinsic("subgroup", "reduce_xor", ('value',), "xor of value, over the subgroup.")
inclusive_add = intrinsic("subgroup", "inclusive_add", ('value',),
                          "add of value, inclusive prefix scan over the subgroup.")
inclusive_mul = intrinsic("subgroup", "inclusive_mul", ('value',),
                          "mul of value, inclusive prefix scan over the subgroup.")
inclusive_min = intrinsic("subgroup", "inclusive_min", ('value',),
                          "min of value, inclusive prefix scan over the subgroup.")
inclusive_max = intrinsic("subgroup", "inclusive_max", ('value',),
                          "max of value, inclusive prefix scan over the subgroup.")
inclusive_and = intrinsic("subgroup", "inclusive_and", ('value',),
                          "and of value, inclusive prefix scan over the subgroup.")
inclusive_or = intrinsic("subgroup", "inclusive_or", ('value',),
                         "or of value, inclusive prefix scan over the subgroup.")
inclusive_xor = intrinsic("subgroup", "inclusive_xor", ('value',),
                          "xor of value, inclusive prefix scan over the subgroup.")
exclusive_add = intrinsic("subgroup", "exclusive_add", ('value',),
                          "add of value, exclusive prefix scan over the subgroup (the identity on invocation 0).")
exclusive_mul = intrinsic("subgroup", "exclusive_mul", ('value',),
                          "mul of value, exclusive prefix scan over the subgroup (the identity on invocation 0).")
exclusive_min = intrinsic("subgroup", "exclusive_min", ('value',),
                          "min of value, exclusive prefix scan over the subgroup (the identity on invocation 0).")
exclusive_max = intrinsic("subgroup", "exclusive_max", ('value',),
                          "max of value, exclusive prefix scan over the subgroup (the identity on invocation 0).")
exclusive_and = intrinsic("subgroup", "exclusive_and", ('value',),
                          "and of value, exclusive prefix scan over the subgroup (the identity on invocation 0).")
exclusive_or = intrinsic("subgroup", "exclusive_or", ('value',),
                         "or of value, exclusive prefix scan over the subgroup (the identity on invocation 0).")
exclusive_xor = intrinsic("subgroup", "exclusive_xor", ('value',),
                          "xor of value, exclusive prefix scan over the subgroup (the identity on invocation 0).")
shuffle = intrinsic("subgroup", "shuffle", ('value', 'index'), "value of invocation `index`.")
shuffle_xor = intrinsic("subgroup", "shuffle_xor", ('value', 'mask'), "value of invocation invocation_id() ^ mask.")
shuffle_up = intrinsic("subgroup", "shuffle_up", ('value', 'offset'),
                       "value of invocation invocation_id() - offset (unspecified where that is < 0).")
shuffle_down = intrinsic("subgroup", "shuffle_down", ('value', 'offset'),
                         "value of invocation invocation_id() + offset (unspecified past the subgroup).")
ballot = intrinsic("subgroup", "ballot", ('predicate',),
                   "A u64 bitmask of the subgroup: bit i is set where invocation i's predicate is nonzero.")


def _tiled(name: str, params: tuple[str, ...], doc: str) -> None:
    globals()[name] = intrinsic("subgroup", name, params, doc)


for _op in ("add", "min", "max"):
    _tiled(f"reduce_{_op}_tiled", ('value', 'log2_size'),
           f"{_op} of value over each group of 2**log2_size consecutive invocations, valid on the group's first.")
    _tiled(f"reduce_all_{_op}_tiled", ('value', 'log2_size'),
           f"{_op} of value over each group of 2**log2_size consecutive invocations, on all of them.")
    _tiled(f"segmented_reduce_{_op}_tiled", ('value', 'head_flag', 'log2_size'),
           f"Inclusive {_op} scan within each group of 2**log2_size consecutive invocations that restarts at every "
           "invocation whose head_flag is nonzero (and at the group's first).")
for _op in ("add", "mul", "min", "max", "and", "or", "xor"):
    _tiled(f"inclusive_{_op}_tiled", ('value', 'log2_size'),
           f"Inclusive {_op} scan within each group of 2**log2_size consecutive invocations.")
    _tiled(f"exclusive_{_op}_tiled", ('value', 'log2_size'),
           f"Exclusive {_op} scan within each group of 2**log2_size consecutive invocations (the identity on the "
           "group's first; for min / max the type's largest / smallest value).")
_tiled("all_true_tiled", ('predicate', 'log2_size'),
       "1 on every invocation of a group of 2**log2_size when predicate is nonzero on all of them, else 0.")
_tiled("any_true_tiled", ('predicate', 'log2_size'),
       "1 on every invocation of a group of 2**log2_size when predicate is nonzero on one of them, else 0.")
_tiled("all_equal_tiled", ('value', 'log2_size'),
       "1 on every invocation of a group of 2**log2_size when value is the same on all of them, else 0.")
