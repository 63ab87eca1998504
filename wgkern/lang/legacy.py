"""Taichi's older spellings that ported programs (difftaichi's examples among them) still use.

Each is a thin alias of the current API where the meaning is unambiguous: `wk.var(dt)` / `wk.global_var` are
`wk.field`, `wk.Vector.var` / `wk.Matrix.var` (and `wk.Vector(n, dt=...)`) are vector/matrix fields, `@wk.layout`
functions place fields before the first kernel or field access, `wk.Tape` is `wk.ad.Tape`,
`wk.complex_kernel` / `wk.complex_kernel_grad` are `wk.ad.grad_replaced` / `wk.ad.grad_for`, and `wk.ext_arr()` /
`wk.any_arr()` are `wk.types.ndarray()`, and `wk.require_version(...)` checks against the Taichi API wgkern follows.
Spellings of Taichi's
internals (`ti.cfg`, `ti.get_runtime()`) are refused with a pointer to the replacement (wgkern/__init__.py)."""
from __future__ import annotations

from typing import Any, Callable

from wgkern.errors import WkError
from wgkern.runtime.init_options import TAICHI_API_VERSION, require_version  # noqa: F401 - wk.require_version


def var(dt: Any, shape: Any = None, offset: Any = None, needs_grad: bool = False, name: str = "") -> Any:
    """Taichi's `ti.var(dt, shape=None)` (and `ti.global_var`): a field (`wk.field(dt, shape)`)."""
    from wgkern.lang.fields import field
    return field(dt, shape=shape, offset=offset, needs_grad=needs_grad, name=name)


def vector_var(n: int, dt: Any, shape: Any = None, offset: Any = None, needs_grad: bool = False) -> Any:
    """Taichi's `ti.Vector.var(n, dt, shape=None)` and `ti.Vector(n, dt=..., shape=None)`: a vector field."""
    from wgkern.lang.fields import field
    from wgkern.lang.types import vector
    return field(vector(n, dt), shape=shape, offset=offset, needs_grad=needs_grad)


def matrix_var(n: int, m: int, dt: Any, shape: Any = None, offset: Any = None, needs_grad: bool = False) -> Any:
    """Taichi's `ti.Matrix.var(n, m, dt, shape=None)` and `ti.Matrix(n, m, dt=..., shape=None)`: a matrix field."""
    from wgkern.lang.fields import field
    from wgkern.lang.types import matrix
    return field(matrix(n, m, dt), shape=shape, offset=offset, needs_grad=needs_grad)


def ext_arr() -> Any:
    """Taichi's `ti.ext_arr()` (before 1.0): a numpy array or ndarray kernel parameter, `wk.types.ndarray()`."""
    from wgkern.lang.types import ndarray
    return ndarray()


def any_arr(element_dim: int | None = None, layout: Any = None) -> Any:
    """Taichi's `ti.any_arr()` (0.8 to 0.9): `wk.types.ndarray()`. Element dimensions of an unknown size cannot
    be read from a numpy argument, so `element_dim` > 0 names the replacement instead."""
    if element_dim:
        raise WkError(f"wk.any_arr(element_dim={element_dim}): give the element type instead, e.g. "
                      "wk.types.ndarray(dtype=wk.math.vec3, ndim=1)")
    from wgkern.lang.types import ndarray
    return ndarray()


def layout(fn: Callable[[], Any]) -> Callable[[], Any]:
    """Taichi's `@ti.layout`: `fn` places fields (`wk.root.dense(...).place(...)`); it runs once, right before
    the first kernel launch or field access that follows (so it may read sizes set after it is declared)."""
    if not callable(fn):
        raise WkError(f"@wk.layout decorates a function that places fields, got {fn!r}")
    from wgkern.runtime.program import get_program
    program = get_program()
    program.pending_layouts.append(fn)
    program.unmaterialized = True
    return fn
