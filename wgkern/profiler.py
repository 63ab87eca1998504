"""`wk.profiler`: how long each kernel's launches take, when `wk.init(kernel_profiler=True)` (Taichi's
`ti.profiler` functions, same names).

With the profiler on, every launch first waits for the work queued before it, then for its own work
(`wk.sync()`), and its wall time is recorded under the kernel's name (`name_grad` for `.grad()` launches): a launch then costs a sync, as in Taichi, where the
profiler also serialises. The time includes the launch's Python path, and for the first launch of each
specialisation its compile. Off (the default), launches are untouched and these functions report that."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass(slots=True)
class KernelRecord:
    count: int = 0
    total: float = 0.0
    least: float = float("inf")
    most: float = 0.0


@dataclass(slots=True)
class KernelProfiler:
    """The records of one Program (runtime/program.py creates it when the option is on)."""
    records: dict[str, KernelRecord] = field(default_factory=dict)
    timing: bool = False      # inside time(): the launch it runs is not timed again

    def time(self, name: str, launch: Callable[[], Any], sync: Callable[[], None]) -> Any:
        sync()                  # work queued before this launch (host writes, other launches) is not its time
        start = time.perf_counter()
        self.timing = True
        try:
            result = launch()
            sync()
        finally:
            self.timing = False
        elapsed = time.perf_counter() - start
        record = self.records.get(name)
        if record is None:
            record = self.records[name] = KernelRecord()
        record.count += 1
        record.total += elapsed
        record.least = min(record.least, elapsed)
        record.most = max(record.most, elapsed)
        return result

    def report(self) -> str:
        lines = ["=" * 78, "wgkern kernel profiler (wall time of launch + sync, ms)",
                 f"{'calls':>7} {'total':>11} {'mean':>9} {'min':>9} {'max':>9}  kernel", "-" * 78]
        for name, r in sorted(self.records.items(), key=lambda item: -item[1].total):
            lines.append(f"{r.count:7d} {r.total * 1e3:11.3f} {r.total / r.count * 1e3:9.3f} {r.least * 1e3:9.3f} "
                         f"{r.most * 1e3:9.3f}  {name}")
        total = sum(r.total for r in self.records.values())
        lines += ["-" * 78, f"total {total * 1e3:.3f} ms in {sum(r.count for r in self.records.values())} launches",
                  "=" * 78]
        return "\n".join(lines)


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
