"""Quadrants' `qd.lang.impl.get_max_shared_memory_bytes()`: how much block-shared memory a kernel may use on the
running arch (re-exported by lang/impl.py)."""
from __future__ import annotations


def get_max_shared_memory_bytes(*, is_lowerbound_ok: bool) -> int:
    """The block-shared memory one block may use on the current arch, in bytes: the adapter's workgroup storage
    limit on the WGSL arches, the static shared memory of a CUDA block (48 KiB). The CPU has none: 0 where
    `is_lowerbound_ok` (as in Quadrants), else a RuntimeError."""
    from wgkern.runtime.program import get_program
    program = get_program()
    limit = program.backend.shared_memory_bytes()
    if limit is not None:
        return int(limit)
    if is_lowerbound_ok:
        return 0
    raise RuntimeError(f"get_max_shared_memory_bytes: the {program.arch} arch has no block-shared memory")
