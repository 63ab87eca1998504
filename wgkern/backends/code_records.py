"""Where a backend's generated code for a kernel is in the offline cache, found without generating it
('code' entries of the offline cache).

The compiled-code caches (`cpu/` object code, `cuda/` PTX) are keyed by the generated module's text, so finding
an entry costs the code generation it stands for. When a kernel's IR was loaded from (or stored in) a frontend
cache entry (frontend_cache.py), that entry's key already determines the IR the backend compiles: the kernel's
source and every read its frontend made, the argument specialisation, the options, the arch and wgkern's code.
A backend then keeps, under that key and its own settings (the target, the compiler's version), a small record:
the compiled-code cache key its module got, the names of its entry points and a fingerprint of the argument
layout it was generated for. A later start loads the compiled code by the record, checking the layout it builds
from the loaded IR against the record's; a record whose code is gone, or that disagrees, is ignored and the
module generated as before (and the record rewritten).

Only code that holds nothing of this process is recorded: kernels with adstacks (their context's address is in
the code), debug builds (the error word's) and kernels that print (a print site's number on the CPU, the print
buffer's address on GPUs) are generated on every start. WGSL backends keep the shaders' text itself under such a
key (wgsl/shader_records.py)."""
from __future__ import annotations

import ast
from typing import Any

from wgkern import disk_cache
from wgkern.backends.adstack import collect_stacks
from wgkern.ir import nodes as ir
from wgkern.ir.visitor import walk

KIND = "code"
_SUFFIX = ".record"


def key(origin: str | None, kernel: ir.OffloadedKernel, debug: bool, *settings: Any) -> str | None:
    """The record's key for `kernel`: the IR's origin (a frontend cache entry's key, with the stage that derived
    the backend's IR from it; None where the IR has none or the cache is off) and the backend's settings that
    shape its code. None where the code holds what only this process knows (module docstring)."""
    if origin is None or debug or prints(kernel) or any(collect_stacks(kernel)):
        return None
    return disk_cache.cache_key(origin, *(repr(part) for part in settings))


def prints(kernel: ir.OffloadedKernel) -> bool:
    """Whether the kernel prints (its code then holds a print site's number on the CPU, the print buffer's
    address on GPUs)."""
    return any(isinstance(stmt, ir.Print) for task in kernel.tasks for stmt in walk(task.body))


def load(record_key: str, layout: Any, fields: int) -> tuple | None:
    """The `fields` values stored under `record_key` by a build with `layout` (layout.py's ArgLayout), or None
    (no record, an unreadable one, or one generated against another layout)."""
    stored = disk_cache.load(KIND, record_key, _SUFFIX)
    if stored is None:
        return None
    try:
        record = ast.literal_eval(stored.decode())
    except (ValueError, SyntaxError, UnicodeDecodeError, MemoryError, RecursionError):
        return None
    if not isinstance(record, tuple) or len(record) != fields + 1 or record[0] != _layout_fingerprint(layout):
        return None
    return record[1:]


def store(record_key: str, layout: Any, *values: Any) -> None:
    """Keep `values` (plain Python literals) under `record_key` for code generated against `layout`."""
    disk_cache.store(KIND, record_key, _SUFFIX, repr((_layout_fingerprint(layout), *values)).encode())


def _layout_fingerprint(layout: Any) -> tuple:
    """What of an LLVM backend's argument layout the generated code was built against."""
    return (layout.size, tuple(layout.container_address), tuple(layout.container_shape),
            tuple(sorted(layout.scalar.items())), layout.adstack_context)
