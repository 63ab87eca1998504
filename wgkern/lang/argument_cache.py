"""Reuse of a checked dataclass argument between launches (lang/argument_holdings.py checks it the first time).

Programs such as Genesis pass the same dataclass values (hundreds of ndarray members, nested) to every launch.
Checking such a value member by member costs far more than the launch, so its outcome (the key part and the
ndarray arguments) is kept per (kernel parameter, value) and reused while a walk over the value finds the same
members: the same objects (containers, with the same `.grad`; numbers, strings, enums, types, functions), nested
dataclass values walked in turn, and any other member with an equal template key. When every dataclass in the
value is frozen, its members cannot be rebound, so only the containers' `.grad` and the members compared by key
are looked at again. A value holding a numpy array (whose shape may change in place) is checked afresh at every
launch."""
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


@dataclasses.dataclass(frozen=True, slots=True)
class _Keyed:
    """A member compared by its template key (equality), not by identity."""
    item: Any
    key: Any


@dataclasses.dataclass(slots=True)
class _Walk:
    """What a walk over a dataclass value found: `members` in order (by identity, or _Keyed), the containers
    with their `.grad`, the members compared by key, and whether every dataclass on the way is frozen (then
    no member can be rebound, and only the containers' `.grad` and the keyed members need checking again)."""
    members: list[Any] = dataclasses.field(default_factory=list)
    grads: list[tuple[Any, Any]] = dataclasses.field(default_factory=list)
    keyed: list[_Keyed] = dataclasses.field(default_factory=list)
    frozen: bool = True


def _walk(value: Any, template_key: Callable[[Any], Any], found: _Walk) -> None:
    cls = type(value)
    found.members.append(cls)
    found.frozen = found.frozen and cls.__dataclass_params__.frozen
    for name in _field_names(cls):
        item = getattr(value, name)
        if isinstance(item, Container):
            found.members.append(item)
            found.members.append(item.grad)
            found.grads.append((item, item.grad))
        elif isinstance(item, _BY_IDENTITY):
            found.members.append(item)
        elif isinstance(item, np.ndarray):
            raise _Uncacheable
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            _walk(item, template_key, found)
        else:
            keyed = _Keyed(item, template_key(item))
            found.members.append(keyed)
            found.keyed.append(keyed)


def _same(old: list[Any], new: list[Any]) -> bool:
    if len(old) != len(new):
        return False
    for a, b in zip(old, new):
        if a is not b and not (type(a) is _Keyed and type(b) is _Keyed and (a.key is b.key or a.key == b.key)):
            return False
    return True


def _frozen_unchanged(found: _Walk, template_key: Callable[[Any], Any]) -> bool:
    """For a value whose dataclasses are all frozen: the containers' `.grad` and the keyed members as found."""
    for container, grad in found.grads:
        if container.grad is not grad:
            return False
    for keyed in found.keyed:
        key = template_key(keyed.item)
        if key is not keyed.key and key != keyed.key:
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


@dataclasses.dataclass(slots=True)
class _Entry:
    rule: Any                 # held, so its id is not reused while the entry exists
    value: Any                # weak reference to the dataclass value
    program: Any
    found: _Walk
    part: HashedTuple
    arrays: list[Any]


class DataclassArgumentCache:
    """(id(rule), id(value)) -> _Entry."""

    def __init__(self) -> None:
        self.entries: dict[tuple[int, int], _Entry] = {}

    def part(self, rule: Any, value: Any, program: Any, components: list[Any], template_key: Callable[[Any], Any],
             check: Callable[[list[Any]], Any]) -> Any:
        """The key part of dataclass argument `value`, its ndarray arguments appended to `components`; `check`
        (which appends them itself) runs when nothing valid is cached."""
        key = (id(rule), id(value))
        cached = self.entries.get(key)
        if cached is not None and cached.rule is rule and cached.value() is value and cached.program is program \
                and program.alive and cached.found.frozen and _frozen_unchanged(cached.found, template_key):
            components.extend(cached.arrays)
            return cached.part
        found = _Walk()
        try:
            _walk(value, template_key, found)
        except _Uncacheable:
            return check(components)
        if cached is not None and cached.rule is rule and cached.value() is value and cached.program is program \
                and program.alive and _same(cached.found.members, found.members):
            components.extend(cached.arrays)
            return cached.part
        arrays: list[Any] = []
        part = HashedTuple(check(arrays))
        components.extend(arrays)
        try:
            reference = weakref.ref(value, lambda _, key=key: self.entries.pop(key, None))
        except TypeError:         # not weakly referable: checked at every launch
            return part
        self.entries[key] = _Entry(rule, reference, program, found, part, arrays)
        return part


DATACLASS_ARGUMENTS = DataclassArgumentCache()
