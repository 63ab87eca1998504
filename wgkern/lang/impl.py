"""`ti.lang.impl.current_cfg()`, which some Taichi programs read (`current_cfg().arch`): the running program's
arch and `wk.init` options, read-only; Quadrants' `get_runtime()` (its `default_fp` / `default_ip`, which programs
compare in `wk.static(...)`) and `get_max_shared_memory_bytes()`."""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any


def current_cfg() -> SimpleNamespace:
    from wgkern.lang import types as T
    from wgkern.runtime.program import get_program
    program = get_program()
    options = dataclasses.asdict(program.options)
    options.update(arch=program.arch, default_fp=T.DEFAULT_FLOAT, default_ip=T.DEFAULT_INT)
    return SimpleNamespace(**options)


class RuntimeView:
    """What `get_runtime()` gives: the running program's default types and arch, read when asked (they follow
    wk.init(default_fp=..., default_ip=...))."""

    @property
    def default_fp(self) -> Any:
        from wgkern.lang import types as T
        return T.DEFAULT_FLOAT

    @property
    def default_ip(self) -> Any:
        from wgkern.lang import types as T
        return T.DEFAULT_INT

    @property
    def arch(self) -> Any:
        from wgkern.runtime.program import get_program
        return get_program().arch


_RUNTIME_VIEW = RuntimeView()


def get_runtime() -> RuntimeView:
    """Quadrants' `qd.lang.impl.get_runtime()`, for `get_runtime().default_fp == qd.f32` and the like."""
    return _RUNTIME_VIEW


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
