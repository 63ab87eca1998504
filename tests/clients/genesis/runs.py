"""Running one Genesis scene script (a module of this folder that writes its trajectory as a .npy file) in a
subprocess, on Quadrants or on wgkern in place of Quadrants, and what the tests need installed: without it a test
skips, saying what is missing, unless WK_CLIENTS_REQUIRED=1 (set by CI's client stage, .ci/run-clients), under
which it fails, so that a CI run cannot pass without running the scenes."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Mapping

import numpy as np
import pytest

HERE = Path(__file__).parent
REPOSITORY = Path(__file__).resolve().parents[3]
TIMEOUT_S = 3600
ON_QUADRANTS = [sys.executable]
ON_WGKERN = [sys.executable, "-m", "wgkern", "run", "--as", "quadrants"]
REQUIRED_VARIABLE = "WK_CLIENTS_REQUIRED"


def missing() -> str | None:
    """Why the Genesis scenes cannot run here, or None."""
    for module, package in (("genesis", "genesis-world"), ("quadrants", "quadrants"), ("torch", "torch")):
        if importlib.util.find_spec(module) is None:
            return f"{package} is not installed (pip install -e '.[clients]' installs genesis-world, quadrants and torch)"
    if importlib.util.find_spec("wgkern.compat") is None:
        return "`python -m wgkern run --as quadrants` (wgkern.compat) is not available in this wgkern"
    return None


def required(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the scenes must run (WK_CLIENTS_REQUIRED=1, true or yes), so that missing packages are a failure."""
    return environ.get(REQUIRED_VARIABLE, "").strip().lower() in ("1", "true", "yes")


def require_installed(reason: str | None, environ: Mapping[str, str] = os.environ) -> None:
    """Nothing when `reason` (what missing() said) is None; else skip the running test, saying why, or, where the
    scenes are required, fail it."""
    if reason is None:
        return
    if required(environ):
        pytest.fail(f"{reason}; {REQUIRED_VARIABLE}={environ[REQUIRED_VARIABLE]} makes this a failure", pytrace=False)
    pytest.skip(reason)


def _vulkan_missing() -> str | None:
    from wgkern.backends.wgsl import adapters
    try:
        adapters.find_adapter("vulkan")
    except Exception as exc:        # noqa: BLE001 - no wgpu, no driver: the reason is the skip message
        return f"no Vulkan adapter: {exc}"
    return None


def require_vulkan() -> None:
    """Nothing where a Vulkan adapter is found; else skip the running test, saying why, or under CI=true
    (CI has lavapipe) fail it."""
    reason = _vulkan_missing()
    if reason:
        if os.environ.get("CI", "").lower() == "true":       # CI has lavapipe: a missing adapter is a failure
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)


def run_scene(command: list[str], scene: str, out: Path, *arguments: str) -> np.ndarray:
    """Run scene script `scene` (a file name in this folder) with `command`, passing it `out` and then
    `arguments`; the trajectory it wrote."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPOSITORY),
                                                                    os.environ.get("PYTHONPATH")])))
    done = subprocess.run(command + [str(HERE / scene), str(out), *arguments], env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    assert done.returncode == 0, f"{' '.join(command)} {scene} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return np.load(out)
