"""Guards of `kernel.grad()`: the loop-bound generation check and the adstack-support check.

A `.grad` kernel recomputes its loop bounds from global data. A forward launch records the generations of the
containers its loop bounds read; `.grad()` raises if one changed since (DESIGN.md "Reverse-mode autodiff"),
instead of returning a gradient of a different loop structure. The analysis is done once per compiled
forward variant; the per-launch cost is one list walk when the kernel has such bounds, nothing otherwise."""
from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from wgkern.errors import WkError
from wgkern.ir import nodes as ir
from wgkern.ir.visitor import walk
from wgkern.passes.autodiff.checks import loop_bound_slots


@dataclass(frozen=True, slots=True)
class BoundSource:
    """A container whose contents a loop bound depends on: a field, or ndarray argument `arg_index`."""
    slot_kind: str               # 'field' or 'ndarray'
    host: Any = None             # the Field
    arg_index: int = -1
    is_grad: bool = False


def bound_sources(kernel: ir.OffloadedKernel) -> list[BoundSource]:
    """The containers (fields, ndarray arguments) whose contents decide a trip count of `kernel`."""
    sources = []
    for slot in loop_bound_slots(kernel):
        if slot.kind not in ("field", "ndarray"):
            continue
        if slot.kind == "field":
            sources.append(BoundSource("field", host=slot.host))
        else:
            sources.append(BoundSource("ndarray", arg_index=slot.arg_index, is_grad=slot.is_grad))
    return sources


def _container(source: BoundSource, values: list[Any]) -> Any:
    if source.slot_kind == "field":
        return source.host
    value = values[source.arg_index]
    return value.grad if source.is_grad else value


def fingerprint(array: np.ndarray) -> tuple[Any, ...]:
    """What a numpy argument held: its dtype, shape and a checksum of its bytes."""
    data = np.ascontiguousarray(array)
    return data.dtype.str, data.shape, zlib.crc32(memoryview(data).cast("B"))


def snapshot(sources: list[BoundSource], values: list[Any], numpy_values: dict[int, np.ndarray] | None = None,
             names: list[str] | None = None) -> list[tuple[Any, Any]]:
    """After a forward launch, per bound source: (container, generation), or for a numpy argument (copied in
    afresh on every call, so it has no generation) (argument index, (its name, fingerprint of the array as the
    launch left it))."""
    out: list[tuple[Any, Any]] = []
    for source in sources:
        if source.slot_kind == "ndarray" and numpy_values and source.arg_index in numpy_values \
                and not source.is_grad:
            name = names[source.arg_index] if names else str(source.arg_index)
            out.append((source.arg_index, (name, fingerprint(numpy_values[source.arg_index]))))
            continue
        container = _container(source, values)
        if container is not None and not getattr(container, "_is_staging", False):
            out.append((container, container.generation))
    return out


def check(kernel_name: str, recorded: list[tuple[Any, Any]] | None, sources: list[BoundSource],
          values: list[Any]) -> None:
    """Raise when a container (or numpy argument) read by a loop bound of the forward launch changed before
    this `.grad()`."""
    if not recorded:
        return
    current = {id(_container(s, values)) for s in sources}
    for container, token in recorded:
        if isinstance(container, int):                  # a numpy argument, by position
            value = values[container] if container < len(values) else None
            name, held = token
            if isinstance(value, np.ndarray) and fingerprint(value) != held:
                raise WkError(f"{kernel_name}.grad(): numpy argument '{name}' decides a loop's trip count and "
                              "holds other values than the forward launch left in it; the reverse pass would "
                              "replay different loops. Re-run the forward kernel before .grad()")
            continue
        if id(container) in current and container.generation != token:
            raise WkError(f"{kernel_name}.grad(): {container.kind_name} '{container.name}' decides a loop's trip "
                          "count and changed after the forward launch; the reverse pass would replay "
                          "different loops. Re-run the forward kernel before .grad()")


def check_adstack_support(kernel: ir.OffloadedKernel, backend: Any) -> None:
    """Raise a clear error when the reverse kernel needs adstacks the backend cannot run yet."""
    stacks = [s for task in kernel.tasks for s in walk(task.body) if isinstance(s, ir.AdStackAlloca)]
    if stacks and not getattr(backend, "supports_adstack", False):
        where = ", ".join(sorted({str(s.loc) for s in stacks}))
        raise WkError(f"{kernel.name}: this reverse-mode kernel needs adstacks (values carried across loop "
                      f"iterations, at {where}), which the {getattr(backend, 'name', '?')} backend cannot run "
                      "yet; kernels without such loops are differentiable")
