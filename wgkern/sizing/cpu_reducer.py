"""The CPU max-reducer: a job's cross product evaluated with numpy, in chunks, over host arrays.

Also the host fallback of device reducers (their overflow flag): it computes in int64 with every step checked
against the host evaluator's limit, so its results are those of the host evaluator, point for point. A read
of the bare axis variable of a one-axis job is a slice (no index array), the common `max(a[b:e])` case. A job
of more than MAX_POINTS points is not enumerated: it gets the sound upper bound of bounds.py."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from wgkern.errors import SizingError
from wgkern.sizing import expr as E
from wgkern.sizing.bounds import IntervalBounder
from wgkern.sizing.evaluator import VALUE_LIMIT, checked
from wgkern.sizing.reducers import MAX_POINTS, PreparedJob

CHUNK = 1 << 22                  # points per numpy pass (bounded temporaries)


def _check(values: Any, mask: Any, what: str = "size arithmetic") -> Any:
    bad = np.abs(values) >= VALUE_LIMIT
    if np.any(bad & mask):
        raise SizingError(f"adstack sizing: {what} does not fit the checked 63-bit range; the loop bounds are "
                          "too large to size (pass wk.init(ad_stack_size=N) to bypass the sizer)")
    return values


def _mul(a: Any, b: Any, mask: Any) -> Any:
    estimate = np.abs(np.asarray(a, np.float64)) * np.abs(np.asarray(b, np.float64))
    _check(estimate, mask)
    return np.multiply(a, b, dtype=np.int64)


_BINARY: dict[type, Callable[[Any, Any, Any], Any]] = {
    E.Add: lambda a, b, m: _check(np.add(a, b, dtype=np.int64), m),
    E.Sub: lambda a, b, m: _check(np.subtract(a, b, dtype=np.int64), m),
    E.Mul: _mul,
    E.Max: lambda a, b, m: np.maximum(a, b, dtype=np.int64),
    E.FloorDiv: lambda a, b, m: np.floor_divide(a, b, dtype=np.int64),     # b: a positive constant (reducers.py)
}
_UNCHECKED: dict[type, Callable[[Any, Any], Any]] = {
    E.Add: lambda a, b: np.add(a, b, dtype=np.int64),
    E.Sub: lambda a, b: np.subtract(a, b, dtype=np.int64),
    E.Mul: lambda a, b: np.multiply(a, b, dtype=np.int64),
    E.Max: lambda a, b: np.maximum(a, b, dtype=np.int64),
    E.FloorDiv: lambda a, b: np.floor_divide(a, b, dtype=np.int64),
}
_MAGNITUDE: dict[type, Callable[[int, int], int]] = {
    E.Add: lambda a, b: a + b, E.Sub: lambda a, b: a + b, E.Mul: lambda a, b: a * b, E.Max: max,
    E.FloorDiv: lambda a, b: a,
}


def magnitudes(body: E.SizeExpr, prepared: PreparedJob) -> dict[int, int]:
    """A static bound on |value| of every node of `body` (by id): steps whose bound stays under the checked
    limit skip the per-element overflow test."""
    out: dict[int, int] = {}
    axes = {axis.var: max(abs(lo), abs(lo + max(ext, 1) - 1))
            for axis, lo, ext in zip(prepared.job.axes, prepared.lo, prepared.extents)}

    def visit(node: E.SizeExpr) -> int:
        if isinstance(node, E.Const):
            bound = abs(node.value)
        elif isinstance(node, E.BoundVar):
            bound = axes[node]
        elif isinstance(node, E._Read):
            for index in node.index:
                visit(index)
            bound = 1 << (node.dtype.bits - (1 if node.dtype.is_signed else 0))
        elif isinstance(node, E.MaxOverRange):
            visit(node.begin)
            visit(node.end)
            bound = visit(node.body)
        else:
            bound = _MAGNITUDE[type(node)](visit(node.lhs), visit(node.rhs))
        out[id(node)] = bound
        return bound

    visit(body)
    return out


class ChunkEval:
    """Vectorised evaluation of one job body over one chunk of points; `env` maps axis variables to arrays
    (or, for the contiguous one-axis case, axis 0 to (start, stop))."""

    def __init__(self, arrays: Callable[[Any], np.ndarray], shapes: Callable[[Any], tuple[int, ...]],
                 env: dict[E.BoundVar, Any], contiguous: tuple[E.BoundVar, int, int] | None,
                 bounds: dict[int, int] | None = None):
        self.arrays = arrays
        self.shapes = shapes
        self.env = env
        self.contiguous = contiguous
        self.bounds = bounds or {}

    def eval(self, node: E.SizeExpr, mask: Any) -> Any:
        if isinstance(node, E.Const):
            return node.value
        if isinstance(node, E.BoundVar):
            return self.env[node]
        if isinstance(node, E._Read):
            return self.read(node, mask)
        if isinstance(node, E.MaxOverRange):
            var = self.env[node.var]
            guard = mask & (var >= self.eval(node.begin, mask)) & (var < self.eval(node.end, mask))
            body = self.eval(node.body, guard)
            return np.where(guard, np.maximum(body, 0, dtype=np.int64), 0)
        lhs, rhs = self.eval(node.lhs, mask), self.eval(node.rhs, mask)
        if self.bounds.get(id(node), VALUE_LIMIT) < VALUE_LIMIT:
            return _UNCHECKED[type(node)](lhs, rhs)
        return _BINARY[type(node)](lhs, rhs, mask)

    def read(self, node: E._Read, mask: Any) -> Any:
        shape = tuple(self.shapes(node.slot))
        flat = self.arrays(node.slot).reshape(-1)
        name = getattr(node.slot, "name", node.slot)
        if self.contiguous is not None and len(shape) == 1 and node.index == (self.contiguous[0],):
            _, start, stop = self.contiguous
            if start < 0 or stop > shape[0]:
                raise SizingError(f"adstack sizing: a loop bound reads {name}[{start}..{stop - 1}] outside "
                                  f"its shape {shape}")
            return self.wide(flat[start:stop], mask)
        offset: Any = 0
        for index, extent in zip(node.index, shape):
            value = np.asarray(self.eval(index, mask), np.int64)
            if np.any(((value < 0) | (value >= extent)) & mask):
                raise SizingError(f"adstack sizing: a loop bound reads {name} outside its shape {shape}")
            offset = offset * extent + np.where(mask, value, 0)
        return self.wide(flat[offset], mask)

    @staticmethod
    def wide(values: Any, mask: Any) -> Any:
        """64-bit reads: checked into the shared range, then int64 (u64 does not mix with int64 in numpy)."""
        if values.dtype.itemsize <= 4:
            return values
        _check(values.astype(np.float64), mask, "a read")
        return values.astype(np.int64)


def run_job(prepared: PreparedJob, arrays: Callable[[Any], np.ndarray],
            shapes: Callable[[Any], tuple[int, ...]]) -> int:
    """max(0, max over the job's points) for mode 'max', the read's value for mode 'value'."""
    job = prepared.job
    if job.mode == "value":
        result = ChunkEval(arrays, shapes, {}, None).eval(job.body, True)
        return checked(int(np.asarray(result).reshape(-1)[0]), "a read")
    total = prepared.points
    if prepared.closed_form is not None:
        return prepared.closed_form
    if prepared.raw is not None:
        return prepared.finish(_slice_max(prepared, arrays, shapes))
    if total > MAX_POINTS:             # too costly to enumerate: a sound upper bound instead (bounds.py)
        return checked(max(IntervalBounder(shapes, arrays).upper(job.node), 0), "a bound of a loop's trip count")
    best = 0
    single = len(job.axes) == 1
    bounds = magnitudes(job.body, prepared)
    for start in range(0, total, CHUNK):
        stop = min(start + CHUNK, total)
        env: dict[E.BoundVar, Any] = {}
        if single:
            env[job.axes[0].var] = np.arange(prepared.lo[0] + start, prepared.lo[0] + stop, dtype=np.int64)
        else:
            linear = np.arange(start, stop, dtype=np.int64)
            for axis, lo, extent in reversed(list(zip(job.axes, prepared.lo, prepared.extents))):
                env[axis.var] = lo + linear % extent
                linear = linear // extent
        contiguous = (job.axes[0].var, prepared.lo[0] + start, prepared.lo[0] + stop) if single else None
        values = ChunkEval(arrays, shapes, env, contiguous, bounds).eval(job.body, True)
        chunk_max = int(np.max(values))
        best = max(best, chunk_max)
    return checked(best)


def _slice_max(prepared: PreparedJob, arrays: Callable[[Any], np.ndarray],
               shapes: Callable[[Any], tuple[int, ...]]) -> int:
    """Signed maximum of the contiguous slice a[lo:lo+extent] a peeled job reads."""
    read = prepared.raw
    (extent,) = tuple(shapes(read.slot))
    lo, hi = prepared.lo[0], prepared.lo[0] + prepared.extents[0]
    if lo < 0 or hi > extent:
        raise SizingError(f"adstack sizing: a loop bound reads {getattr(read.slot, 'name', read.slot)}"
                          f"[{lo}..{hi - 1}] outside its shape ({extent},)")
    return int(arrays(read.slot).reshape(-1)[lo:hi].max())


class CpuReducer:
    """Reducer backend over host numpy arrays (the CPU backend, and every device reducer's fallback)."""
    name = "cpu"
    gathers_reads = False

    def __init__(self, arrays: Callable[[Any], np.ndarray], shapes: Callable[[Any], tuple[int, ...]]):
        self.arrays = arrays
        self.shapes = shapes

    def read_ok(self, dtype: Any) -> bool:
        return dtype.is_int

    def run(self, jobs: list[PreparedJob]) -> list[int | None]:
        return [run_job(job, self.arrays, self.shapes) for job in jobs]
