"""Launch-time adstack sizing: SizeExpr, the one host evaluator, max-reducers, caches (DESIGN.md "One
size-expression evaluator").

INTEGRATION CONTRACT (for launch.py and the backends)
------------------------------------------------------------
Compile time: after autodiff, `passes.adstack_sizing.size_task_stacks(task)` sets `stack.size_expr` on every
stack of a grad task whose static `capacity` is None (None stays None: out of grammar -> default size).
`collect_stacks` (backends/adstack.py) already copies it into `StackSpec.size_expr`.

Launch time, right before a launch that has stacks:

    capacities = capacities_for_launch(specs, context)      # list[int], one per StackSpec, in order

`context` is any object with these members (LaunchContext below); one small adapter per backend:
    scalar(arg_index) -> int                 value of a scalar kernel argument
    shape(slot) -> tuple[int, ...]           full shape (element axes included) of an IR ContainerSlot
    token(slot) -> Hashable | None           (unique container id, generation); None: never cache
    read(slot, flat_index) -> int            one element (host fallback walks only)
    host_array(slot) -> np.ndarray           contents on the host (CPU: a view; WGSL: a download, fallback)
    device_reducer -> ReducerBackend | None  WGSL: backends/wgsl/sizing_reducer.WgslReducer(device, buffer_of); CPU: None
    stats                                    has int attributes max_reducer_dispatches, sizer_host_evals
    default_ad_stack_size: int
    cache: SizeCache                         one per Program (keep it on the Program)
`runtime/sizing_context.launch_context(kernel, launch_args, backend, tokens, stats, cache, default_ad_stack_size)` builds
the right one from a launch's LaunchArgs: `HostLaunchContext` (below) on the CPU backend,
`backends.wgsl.sizing_reducer.WgslLaunchContext` on WGSL (it compiles the reducer pipeline once per backend and flushes
pending launches first); `tokens[k]` is the cache token of container slot k. With
`wk.init(ad_stack_size=N)` the caller skips this and uses N. Every capacity is >= 1 and <= MAX_CAPACITY;
anything too large raises `wk.SizingError`. `describe(expr)` is the text `kernel.ir()` may show."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Protocol, Sequence

import numpy as np

from wgkern.errors import SizingError
from wgkern.sizing import expr as E
from wgkern.sizing.cache import SizeCache
from wgkern.sizing.cpu_reducer import CpuReducer
from wgkern.sizing.evaluator import bind_host_leaves, evaluate
from wgkern.sizing.reducers import PreparedJob, ReducerBackend, Scheduler, prepare

MAX_CAPACITY = (1 << 32) - 1
MAX_ROUNDS = 64

__all__ = ["E", "LaunchContext", "HostLaunchContext", "SizeCache", "capacities_for_launch", "evaluate_sizes",
           "describe", "MAX_CAPACITY"]


class LaunchContext(Protocol):
    stats: Any
    default_ad_stack_size: int
    cache: SizeCache
    device_reducer: ReducerBackend | None

    def scalar(self, arg_index: int) -> int: ...

    def shape(self, slot: Any) -> tuple[int, ...]: ...

    def token(self, slot: Any) -> Hashable | None: ...

    def read(self, slot: Any, flat_index: int) -> int: ...

    def host_array(self, slot: Any) -> np.ndarray: ...


@dataclass
class HostLaunchContext:
    """CPU adapter: containers are host numpy arrays. `arrays(slot)` gives the full-shape array (a view),
    `tokens(slot)` its cache token; `scalars[i]` the scalar arguments."""
    scalars: Sequence[Any]
    arrays: Callable[[Any], np.ndarray]
    tokens: Callable[[Any], Hashable | None]
    stats: Any
    cache: SizeCache
    default_ad_stack_size: int = 32
    device_reducer: ReducerBackend | None = None
    shapes: Callable[[Any], tuple[int, ...]] | None = None

    def scalar(self, arg_index: int) -> int:
        return int(self.scalars[arg_index])

    def shape(self, slot: Any) -> tuple[int, ...]:
        return tuple(self.shapes(slot)) if self.shapes is not None else tuple(self.arrays(slot).shape)

    def token(self, slot: Any) -> Hashable | None:
        return self.tokens(slot)

    def read(self, slot: Any, flat_index: int) -> int:
        return int(self.arrays(slot).reshape(-1)[flat_index])

    def host_array(self, slot: Any) -> np.ndarray:
        return self.arrays(slot)


@dataclass
class _Run:
    """Rounds of reducers for the expressions of one launch."""
    context: Any
    results: dict[E.SizeExpr, int] = field(default_factory=dict)

    def reduce(self, exprs: list[E.SizeExpr]) -> None:
        context = self.context
        backend = context.device_reducer or CpuReducer(context.host_array, context.shape)
        fallback = CpuReducer(context.host_array, context.shape)
        scheduler = Scheduler(backend)
        current = list(exprs)
        for _ in range(MAX_ROUNDS):
            current = [E.substitute(e, self.results) for e in current]
            jobs = scheduler.round(current, self.results)
            if not jobs:
                return
            todo: list[tuple[Hashable | None, PreparedJob]] = []
            for node, job in jobs.items():
                key = SizeCache.key(node, context.token)
                cached = context.cache.get(key)
                if cached is not None:
                    self.results[node] = cached
                    continue
                prepared = prepare(job, lambda b: evaluate(b, context, self.results))
                if prepared.closed_form is not None:
                    self.results[node] = prepared.closed_form
                    context.cache.put(key, prepared.closed_form)
                else:
                    todo.append((key, prepared))
            if not todo:
                continue
            values = backend.run([p for _, p in todo])
            context.stats.max_reducer_dispatches += len(todo)
            for (key, prepared), value in zip(todo, values):
                if value is None:
                    value = fallback.run([prepared])[0]
                self.results[prepared.job.node] = value
                context.cache.put(key, value)
        raise SizingError("adstack sizing: too many dependent reduction rounds (internal limit)")


def evaluate_sizes(exprs: list[E.SizeExpr], context: Any) -> list[int]:
    """Values of closed SizeExprs (cache aware): one device pass and one read-back per round of reducers;
    nothing on a cache hit. Increments `sizer_host_evals` once per expression actually evaluated."""
    cache = context.cache
    fast = [cache.fast_key(e, context) for e in exprs]
    values: list[int | None] = [cache.get(k) for k in fast]
    misses = [i for i, v in enumerate(values) if v is None]
    if not misses:
        return [int(v) for v in values]
    bound = {i: bind_host_leaves(exprs[i], context) for i in misses}
    keys = {i: SizeCache.key(bound[i], context.token) for i in misses}
    for i in misses:
        values[i] = cache.get(keys[i])
    todo = [i for i in misses if values[i] is None]
    if todo:
        run = _Run(context)
        run.reduce([bound[i] for i in todo])
        for i in todo:
            values[i] = evaluate(bound[i], context, run.results)
            cache.put(keys[i], values[i])
        context.stats.sizer_host_evals += len(todo)
    for i in misses:
        cache.put(fast[i], values[i])
    return [int(v) for v in values]


def capacities_for_launch(specs: Sequence[Any], context: Any) -> list[int]:
    """Capacity of each StackSpec: its static capacity, its SizeExpr's value (>= 1), or the default for
    stacks out of the grammar. Raises SizingError when a capacity exceeds MAX_CAPACITY."""
    out: list[int | None] = []
    sized: list[int] = []
    for index, spec in enumerate(specs):
        if spec.static_capacity is not None:
            out.append(int(spec.static_capacity))
        elif spec.size_expr is None:
            out.append(int(context.default_ad_stack_size))
        else:
            out.append(None)
            sized.append(index)
    if sized:
        for index, value in zip(sized, evaluate_sizes([specs[i].size_expr for i in sized], context)):
            if value > MAX_CAPACITY:
                spec = specs[index]
                raise SizingError(f"adstack sizing: stack '{spec.name}' of task '{spec.task_name}' needs "
                                  f"{value} slots per thread (limit {MAX_CAPACITY}); the loop trip counts are "
                                  "too large (pass wk.init(ad_stack_size=N) to bypass the sizer)")
            out[index] = max(value, 1)
    return [int(v) for v in out]


def describe(expr: E.SizeExpr | None) -> str:
    """Text for `kernel.ir()`: the size expression or why there is none."""
    return "default_ad_stack_size" if expr is None else E.format_expr(expr)

