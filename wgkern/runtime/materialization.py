"""Materialisation: the step that makes newly declared data usable, and Quadrants' Python runtime object
(`qd.lang.impl.PyQuadrants`, `qd.lang.impl.get_runtime()`) through which it runs.

wgkern allocates a container when it is created, so its own materialisation only runs the pending @wk.layout
functions (lang/legacy.py). It still runs at the points Quadrants materialises: before a kernel launch, a host
access of a container, a DLPack export or `wk.sync()` that follows the creation of containers (or of a layout).
It runs through `get_runtime().materialize()`, a method of the class `PyQuadrants`, so a program that replaces
`PyQuadrants.materialize` / `PyQuadrants.clear` (Genesis defers field fills until the next materialisation this
way) sees its replacement called there; `wk.reset()` runs `get_runtime().clear()`."""
from __future__ import annotations

from typing import Any

from wgkern.runtime import program as program_module


class PyQuadrants:
    """Quadrants' Python-side runtime object: `materialize()`, `clear()`, `sync()`, `prog` (the running program,
    with `prog.synchronize()`), `materialized`, and the running program's `arch`, `default_fp` / `default_ip`
    (read when asked: they follow wk.init)."""

    def __init__(self) -> None:
        self.materialized = False

    def materialize(self) -> None:
        """Make the data declared so far usable: run the pending @wk.layout functions (they place fields)."""
        program = program_module.get_program()
        program.unmaterialized = False
        program.run_pending_layouts()
        self.materialized = True

    def clear(self) -> None:
        """Release the running program (`wk.reset()`): its containers and compiled kernels become unusable."""
        program_module.release_current()
        self.materialized = False

    def sync(self) -> None:
        """Materialise, then wait for all launched work (`wk.sync()`)."""
        program = program_module.current()
        if program is None:
            return
        if program.unmaterialized:
            self.materialize()
        program.sync()

    @property
    def prog(self) -> Any:
        """The running program (`prog.synchronize()` waits for launched work)."""
        return program_module.get_program()

    @property
    def arch(self) -> Any:
        return program_module.get_program().arch

    @property
    def default_fp(self) -> Any:
        from wgkern import dtypes as types
        return types.DEFAULT_FLOAT

    @property
    def default_ip(self) -> Any:
        from wgkern import dtypes as types
        return types.DEFAULT_INT


_RUNTIME = PyQuadrants()


def get_runtime() -> PyQuadrants:
    """Quadrants' `qd.lang.impl.get_runtime()`: the one runtime object."""
    return _RUNTIME


def materialize_if_needed(program: Any) -> None:
    """Materialise when containers or layouts were declared since the last materialisation (one attribute test
    otherwise: this runs on every launch and host access)."""
    if program.unmaterialized:
        _RUNTIME.materialize()
