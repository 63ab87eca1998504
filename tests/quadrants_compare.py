"""Run one program text under wgkern and under Quadrants (when installed) and compare what they print.

The program names its module `{module}` (`import {module} as qd`); each run is a subprocess on the CPU, and lines
Quadrants prints about itself (`[Quadrants] ...`) are dropped."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def run_program(tmp_path: Path, program: str, module: str) -> list[str]:
    path = tmp_path / f"program_{module}.py"
    path.write_text(textwrap.dedent(program).replace("{module}", module))
    env = {**os.environ, "WK_ARCH": "cpu"}
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return [line for line in done.stdout.splitlines() if not line.startswith("[Quadrants]")]


def same_output_as_quadrants(tmp_path: Path, program: str) -> list[str]:
    """wgkern's output lines, after checking Quadrants prints the same; skips where Quadrants is missing."""
    pytest.importorskip("quadrants")
    ours = run_program(tmp_path, program, "wgkern")
    theirs = run_program(tmp_path, program, "quadrants")
    assert ours == theirs
    return ours
