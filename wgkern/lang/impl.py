"""`ti.lang.impl.current_cfg()`, which some Taichi programs read (`current_cfg().arch`): the running program's
arch and `wk.init` options, read-only. Quadrants' `qd.lang.impl.PyQuadrants` / `get_runtime()` (the runtime
object whose `materialize` / `clear` programs may replace) live in runtime/materialization.py."""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace

from wgkern.lang.device_limits import get_max_shared_memory_bytes  # noqa: F401 - Quadrants' name here
from wgkern.runtime.materialization import PyQuadrants, get_runtime  # noqa: F401 - Quadrants' names here


def current_cfg() -> SimpleNamespace:
    from wgkern.lang import types as T
    from wgkern.runtime.program import get_program
    program = get_program()
    options = dataclasses.asdict(program.options)
    options.update(arch=program.arch, default_fp=T.DEFAULT_FLOAT, default_ip=T.DEFAULT_INT)
    return SimpleNamespace(**options)

