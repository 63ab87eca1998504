"""The per-backend adapters: a LaunchContext built from real backend buffers and LaunchArgs (CPU host views,
WGSL device buffers) sizes the same expression to the same value, narrow ints widened on the device."""
from __future__ import annotations

import numpy as np
import pytest

from wgkern.backends.base import LaunchArgs
from wgkern.ir import nodes as ir
from wgkern.lang import types as T
from wgkern.sizing import SizeCache, evaluate_sizes
from wgkern.sizing import expr as E
from wgkern.runtime.sizing_context import launch_context

from .helpers import Stats


def _backend(name: str):
    if name == "cpu":
        cpu = pytest.importorskip("wgkern.backends.llvm.cpu")
        return cpu.CpuBackend()
    from wgkern.backends.wgsl.runtime import WgslBackend
    return WgslBackend()


@pytest.mark.parametrize("backend_name", ["cpu", "vulkan"])
def test_adapter_sizes_from_launch_args(backend_name, request):
    if backend_name == "vulkan":
        request.getfixturevalue("wgpu_device")      # skips (or fails in CI) without a Vulkan adapter
    backend = _backend(backend_name)
    n = ir.ContainerSlot(name="n", kind="ndarray", dtype=T.i16, ndim=1, arg_index=0)
    kernel = ir.OffloadedKernel("k", [], [n], [])
    data = np.array([3, -4, 9, 2], np.int16)
    storage = np.dtype(backend.storage_dtype(T.i16))
    buffer = backend.allocate(data.size * storage.itemsize)
    backend.upload(buffer, data.astype(storage).view(np.uint8))
    i = E.BoundVar("i")
    exprs = [E.MaxOverRange(i, E.Const(0), E.ShapeOf(n, 0), E.Add(E.NdarrayRead(n, (i,), T.i16), E.ScalarArg(1))),
             E.Mul(E.NdarrayRead(n, (E.Const(1),), T.i16), E.Const(2))]
    stats, cache = Stats(), SizeCache()
    for _ in range(2):
        context = launch_context(kernel, LaunchArgs([None, 5], [buffer], [data.shape]), backend, [("n", 0)],
                                 stats, cache, 32)
        assert evaluate_sizes(exprs, context) == [14, -8]
    assert stats.sizer_host_evals == 2        # the second launch hit the cache
    backend.shutdown()
