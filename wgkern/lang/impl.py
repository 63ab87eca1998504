"""`ti.lang.impl.current_cfg()`, which some Taichi programs read (`current_cfg().arch`): the running program's
arch and `wk.init` options, read-only."""
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


from wgkern.lang.device_limits import get_max_shared_memory_bytes  # noqa: E402,F401 - Quadrants' name here
