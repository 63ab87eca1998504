"""The demos' modules for the tests: each demo (demos/NAME.py, loaded as `python -m wgkern demo` loads it) and
their shared helpers (demos/_common.py, _overlay.py, _chart.py), which the demos import by name from their
folder."""
from __future__ import annotations

import importlib
import sys
from types import ModuleType

from wgkern.__main__ import _demo_files, _load_demo
from wgkern.resources import resource_dir


def helper(name: str) -> ModuleType:
    """The helper module demos/<name>.py, imported as the demos import it."""
    folder = str(resource_dir("demos"))
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return importlib.import_module(name)


def demo(name: str) -> ModuleType:
    """The demo demos/<name>.py."""
    return _load_demo(_demo_files()[name])
