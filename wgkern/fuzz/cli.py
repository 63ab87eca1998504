"""`python -m wgkern fuzz`: run seeds, print each failure (seed, program source, first mismatching element) and a
summary; the exit status is 1 when any seed gave a wrong result, crashed or overflowed an adstack under default
settings."""
from __future__ import annotations

import argparse
import collections
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wgkern.fuzz.runner import SeedResult


def available_arches(requested: str) -> list[str]:
    from wgkern.runtime.arch import select
    names = ["cpu", "vulkan", "cuda"] if requested == "all" else [requested]
    found = []
    for name in names:
        try:
            select(name)
        except Exception as exc:   # noqa: BLE001 - an arch that cannot be selected is reported and left out
            if requested != "all":
                raise SystemExit(f"arch {name!r} is not available: {exc}") from None
            continue
        found.append(name)
    return found


def summary(results: list["SeedResult"], small_stack: bool) -> str:
    counts = collections.Counter(r.status for r in results)
    crashes = {s.split(":", 1)[1]: c for s, c in counts.items() if s.startswith("crash:")}
    overflow = counts["overflow"] + counts["overflow_expected"]
    parts = [f"{len(results)} seeds run", f"{counts['pass']} passed",
             f"{counts['wrong_gradient']} wrong gradients", f"{counts['wrong_forward']} wrong forward results",
             f"{counts['arch_mismatch']} arch mismatches",
             "crashes: " + (", ".join(f"{k} {v}" for k, v in sorted(crashes.items())) if crashes else "0"),
             f"AdStackOverflowError {overflow}" + (" (expected under --small-stack)" if small_stack else ""),
             f"{counts['unstable']} unstable (no inputs away from a branch flip)"]
    return "fuzz: " + "; ".join(parts)


def main(seeds: int, start: int = 0, arch: str = "all", small_stack: bool = False, long: bool = False,
         folder: str | None = None, quiet: bool = False) -> int:
    from wgkern.fuzz import runner       # imported here: building the command line parser stays light
    arches = available_arches(arch)
    where = Path(folder or tempfile.mkdtemp(prefix="wk-fuzz-"))
    where.mkdir(parents=True, exist_ok=True)
    results = []
    began = time.perf_counter()
    for seed in range(start, start + seeds):
        t0 = time.perf_counter()
        result = runner.run_seed(seed, arches, where, small_stack=small_stack, long=long)
        spent = f"{time.perf_counter() - t0:.1f} s"
        results.append(result)
        if result.failed:
            print(f"--- seed {seed}: {result.status} ({result.path}, {spent})\n{result.detail}\n{result.source}",
                  flush=True)
        elif not quiet:
            print(f"seed {seed}: {result.status} ({spent})" + (f": {result.detail}" if result.detail else ""),
                  flush=True)
    print(summary(results, small_stack) + f" [{', '.join(arches)}; {time.perf_counter() - began:.0f} s]")
    return 1 if any(r.failed for r in results) else 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    from wgkern.cli_args import at_least
    fuzz = sub.add_parser("fuzz", help="random differentiable kernels checked against f64 finite differences")
    fuzz.add_argument("--seeds", type=at_least(1), default=20, help="how many seeds to run (default 20)")
    fuzz.add_argument("--start", type=at_least(0), default=0, help="first seed (default 0)")
    fuzz.add_argument("--arch", default="all", choices=["cpu", "vulkan", "cuda", "all"],
                      help="arches to test in f32 (default all available; the f64 reference runs on the CPU)")
    fuzz.add_argument("--small-stack", action="store_true",
                      help="wk.init(ad_stack_size=1 or 2): each seed must give the right gradient or "
                           "AdStackOverflowError")
    fuzz.add_argument("--long", action="store_true", help="one loop of each program runs up to 10^4 trips")
    fuzz.add_argument("--dir", default=None, help="folder for the generated modules (default: a new temp folder)")
    fuzz.add_argument("--quiet", action="store_true", help="print failures and the summary only")
    fuzz.set_defaults(run=lambda a: main(a.seeds, a.start, a.arch, a.small_stack, a.long, a.dir, a.quiet))
