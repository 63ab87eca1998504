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
    """Bounded map (expr, tokens) -> int shared by a Program's launches (sizes and reducer results), plus a
    per-launch fast path keyed by the identity of a compiled expression and the values of its leaves."""

    def __init__(self, limit: int = 4096):
        self.limit = limit
        self.entries: OrderedDict[Hashable, int] = OrderedDict()
        self.leaf_lists: dict[int, tuple[E.SizeExpr, tuple[int, ...], tuple[Any, ...], list[Any]]] = {}

    def fast_key(self, expr: E.SizeExpr, context: Any) -> Hashable | None:
        """(id(expr), scalars, shapes, tokens) of an expression as compiled (leaves not yet bound); cheap
        enough for every launch. None when a container is uncacheable."""
        known = self.leaf_lists.get(id(expr))
        if known is None or known[0] is not expr:
            nodes = list(E.walk(expr))
            scalars = tuple(sorted({n.arg_index for n in nodes if isinstance(n, E.ScalarArg)}))
            shaped = tuple({id(n.slot): n.slot for n in nodes if isinstance(n, E.ShapeOf)}.values())
            known = (expr, scalars, shaped, content_slots(expr))
            self.leaf_lists[id(expr)] = known
        tokens = []
        for slot in known[3]:
            token = context.token(slot)
            if token is None:
                return None
            tokens.append(token)
        return (id(expr), tuple(context.scalar(i) for i in known[1]),
                tuple(tuple(context.shape(slot)) for slot in known[2]), tuple(tokens))

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
