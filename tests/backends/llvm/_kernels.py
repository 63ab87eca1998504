"""Hand-built OffloadedKernels for the LLVM backend tests (no frontend or offload pass involved).

`elementwise` builds one range task `out[i] = f(in0[i], in1[i], ...)` over ndarray arguments; `run` binds
numpy arrays to a compiled kernel, launches it and returns the containers' contents."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from wgkern.backends.base import LaunchArgs
from wgkern.ir import nodes as ir
from wgkern.ir.builder import IRBuilder
from wgkern.lang import types as T


def ndarray_slot(name: str, dtype: T.DataType, ndim: int = 1, arg_index: int = 0) -> ir.ContainerSlot:
    return ir.ContainerSlot(name=name, kind="ndarray", dtype=dtype, ndim=ndim, arg_index=arg_index)


def field_slot(name: str, dtype: T.DataType, shape: tuple[int, ...]) -> ir.ContainerSlot:
    return ir.ContainerSlot(name=name, kind="field", dtype=dtype, ndim=len(shape), shape=shape)


def ndarray_args(slots: list[ir.ContainerSlot], scalars: list[T.DataType] = ()) -> list[ir.ArgSpec]:
    specs = [ir.ArgSpec(name=s.name, kind="ndarray", dtype=s.dtype, ndim=s.ndim) for s in slots]
    specs += [ir.ArgSpec(name=f"s{k}", kind="scalar", dtype=d) for k, d in enumerate(scalars)]
    return specs


def range_task(begin: Callable[[IRBuilder], ir.Stmt], end: Callable[[IRBuilder], ir.Stmt],
               body: Callable[[IRBuilder, ir.Stmt], None], name: str = "task") -> ir.Task:
    """A range task whose bounds are built by `begin`/`end` and body by `body(builder, index)`."""
    bounds = ir.Block()
    b = IRBuilder(bounds)
    loop = ir.RangeFor(begin=begin(b), end=end(b), body=ir.Block(), parallel=True)
    inner = IRBuilder(loop.body)
    body(inner, inner.loop_index(loop))
    return ir.Task(name, "range", bounds, loop, loop.body)


def serial_task(body: Callable[[IRBuilder], None], name: str = "serial") -> ir.Task:
    block = ir.Block()
    body(IRBuilder(block))
    return ir.Task(name, "serial", ir.Block(), None, block)


def shape_of(slot: ir.ContainerSlot, axis: int = 0) -> Callable[[IRBuilder], ir.Stmt]:
    return lambda b: b.insert(ir.ShapeOf(container=slot, axis=axis, dtype=T.i32))


def const(value: int) -> Callable[[IRBuilder], ir.Stmt]:
    return lambda b: b.const(value, T.i32)


def elementwise(in_types: list[T.DataType], out_type: T.DataType,
                fn: Callable[..., ir.Stmt], name: str = "ew") -> ir.OffloadedKernel:
    """out[i] = fn(b, in0[i], in1[i], ...) over i in [0, out.shape[0])."""
    ins = [ndarray_slot(f"in{k}", t, 1, k) for k, t in enumerate(in_types)]
    out = ndarray_slot("out", out_type, 1, len(ins))

    def body(b: IRBuilder, i: ir.Stmt) -> None:
        values = [b.global_load(b.global_ptr(s, [i])) for s in ins]
        result = fn(b, *values)
        b.insert(ir.GlobalStore(ptr=b.global_ptr(out, [i]), value=result))

    task = range_task(const(0), shape_of(out), body, name)
    return ir.OffloadedKernel(name, ndarray_args(ins + [out]), ins + [out], [task])


def run(backend: Any, compiled: Any, arrays: list[np.ndarray], scalars: list[Any] | None = None,
        launch_id: int = 0, seed: int = 0) -> list[np.ndarray]:
    """Copy `arrays` (one per container, in order) into device buffers, launch, return the results."""
    kernel = compiled.kernel
    buffers, views = [], []
    for slot, array in zip(kernel.containers, arrays):
        array = np.ascontiguousarray(array, dtype=slot.dtype.np_dtype)
        buffer = backend.allocate(array.nbytes)
        view = backend.host_view(buffer, array.dtype, array.shape)
        view[...] = array
        buffers.append(buffer)
        views.append(view)
    scalar_values = [None] * len(kernel.args)
    for k, value in enumerate(scalars or []):
        scalar_values[len(kernel.args) - len(scalars) + k] = value
    shapes = [tuple(a.shape) for a in views]
    compiled.launch(LaunchArgs(scalar_values, buffers, shapes, launch_id, seed))
    return [v.copy() for v in views]
