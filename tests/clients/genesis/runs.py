"""Running one Genesis scene script (a module of this folder that writes its trajectory as a .npy file) in a
subprocess, on Quadrants or on wgkern in place of Quadrants, and what the tests need installed."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
REPOSITORY = Path(__file__).resolve().parents[3]
TIMEOUT_S = 3600
ON_QUADRANTS = [sys.executable]
ON_WGKERN = [sys.executable, "-m", "wgkern", "run", "--as", "quadrants"]


def missing() -> str | None:
    """Why the Genesis scenes cannot run here, or None."""
    for module, package in (("genesis", "genesis-world"), ("quadrants", "quadrants"), ("torch", "torch")):
        if importlib.util.find_spec(module) is None:
            return f"{package} is not installed (pip install genesis-world==1.4.5 quadrants==1.3.3 torch)"
    if importlib.util.find_spec("wgkern.compat") is None:
        return "`python -m wgkern run --as quadrants` (wgkern.compat) is not available in this wgkern"
    return None


def run_scene(command: list[str], scene: str, out: Path, *arguments: str) -> np.ndarray:
    """Run scene script `scene` (a file name in this folder) with `command`, passing it `out` and then
    `arguments`; the trajectory it wrote."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPOSITORY),
                                                                    os.environ.get("PYTHONPATH")])))
    done = subprocess.run(command + [str(HERE / scene), str(out), *arguments], env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    assert done.returncode == 0, f"{' '.join(command)} {scene} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return np.load(out)
