"""Kernels with host loops (OffloadedKernel.host_loops: Quadrants' `while wk.graph_do_while(c):` at a kernel's
top level), run as Quadrants runs them where it has no CUDA graph: the loop body's tasks are launched, the 0-d
counter is read back, and the body runs again while it is non-zero. A backend that can decide the loops on the
device (Backend.device_loops: CUDA graphs with conditional nodes, backends/llvm/cuda_graphs.py) runs the same
schedule of pieces and loops instead.

The kernel is compiled in pieces, one per run of tasks between loop boundaries, by the backend's own compile;
every piece shares the kernel's arguments and containers (temps included), so one LaunchArgs serves them all.
HostLoopKernel stands where a backend's CompiledKernel would, so the launch path does not change."""
from __future__ import annotations

from typing import Any, Union

import numpy as np

from wgkern.backends.base import CompiledKernel, LaunchArgs, LoopStep
from wgkern.ir import nodes as ir

_Step = Union[CompiledKernel, LoopStep]


class HostLoopKernel(CompiledKernel):
    def __init__(self, backend: Any, kernel: ir.OffloadedKernel):
        self.kernel = kernel
        self.backend = backend
        loops = kernel.host_loops
        cuts = sorted({0, len(kernel.tasks)} | {h.first for h in loops} | {h.stop for h in loops})
        self.pieces: dict[int, CompiledKernel] = {}
        for first, stop in zip(cuts, cuts[1:]):
            piece = ir.OffloadedKernel(kernel.name, kernel.args, kernel.containers, kernel.tasks[first:stop],
                                       kernel.loc, kernel.returns)
            self.pieces[first] = backend.compile(piece)
        self.piece_stop = dict(zip(cuts, cuts[1:]))
        self.schedule = self._steps(0, len(kernel.tasks), list(kernel.host_loops))
        self.device_loops = backend.device_loops(self.schedule)

    def _steps(self, first: int, stop: int, loops: list[ir.HostLoop]) -> list[_Step]:
        """The steps that run tasks [first, stop): pieces, and loops (outer loops first in `loops`)."""
        steps: list[_Step] = []
        at = first
        while at < stop:
            loop = next((h for h in loops if h.first == at), None)       # outer loops come first
            if loop is not None:
                inner = [h for h in loops if h is not loop and loop.first <= h.first and h.stop <= loop.stop]
                slot = next(k for k, c in enumerate(self.kernel.containers) if c is loop.counter)
                steps.append(LoopStep(self._steps(loop.first, loop.stop, inner), slot, loop.counter.dtype))
                loops = [h for h in loops if h is not loop and h not in inner]
                at = loop.stop
            else:
                steps.append(self.pieces[at])
                at = self.piece_stop[at]
        return steps

    def launch(self, args: LaunchArgs) -> None:
        if self.device_loops is None or not self.device_loops.launch(args):
            self._run(self.schedule, args)

    def _run(self, steps: list[_Step], args: LaunchArgs) -> None:
        for step in steps:
            if isinstance(step, LoopStep):
                while True:
                    self._run(step.body, args)
                    if not self._counter(step, args):
                        break
            else:
                step.launch(args)

    def _counter(self, loop: LoopStep, args: LaunchArgs) -> bool:
        """The counter's value after the body's launches (a read-back: it waits for them)."""
        storage = np.dtype(self.backend.storage_dtype(loop.dtype))
        raw = self.backend.download(args.buffers[loop.counter], storage.itemsize, 0)
        return bool(np.frombuffer(raw, dtype=storage, count=1)[0])

    def source(self) -> str:
        return "\n".join(piece.source() for piece in self.pieces.values())
