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

SPIN_SECONDS = 0.002     # the longest a wait spins before it blocks in the driver


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
        self.spins = 0           # non-blocking polls made by the last wait
        self.blocked = False     # whether the last wait ended blocking

    def _work_done(self, status: Any, *_: Any) -> None:
        self.done = True

    def __call__(self) -> None:
        self.done = False
        self.blocked = False
        self._on_done(self._queue, self._info[0])
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
                self._block()        # returns once every submission is done; the callback has run in it
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
