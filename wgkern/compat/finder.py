"""The import finder behind `wgkern.provide`: while a toolkit is provided, `import <toolkit>` and the imports of
its submodules resolve to wgkern's objects, as the toolkit's table (`Toolkit.modules`) maps them.

The finder sits first on `sys.meta_path` and answers every module name under a provided toolkit's top-level
name, so nothing of an installed copy of the toolkit is ever mixed in: a name its table maps gets the wgkern
object itself (module, package or namespace class; the same object every time, so `qd.lang.impl is
wgkern.lang.impl`), a name its table lists as missing raises ModuleNotFoundError saying what feature it holds,
and any other name raises ModuleNotFoundError naming the toolkit. The loader hands Python's import machinery
the existing object and puts back the import attributes the machinery overwrites on it (`__spec__`, ...), so
wgkern's own modules stay as they were (a namespace class keeps the ones it lacked, which importlib needs of a
parent); a package of the toolkit's layout gets a `__path__` (an empty one where wgkern's object is not a
package), which Python requires of a parent."""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Mapping

# The attributes importlib's module_from_spec may set on the object a loader creates.
_IMPORT_ATTRIBUTES = ("__spec__", "__loader__", "__package__", "__file__", "__cached__")
_ABSENT = object()


@dataclass(frozen=True)
class Toolkit:
    """A toolkit wgkern stands in for: its top-level module `name` (`quadrants`), its name in messages
    (`Quadrants`), `modules` (toolkit module -> the dotted name of wgkern's object for it, importable or in
    `sys.modules`, optionally followed by attribute names: `wgkern.lang.types.types.primitive_types`),
    `missing` (toolkit module -> the feature it holds, which wgkern does not have), `packages` (the toolkit's
    packages whose submodules neither table lists) and `reexports` (toolkit module -> the wgkern object whose
    `__all__` names it holds too, as `quadrants.lang` holds the top-level names)."""
    name: str
    display: str
    modules: Mapping[str, str]
    missing: Mapping[str, str] = field(default_factory=dict)
    init: Any = None      # runtime.ported_init.InitConventions for the toolkit's `init`
    packages: frozenset[str] = frozenset()
    reexports: Mapping[str, str] = field(default_factory=dict)

    def is_package(self, module: str) -> bool:
        """Whether `module` is a package in the toolkit's layout."""
        prefix = module + "."
        return module in self.packages or any(name.startswith(prefix) for name in (*self.modules, *self.missing))

    def children(self, module: str) -> dict[str, str]:
        """The submodules of `module` this table maps: child name -> wgkern object."""
        prefix = module + "."
        return {name[len(prefix):]: target for name, target in self.modules.items()
                if name.startswith(prefix) and "." not in name[len(prefix):]}


def resolve(dotted: str) -> Any:
    """wgkern's object for a table entry: the longest importable module prefix of `dotted`, then attributes."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        module_name = ".".join(parts[:end])
        try:
            obj = sys.modules.get(module_name) or importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise       # a module that exists failed to import something of its own
            continue
        for attr in parts[end:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(f"No module named {parts[0]!r}", name=parts[0])


class AliasLoader(importlib.abc.Loader):
    """Loads a toolkit module as the wgkern object its table names (see the module docstring)."""

    def __init__(self, finder: ProvideFinder, target: str, package: bool):
        self.finder = finder
        self.target = target
        self.package = package
        self._saved: dict[int, dict[str, Any]] = {}

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        obj = resolve(self.target)
        if self.package:
            self.finder.note_package(obj, spec.name)
        if self.package and not hasattr(obj, "__path__"):
            obj.__path__ = []     # a parent in the toolkit's layout: its children come from this finder
        self._saved[id(obj)] = {name: vars(obj).get(name, _ABSENT) for name in _IMPORT_ATTRIBUTES}
        return obj

    def exec_module(self, module: Any) -> None:
        # An attribute the object lacked stays: a namespace class standing for a package needs the __spec__
        # that importlib reads from every parent.
        for name, value in self._saved.pop(id(module), {}).items():
            if value is not _ABSENT and vars(module).get(name, _ABSENT) is not value:
                setattr(module, name, value)


class ProvideFinder(importlib.abc.MetaPathFinder):
    """Answers the imports of every provided toolkit's modules (one finder for all of them)."""

    def __init__(self) -> None:
        self.toolkits: dict[str, Toolkit] = {}
        # id(wgkern object) -> the toolkit packages it was loaded as (see _child_of_wgkern_object)
        self.loaded_packages: dict[int, list[str]] = {}

    def note_package(self, obj: Any, name: str) -> None:
        self.loaded_packages.setdefault(id(obj), []).append(name)

    def add(self, toolkit: Toolkit) -> None:
        """Answer the imports of `toolkit` from now on. Names the toolkit's modules hold beyond their wgkern
        objects' are added to those objects here, once: a namespace class standing for a toolkit package
        (`wgkern.types` for `taichi.types`) gets its children as attributes (`from taichi.types import
        annotations` looks them up there, and a class's `__name__` gives Python no module path to import them
        by), and a module that re-exports the toolkit's top-level names (`from quadrants.lang import cpu`) gets
        those of wgkern's `__all__` it lacks, except its own submodules' names and the names wgkern imports on
        first use."""
        if toolkit.name in self.toolkits:
            return
        self.toolkits[toolkit.name] = toolkit
        for module, target in toolkit.modules.items():
            # a namespace class is registered in sys.modules when wgkern is imported; a target not there yet is
            # a module, whose children the import system sets (importing it here would cost every program)
            obj = sys.modules.get(target)
            if obj is not None and not isinstance(obj, ModuleType) and toolkit.is_package(module):
                for child, child_target in toolkit.children(module).items():
                    if not hasattr(obj, child):
                        setattr(obj, child, resolve(child_target))
        for module, source in toolkit.reexports.items():
            obj, names = resolve(toolkit.modules[module]), resolve(source)
            submodules = toolkit.children(module)
            defined = vars(names)       # not the names a module __getattr__ imports on first use (wk.GUI)
            for name in names.__all__:
                if name in defined and name not in submodules and not hasattr(obj, name):
                    setattr(obj, name, defined[name])

    def find_spec(self, fullname: str, path: Any = None, target: ModuleType | None = None
                  ) -> importlib.machinery.ModuleSpec | None:
        toolkit = self.toolkits.get(fullname.partition(".")[0])
        if toolkit is None:
            return self._child_of_wgkern_object(fullname)
        return self._toolkit_spec(toolkit, fullname)

    def _toolkit_spec(self, toolkit: Toolkit, fullname: str, name: str | None = None
                      ) -> importlib.machinery.ModuleSpec:
        """The spec of toolkit module `fullname` (loaded under `name`, by default the same)."""
        if fullname in toolkit.modules:
            package = toolkit.is_package(fullname)
            loader = AliasLoader(self, toolkit.modules[fullname], package)
            return importlib.machinery.ModuleSpec(name or fullname, loader, is_package=package)
        if fullname in toolkit.missing:
            why = f"holds {toolkit.missing[fullname]}, which wgkern does not have"
        else:
            why = f"is not one of the {toolkit.display} modules wgkern provides (docs/porting.md lists them)"
        raise ModuleNotFoundError(f"No module named {fullname!r}: wgkern stands in for {toolkit.display} "
                                  f"(wgkern.provide({toolkit.name!r})), and {fullname} {why}", name=fullname)

    def _child_of_wgkern_object(self, fullname: str) -> importlib.machinery.ModuleSpec | None:
        """`from quadrants.math import mathimpl` asks for `wgkern.lang.math.mathimpl` (Python names the child
        after the parent object's own `__name__`): a child that only the toolkit's layout has is given as the
        toolkit's table says; every other name is left to the other finders."""
        parent_name, _, child = fullname.rpartition(".")
        parent = sys.modules.get(parent_name)
        if parent is None or id(parent) not in self.loaded_packages:
            return None
        for package in self.loaded_packages[id(parent)]:
            toolkit = self.toolkits.get(package.partition(".")[0])
            alias = f"{package}.{child}"
            if toolkit is None or (alias not in toolkit.modules and alias not in toolkit.missing) \
                    or toolkit.modules.get(alias) == fullname:
                continue
            if importlib.machinery.PathFinder.find_spec(fullname, getattr(parent, "__path__", None)) is not None:
                return None     # wgkern's own module of that name
            return self._toolkit_spec(toolkit, alias, fullname)
        return None


_finder: ProvideFinder | None = None


def current_finder() -> ProvideFinder | None:
    """The process's finder, if a toolkit was provided."""
    return _finder


def installed_finder() -> ProvideFinder:
    """The process's finder, first on sys.meta_path (installed on the first call)."""
    global _finder
    if _finder is None:
        _finder = ProvideFinder()
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
    return _finder
