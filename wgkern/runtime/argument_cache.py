"""Reuse of a checked dataclass argument between launches (runtime/arguments.py checks it the first time).

Programs such as Genesis pass the same dataclass values (hundreds of ndarray members, nested) to every launch.
Checking such a value member by member costs far more than the launch, so its outcome (the key part and the
ndarray arguments) is kept per (kernel parameter, value) and reused while a walk over the value finds the same
members: the same objects (containers, with the same `.grad`; numbers, strings, enums, types, functions), nested
dataclass values walked in turn, and any other member with an equal template key. A value holding a numpy array
(whose shape may change in place) is checked afresh at every launch."""
from __future__ import annotations

import dataclasses
import enum
import types
import weakref
from typing import Any, Callable

import numpy as np

from wgkern.lang.fields import Container
from wgkern.lang.types import DataType, VectorType

_BY_IDENTITY = (int, float, bool, str, bytes, complex, type(None), enum.Enum, DataType, VectorType, type,
                types.FunctionType, types.BuiltinFunctionType)
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(member.name for member in dataclasses.fields(cls))
    return names


class _Uncacheable(Exception):
    """The value holds a member whose key may change without the member being rebound."""


def _signature(value: Any, template_key: Callable[[Any], Any], out: list[Any]) -> None:
    """Append what decides `value`'s checked outcome: each member (by identity where that suffices), a
    container's `.grad`, nested dataclass values walked."""
    out.append(type(value))
    for name in _field_names(type(value)):
        item = getattr(value, name)
        if isinstance(item, Container):
            out.append(item)
            out.append(item.grad)
        elif isinstance(item, _BY_IDENTITY):
            out.append(item)
        elif isinstance(item, np.ndarray):
            raise _Uncacheable
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            _signature(item, template_key, out)
        else:
            out.append(_Keyed(template_key(item)))


@dataclasses.dataclass(frozen=True, slots=True)
class _Keyed:
    """A member compared by its template key (equality), not by identity."""
    key: Any


def _same(old: list[Any], new: list[Any]) -> bool:
    if len(old) != len(new):
        return False
    for a, b in zip(old, new):
        if a is not b and not (type(a) is _Keyed and type(b) is _Keyed and a.key == b.key):
            return False
    return True


class HashedTuple(tuple):
    """A key part whose hash is computed once: kernel-cache lookups hash the whole key at every launch, and a
    dataclass part holds a tuple per ndarray member."""

    def __new__(cls, items: tuple[Any, ...]) -> "HashedTuple":
        made = super().__new__(cls, items)
        made._hash = tuple.__hash__(made)
        return made

    def __hash__(self) -> int:
        return self._hash


class DataclassArgumentCache:
    """(id(rule), id(value)) -> (rule, weak reference to value, program, signature, part, arrays); the rule is
    held, so its id is not reused while its entries exist."""

    def __init__(self) -> None:
        self.entries: dict[tuple[int, int], tuple[Any, Any, Any, list[Any], Any, list[Any]]] = {}

    def part(self, rule: Any, value: Any, program: Any, components: list[Any], template_key: Callable[[Any], Any],
             check: Callable[[list[Any]], Any]) -> Any:
        """The key part of dataclass argument `value`, its ndarray arguments appended to `components`; `check`
        (which appends them itself) runs when nothing valid is cached."""
        signature: list[Any] = []
        try:
            _signature(value, template_key, signature)
        except _Uncacheable:
            return check(components)
        key = (id(rule), id(value))
        cached = self.entries.get(key)
        if cached is not None and cached[0] is rule and cached[1]() is value and cached[2] is program \
                and program.alive and _same(cached[3], signature):
            components.extend(cached[5])
            return cached[4]
        arrays: list[Any] = []
        part = HashedTuple(check(arrays))
        components.extend(arrays)
        try:
            reference = weakref.ref(value, lambda _, key=key: self.entries.pop(key, None))
        except TypeError:         # not weakly referable: checked at every launch
            return part
        self.entries[key] = (rule, reference, program, signature, part, arrays)
        return part


DATACLASS_ARGUMENTS = DataclassArgumentCache()
