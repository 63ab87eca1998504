"""Running Quadrants and Taichi programs unchanged: `wgkern.provide("quadrants" | "taichi")` makes `import
quadrants` / `import taichi` and their submodules give wgkern (finder.py, with one table module per toolkit:
quadrants.py, taichi.py) and makes `init` follow the toolkit's conventions (runtime/ported_init.py). The two
other ways in, `python -m wgkern run --as ...` and the `WGKERN_PROVIDE` variable read at interpreter start,
live in run.py and startup.py."""
from __future__ import annotations

import importlib.machinery
import sys

from wgkern.compat import finder as _finder_module
from wgkern.compat.finder import Toolkit, installed_finder, resolve
from wgkern.compat.startup import TOOLKIT_NAMES


def toolkit(name: str) -> Toolkit:
    """The table of the toolkit called `name` ("quadrants" or "taichi")."""
    if name not in TOOLKIT_NAMES:
        raise ValueError(f"wgkern.provide({name!r}): wgkern stands in for {' and '.join(map(repr, TOOLKIT_NAMES))}")
    from importlib import import_module
    return import_module(f"wgkern.compat.{name}").TOOLKIT


def provide(name: str) -> None:
    """From now on, `import <name>` (and its submodules) gives wgkern, and `<name>.init` reads its arguments as
    the toolkit's does (the last toolkit provided sets these conventions). An installed copy of the toolkit is
    not used (a line on stderr says so); one already imported is an ImportError, since its objects would mix
    with wgkern's."""
    kit = toolkit(name)
    already = sys.modules.get(name)
    if already is not None and name not in provided() and already is not resolve(kit.modules[name]):
        raise ImportError(f"wgkern.provide({name!r}): {name} was already imported from "
                          f"{getattr(already, '__file__', None) or 'elsewhere'}; call wgkern.provide({name!r}) "
                          f"before the program's first `import {name}`")
    finder = installed_finder()
    if name not in finder.toolkits:
        installed = importlib.machinery.PathFinder.find_spec(name)
        if installed is not None:
            where = installed.origin or ", ".join(installed.submodule_search_locations or ())
            print(f"wgkern.provide({name!r}): `import {name}` gives wgkern; the {kit.display} installed at "
                  f"{where} is not used", file=sys.stderr)
    finder.add(kit)
    from wgkern.runtime import ported_init
    ported_init.use(kit.init)


def provided() -> tuple[str, ...]:
    """The toolkits provided so far in this process."""
    finder = _finder_module.current_finder()
    return tuple(finder.toolkits) if finder is not None else ()
