"""Shared helpers for the sizing tests: compile Python kernels to grad IR, size their stacks, count the pushes
the reference interpreter really makes, and a launch context over numpy arrays."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from wgkern.ir import nodes as ir
from wgkern.ir.interpreter import Interpreter
from wgkern.passes.adstack_sizing import size_task_stacks
from wgkern.passes.autodiff import make_grad_kernel
from wgkern.sizing import HostLaunchContext, SizeCache

try:
    from wgkern.backends.adstack import collect_stacks
except ImportError:  # older layout
    from wgkern.runtime.adstack import collect_stacks

__all__ = ["collect_stacks"]


@dataclass
class Stats:
    max_reducer_dispatches: int = 0
    sizer_host_evals: int = 0


class PushCounter(Interpreter):
    """The interpreter, recording the largest number of pushes any adjoint unit made to each stack."""

    def __init__(self, *args: Any, **kw: Any):
        super().__init__(*args, **kw)
        self.unit_pushes: dict[int, int] = {}
        self.max_pushes: dict[int, int] = {}

    def _start_unit(self, thread: int) -> None:
        super()._start_unit(thread)
        self.unit_pushes = {}

    def exec_AdStackPush(self, s: ir.AdStackPush) -> None:
        count = self.unit_pushes.get(id(s.stack), 0) + 1
        self.unit_pushes[id(s.stack)] = count
        self.max_pushes[id(s.stack)] = max(self.max_pushes.get(id(s.stack), 0), count)
        super().exec_AdStackPush(s)


def grad_of(forward: ir.OffloadedKernel) -> ir.OffloadedKernel:
    grad = make_grad_kernel(forward)
    for task in grad.tasks:
        size_task_stacks(task)
    return grad


def stacks_of(kernel: ir.OffloadedKernel) -> list[ir.AdStackAlloca]:
    return [s for t in kernel.tasks for s in t.body.stmts if isinstance(s, ir.AdStackAlloca)]


def measured_pushes(kernel: ir.OffloadedKernel, arrays: list[np.ndarray], scalars: list[Any]) -> dict[int, int]:
    counter = PushCounter(kernel, [a.copy() for a in arrays], list(scalars), stack_capacity=lambda s: None)
    counter.run()
    return counter.max_pushes


class Generations:
    """Tokens for the cache: (slot id, generation); `bump(slot)` marks a container written."""

    def __init__(self) -> None:
        self.gen: dict[int, int] = {}

    def token(self, slot: Any) -> tuple[int, int]:
        return (id(slot), self.gen.get(id(slot), 0))

    def bump(self, slot: Any) -> None:
        self.gen[id(slot)] = self.gen.get(id(slot), 0) + 1


def host_context(kernel: ir.OffloadedKernel, arrays: list[np.ndarray], scalars: list[Any] = (),
                 cache: SizeCache | None = None, stats: Stats | None = None,
                 generations: Generations | None = None) -> HostLaunchContext:
    index = {id(c): k for k, c in enumerate(kernel.containers)}
    gens = generations or Generations()
    return HostLaunchContext(list(scalars), lambda slot: arrays[index[id(slot)]], gens.token,
                             stats or Stats(), cache or SizeCache())
