"""`WGKERN_PROVIDE=quadrants` (or `taichi`, or both, comma-separated): provide the toolkits from interpreter start.

The `wgkern-provide.pth` file a wgkern install puts in site-packages (setup.py) loads this file, on its own and
only when the variable is set, and calls `install()`: without the variable the line costs one environment lookup
and imports nothing. `install()` imports nothing of wgkern either (at that point of the start its dependencies may
not be on sys.path yet): it puts a small finder on sys.meta_path that calls `wgkern.provide` when the program
first imports one of the toolkits, then steps aside."""
from __future__ import annotations

import importlib.abc
import os
import sys
from typing import Any

VARIABLE = "WGKERN_PROVIDE"
TOOLKIT_NAMES = ("quadrants", "taichi")


class ProvideOnFirstImport(importlib.abc.MetaPathFinder):
    """Provides `names` when the first of them is imported (wgkern's own finder answers from then on)."""

    def __init__(self, names: list[str]):
        self.names = names

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname.partition(".")[0] not in self.names:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        from wgkern.compat import provide
        from wgkern.compat.finder import installed_finder
        for name in self.names:
            provide(name)
        return installed_finder().find_spec(fullname, path, target)


def install() -> None:
    """Read the variable; a name wgkern does not stand in for is reported on stderr (an interpreter start has
    no caller to raise to)."""
    if any(type(finder).__name__ == ProvideOnFirstImport.__name__ for finder in sys.meta_path):
        return      # site-packages reached twice (a venv's lib64 link): this file is loaded anew each time
    names = []
    for name in filter(None, (part.strip() for part in os.environ.get(VARIABLE, "").split(","))):
        if name in TOOLKIT_NAMES:
            names.append(name)
        else:
            print(f"wgkern: {VARIABLE}={os.environ[VARIABLE]!r} names {name!r}; wgkern stands in for "
                  f"{' and '.join(TOOLKIT_NAMES)}, so `import {name}` is left alone", file=sys.stderr)
    if names:
        sys.meta_path.insert(0, ProvideOnFirstImport(names))
