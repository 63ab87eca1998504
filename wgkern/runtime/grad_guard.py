"""Guards of `kernel.grad()`: the loop-bound generation check and the adstack-support check.

A `.grad` kernel recomputes its loop bounds from global data. A forward launch records the generations of the
containers its loop bounds read; `.grad()` raises if one changed since (DESIGN.md "Reverse-mode autodiff"),
instead of returning a gradient of a different loop structure. The analysis is done once per compiled
forward variant; the per-launch cost is one list walk when the kernel has such bounds, nothing otherwise."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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


def snapshot(sources: list[BoundSource], values: list[Any]) -> list[tuple[Any, int]]:
    """(container, generation) of every bound source after a forward launch (numpy arguments are skipped:
    they are copied in afresh on every call and cannot be tracked)."""
    out = []
    for source in sources:
        container = _container(source, values)
        if container is not None and not getattr(container, "_is_staging", False):
            out.append((container, container.generation))
    return out


def check(kernel_name: str, recorded: list[tuple[Any, int]] | None, sources: list[BoundSource],
          values: list[Any]) -> None:
    """Raise when a container read by a loop bound of the forward launch changed before this `.grad()`."""
    if not recorded:
        return
    current = {id(_container(s, values)) for s in sources}
    for container, generation in recorded:
        if id(container) in current and container.generation != generation:
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
