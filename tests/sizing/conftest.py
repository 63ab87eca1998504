"""Fixtures for the sizing tests: `sizing_arch` runs a test with the CPU (numpy) reducer, with the WGSL
reducer on a Vulkan wgpu device (lavapipe in CI), and with the CUDA reducer's kernels compiled for the host
('llvm': the same LLVM bodies the CUDA backend runs); `make_context` builds the matching launch context."""
from __future__ import annotations

import os
from typing import Any, Callable

import numpy as np
import pytest

from wgkern.ir import nodes as ir
from wgkern.sizing import SizeCache

from .helpers import Generations, Stats, host_context, llvm_reducer_context

_IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.fixture(scope="session")
def wgpu_device() -> Any:
    try:
        import wgpu
        adapters = [a for a in wgpu.gpu.enumerate_adapters_sync() if a.info["backend_type"] == "Vulkan"]
    except Exception as exc:  # no wgpu / no driver
        adapters, reason = [], str(exc)
    else:
        reason = "no Vulkan wgpu adapter"
    if not adapters:
        if _IN_CI:
            pytest.fail(f"lavapipe/Vulkan is required in CI: {reason}")
        pytest.skip(reason)
    return adapters[0].request_device_sync()


@pytest.fixture(scope="session")
def reducer_pipeline(wgpu_device: Any) -> Any:
    from wgkern.backends.wgsl.sizing_reducer import MaxReducerPipeline
    return MaxReducerPipeline(wgpu_device)


@pytest.fixture(params=["cpu", "vulkan", "llvm"])
def sizing_arch(request: pytest.FixtureRequest) -> str:
    return request.param


def device_buffers(device: Any, arrays: dict[int, np.ndarray]) -> dict[int, Any]:
    import wgpu
    out = {}
    for key, array in arrays.items():
        if array.dtype.kind in "iub" and array.dtype.itemsize < 4:   # device storage widens to 32 bits
            array = array.astype(np.int32 if array.dtype.kind == "i" else np.uint32)
        data = np.ascontiguousarray(array).tobytes()
        data += b"\0" * (16 - len(data) % 16 if len(data) % 16 or not data else 0)
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC
        out[key] = device.create_buffer_with_data(data=data, usage=usage)
    return out


@pytest.fixture
def make_context(request: pytest.FixtureRequest, sizing_arch: str) -> Callable[..., Any]:
    """make_context(containers, arrays, scalars=(), cache=None, stats=None, generations=None)."""

    def make(containers: list[ir.ContainerSlot], arrays: list[np.ndarray], scalars=(), cache=None, stats=None,
             generations: Generations | None = None) -> Any:
        kernel = ir.OffloadedKernel("k", [], list(containers), [])
        gens = generations or Generations()
        if sizing_arch == "cpu":
            return host_context(kernel, arrays, scalars, cache, stats, gens)
        if sizing_arch == "llvm":
            return llvm_reducer_context(kernel, arrays, scalars, cache, stats, gens)
        from wgkern.backends.wgsl.sizing_reducer import WgslLaunchContext
        pipeline = request.getfixturevalue("reducer_pipeline")
        index = {id(c): k for k, c in enumerate(containers)}
        buffers = device_buffers(pipeline.device, {k: a for k, a in enumerate(arrays)})
        return WgslLaunchContext(list(scalars), lambda s: arrays[index[id(s)]].shape, gens.token,
                                 lambda s: (buffers[index[id(s)]], 0), lambda s: arrays[index[id(s)]], pipeline,
                                 stats or Stats(), cache or SizeCache())

    return make
