"""Shared helpers for the pass tests: run a kernel (before or after offload) on the reference interpreter."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

from wgkern.ir import nodes as ir
from wgkern.ir.clone import clone_block


def as_one_serial_task(kernel: ir.KernelIR) -> ir.OffloadedKernel:
    """A KernelIR run as one serial task: the sequential meaning every offloaded form must agree with."""
    task = ir.Task("reference", "serial", ir.Block(), None, clone_block(kernel.body, {}))
    return ir.OffloadedKernel(kernel.name, kernel.args, kernel.containers, [task], kernel.loc, kernel.returns)


@pytest.fixture
def interpret() -> Callable[..., list[np.ndarray]]:
    """interpret(kernel, arrays, scalars) -> arrays after one launch (extra temp slots get zeros)."""
    interpreter = pytest.importorskip("wgkern.ir.interpreter")

    def run(kernel: ir.KernelIR | ir.OffloadedKernel, arrays: list[np.ndarray], scalars: list[Any] = ()) \
            -> list[np.ndarray]:
        if isinstance(kernel, ir.KernelIR):
            kernel = as_one_serial_task(kernel)
        arrays = [a.copy() for a in arrays]
        for slot in kernel.containers[len(arrays):]:
            arrays.append(np.zeros(slot.shape, dtype=slot.dtype.np_dtype))
        interpreter.Interpreter(kernel, arrays, list(scalars)).run()
        return arrays

    return run
