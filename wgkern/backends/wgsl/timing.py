"""Device-time measurement for WgslBackend.gpu_timer(): timestamp queries written at the beginning and end of
every compute pass begun while timing (feature timestamp-query; PLATFORM.md 1.5).

The backend (runtime.py) asks for a pair per pass and resolves and collects at each submit; this module owns
the query set, the read-back and the tick period."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from wgkern.backends.wgsl.runtime import WgslBackend

TIMER_PASSES = 2048           # timestamp pairs per submit under gpu_timer (wgpu allows 4096 queries per set)


class GpuTime:
    """What `WgslBackend.gpu_timer()` yields: `seconds` of device time, filled in when the block exits."""
    __slots__ = ("seconds", "passes")

    def __init__(self) -> None:
        self.seconds = 0.0
        self.passes = 0

    def __repr__(self) -> str:
        return f"<GpuTime {self.seconds * 1e3:.3f} ms over {self.passes} passes>"


class TimestampRecorder:
    """A query set of TIMER_PASSES (begin, end) pairs: one pair per compute pass begun while timing. Each
    submit resolves the pairs it used and reads them back (so a timed region waits on its own work)."""

    def __init__(self, backend: WgslBackend, result: GpuTime):
        wgpu = backend._wgpu
        self.backend = backend
        self.result = result
        self.query_set = backend.device.create_query_set(type=wgpu.QueryType.timestamp, count=2 * TIMER_PASSES)
        usage = wgpu.BufferUsage
        self.resolved = backend.device.create_buffer(size=16 * TIMER_PASSES,
                                                     usage=usage.QUERY_RESOLVE | usage.COPY_SRC)
        self.pairs = 0
        self.ticks = 0

    def full(self) -> bool:
        return self.pairs >= TIMER_PASSES

    def next_writes(self) -> tuple[Any, int, int]:
        """(query set, index written at the beginning of the next pass, index written at its end)."""
        pair = self.pairs
        self.pairs += 1
        return self.query_set, 2 * pair, 2 * pair + 1

    def resolve(self, commands: Any) -> int:
        """Record the resolve of this submit's pairs into the batch (encoding.py's recorder); returns how many."""
        used = self.pairs
        if used:
            commands.resolve_query_set(self.query_set, 0, 2 * used, self.resolved, 0)
        self.pairs = 0
        return used

    def collect(self, used: int) -> None:
        """After the submit: add this submit's (end - begin) ticks (the read waits for the work)."""
        if not used:
            return
        stamps = np.frombuffer(self.backend.queue.read_buffer(self.resolved, 0, 16 * used), np.uint64)
        begins, ends = stamps[0::2].astype(np.int64), stamps[1::2].astype(np.int64)
        self.ticks += int(np.maximum(ends - begins, 0).sum())
        self.result.passes += used

    def release(self) -> None:
        self.query_set.destroy()
        self.resolved.destroy()


def timestamp_period_ns(queue: Any) -> float:
    """Nanoseconds per timestamp tick. wgpu-py 0.32 has no public getter (PLATFORM.md 1.5)."""
    try:
        from wgpu.backends.wgpu_native import lib
        period = float(lib.wgpuQueueGetTimestampPeriod(queue._internal))
    except Exception:  # noqa: BLE001 - private API: a missing symbol means "assume nanoseconds"
        return 1.0
    return period if period > 0 else 1.0
