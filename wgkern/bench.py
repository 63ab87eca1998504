"""`python -m wgkern bench`: the standard benchmark suite, optionally side by side with a peer toolkit.

Every workload is written once against a toolkit module `m` (wgkern, or Quadrants for `--compare quadrants`,
whose API is nearly ours), warms up, then reports the median of >= 5 timed repetitions; a failing workload
reports its error and the others still run. Definitions and units are in docs/benchmarks.md."""
from __future__ import annotations

import importlib
import json
import os
import platform
import time
from dataclasses import asdict
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from wgkern.bench_report import BenchResult, _better, format_table
from wgkern.bench_targets import format_targets
from wgkern.bench_workloads import ADSTACK_MAX_TRIPS, BENCHMARKS, WGKERN_ONLY, _on_gpu


# ---- toolkits ---------------------------------------------------------------------------------------------

def _version_text(m: ModuleType) -> str:
    """A toolkit's version as text: `__version__` as given, or joined by dots where it is a tuple (Quadrants'
    (1, 3, 3))."""
    version = getattr(m, "__version__", "")
    return ".".join(map(str, version)) if isinstance(version, tuple) else str(version)


def _init_wgkern(arch: Any, workload: str) -> tuple[ModuleType, str, str]:
    import wgkern as wk
    program = wk.init(arch=arch, offline_cache=False)
    return wk, str(program.arch.value), program.description


def _init_quadrants(arch: Any, workload: str) -> tuple[ModuleType, str, str]:
    qd = importlib.import_module("quadrants")
    name = str(getattr(arch, "value", arch) or "cpu").removeprefix("wk.")
    options: dict[str, Any] = {"offline_cache": False}
    if workload == "adstack":
        options.update(ad_stack_experimental_enabled=True, ad_stack_size=ADSTACK_MAX_TRIPS + 1)
    qd.init(arch=getattr(qd, name), **options)
    return qd, name, f"quadrants {_version_text(qd)}".strip()


TOOLKITS: dict[str, Callable[[Any, str], tuple[ModuleType, str, str]]] = {
    "wgkern": _init_wgkern,
    "quadrants": _init_quadrants,
}


def run_all(arch: Any = None, reps: int = 7, only: list[str] | None = None,
            toolkit: str = "wgkern") -> tuple[dict[str, Any], list[BenchResult]]:
    """Each workload on a fresh init of `toolkit` (so one workload's compiled state never helps another)."""
    reps = max(int(reps), 5)
    header: dict[str, Any] = {"toolkit": toolkit, "python": platform.python_version(),
                              "machine": platform.machine(),
                              "date": time.strftime("%Y-%m-%d", time.gmtime())}
    results = []
    for name, bench in BENCHMARKS.items():
        if only and name not in only or toolkit != "wgkern" and name in WGKERN_ONLY:
            continue
        try:
            m, arch_name, device = TOOLKITS[toolkit](arch, name)
            header.update(arch=arch_name, device=device, version=_version_text(m),
                          adapter_type="GPU" if _on_gpu(m) else "CPU")
            results.append(bench(m, reps))
        except Exception as exc:  # noqa: BLE001 - report and go on with the other benchmarks
            results.append(BenchResult(name, None, "", "", None, 0, error=f"{type(exc).__name__}: {exc}"))
    if toolkit == "wgkern":
        import wgkern as wk
        wk.reset()
    return header, results


def main(arch: Any = None, json_path: str | None = None, reps: int = 7, only: str | None = None,
         compare: str | None = None, rounds: int | None = None, plot: str | None = None) -> int:
    """Run the suite; with `compare`, benchmark by benchmark, the toolkits alternate (wgkern, peer, wgkern,
    peer, ...) for `rounds` rounds (default 2) and each keeps its best round: a machine whose speed drifts
    (a shared VM) then treats both alike. With `plot` (a .png file or a folder), also draw the run's bar chart
    (bench_plot.py)."""
    # Cold compiles must be cold in the driver too: Mesa (lavapipe) keeps compiled shaders in a disk cache
    # that would answer for a kernel any earlier run compiled (the same for every toolkit measured here).
    os.environ.setdefault("MESA_SHADER_CACHE_DISABLE", "true")
    names = [n.strip() for n in only.split(",")] if only else list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        raise ValueError(f"unknown benchmark(s) {', '.join(unknown)}; the suite has {', '.join(BENCHMARKS)}")
    toolkits = ["wgkern"] + ([compare] if compare else [])
    rounds = max(1, rounds if rounds is not None else 2 if compare else 1)
    headers: dict[str, dict[str, Any]] = {}
    best: dict[str, dict[str, BenchResult]] = {toolkit: {} for toolkit in toolkits}
    for name in names:
        for _ in range(rounds):
            for toolkit in toolkits:
                header, results = run_all(arch, reps, [name], toolkit)
                headers.setdefault(toolkit, header).update(
                    (k, header[k]) for k in ("arch", "device", "version", "adapter_type") if k in header)
                for result in results:
                    best[toolkit][name] = _better(best[toolkit].get(name), result)
    runs = [(headers.get(toolkit, {"toolkit": toolkit}) | {"rounds": rounds},
             [best[toolkit][n] for n in names if n in best[toolkit]]) for toolkit in toolkits]
    for header, results in runs:
        print(format_table(header, results))
    print(format_targets(runs))
    if json_path:
        Path(json_path).parent.mkdir(parents=True, exist_ok=True)
        with open(json_path, "w") as f:
            json.dump({header["toolkit"]: {**header, "results": [asdict(r) for r in results]}
                       for header, results in runs}, f, indent=2)
    if plot:
        from wgkern.bench_plot import write_chart
        print(f"chart: {write_chart(runs, plot)}")
    return 1 if any(r.error for _, results in runs for r in results) else 0
