"""The benchmark report: a result row (BenchResult), the text table `python -m wgkern bench` prints, the best of
several rounds, and reading back the JSON file `--json` writes (what bench_plot.py draws)."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(slots=True)
class BenchResult:
    """One row of the table: `value` in `unit` (higher or lower is better as `better` says)."""
    name: str
    value: float | None
    unit: str
    better: str
    median_ms: float | None
    reps: int
    detail: str = ""
    error: str = ""
    floor: float | None = None      # the same work done by the layer below (bench_floors.py), in `unit`
    floor_name: str = ""
    device_value: float | None = None   # `value` by GPU timestamps, where the backend has them


def format_table(header: dict[str, Any], results: list[BenchResult]) -> str:
    rounds = header.get("rounds", 1)
    lines = [f"{header['toolkit']} bench on {header.get('arch', '?')} ({header.get('device', '?')})"
             + (f", best of {rounds} alternating rounds" if rounds > 1 else ""),
             f"{'benchmark':16s} {'value':>12s} {'unit':10s} {'median':>10s}  detail"]
    for r in results:
        if r.error:
            lines.append(f"{r.name:16s} {'FAILED':>12s} {'':10s} {'':>10s}  {r.error.splitlines()[0][:100]}")
            continue
        lines.append(f"{r.name:16s} {r.value:12.3f} {r.unit:10s} {r.median_ms:8.2f}ms  {r.detail}")
    return "\n".join(lines)


def _better(a: BenchResult | None, b: BenchResult) -> BenchResult:
    """The better of two rounds of one benchmark (a failed round loses to a finished one)."""
    if a is None or a.error:
        return b
    if b.error:
        return a
    return b if (b.value > a.value if b.better == "higher" else b.value < a.value) else a


def load_json(path: str | os.PathLike) -> list[tuple[dict[str, Any], list[BenchResult]]]:
    """The (header, results) pairs of a file written by `main(json_path=...)`, in the file's order (wgkern
    first): what bench_plot.py draws."""
    from wgkern.errors import WkError
    try:
        report = json.loads(Path(path).read_text())
        return [({k: v for k, v in run.items() if k != "results"}, [BenchResult(**r) for r in run["results"]])
                for run in report.values()]
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise WkError(f"{path}: not a results file written by `python -m wgkern bench --json` "
                      f"({type(exc).__name__}: {exc})") from None
