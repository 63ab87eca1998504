"""Helpers for frontend tests: fake fields, ArgSpecs from annotations, build + verify, and a serial run on the
reference interpreter."""
from __future__ import annotations

from typing import Any

import wgkern
from wgkern.frontend import build_kernel
from wgkern.ir import nodes as ir
from wgkern.ir.visitor import walk
from wgkern.lang import types as T
from wgkern.lang.fields import Container
from wgkern.ir.verifier import verify
from wgkern.lang.kernel import Kernel


wk = wgkern


class FakeField(Container):
    """Satisfies the Container attribute contract without a runtime."""
    is_field = True

    def __init__(self, dtype: Any, shape: Any = (), name: str = "x", needs_grad: bool = False):
        element_type = dtype if isinstance(dtype, T.VectorType) else None
        self.dtype = dtype.dtype if element_type else dtype
        self.shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.element_type = element_type
        self.element_shape = element_type.element_shape if element_type else ()
        self.name = name
        self.grad = FakeField(dtype, shape, name + ".grad") if needs_grad else None
        self.dual = None
        self.generation = 0


def specs_for(k: Kernel, args: tuple[Any, ...]) -> tuple[list[ir.ArgSpec], dict[int, Any]]:
    """ArgSpecs from annotations: scalars from their dtype; ndarray annotations need an (dtype, ndim, elem)
    tuple argument; templates take the argument value."""
    specs: list[ir.ArgSpec] = []
    templates: dict[int, Any] = {}
    for i, (param, value) in enumerate(zip(k.signature.parameters.values(), args)):
        ann = param.annotation
        if isinstance(ann, str):
            ann = eval(ann, k.fn.__globals__)  # noqa: S307 - test helper resolving string annotations
        if isinstance(ann, T.NdarrayType):
            dtype, ndim, elem = value
            specs.append(ir.ArgSpec(name=param.name, kind="ndarray", dtype=dtype, ndim=ndim,
                                    element_shape=tuple(elem)))
        elif isinstance(ann, T.Template):
            specs.append(ir.ArgSpec(name=param.name, kind="template"))
            templates[i] = value
        else:
            specs.append(ir.ArgSpec(name=param.name, kind="scalar", dtype=T.to_dtype(ann)))
    return specs, templates


def build(k: Kernel, *args: Any) -> ir.KernelIR:
    specs, templates = specs_for(k, args)
    kir = build_kernel(k, specs, templates)
    verify(kir)
    return kir


def of_type(kir: ir.KernelIR | ir.Block, cls: type) -> list[Any]:
    block = kir.body if isinstance(kir, ir.KernelIR) else kir
    return [s for s in walk(block) if isinstance(s, cls)]


def run(kir: ir.KernelIR, arrays: dict[str, Any] | None = None,
        scalars: list[Any] | None = None) -> dict[str, Any]:
    """Execute the kernel body as one serial task with the reference interpreter. `arrays` maps container
    names to numpy arrays (modified in place); missing ones are zero-filled. Returns name -> array."""
    import numpy as np

    from wgkern.ir.interpreter import Interpreter
    arrays = dict(arrays or {})
    ordered = []
    for slot in kir.containers:
        if slot.name not in arrays:
            arrays[slot.name] = np.zeros(slot.shape, dtype=slot.dtype.np_dtype)
        ordered.append(arrays[slot.name])
    task = ir.Task("body", "serial", ir.Block(), None, kir.body)
    offloaded = ir.OffloadedKernel(kir.name, kir.args, kir.containers, [task], kir.loc, kir.returns)
    Interpreter(offloaded, ordered, list(scalars or [])).run()
    return arrays
