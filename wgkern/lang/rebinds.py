"""Counting attribute assignments on @wk.data_oriented objects, so that a launch can tell in one comparison that
none of them has rebound an attribute since its last check (launch_plan.py).

`watch(cls)` (called by @wk.data_oriented) gives the class a `__setattr__` and `__delattr__` that bump
`Rebinds.count` and then do what the class did before; subclasses inherit them. An object is watched while its
class's `__setattr__` and `__delattr__` are still those (`is_watched`): a subclass that replaces them is not.
Writing into an object's `__dict__` directly, or through `object.__setattr__`, bypasses any `__setattr__` and is
not counted (docs/language.md says so where it describes template objects)."""
from __future__ import annotations

from typing import Any, Callable


class Rebinds:
    count = 0          # attribute assignments and deletions on watched objects since the process started


_HOOKS: set[Callable[..., Any]] = set()      # the __setattr__ / __delattr__ functions watch() installed


def watch(cls: type) -> None:
    """Count every attribute assignment and deletion on instances of `cls` (once: a class that already counts
    them, itself or through a watched base, is left as it is)."""
    if is_watched(cls):
        return
    assign, delete = cls.__setattr__, cls.__delattr__

    def __setattr__(self: Any, name: str, value: Any) -> None:
        Rebinds.count += 1
        assign(self, name, value)

    def __delattr__(self: Any, name: str) -> None:
        Rebinds.count += 1
        delete(self, name)

    try:
        cls.__setattr__ = __setattr__
        cls.__delattr__ = __delattr__
    except TypeError:          # a built-in or otherwise immutable type: its objects stay unwatched
        return
    _HOOKS.update((__setattr__, __delattr__))


def is_watched(kind: type) -> bool:
    """Whether every normal attribute assignment or deletion on an instance of `kind` bumps Rebinds.count."""
    return kind.__setattr__ in _HOOKS and kind.__delattr__ in _HOOKS
