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
    return CapacityPlan(stacks, fixed, dynamic, default_ad_stack_size)
