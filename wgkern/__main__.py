"""`python -m wgkern info|bench|demo|fuzz|run`: the command line of API.md.

`info` lists adapters/devices and the arch `wk.init()` would pick; `bench` runs the benchmark suite (bench.py);
`demo` runs a bundled demo from the demos/ folder (found through wgkern/resources.py); `fuzz` runs random
differentiable kernels against f64 finite differences (wgkern/fuzz/); `run --as quadrants|taichi` runs a Quadrants
or Taichi program unchanged (wgkern/compat/run.py)."""
from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import platform
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Sequence

from wgkern.cli_args import arch_name, at_least, benchmark_names, plot_target


def cmd_info(args: argparse.Namespace) -> int:
    import numpy as np

    import wgkern
    from wgkern.errors import WkError
    from wgkern.runtime.arch import describe_available, select
    print(f"wgkern {wgkern.__version__} on Python {platform.python_version()} ({platform.machine()}), "
          f"numpy {np.__version__}")
    for module in ("wgpu", "llvmlite"):
        try:
            version = __import__(module).__version__
        except ImportError as exc:
            version = f"not installed ({exc})"
        print(f"{module}: {version}")
    for line in describe_available():
        print("  " + line)
    env = os.environ.get("WK_ARCH")
    try:
        chosen = select(None)
        via = f" (WK_ARCH={env})" if env else ""
        print(f"wk.init() would pick: {chosen.arch!r} - {chosen.description}{via}")
    except (WkError, ValueError) as exc:
        print(f"wk.init() would fail: {exc}")
        return 1
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from wgkern import bench
    if args.from_json:
        from wgkern.bench_plot import write_chart
        from wgkern.bench_report import load_json
        print(f"chart: {write_chart(load_json(args.from_json), args.plot)}")
        return 0
    return bench.main(arch=args.arch, json_path=args.json, reps=args.reps, only=args.only, compare=args.compare,
                      rounds=args.rounds, plot=args.plot)


def _demo_files() -> dict[str, Path]:
    from wgkern.resources import resource_dir
    folder = resource_dir("demos")
    return {p.stem: p for p in sorted(folder.glob("*.py")) if not p.stem.startswith("_")}


def _load_demo(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"wgkern_demo_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def demo_summary(path: Path) -> str:
    """The first paragraph of a demo's docstring, on one line (read from the file: listing imports no demo)."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return " ".join(doc.strip().split("\n\n")[0].split())


def cmd_demo(args: argparse.Namespace) -> int:
    demos = _demo_files()
    if args.list or not demos:
        for name, path in demos.items():
            lines = textwrap.wrap(demo_summary(path), width=100, initial_indent=f"{name:12s} ",
                                  subsequent_indent=" " * 13)
            print("\n".join(lines or [name]))
        return 0 if demos else 1
    if args.all:
        if args.out:
            args.demo_parser.error("argument --out: not allowed with --all (each demo writes its own NAME.png)")
        for name, path in demos.items():
            module = _load_demo(path)
            missing = [m for m in getattr(module, "REQUIRES", ()) if importlib.util.find_spec(m) is None]
            if missing:
                print(f"{name}: skipped, it needs {', '.join(missing)} (pip install 'wgkern[{missing[0]}]')",
                      file=sys.stderr)
                continue
            code = int(module.main(arch=args.arch, headless=True, out=None, steps=args.steps) or 0)
            if code:
                return code
        return 0
    name = args.name or ("aim" if "aim" in demos else next(iter(demos)))
    headless = args.headless or not _has_display()
    module = _load_demo(demos[name])
    return int(module.main(arch=args.arch, headless=headless, out=args.out, steps=args.steps,
                           **_demo_options(module, args)) or 0)


def _demo_options(module: ModuleType, args: argparse.Namespace) -> dict:
    """The options only some demos take (`sweep`'s --actors and --sweep), for a demo whose main() declares them;
    given to another demo, a usage error."""
    import inspect
    accepted = inspect.signature(module.main).parameters
    given = {name: getattr(args, name) for name in ("actors", "sweep") if getattr(args, name, None) is not None}
    unknown = [name for name in given if name not in accepted]
    if unknown:
        args.demo_parser.error(f"argument --{unknown[0]}: the {module.__name__.removeprefix('wgkern_demo_')} demo "
                               "does not take it")
    return given


def _has_display() -> bool:
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def build_parser() -> argparse.ArgumentParser:
    from wgkern.bench_workloads import BENCHMARKS
    parser = argparse.ArgumentParser(prog="python -m wgkern", description="wgkern command line")
    sub = parser.add_subparsers(dest="command", required=True)
    info = sub.add_parser("info", help="adapters/devices found and which arch wk.init() would pick")
    info.set_defaults(run=cmd_info)
    arch_help = "cpu, vulkan, cuda, gpu, ... (default: what wk.init() picks)"
    bench = sub.add_parser("bench", help="the standard benchmark suite (docs/benchmarks.md)")
    bench.add_argument("--arch", default=None, type=arch_name, help=arch_help)
    bench.add_argument("--json", default=None, metavar="F", help="also write the results to this JSON file")
    bench.add_argument("--plot", default=None, type=plot_target, metavar="F.png|DIR",
                       help="also draw the results as a PNG bar chart: this file, or bench-ARCH.png in this folder")
    bench.add_argument("--from-json", default=None, metavar="F",
                       help="with --plot: draw the chart of results saved by --json instead of running the suite")
    bench.add_argument("--reps", type=at_least(5), default=7,
                       help="timed repetitions per benchmark, at least 5 (default 7)")
    bench.add_argument("--only", default=None, type=benchmark_names, metavar="NAME[,NAME...]",
                       help="benchmarks to run (default all): " + ", ".join(BENCHMARKS))
    bench.add_argument("--compare", default=None, choices=["quadrants"],
                       help="also run the same workloads with this toolkit (installed separately), same arch")
    bench.add_argument("--rounds", type=at_least(1), default=None,
                       help="rounds per benchmark, toolkits alternating, best kept (default: 2 with --compare, else 1)")
    bench.set_defaults(run=cmd_bench)
    demos = list(_demo_files())
    demo = sub.add_parser("demo", help="run a bundled demo")
    which = demo.add_mutually_exclusive_group()
    which.add_argument("name", nargs="?", default=None, choices=demos or None, metavar="NAME",
                       help=f"demo to run: {', '.join(demos)} (default: aim, the main demo); --list describes them")
    which.add_argument("--all", action="store_true",
                       help="run every demo headless, each writing NAME.png into $WK_DEMO_DIR, else ./wgkern-out/")
    demo.add_argument("--list", action="store_true", help="describe the demos")
    demo.add_argument("--headless", action="store_true", help="render to a PNG instead of a window")
    demo.add_argument("--out", default=None, metavar="F.png",
                      help="PNG to write (headless; default: NAME.png in $WK_DEMO_DIR, else in ./wgkern-out/)")
    demo.add_argument("--arch", default=None, type=arch_name, help=arch_help)
    demo.add_argument("--steps", type=at_least(1), default=None, help="simulation steps (default: the demo's own)")
    demo.add_argument("--actors", type=at_least(1), default=None,
                      help="sweep: Ray actors, one device each (default: one per GPU Ray reports, else per CPU)")
    demo.add_argument("--sweep", type=at_least(2), default=None, metavar="N",
                      help="sweep: points of the parameter sweep (default 8)")
    demo.set_defaults(run=cmd_demo, demo_parser=demo)
    from wgkern.fuzz import cli as fuzz_cli
    fuzz_cli.add_parser(sub)
    from wgkern.compat import run as run_cli
    run_cli.add_parser(sub)
    return parser


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line parsed and checked, options that only make sense together included; a usage error
    prints the usage and exits with status 2 (argparse's `error`), running nothing."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "from_json", None) and not args.plot:
        parser.error("argument --from-json: needs --plot (where to draw the chart)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; a wgkern error caused by the user's input or machine (no such device, ...) is printed as
    one line and exits with status 1, not as a traceback."""
    from wgkern.errors import WkError
    args = parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except WkError as exc:
        print(f"python -m wgkern {args.command}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
