"""Where the non-Python files shipped with wgkern live: the hand-written WGSL (`wgsl/`) and LLVM IR
(`llvm/`), and the demos.

In a source checkout or an editable install they are the repository's top-level `wgsl/`, `llvm/` and `demos/`
folders; a wheel installs them as data files under `<prefix>/share/wgkern/` (pyproject.toml, [tool.setuptools.data-files]).
Imports nothing from wgkern, so any layer may use it."""
from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

_REPO_ROOT = Path(__file__).resolve().parent.parent


def _candidates(name: str) -> list[Path]:
    roots = [_REPO_ROOT / name]
    for prefix in (sysconfig.get_path("data"), sys.prefix, getattr(sys, "base_prefix", sys.prefix)):
        if prefix:
            roots.append(Path(prefix) / "share" / "wgkern" / name)
    return roots


def resource_dir(name: str) -> Path:
    """The folder `name` ('wgsl', 'llvm' or 'demos'); raises FileNotFoundError listing where it looked."""
    candidates = _candidates(name)
    for path in candidates:
        if path.is_dir():
            return path
    raise FileNotFoundError(f"wgkern resource folder '{name}' not found; looked in: "
                            + ", ".join(str(p) for p in candidates))


def wgsl_source(filename: str) -> str:
    """Text of a shipped WGSL file, e.g. wgsl_source('max_reducer.wgsl')."""
    return (resource_dir("wgsl") / filename).read_text()


def llvm_source(filename: str) -> str:
    """Text of a shipped LLVM IR file, e.g. llvm_source('max_reducer.ll')."""
    return (resource_dir("llvm") / filename).read_text()
