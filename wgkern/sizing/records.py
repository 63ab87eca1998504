"""Immutable, structurally compared records for the sizer's values (SizeExpr nodes, reducer jobs).

Plain slotted classes rather than frozen dataclasses: defining a frozen dataclass costs about a millisecond
(it generates its methods with exec), and the sizer's ~20 of them were paid on the first `.grad()` of every
process. Hashes are cached: the same expression trees are hashed again on every cache lookup."""
from __future__ import annotations

from typing import Any


class Record:
    """An immutable value: a subclass lists its constructor arguments in FIELDS (defaults in DEFAULTS), the
    ones equality and hashing look at in COMPARED, and the same names in __slots__."""
    __slots__ = ("_hash",)
    FIELDS: tuple[str, ...] = ()
    COMPARED: tuple[str, ...] = ()
    DEFAULTS: dict[str, Any] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        names = self.FIELDS
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__} takes {len(names)} arguments, got {len(args)}")
        given = dict(zip(names, args))
        for name, value in kwargs.items():
            if name not in names or name in given:
                raise TypeError(f"{type(self).__name__}: unexpected or repeated argument {name!r}")
            given[name] = value
        for name in names:
            if name in given:
                value = given[name]
            elif name in self.DEFAULTS:
                value = self.DEFAULTS[name]
            else:
                raise TypeError(f"{type(self).__name__} needs the argument {name!r}")
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_hash", None)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def _key(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.COMPARED)

    def __eq__(self, other: object) -> bool:
        return self is other or (type(other) is type(self) and self._key() == other._key())  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        cached = self._hash
        if cached is None:
            cached = hash((type(self), self._key()))
            object.__setattr__(self, "_hash", cached)
        return cached
