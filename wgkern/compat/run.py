"""`python -m wgkern run --as quadrants|taichi script.py [args...]` (or `-m module [args...]`): run a Quadrants or
Taichi program unchanged on wgkern. The toolkit is provided first (compat/__init__.py) and named in
`WGKERN_PROVIDE` for the processes the program starts, then the program runs as `__main__` with `sys.argv` and
`sys.path[0]` set as `python script.py args` / `python -m module args` set them."""
from __future__ import annotations

import argparse
import os
import runpy
import sys
from types import TracebackType


def add_parser(sub: argparse._SubParsersAction) -> None:
    from wgkern.compat import TOOLKIT_NAMES
    run = sub.add_parser("run", help="run a Quadrants or Taichi program unchanged on wgkern (docs/porting.md)",
                         description="Run a program written for Quadrants or Taichi unchanged: `import quadrants` / "
                                     "`import taichi` give wgkern.")
    run.add_argument("--as", dest="toolkit", required=True, choices=TOOLKIT_NAMES,
                     help="the toolkit the program imports")
    run.add_argument("-m", dest="module", default=None, metavar="MODULE",
                     help="run a module as `python -m MODULE` does (the arguments after it go to the program)")
    run.add_argument("program", nargs=argparse.REMAINDER,
                     help="the script and its arguments (or, with -m, the module's arguments)")
    run.set_defaults(run=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    from wgkern.compat import provide
    if args.module is None and not args.program:
        print("python -m wgkern run: give the script to run (or -m MODULE)", file=sys.stderr)
        return 2
    provide(args.toolkit)
    # the Python processes the program starts (multiprocessing's spawn, subprocess) get the toolkit too, where
    # the install's .pth hook reads the variable (compat/startup.py)
    from wgkern.compat.startup import VARIABLE
    named = [part.strip() for part in os.environ.get(VARIABLE, "").split(",") if part.strip()]
    os.environ[VARIABLE] = ",".join(dict.fromkeys([*named, args.toolkit]))
    try:
        if args.module is not None:
            sys.argv = [args.module, *args.program]     # sys.path[0] is the cwd already, as `python -m` sets it
            runpy.run_module(args.module, run_name="__main__", alter_sys=True)
        else:
            script, *rest = args.program
            if not os.path.exists(script):
                print(f"python -m wgkern run: can't open file {script!r}: no such file", file=sys.stderr)
                return 2
            sys.argv = [script, *rest]
            sys.path[0] = os.path.dirname(os.path.abspath(script))     # where `python -m wgkern` put the cwd
            runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:       # the program's own exit status, as `python script.py` would give it
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    except Exception as exc:        # noqa: BLE001 - reported as Python reports a script's uncaught exception
        program_frames = _program_frames(exc.__traceback__)
        sys.excepthook(type(exc), exc.with_traceback(program_frames), program_frames)
        return 1
    return 0


def _program_frames(tb: TracebackType | None) -> TracebackType | None:
    """The traceback from the program's first frame on (without this module's and runpy's frames)."""
    start = tb
    while start is not None and (start.tb_frame.f_code.co_filename == __file__
                                 or "runpy" in start.tb_frame.f_code.co_filename):
        start = start.tb_next
    return start or tb
