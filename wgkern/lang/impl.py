"""`ti.lang.impl.current_cfg()`, which some Taichi programs read (`current_cfg().arch`): the running program's
arch and `wk.init` options, read-only; Quadrants' `get_max_shared_memory_bytes()`."""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace


def current_cfg() -> SimpleNamespace:
    from wgkern.lang import types as T
    from wgkern.runtime.program import get_program
    program = get_program()
    options = dataclasses.asdict(program.options)
    options.update(arch=program.arch, default_fp=T.DEFAULT_FLOAT, default_ip=T.DEFAULT_INT)
    return SimpleNamespace(**options)


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
