"""Quadrants' `@wk.perf_dispatch`: one Python entry point with several registered implementations (kernels or
plain Python functions, each optionally with an `is_compatible(*args)` test); each call runs one of them.

For each geometry (`get_geometry_hash(*args, **kwargs)`) the compatible implementations are first measured in
turn, round robin, one call each: `first_warmup` untimed calls then `active` timed ones apiece (wk.sync() before
and after a timed call, so device work is counted); then the fastest runs every call. After
`repeat_after_count` calls or `repeat_after_seconds` seconds (0 or None: never) the geometry is measured again
with `warmup` untimed calls apiece. Every implementation must compute the same thing: which one ran never changes
a result. `WK_PERF_DISPATCH_FORCE="dispatcher:implementation,..."` pins dispatchers to named implementations."""
from __future__ import annotations

import inspect
import os
import time
from typing import Any, Callable

from wgkern.errors import WkError


def _parse_force_map(raw: str) -> dict[str, str]:
    """"a:b,c:d" -> {"a": "b", "c": "d"} (spaces and empty items ignored)."""
    out: dict[str, str] = {}
    for item in raw.split(","):
        item = item.strip()
        if not item:
            continue
        if ":" not in item:
            raise ValueError(f"Malformed WK_PERF_DISPATCH_FORCE item {item!r}: write dispatcher:implementation")
        name, impl = (part.strip() for part in item.split(":", 1))
        out[name] = impl
    return out


def _parameter_names(fn: Any) -> list[str]:
    return list(inspect.signature(getattr(fn, "fn", fn)).parameters)


class _Implementation:
    def __init__(self, fn: Callable[..., Any], is_compatible: Callable[..., bool] | None):
        self.fn, self.is_compatible = fn, is_compatible
        self.name = getattr(fn, "name", None) or getattr(fn, "__name__", repr(fn))


class _Geometry:
    """Measurement state of one geometry."""

    def __init__(self) -> None:
        self.queue: list[tuple[_Implementation, bool]] = []     # (implementation, timed) calls still to make
        self.seconds: dict[_Implementation, float] = {}
        self.fastest: _Implementation | None = None
        self.calls_since = 0
        self.chosen_at = 0.0


class PerformanceDispatcher:
    """See the module docstring."""

    def __init__(self, prototype: Callable[..., Any], get_geometry_hash: Callable[..., Any], first_warmup: int,
                 warmup: int, active: int, repeat_after_count: int | None, repeat_after_seconds: float | None):
        self.name = prototype.__name__
        self._parameters = _parameter_names(prototype)
        self._get_geometry_hash = get_geometry_hash
        self._first_warmup, self._warmup, self._active = first_warmup, warmup, max(1, active)
        self._repeat_after_count, self._repeat_after_seconds = repeat_after_count, repeat_after_seconds
        self._implementations: list[_Implementation] = []
        self._geometries: dict[Any, _Geometry] = {}

    def register(self, fn: Callable[..., Any] | None = None, *,
                 is_compatible: Callable[..., bool] | None = None) -> Any:
        """`@dispatcher.register` or `@dispatcher.register(is_compatible=...)`, above `@wk.kernel` (or on a
        plain function); the implementation's parameters must be the dispatcher's, in the same order."""
        if fn is None:
            return lambda f: self.register(f, is_compatible=is_compatible)
        names = _parameter_names(fn)
        if names != self._parameters:
            raise WkError(f"PERFDISPATCH_ANNOTATION_SEQUENCE_MISMATCH: '{getattr(fn, '__name__', fn)}' takes "
                          f"({', '.join(names)}); implementations of '{self.name}' take ({', '.join(self._parameters)})")
        self._implementations.append(_Implementation(fn, is_compatible))
        if inspect.isfunction(fn):
            fn._wk_perf_dispatch_registered = True     # @wk.kernel above it would hide it: kernel() refuses
        return fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        compatible = [impl for impl in self._implementations
                      if impl.is_compatible is None or impl.is_compatible(*args, **kwargs)]
        if not compatible:
            raise WkError(f"perf_dispatch '{self.name}': no registered implementation is compatible with these "
                          "arguments")
        forced = _force_map().get(self.name)
        for impl in compatible:
            if impl.name == forced:
                return impl.fn(*args, **kwargs)
        if len(compatible) == 1:
            return compatible[0].fn(*args, **kwargs)
        key = (self._get_geometry_hash(*args, **kwargs), tuple(id(impl) for impl in compatible))
        geometry = self._geometries.get(key)
        if geometry is None:
            geometry = self._geometries[key] = _Geometry()
            self._schedule(geometry, compatible, self._first_warmup)
        elif not geometry.queue and self._due(geometry):
            self._schedule(geometry, compatible, self._warmup)
        if geometry.queue:
            impl, timed = geometry.queue.pop(0)
            result = self._run_measured(geometry, impl, args, kwargs) if timed else impl.fn(*args, **kwargs)
            if not geometry.queue:
                geometry.fastest = min(geometry.seconds, key=geometry.seconds.__getitem__)
                geometry.calls_since, geometry.chosen_at = 0, time.perf_counter()
            return result
        geometry.calls_since += 1
        return geometry.fastest.fn(*args, **kwargs)

    def _schedule(self, geometry: _Geometry, compatible: list[_Implementation], warmup: int) -> None:
        geometry.seconds = {}
        rounds = [False] * warmup + [True] * self._active
        geometry.queue = [(impl, timed) for timed in rounds for impl in compatible]

    def _due(self, geometry: _Geometry) -> bool:
        if self._repeat_after_count and geometry.calls_since >= self._repeat_after_count:
            return True
        return bool(self._repeat_after_seconds) and \
            time.perf_counter() - geometry.chosen_at >= self._repeat_after_seconds

    @staticmethod
    def _run_measured(geometry: _Geometry, impl: _Implementation, args: tuple[Any, ...],
                      kwargs: dict[str, Any]) -> Any:
        from wgkern.runtime.program import current
        program = current()
        if program is not None:
            program.sync()
        start = time.perf_counter()
        result = impl.fn(*args, **kwargs)
        if program is not None:
            program.sync()
        geometry.seconds[impl] = geometry.seconds.get(impl, 0.0) + time.perf_counter() - start
        return result


def _force_map() -> dict[str, str]:
    raw = os.environ.get("WK_PERF_DISPATCH_FORCE", "")
    return _parse_force_map(raw) if raw else {}


def perf_dispatch(get_geometry_hash: Callable[..., Any], first_warmup: int = 1, warmup: int = 0, active: int = 1,
                  repeat_after_count: int | None = None, repeat_after_seconds: float | None = 1.0) -> Any:
    """`@wk.perf_dispatch(get_geometry_hash=...)` on a prototype function (its body unused): see the module
    docstring."""
    def decorate(prototype: Callable[..., Any]) -> PerformanceDispatcher:
        return PerformanceDispatcher(prototype, get_geometry_hash, first_warmup, warmup, active, repeat_after_count,
                                     repeat_after_seconds)
    return decorate
