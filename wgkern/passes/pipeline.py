"""The order of the passes, in one place, and the loop that runs them.

Each stage is a pass module exposing `NAME` and `run(kernel) -> kernel`. `run_pipeline` verifies the IR after
every stage (ir/verifier.py) and, when WK_DUMP_IR (or `dump_dir`) names a folder, writes each stage's text
as `<dump_dir>/<kernel>.<NN>.<pass>.ir`, starting with the frontend's output as `00.frontend`."""
from __future__ import annotations

import os
import re
from pathlib import Path
from types import ModuleType
from typing import Sequence

from wgkern.errors import InternalCompilerError
from wgkern.ir import nodes as ir
from wgkern.ir.printer import format_kernel
from wgkern.ir.verifier import verify
from wgkern.passes import autodiff, demote_atomics, offload, simplify, typecheck, vectorize
from wgkern.passes.autodiff import forward_mode

FORWARD: tuple[ModuleType, ...] = (typecheck, simplify, offload, simplify)
# The `.grad` kernel: the forward pipeline, then the reverse-mode transform per offloaded task (autodiff runs
# its own inner stages and static adstack sizing, see passes/autodiff/__init__.py), then a final cleanup.
REVERSE_FROM_FORWARD: tuple[ModuleType, ...] = (autodiff, simplify)   # starts from FORWARD's result
REVERSE: tuple[ModuleType, ...] = FORWARD + REVERSE_FROM_FORWARD
# The kernel wk.ad.FwdMode launches: primal and tangents (passes/autodiff/forward_mode.py).
FORWARD_MODE_FROM_FORWARD: tuple[ModuleType, ...] = (forward_mode, simplify)
FORWARD_MODE: tuple[ModuleType, ...] = FORWARD + FORWARD_MODE_FROM_FORWARD
# On what every backend compiles (launch.py), before WIDE_ACCESS and copying the tasks it changes: atomics that
# no two threads can race on become plain read-modify-writes (passes/demote_atomics.py).
DEMOTE: tuple[ModuleType, ...] = (demote_atomics,)
# What a backend with wide memory access compiles (Backend.wide_memory_access): run on a finished pipeline's
# result, copying the tasks it changes, so the offloaded IR that the derived pipelines start from stays scalar.
WIDE_ACCESS: tuple[ModuleType, ...] = (vectorize,)
WIDE_ACCESS_ENV = "WK_VECTORIZE"     # "0": compile every task scalar

DUMP_ENV = "WK_DUMP_IR"
VERIFY_ENV = "WK_VERIFY_IR"     # "1": verify the IR after every stage (the test suite sets it)
_FROM_ENVIRONMENT = object()


def _dump(dump_dir: str, kernel: ir.KernelIR | ir.OffloadedKernel, number: int, stage: str) -> None:
    folder = Path(dump_dir)
    folder.mkdir(parents=True, exist_ok=True)
    safe_name = re.sub(r"[^A-Za-z0-9_.-]", "_", kernel.name)
    (folder / f"{safe_name}.{number:02d}.{stage}.ir").write_text(format_kernel(kernel, with_locs=True))


def run_pipeline(stages: Sequence[ModuleType], kernel: ir.KernelIR | ir.OffloadedKernel,
                 dump_dir: str | None | object = _FROM_ENVIRONMENT, after: int = 0) -> ir.OffloadedKernel:
    """Run `stages` in order on `kernel` and return the offloaded result. `dump_dir` defaults to the
    WK_DUMP_IR environment variable (read at call time); None or '' disables dumping. The verifier runs
    after every stage when WK_VERIFY_IR=1 or while dumping (it costs a few ms per kernel, so a plain compile
    skips it; the test suite always verifies). `after`: how many stages already ran on `kernel` (a
    REVERSE_FROM_FORWARD run on FORWARD's result numbers its dumps on from FORWARD's)."""
    if dump_dir is _FROM_ENVIRONMENT:
        dump_dir = os.environ.get(DUMP_ENV)
    checking = bool(dump_dir) or os.environ.get(VERIFY_ENV, "") not in ("", "0")
    if dump_dir and not after:
        _dump(dump_dir, kernel, 0, "frontend")
    if checking and not after:
        # Dtypes are typecheck's to repair; the structure must already hold.
        verify(kernel, check_types=False, stage="frontend")
    for number, stage in enumerate(stages, start=after + 1):
        kernel = stage.run(kernel)
        if dump_dir:
            _dump(dump_dir, kernel, number, stage.NAME)
        if checking:
            verify(kernel, stage=stage.NAME)
    if not isinstance(kernel, ir.OffloadedKernel):
        raise InternalCompilerError(f"pipeline for {kernel.name} ended without offload", kernel.loc)
    return kernel
