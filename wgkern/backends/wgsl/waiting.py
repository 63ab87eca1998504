"""Waiting for a wgpu device's submitted work: the wait behind `wk.sync()` on a WGSL backend.

wgpu-py waits with a blocking `wgpuDevicePoll`, which sleeps in the driver until the GPU signals. On an NVIDIA
H200 (Vulkan) that wake-up costs ~50 us after a 0.19 ms saxpy (the wait took 0.25 ms); spinning on
non-blocking polls until the queue reports the work done returns ~13 us after it (docs/benchmarks.md, "Waiting
for the GPU"). So on a GPU adapter `SpinningWait` spins, for at most `SPIN_SECONDS`, then blocks as before: a
long kernel costs at most that much CPU time, and its wake-up is small beside it. On a CPU adapter (lavapipe)
the GPU *is* the CPU: spinning would take a core from the work it waits for (2x slower measured on 2 cores),
so it blocks.

"Done" is wgpu-native's queue-work-done callback, asked for right before spinning; it covers every submission
made before it (webgpu.h). The callback type comes from wgpu-native's own header through cffi, so its
signature follows the library that is loaded (wgpu-py 0.32's own binding of it declares an older one)."""
from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

SPIN_SECONDS = 0.002     # the longest a wait spins before it blocks in the driver
BLOCKED_POLLS = 1000     # blocking polls after that for a callback that has not run (then the caller reports it)


def blocking_wait(device: Any) -> Callable[[], None] | None:
    """A wait that blocks in the driver until the device's submitted work is done (wgpu-py's own), or None
    where this wgpu-py has none (the backend then waits by reading a word back)."""
    return getattr(device, "_poll_wait", None)


class SpinningWait:
    """`wait()`: poll `device` without blocking until the queue's work submitted so far is done, for at most
    `spin_seconds`, then block. Not reentrant; the backend calls it under its lock."""

    def __init__(self, device: Any, spin_seconds: float = SPIN_SECONDS):
        from wgpu.backends.wgpu_native import ffi, lib
        from wgpu.backends.wgpu_native._api import libf
        self.spin_seconds = spin_seconds
        self._poll = libf.wgpuDevicePoll
        self._on_done = libf.wgpuQueueOnSubmittedWorkDone
        self._device = device._internal
        self._queue = device.queue._internal
        self._null = ffi.NULL
        self._block = device._poll_wait
        self.done = False
        self._callback = ffi.callback("WGPUQueueWorkDoneCallback", self._work_done)
        self._info = ffi.new("WGPUQueueWorkDoneCallbackInfo *")
        self._info.mode = lib.WGPUCallbackMode_AllowProcessEvents
        self._info.callback = self._callback
        self._map_async = libf.wgpuBufferMapAsync
        self._mapped_range = lib.wgpuBufferGetConstMappedRange
        self._unmap = libf.wgpuBufferUnmap
        self._bytes_at = ffi.buffer
        self._map_read = lib.WGPUMapMode_Read
        self._map_success = lib.WGPUMapAsyncStatus_Success
        self._map_callback = ffi.callback("WGPUBufferMapCallback", self._mapped)
        self._map_info = ffi.new("WGPUBufferMapCallbackInfo *")
        self._map_info.mode = lib.WGPUCallbackMode_AllowProcessEvents
        self._map_info.callback = self._map_callback
        self.map_status: int | None = None
        self.spins = 0           # non-blocking polls made by the last wait
        self.blocked = False     # whether the last wait ended blocking

    def _work_done(self, status: Any, *_: Any) -> None:
        self.done = True

    def _mapped(self, status: Any, *_: Any) -> None:
        self.map_status = int(status)
        self.done = True

    def __call__(self) -> None:
        self.done = False
        self._on_done(self._queue, self._info[0])
        self._spin()

    def map_for_reading(self, buffer: Any, offset: int, size: int) -> None:
        """Map wgpu-py buffer `buffer` (MAP_READ, unmapped) for reading bytes [offset, offset + size) once the
        work submitted before is done, spinning as a wait does: wgpuBufferMapAsync with this object's callback,
        where wgpu-py's map_async would wake its poll thread and wait for it (~40 us more on an H200). The
        buffer's Python-side map state is set as wgpu-py's own completed map sets it."""
        from wgpu import enums
        self.done = False
        self.map_status = None
        buffer._map_state = enums.BufferMapState.pending
        self._map_async(buffer._internal, self._map_read, offset, size, self._map_info[0])
        self._spin()
        if self.map_status != self._map_success:
            buffer._map_state = enums.BufferMapState.unmapped
            raise RuntimeError(f"could not map a read-back buffer (wgpu map status {self.map_status}, None: "
                               f"no answer after {BLOCKED_POLLS} blocking polls)")
        buffer._map_state = enums.BufferMapState.mapped
        buffer._mapped_status = offset, offset + size, self._map_read
        buffer._mapped_memoryviews = []

    def read_mapped(self, buffer: Any, size: int) -> np.ndarray:
        """The first `size` bytes of `buffer`, mapped by map_for_reading, as a uint8 view that is valid until
        `unmap(buffer)`: wgpuBufferGetConstMappedRange, where wgpu-py's read_mapped adds its range checks and
        a memoryview made through ctypes (~8 us a read-back on an H200's host)."""
        pointer = self._mapped_range(buffer._internal, 0, size)
        if pointer == self._null:
            raise RuntimeError(f"could not read a mapped read-back buffer of {size} bytes (wgpu-native gave no "
                               f"mapped range)")
        return np.frombuffer(self._bytes_at(pointer, size), np.uint8)

    def unmap(self, buffer: Any) -> None:
        """Unmap `buffer` (mapped by map_for_reading), leaving wgpu-py's state of it as its own unmap does."""
        from wgpu import enums
        self._unmap(buffer._internal)
        buffer._map_state = enums.BufferMapState.unmapped
        buffer._mapped_status = 0, 0, 0

    def _spin(self) -> None:
        """Poll without blocking until a callback sets `done`, for at most `spin_seconds`; then block."""
        self.blocked = False
        poll, device, null = self._poll, self._device, self._null
        spins = 0
        deadline = time.perf_counter() + self.spin_seconds
        while True:
            poll(device, False, null)
            spins += 1
            if self.done:
                break
            if time.perf_counter() > deadline:
                self.blocked = True
                for _ in range(BLOCKED_POLLS):     # each returns once every submission is done; a queue
                    self._block()                  # callback has run in the first, a map's may need the next
                    if self.done:
                        break
                break
        self.spins = spins


def wait_for(device: Any, cpu_adapter: bool) -> Callable[[], None] | None:
    """The wait a backend on `device` uses: blocking on a CPU adapter, else spinning then blocking. Where this
    wgpu-py lacks what the spinning wait needs, the blocking one (or None, as blocking_wait)."""
    if cpu_adapter or blocking_wait(device) is None:
        return blocking_wait(device)
    try:
        return SpinningWait(device)
    except (ImportError, AttributeError, TypeError):
        return blocking_wait(device)
