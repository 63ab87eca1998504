"""One small adapter per backend: a sizing LaunchContext built from a launch's `LaunchArgs`.

CPU (any backend with host views): containers are numpy views, reductions run in numpy. CUDA and AMDGPU (a backend
with `sizing_reducer`): reductions and gathered reads run on the device (backends/llvm/gpu_sizing_reducer.py);
what the reducer grammar cannot express comes from one read-back of each container per launch. WGSL (a backend with
a wgpu `device`): reductions run in the generic max-reducer pipeline, compiled once per backend and kept on it;
pending launches are flushed first so the reducers see their writes. A WGSL backend on a CPU adapter
(`backend.host_sizing`, lavapipe) reads the bounds back and reduces them in numpy: there the host is the
device, and numpy over a mapped copy outruns the reducer shader about fourfold. `tokens[k]` is the cache token of
container slot k: (unique container id, generation), or None where nothing may be cached."""
from __future__ import annotations

from typing import Any, Callable, Hashable, Sequence

import numpy as np

from wgkern.sizing import HostLaunchContext, SizeCache


def _slot_index(kernel: Any) -> dict[int, int]:
    return {id(slot): k for k, slot in enumerate(kernel.containers)}


def _host_array(backend: Any, args: Any, index: dict[int, int]):
    def array(slot: Any) -> np.ndarray:
        k = index[id(slot)]
        storage = np.dtype(backend.storage_dtype(slot.dtype))
        shape = tuple(args.shapes[k])
        view = backend.host_view(args.buffers[k], storage, shape)
        if view is not None:
            return view
        count = int(np.prod(shape, dtype=np.int64))
        if not count:
            return np.zeros(shape, storage)
        nbytes = count * storage.itemsize
        # one reusable host array per slot position: large read-backs into fresh memory pay its page faults
        scratch = getattr(backend, "sizing_scratch", None)
        if scratch is None:
            raw = backend.download(args.buffers[k], nbytes, 0)
        else:
            out = scratch.get(k)
            if out is None or out.nbytes < nbytes:
                out = scratch[k] = np.empty(nbytes, np.uint8)
            raw = backend.download(args.buffers[k], nbytes, 0, out)
        return np.frombuffer(raw, dtype=storage, count=count).reshape(shape)
    return array


def _once_per_launch(array: Callable[[Any], np.ndarray]) -> Callable[[Any], np.ndarray]:
    """`array`, reading each container back at most once (for the launch this context serves)."""
    read: dict[int, np.ndarray] = {}

    def read_back(slot: Any) -> np.ndarray:
        found = read.get(id(slot))
        if found is None:
            found = read[id(slot)] = array(slot)
        return found
    return read_back


def max_reducer_pipeline(backend: Any) -> Any:
    """The backend's MaxReducerPipeline, compiled on first use (one per device)."""
    pipeline = getattr(backend, "max_reducer_pipeline", None)
    if pipeline is None:
        from wgkern.backends.wgsl.sizing_reducer import MaxReducerPipeline
        pipeline = MaxReducerPipeline(backend.device)
        backend.max_reducer_pipeline = pipeline
    return pipeline


def launch_context(kernel: Any, args: Any, backend: Any, tokens: Sequence[Hashable | None], stats: Any,
                   cache: SizeCache, default_ad_stack_size: int) -> Any:
    """The LaunchContext of one launch of `kernel` (an OffloadedKernel) with `args` (backends.base.LaunchArgs)."""
    index = _slot_index(kernel)
    array = _host_array(backend, args, index)

    def token(slot: Any) -> Hashable | None:
        return tokens[index[id(slot)]]

    def shape(slot: Any) -> tuple[int, ...]:
        return tuple(args.shapes[index[id(slot)]])

    make_reducer = getattr(backend, "sizing_reducer", None)
    if make_reducer is not None:       # CUDA, AMDGPU: reductions on the device, the rest from read-backs
        reducer = make_reducer(lambda slot: args.buffers[index[id(slot)]].address, shape)
        return HostLaunchContext(args.scalars, _once_per_launch(array), token, stats, cache, default_ad_stack_size,
                                 reducer, shape)
    if getattr(backend, "device", None) is None:
        return HostLaunchContext(args.scalars, array, token, stats, cache, default_ad_stack_size, None, shape)
    if getattr(backend, "host_sizing", False):
        # a CPU adapter: read each container back once per launch and reduce with numpy (no reducer pipeline)
        return HostLaunchContext(args.scalars, _once_per_launch(array), token, stats, cache, default_ad_stack_size,
                                 None, shape)
    from wgkern.backends.wgsl.sizing_reducer import WgslLaunchContext
    pipeline = max_reducer_pipeline(backend)
    flush = getattr(backend, "flush", None)
    if flush is not None and getattr(backend, "pending_launches", 1):
        flush()

    def buffer_of(slot: Any) -> tuple[Any, int]:
        buffer = args.buffers[index[id(slot)]]
        return getattr(buffer, "buffer", buffer), int(getattr(buffer, "offset", 0))

    return WgslLaunchContext(args.scalars, shape, token, buffer_of, array, pipeline, stats, cache,
                             default_ad_stack_size)
