"""The record a Program keeps with `wk.init(kernel_profiler=True)`: each kernel's launch count and wall times,
and the table `wk.profiler.print_kernel_profiler_info()` prints (wgkern/profiler.py holds those user functions)."""
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
