"""Quadrants' streams and events (`wk.create_stream()`, `wk.create_event()`, `kernel(..., qd_stream=s)`).

wgkern submits every launch to one in-order queue per device, so work on different streams runs one after the
other, as Quadrants' serial fallback runs it on the CPU and Metal: results are the same, there is no overlap. The
objects keep Quadrants' surface (handle 0, synchronize, record, wait, destroy, context managers) so programs
written for concurrent streams run unchanged."""
from __future__ import annotations

from typing import Any


def _sync() -> None:
    from wgkern.runtime.program import current
    program = current()
    if program is not None:
        program.sync()


class Stream:
    """A stream: `kernel(..., qd_stream=s)` runs on it; `s.synchronize()` waits for the work launched so far."""
    handle = 0

    def synchronize(self) -> None:
        _sync()

    def destroy(self) -> None:
        self.handle = 0

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.destroy()


class Event:
    """An event: `e.record(stream)`, then `e.wait()` / `e.wait(qd_stream=s)` orders later work after it (always
    true on one in-order queue); `e.synchronize()` waits for the recorded work."""
    handle = 0

    def record(self, stream: Stream | None = None) -> None:
        return None

    def wait(self, qd_stream: Stream | None = None) -> None:
        return None

    def synchronize(self) -> None:
        _sync()

    def destroy(self) -> None:
        self.handle = 0

    def __enter__(self) -> Event:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.destroy()


def create_stream() -> Stream:
    return Stream()


def create_event() -> Event:
    return Event()
