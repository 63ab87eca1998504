"""The registry of `wk.simt` intrinsics: each is a Python function that only kernel code may call; the frontend
(frontend/simt.py) recognises it by identity in `SIMT_CALLS` and lowers it to an `ir.SimtOp` named after it."""
from __future__ import annotations

import inspect
from typing import Any, Callable

from wgkern.errors import WkError

SIMT_CALLS: dict[Callable[..., Any], str] = {}     # the function -> its qualified op name ('block.sync')


def intrinsic(group: str, name: str, params: tuple[str, ...], doc: str) -> Callable[..., Any]:
    """A `wk.simt.<group>.<name>(*params)` intrinsic, registered under 'group.name'."""
    qualified = f"{group}.{name}"

    def call_outside_kernel(*args: Any, **kwargs: Any) -> Any:
        raise WkError(f"wk.simt.{qualified}() runs on the threads of a kernel; call it inside a @wk.kernel's "
                      "parallel loop")

    call_outside_kernel.__name__ = name
    call_outside_kernel.__qualname__ = name
    call_outside_kernel.__module__ = f"wgkern.lang.simt.{group}"
    call_outside_kernel.__doc__ = doc
    call_outside_kernel.__signature__ = inspect.Signature(
        [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in params])
    SIMT_CALLS[call_outside_kernel] = qualified
    return call_outside_kernel


def params_of(fn: Callable[..., Any]) -> tuple[str, ...]:
    return tuple(inspect.signature(fn).parameters)
