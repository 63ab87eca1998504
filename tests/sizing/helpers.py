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
from wgkern.passes.autodiff.unit_guard import HEADER_WORDS, UNIT_STATE_KIND
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


def container_arrays(kernel: ir.OffloadedKernel, units: int = 64) -> list[np.ndarray]:
    """The data of each container slot: the host field's, or for a grad kernel's unit-state slot the idle state
    (passes/autodiff/unit_guard.py: every unit runs) with room for `units` units."""
    arrays = []
    for slot in kernel.containers:
        if slot.kind == UNIT_STATE_KIND:
            state = np.zeros(HEADER_WORDS + units, np.int32)
            state[1] = 1
            arrays.append(state)
        else:
            arrays.append(slot.host.data)
    return arrays


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


class HostReducerDevice:
    """backends/llvm/gpu_sizing_reducer.py's ReducerDevice on the host: the reducer's target-independent LLVM bodies
    (the ones the CUDA and AMDGPU kernels wrap) JIT-compiled for this CPU, memory in numpy arrays. Each run is
    split over `threads` emulated device threads (first point t, stride `threads`), so the per-thread atomics
    combine as they do on the GPU."""

    def __init__(self, threads: int = 3):
        import ctypes

        from wgkern.backends.llvm.jit import compile_ir, function_address
        from wgkern.backends.llvm.gpu_sizing_reducer import generic_ir
        compile_ir(generic_ir())
        entry = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
        self.entries = {"slice": entry(function_address("wk_slice_range")),
                        "job": entry(function_address("wk_job_range"))}
        self.threads = threads
        self.memory: np.ndarray | None = None
        self.runs: list[str] = []

    def workspace(self, nbytes: int) -> int:
        if self.memory is None or self.memory.nbytes < nbytes:
            self.memory = np.full(max(nbytes, 8), 0xAB, np.uint8)     # not zero: the reducer must upload its zeros
        return self.memory.ctypes.data

    def upload(self, address: int, data: bytes) -> None:
        import ctypes
        ctypes.memmove(address, data, len(data))

    def download(self, address: int, nbytes: int) -> bytes:
        import ctypes
        return ctypes.string_at(address, nbytes)

    def run(self, entry: str, params: bytes, points: int) -> None:
        import ctypes
        block = ctypes.create_string_buffer(params, len(params))
        self.runs.append(entry)
        for first in range(self.threads):
            self.entries[entry](ctypes.addressof(block), first, self.threads)



def llvm_reducer_context(kernel: ir.OffloadedKernel, arrays: list[np.ndarray], scalars: list[Any] = (),
                         cache: SizeCache | None = None, stats: Stats | None = None,
                         generations: Generations | None = None, device: HostReducerDevice | None = None
                         ) -> HostLaunchContext:
    """A launch context whose device reducer is the GPU one (backends/llvm/gpu_sizing_reducer.py) running on the
    host."""
    from wgkern.backends.llvm.gpu_sizing_reducer import DeviceReducer
    index = {id(c): k for k, c in enumerate(kernel.containers)}
    gens = generations or Generations()
    words = [np.ascontiguousarray(a) for a in arrays]      # the reducer reads 32-bit words in place

    def shape(slot: Any) -> tuple[int, ...]:
        return tuple(arrays[index[id(slot)]].shape)

    reducer = DeviceReducer(device or HostReducerDevice(), lambda slot: words[index[id(slot)]].ctypes.data, shape)
    context = HostLaunchContext(list(scalars), lambda slot: arrays[index[id(slot)]], gens.token,
                                stats or Stats(), cache or SizeCache(), 32, reducer, shape)
    context.keepalive = words
    return context
