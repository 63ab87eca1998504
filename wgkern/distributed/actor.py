"""The actor of a DevicePool (pool.py): one process that owns one device, runs `wk.init` there, loads the kernel
program shipped to it, and runs the tasks sent to it on that program.

A program is a module path ("pkg.sims.cannon", imported after wk.init; "pkg.sims.cannon:build" calls `build()`
in it) or a picklable function: called with no argument after wk.init, it declares fields and kernels and
returns what the tasks receive (a namespace, a dict, a data_oriented object). A task is a picklable function
`task(program, *args)`; what it returns travels back with fields and ndarrays as numpy arrays (transport.py).
Names such as "speed" or "model.weights" reach a field of the program through attributes and dict keys."""
from __future__ import annotations

import importlib
import os
import socket
from typing import Any, Callable

import numpy as np


def load_program(program: Any) -> Any:
    """What the tasks receive: the module named by a module path, the result of `module:function`, or of the
    callable `program` itself."""
    if isinstance(program, str):
        module_name, _, function = program.partition(":")
        module = importlib.import_module(module_name)
        if not function:
            return module
        return _call_program(getattr(module, function), program)
    if callable(program):
        return _call_program(program, getattr(program, "__qualname__", repr(program)))
    raise TypeError(f"a DevicePool program is a module path ('pkg.module' or 'pkg.module:function') or a "
                    f"function that declares fields and kernels, not {type(program).__name__}")


def _call_program(function: Callable[[], Any], name: str) -> Any:
    result = function()
    if result is None:
        raise TypeError(f"the DevicePool program {name} returned None: return what the tasks work on (its fields "
                        "and kernels, say as a types.SimpleNamespace or a dict)")
    return result


def lookup(program: Any, name: str) -> Any:
    """The object `name` names in `program`: dotted attributes and dict keys ("model.weights")."""
    value = program
    for part in name.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif hasattr(value, part):
            value = getattr(value, part)
        else:
            raise KeyError(f"the DevicePool program has no {name!r} (no {part!r} in "
                           f"{type(value).__name__})")
    return value


def _gradient_of(program: Any, name: str) -> Any:
    from wgkern.lang.fields import Container
    container = lookup(program, name)
    grad = container.grad if isinstance(container, Container) else None
    if grad is None:
        raise ValueError(f"{name!r} of the DevicePool program has no gradient: it must be a field or ndarray "
                         "declared with needs_grad=True")
    return grad


class DeviceActor:
    """One device and the program loaded on it (the body of the Ray actor a DevicePool makes)."""

    def __init__(self) -> None:
        self.program: Any = None
        self.wk_program: Any = None

    def start(self, program: Any, arch: Any, init_options: dict[str, Any]) -> dict[str, Any]:
        """wk.init on this actor's device (index 0 among what Ray left visible: it sets CUDA_VISIBLE_DEVICES
        to the GPU it assigned, or to nothing on a CPU actor), then load `program`; describe()."""
        from wgkern.distributed import transport
        transport.install()
        import wgkern as wk
        self.wk_program = wk.init(arch=arch, **init_options)
        self.program = load_program(program)
        return self.describe()

    def describe(self) -> dict[str, Any]:
        """Where this actor runs: host, process, arch, device, the devices Ray left visible, and counters."""
        from wgkern.backends.llvm import jit
        program = self.wk_program
        host_jit = jit._JIT
        return {
            "host": socket.gethostname(), "pid": os.getpid(), "arch": program.arch.value,
            "device": program.description, "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "stats": program.stats.as_dict(),
            "disk_cache": {"hits": host_jit.disk_hits, "stores": host_jit.disk_stores} if host_jit else None,
        }

    def call(self, task: Callable[..., Any], args: tuple, kwargs: dict[str, Any]) -> Any:
        return task(self.program, *args, **kwargs)

    def gradients(self, names: list[str]) -> dict[str, np.ndarray]:
        return {name: _gradient_of(self.program, name).to_numpy() for name in names}

    def set_gradients(self, values: dict[str, np.ndarray]) -> None:
        for name, value in values.items():
            _gradient_of(self.program, name).from_numpy(value)

    def assign(self, values: dict[str, np.ndarray]) -> None:
        for name, value in values.items():
            lookup(self.program, name).from_numpy(np.asarray(value))
