"""Hand-built OffloadedKernels for the WGSL backend tests (the frontend is not needed: IRBuilder builds them),
and a runner that launches one on the WGSL backend and returns the containers' contents as numpy arrays."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from wgkern.backends.base import LaunchArgs
from wgkern.ir import nodes as ir
from wgkern.ir.builder import IRBuilder
from wgkern.ir.ops import BinaryOpKind
from wgkern.lang import types as T


def slot(name: str, dtype: T.DataType, shape: tuple[int, ...] | None, ndim: int | None = None,
         kind: str | None = None, arg_index: int | None = None) -> ir.ContainerSlot:
    """A container slot: 'field' with a static shape, or 'ndarray' (shape None) bound to argument arg_index."""
    if shape is None:
        return ir.ContainerSlot(name=name, kind=kind or "ndarray", dtype=dtype, ndim=ndim or 1,
                                arg_index=arg_index)
    return ir.ContainerSlot(name=name, kind=kind or "field", dtype=dtype, ndim=len(shape), shape=shape)


def range_task(name: str, begin: Callable[[IRBuilder], ir.Stmt], end: Callable[[IRBuilder], ir.Stmt],
               body: Callable[[IRBuilder, ir.Stmt], None], reversed_: bool = False) -> ir.Task:
    """A range task: `begin`/`end` build the bounds, `body(b, index)` the body given the loop index."""
    b = IRBuilder()
    lo, hi = begin(b), end(b)
    loop = ir.RangeFor(begin=lo, end=hi, body=ir.Block(), parallel=True, reversed=reversed_)
    bounds = b.block
    with b.at(loop.body):
        index = b.loop_index(loop)
        body(b, index)
    return ir.Task(name=name, kind="range", bounds=bounds, loop=loop, body=loop.body)


def serial_task(name: str, body: Callable[[IRBuilder], None]) -> ir.Task:
    b = IRBuilder()
    body(b)
    return ir.Task(name=name, kind="serial", bounds=ir.Block(), loop=None, body=b.block)


def kernel(name: str, containers: list[ir.ContainerSlot], tasks: list[ir.Task],
           args: Sequence[ir.ArgSpec] = ()) -> ir.OffloadedKernel:
    return ir.OffloadedKernel(name=name, args=list(args), containers=containers, tasks=tasks)


def scalar_arg(name: str, dtype: T.DataType) -> ir.ArgSpec:
    return ir.ArgSpec(name=name, kind="scalar", dtype=dtype)


class DeviceArrays:
    """Host arrays mirrored into backend buffers (storage dtype), for running a kernel and reading results."""

    def __init__(self, backend: Any, kernel_ir: ir.OffloadedKernel, arrays: Sequence[np.ndarray]):
        self.backend = backend
        self.kernel = kernel_ir
        self.buffers = []
        self.shapes = []
        for container, array in zip(kernel_ir.containers, arrays):
            storage = np.ascontiguousarray(array).astype(backend.storage_dtype(container.dtype))
            buffer = backend.allocate(storage.nbytes)
            backend.upload(buffer, storage.reshape(-1).view(np.uint8))
            self.buffers.append(buffer)
            self.shapes.append(tuple(array.shape))

    def args(self, scalars: Sequence[Any] = (), launch_id: int = 0, seed: int = 0) -> LaunchArgs:
        return LaunchArgs(list(scalars), list(self.buffers), list(self.shapes), launch_id, seed)

    def read(self, k: int) -> np.ndarray:
        container = self.kernel.containers[k]
        storage = np.dtype(self.backend.storage_dtype(container.dtype))
        count = int(np.prod(self.shapes[k]))
        raw = self.backend.download(self.buffers[k], count * storage.itemsize)
        return np.frombuffer(raw, storage).reshape(self.shapes[k]).astype(container.dtype.np_dtype)

    def free(self) -> None:
        for buffer in self.buffers:
            self.backend.free(buffer)


def run(backend: Any, kernel_ir: ir.OffloadedKernel, arrays: Sequence[np.ndarray], scalars: Sequence[Any] = (),
        launch_id: int = 0, seed: int = 0) -> list[np.ndarray]:
    """Compile, upload, launch once, read every container back."""
    compiled = backend.compile(kernel_ir)
    device = DeviceArrays(backend, kernel_ir, arrays)
    compiled.launch(device.args(scalars, launch_id, seed))
    out = [device.read(k) for k in range(len(arrays))]
    device.free()
    return out


def interpret(kernel_ir: ir.OffloadedKernel, arrays: Sequence[np.ndarray], scalars: Sequence[Any] = (),
              launch_id: int = 0, seed: int = 0) -> list[np.ndarray]:
    """The reference interpreter's result (docs/internals.md semantics) on copies of `arrays`."""
    from wgkern.ir.interpreter import Interpreter
    copies = [np.array(a, copy=True) for a in arrays]
    Interpreter(kernel_ir, copies, list(scalars), launch_id, seed).run()
    return copies


def count_submits(backend: Any, monkeypatch: Any) -> list[int]:
    """A list that grows by one at every queue submit of `backend`: its batches' (encoding.py's recorder, which
    may call wgpu-native directly) and wgpu-py's own."""
    submits: list[int] = []
    real_submit = backend.queue.submit
    monkeypatch.setattr(backend.queue, "submit", lambda buffers: (submits.append(1), real_submit(buffers))[1])
    from wgkern.backends.wgsl.encoding import NativeCommands
    commands = backend.commands
    if isinstance(commands, NativeCommands):        # submits through wgpu-native, not queue.submit
        real_batch_submit = commands.submit
        monkeypatch.setattr(commands, "submit", lambda *batch: (submits.append(1), real_batch_submit(*batch))[1])
    return submits


def stack_kernel(dtype: T.DataType, n: int, counted: bool = False) -> ir.OffloadedKernel:
    """Per index i: push x[i] * j for j < pushes, then pop them all, summing load-top (and, for floats,
    accumulating into the adjoint and reading it back); out[i] = the sum. Over i < n, or with `counted`
    over i < a second scalar argument `count` (<= n)."""
    x = ir.ContainerSlot(name="x", kind="field", dtype=dtype, ndim=1, shape=(n,))
    out = ir.ContainerSlot(name="out", kind="field", dtype=dtype, ndim=1, shape=(n,))

    def body(b, i):
        stack = b.insert(ir.AdStackAlloca(dtype=dtype, name="v", capacity=None, stack_id=0))
        total = b.alloca(dtype, "total")
        value = b.global_load(b.global_ptr(x, [i]))
        pushes = b.insert(ir.ArgLoad(arg_index=0, dtype=T.i32))
        up = b.range_for(b.const(0, T.i32), pushes)
        with b.at(up.body):
            j = b.loop_index(up)
            item = b.binary(BinaryOpKind.BIT_XOR, value, b.cast(j, dtype)) if not dtype.is_float \
                else b.mul(value, b.cast(j, dtype))
            b.insert(ir.AdStackPush(stack=stack, value=item))
        down = b.range_for(b.const(0, T.i32), pushes)
        with b.at(down.body):
            top = b.insert(ir.AdStackLoadTop(stack=stack, dtype=dtype))
            if dtype.is_float:
                b.insert(ir.AdStackAccAdjoint(stack=stack, value=b.const(0.5, dtype)))
                b.insert(ir.AdStackAccAdjoint(stack=stack, value=top))
                top = b.add(top, b.insert(ir.AdStackLoadTopAdj(stack=stack, dtype=dtype)))
            b.store(total, b.add(b.load(total), top) if not dtype.is_bool else
                    b.binary(BinaryOpKind.BIT_XOR, b.load(total), top))
            b.insert(ir.AdStackPop(stack=stack))
        b.insert(ir.AdStackPop(stack=stack))     # popping an empty stack is a no-op
        b.global_store(b.global_ptr(out, [i]), b.load(total))

    end = (lambda b: b.insert(ir.ArgLoad(arg_index=1, dtype=T.i32))) if counted else \
        (lambda b: b.const(n, T.i32))
    task = range_task("t", lambda b: b.const(0, T.i32), end, body)
    scalars = [scalar_arg("pushes", T.i32)] + ([scalar_arg("count", T.i32)] if counted else [])
    return kernel(f"stacks_{dtype.name}", [x, out], [task], scalars)


def relaunch_counted_stacks(backend: Any, seen: Callable[[Any], Any], n: int = 5000) -> list[Any]:
    """The counted stack kernel over `n` indices compiled on `backend` and launched over 300, 300, n and 300
    indices with capacity 4, then over n with capacity 6, each result checked against the interpreter's; returns
    `seen(compiled)` after each launch (what a test of the adstack layout's reuse compares)."""
    k = stack_kernel(T.f32, n, counted=True)
    compiled = backend.compile(k)
    x = (np.arange(n) % 7 + 1).astype(np.float32)
    device = DeviceArrays(backend, k, [x, np.zeros(n, np.float32)])
    found = []
    for count, capacity in ((300, 4), (300, 4), (n, 4), (300, 4), (n, 6)):
        args = device.args([capacity, count])
        args.extra = {"adstack_capacities": [[capacity]]}
        compiled.launch(args)
        backend.sync()
        want = interpret(k, [x, np.zeros(n, np.float32)], [capacity, count])[1]
        np.testing.assert_array_equal(device.read(1)[:count], want[:count])
        found.append(seen(compiled))
    device.free()
    return found
