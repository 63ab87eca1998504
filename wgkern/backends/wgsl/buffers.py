"""What the WGSL runtime's parts share (runtime.py, compiled_kernel.py, transfers.py): a device buffer with its
size, the sizes and limits launches and transfers work within, and the decorator that serialises a backend's
methods under its lock."""
from __future__ import annotations

import functools
from typing import Any, Callable

from wgkern.backends.wgsl.arena import Arena


def _serialized(method: Callable[..., Any]) -> Callable[..., Any]:
    """Run a WgslBackend method holding the backend's lock (see the module docstring, Threads)."""
    @functools.wraps(method)
    def locked(self: Any, *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            return method(self, *args, **kwargs)
    return locked


RING_BYTES = 1 << 20          # launch-argument ring: one upload per submit
RING_UPLOAD_BYTES = 1 << 16   # host writes up to this size into a container with pending launches ride in the ring


STAGING_KEEP_BYTES = 1 << 26  # read-backs up to this size reuse one staging buffer


# Launches per submit. On a GPU the device starts on a batch while Python records the next; on a CPU adapter
# (lavapipe) the "device" shares the cores with Python, so work is submitted in large batches.
BATCH_LIMIT_GPU = 256


BATCH_LIMIT_CPU = 4096


MAX_DIMENSION = 65535         # workgroups per dispatch dimension (WebGPU default limit, lavapipe's too)


BOUNDS_FROM_MEMORY_GROUPS = 1024   # capped dispatch for ranges whose bounds are computed in the shader


MAX_THREADS = 1 << 31         # the shader's u32 thread index math stays exact below this


NVIDIA_VENDOR_ID = 0x10DE


_U32 = 0xFFFFFFFF


def _whole_vectors(nbytes: int) -> int:
    """Bytes allocated and bound for `nbytes`: whole vec4s, so wide_access.py's vector view of a binding holds
    the container's last, partial vector."""
    return max(16, -(-int(nbytes) // 16) * 16)


class WgslBuffer:
    """A container's storage: `capacity` bytes (`nbytes` rounded up to 16) at `offset` in the wgpu `buffer`.
    A container starts in its own buffer (offset 0); packed binding may move it into an `arena` (arena.py), and
    then `buffer`/`offset` change but the handle stays the same object. Hashes by identity: bind groups are
    cached by the tuple of buffers they bind."""
    __slots__ = ("buffer", "nbytes", "capacity", "offset", "arena", "bind_group_keys")

    def __init__(self, buffer: Any, nbytes: int, capacity: int | None = None):
        self.buffer = buffer
        self.nbytes = nbytes
        self.capacity = buffer.size if capacity is None else capacity
        self.offset = 0
        self.arena: Arena | None = None
        self.bind_group_keys: list[tuple[Any, ...]] = []

    def __repr__(self) -> str:
        return f"<WgslBuffer {self.nbytes} bytes>"
