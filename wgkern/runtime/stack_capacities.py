"""How many slots each adstack of a reverse launch gets (DESIGN.md "Adstack sizing").

`wk.init(ad_stack_size=N)` forces N for every stack; a stack the structural pre-pass sized keeps its exact
static capacity; a stack with a launch-time size expression is sized by the sizer (wgkern/sizing); anything
else (while loops) gets `default_ad_stack_size`. A plan is made once per compiled kernel, so a launch whose
capacities are all known at compile time only attaches a prebuilt list."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wgkern.backends.adstack import StackSpec, collect_stacks
from wgkern.ir import nodes as ir


@dataclass(slots=True)
class CapacityPlan:
    """Per task, per stack: a fixed capacity, or None where the sizer decides at launch (`dynamic`)."""
    stacks: list[list[StackSpec]]
    fixed: list[list[int | None]]
    dynamic: list[tuple[int, int, Any]] = field(default_factory=list)   # (task, stack, size_expr)
    default: int = 32
    read_slots: tuple[int, ...] = ()       # container slots whose contents or shape the size exprs read
    read_scalars: tuple[int, ...] = ()     # scalar arguments they read
    memo_key: Any = None                   # the last launch's leaf values and the capacities they gave
    memo_capacities: list[list[int]] | None = None

    @property
    def has_stacks(self) -> bool:
        return any(self.stacks)

    def static_capacities(self) -> list[list[int]] | None:
        """The capacities when none needs the sizer, else None."""
        if self.dynamic:
            return None
        return [[int(c) for c in task] for task in self.fixed]


def plan_capacities(kernel: ir.OffloadedKernel, ad_stack_size: int, default_ad_stack_size: int,
                    use_size_exprs: bool) -> CapacityPlan:
    stacks = collect_stacks(kernel)
    fixed: list[list[int | None]] = []
    dynamic: list[tuple[int, int, Any]] = []
    for task_index, specs in enumerate(stacks):
        row: list[int | None] = []
        for spec in specs:
            if ad_stack_size > 0:
                row.append(ad_stack_size)
            elif spec.static_capacity is not None:
                row.append(spec.static_capacity)
            elif use_size_exprs and spec.size_expr is not None:
                row.append(None)
                dynamic.append((task_index, spec.stack_id, spec.size_expr))
            else:
                row.append(default_ad_stack_size)
        fixed.append(row)
    plan = CapacityPlan(stacks, fixed, dynamic, default_ad_stack_size)
    if dynamic:
        from wgkern.sizing import E
        index = {id(slot): k for k, slot in enumerate(kernel.containers)}
        nodes = [node for _, _, expr in dynamic for node in E.walk(expr)]
        plan.read_slots = tuple(sorted({index[id(slot)] for _, _, expr in dynamic for slot in E.slots_read(expr)}))
        plan.read_scalars = tuple(sorted({n.arg_index for n in nodes if isinstance(n, E.ScalarArg)}))
    return plan


def launch_capacities(plan: CapacityPlan, kernel: ir.OffloadedKernel, launch_args: Any, backend: Any,
                      values: list[Any], program: Any) -> list[list[int]]:
    """Capacities of one launch: the plan's fixed ones, and the sizer's value for each stack with a
    SizeExpr (one shared evaluator; device max-reducers; cached by the generations of what they read).
    Steady state: when every container the expressions read has the token (uid, generation), shape and the
    scalars they read have the values of the previous launch, the previous capacities are the answer (a
    few tuple compares, no evaluator)."""
    containers = kernel.containers
    key: list[Any] = []
    for k in plan.read_slots:
        token = _token(containers[k], values)
        if token is None:
            key = None
            break
        key.append(token)
        key.append(launch_args.shapes[k])
    if key is not None:
        key.extend(launch_args.scalars[i] for i in plan.read_scalars)
        key = tuple(key)
        if key == plan.memo_key:
            return plan.memo_capacities
    capacities = _evaluate(plan, kernel, launch_args, backend, slot_tokens(kernel, values), program)
    plan.memo_key, plan.memo_capacities = key, capacities
    return capacities


def _evaluate(plan: CapacityPlan, kernel: ir.OffloadedKernel, launch_args: Any, backend: Any,
              tokens: list[Any], program: Any) -> list[list[int]]:
    from wgkern.sizing import SizeCache, capacities_for_launch
    from wgkern.runtime.sizing_context import launch_context
    if program.size_cache is None:
        program.size_cache = SizeCache()
    context = launch_context(kernel, launch_args, backend, tokens, program.stats, program.size_cache,
                             plan.default)
    dynamic_tasks = {task for task, _, _ in plan.dynamic}
    out = []
    for task_index, specs in enumerate(plan.stacks):
        if task_index in dynamic_tasks:
            out.append(capacities_for_launch(specs, context))
        else:
            out.append([int(c) for c in plan.fixed[task_index]])
    return out


def slot_tokens(kernel: ir.OffloadedKernel, values: list[Any]) -> list[Any]:
    """Cache token per container slot: (container uid, generation); None for temporaries and numpy
    arguments (copied in afresh each call), whose contents are never cached."""
    return [_token(slot, values) for slot in kernel.containers]


def _token(slot: ir.ContainerSlot, values: list[Any]) -> tuple[int, int] | None:
    container = None
    if slot.kind == "field":
        container = slot.host
    elif slot.kind == "ndarray":
        container = values[slot.arg_index]
        if slot.is_grad and container is not None:
            container = container.grad
    if container is None or getattr(container, "_is_staging", False) or container.dlpack_live:
        return None
    return (container.uid, container.generation)
