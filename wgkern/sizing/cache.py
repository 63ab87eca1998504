"""Caches of evaluated sizes and reducer results, keyed by the generations of the containers they read.

A key is (expression with scalars and shapes already bound, one token per container whose contents the
expression reads). A token identifies a container's contents: (container id, generation), bumped by every host
write and every launch that may write it. A container whose token is None (numpy arguments, live DLPack
exports) makes the entry uncacheable. Entries are evicted oldest first past `limit`."""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Hashable

from wgkern.sizing import expr as E


def content_slots(expr: E.SizeExpr) -> list[Any]:
    """Containers whose elements `expr` reads (shapes are bound into the expression already)."""
    seen: dict[int, Any] = {}
    for node in E.walk(expr):
        if isinstance(node, E._Read):
            seen.setdefault(id(node.slot), node.slot)
    return list(seen.values())


class SizeCache:
    """Bounded map (expr, tokens) -> int shared by a Program's launches (sizes and reducer results)."""

    def __init__(self, limit: int = 4096):
        self.limit = limit
        self.entries: OrderedDict[Hashable, int] = OrderedDict()

    @staticmethod
    def key(expr: E.SizeExpr, token: Callable[[Any], Hashable | None]) -> Hashable | None:
        tokens = []
        for slot in content_slots(expr):
            value = token(slot)
            if value is None:
                return None
            tokens.append(value)
        return (expr, tuple(tokens))

    def get(self, key: Hashable | None) -> int | None:
        if key is None:
            return None
        return self.entries.get(key)

    def put(self, key: Hashable | None, value: int) -> None:
        if key is None:
            return
        self.entries[key] = value
        if len(self.entries) > self.limit:
            self.entries.popitem(last=False)

    def clear(self) -> None:
        self.entries.clear()
