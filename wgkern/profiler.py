"""`wk.profiler`: how long each kernel's launches take, when `wk.init(kernel_profiler=True)` (Taichi's
`ti.profiler` functions, same names).

With the profiler on, every launch first waits for the work queued before it, then for its own work
(`wk.sync()`), and its wall time is recorded under the kernel's name (`name_grad` for `.grad()` launches): a launch then costs a sync, as in Taichi, where the
profiler also serialises. The time includes the launch's Python path, and for the first launch of each
specialisation its compile. Off (the default), launches are untouched and these functions report that."""
from __future__ import annotations

import time

from wgkern.runtime.kernel_profiler import KernelProfiler


def _profiler() -> KernelProfiler | None:
    from wgkern.runtime import program
    current = program.current()
    return None if current is None else current.profiler


def print_kernel_profiler_info(mode: str = "count") -> None:
    """Print each kernel's calls and times (`mode` is accepted for Taichi's signature; the table is the same)."""
    if mode not in ("count", "trace"):
        raise ValueError(f"mode must be 'count' or 'trace', not {mode!r}")
    profiler = _profiler()
    if profiler is None:
        print("[wgkern] the kernel profiler is off: wk.init(kernel_profiler=True) turns it on")
        return
    print(profiler.report())


def clear_kernel_profiler_info() -> None:
    profiler = _profiler()
    if profiler is not None:
        profiler.records.clear()


def get_kernel_profiler_total_time() -> float:
    """Seconds recorded over all kernels (0.0 with the profiler off)."""
    profiler = _profiler()
    return 0.0 if profiler is None else sum(r.total for r in profiler.records.values())
