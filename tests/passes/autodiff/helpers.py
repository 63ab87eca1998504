"""Hand-built IR kernels for autodiff tests: a 1-D parallel task over N threads, run by the reference
interpreter (no backend involved)."""
from __future__ import annotations

from typing import Callable

import numpy as np

from wgkern.ir import nodes as ir
from wgkern.ir.builder import IRBuilder
from wgkern.ir.interpreter import Interpreter
from wgkern.lang import types as T
from wgkern.passes.autodiff import make_grad_kernel
from wgkern.passes.autodiff.unit_guard import HEADER_WORDS, UNIT_STATE_KIND


class Host:
    """Stands in for a Field: the autodiff pass only looks at `.grad`."""

    def __init__(self, grad: "Host | None" = None):
        self.grad = grad


def field_slot(name: str, dtype: T.DataType, shape: tuple[int, ...], needs_grad: bool) -> ir.ContainerSlot:
    host = Host(Host() if needs_grad else None)
    return ir.ContainerSlot(name=name, kind="field", dtype=dtype, ndim=len(shape), shape=shape, host=host)


def parallel_kernel(n: int, containers: list[ir.ContainerSlot],
                    body: Callable[[IRBuilder, ir.Stmt], None]) -> ir.OffloadedKernel:
    bounds = IRBuilder()
    loop = ir.RangeFor(begin=bounds.const(0, T.i32), end=bounds.const(n, T.i32), body=ir.Block(), parallel=True)
    b = IRBuilder(loop.body)
    body(b, b.loop_index(loop))
    task = ir.Task("task", "range", bounds.block, loop, loop.body)
    return ir.OffloadedKernel("kernel", [], list(containers), [task])


def run(kernel: ir.OffloadedKernel, arrays: dict[ir.ContainerSlot, np.ndarray]) -> None:
    Interpreter(kernel, [arrays[c] for c in kernel.containers], []).run()


def run_grad(kernel: ir.OffloadedKernel, arrays: dict[ir.ContainerSlot, np.ndarray],
             grads: dict[ir.ContainerSlot, np.ndarray]) -> ir.OffloadedKernel:
    """Build and run the grad kernel; `grads` maps primal slots to their adjoint arrays."""
    grad_kernel = make_grad_kernel(kernel)
    by_host = {id(slot.host.grad): array for slot, array in grads.items()}
    all_arrays = []
    for slot in grad_kernel.containers:
        if slot in arrays:
            all_arrays.append(arrays[slot])
        else:
            all_arrays.append(by_host[id(slot.host)])
    Interpreter(grad_kernel, all_arrays, []).run()
    return grad_kernel


# ---- kernels written in Python, built by the frontend, run by the interpreter --------------------------------

from wgkern.lang.fields import Container  # noqa: E402


class FakeField(Container):
    """A field that lives in a numpy array (no backend): `.data` and, with needs_grad, `.grad.data`."""
    is_field = True

    def __init__(self, dtype: T.DataType, shape: tuple[int, ...] | int, needs_grad: bool = False, name: str = "f"):
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        super().__init__(dtype, shape, name=name)
        self.data = np.zeros(shape, dtype.np_dtype)
        if needs_grad:
            self.grad = FakeField(dtype, shape, False, name + ".grad")


_TEMPS: dict[int, np.ndarray] = {}


def _arrays(kernel: ir.OffloadedKernel) -> list[np.ndarray]:
    """Field data, and for kernel temporaries a zeroed array kept per slot (as the runtime does)."""
    out = []
    for slot in kernel.containers:
        if slot.kind == "temp":
            out.append(_TEMPS.setdefault(id(slot), np.zeros(slot.shape, slot.dtype.np_dtype)))
        elif slot.kind == UNIT_STATE_KIND:      # the idle unit state: every unit runs (unit_guard.py)
            state = np.zeros(HEADER_WORDS + 4096, np.int32)
            state[1] = 1
            out.append(state)
        else:
            out.append(slot.host.data)
    return out


def compile_forward(fn) -> ir.OffloadedKernel:
    from wgkern.frontend import build_kernel
    from wgkern.lang.kernel import Kernel
    from wgkern.passes.pipeline import FORWARD, run_pipeline
    return run_pipeline(FORWARD, build_kernel(Kernel(fn), [], {}))


def launch(kernel: ir.OffloadedKernel, stack_capacity=None) -> None:
    Interpreter(kernel, _arrays(kernel), [], stack_capacity=stack_capacity).run()


def compile_reverse(fn) -> ir.OffloadedKernel:
    """The real `.grad` pipeline (passes/pipeline.py REVERSE), verified after every stage."""
    from wgkern.frontend import build_kernel
    from wgkern.lang.kernel import Kernel
    from wgkern.passes.pipeline import REVERSE, run_pipeline
    return run_pipeline(REVERSE, build_kernel(Kernel(fn), [], {}))


def forward_and_grad(fn, stack_capacity=None) -> tuple[ir.OffloadedKernel, ir.OffloadedKernel]:
    """Compile `fn`, run it forward, then run its grad kernel (adjoints must be seeded by the caller)."""
    forward = compile_forward(fn)
    grad = compile_reverse(fn)
    launch(forward)
    launch(grad, stack_capacity)
    return forward, grad
