"""Value types for the command line's options (`python -m wgkern ...`): each checks its value while arguments
are parsed, so a bad value is a usage message naming the option, not a traceback from deep inside a command."""
from __future__ import annotations

import argparse
from typing import Callable


def arch_name(value: str) -> str:
    """argparse type: an arch name wk.init() accepts (checked here, so a typo is a usage error, not a traceback)."""
    from wgkern.runtime.arch import parse_arch
    try:
        parse_arch(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def at_least(low: int) -> Callable[[str], int]:
    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {value!r}") from None
        if number < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {number}")
        return number
    parse.__name__ = f"integer >= {low}"
    return parse


def benchmark_names(value: str) -> str:
    from wgkern.bench_workloads import BENCHMARKS
    names = [n.strip() for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown benchmark(s) {', '.join(unknown) or repr(value)}; "
                                         f"choose from: {', '.join(BENCHMARKS)}")
    return ",".join(names)


def plot_target(value: str) -> str:
    """argparse type for `bench --plot`: a .png file, or a folder (an existing one, or a new name without a
    suffix) that gets bench-ARCH.png; another suffix is a usage error rather than a folder named `chart.jpg`."""
    from pathlib import Path
    path = Path(value)
    if path.suffix.lower() == ".png" or path.is_dir() or not path.suffix:
        return value
    raise argparse.ArgumentTypeError(f"expected a .png file or a folder, got {value!r}")
