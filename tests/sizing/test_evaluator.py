"""The one evaluator and the reducers: random SizeExprs give identical results on the host walk, the CPU reducer
and the WGSL reducer (property test); the tripwire; checked arithmetic; long axes; caching by generation."""
from __future__ import annotations

import random

import numpy as np
import pytest

from wgkern.errors import SizingError
from wgkern.ir import nodes as ir
from wgkern.lang import types as T
from wgkern.sizing import SizeCache, evaluate_sizes
from wgkern.sizing import expr as E
from wgkern.sizing.evaluator import TRIPWIRE, evaluate
from wgkern.sizing.reducers import MAX_POINTS

from .helpers import Generations, Stats, host_context


def slot(name: str, dtype=T.i32, ndim: int = 1) -> ir.ContainerSlot:
    return ir.ContainerSlot(name=name, kind="ndarray", dtype=dtype, ndim=ndim, arg_index=0)


A, B, M = slot("a"), slot("b", T.u8), slot("m", T.i16, 2)
SLOTS = [A, B, M]
ARRAYS = [np.random.default_rng(1).integers(-3, 9, 12).astype(np.int32),
          np.random.default_rng(2).integers(0, 7, 9).astype(np.uint8),
          np.random.default_rng(3).integers(-2, 6, (4, 5)).astype(np.int16)]


def read(s: ir.ContainerSlot, *index: E.SizeExpr) -> E.SizeExpr:
    return E.NdarrayRead(s, tuple(index), s.dtype)


class RandomExprs:
    """Random closed SizeExprs over SLOTS (reads may go out of bounds: both sides must then raise)."""

    def __init__(self, seed: int, monotone: bool = False, names: int = 0):
        self.rng = random.Random(seed)
        self.count = 0
        self.monotone = monotone     # shaped like build.py's output: inner reductions in monotone places
        self.names = names           # > 0: variables reuse that many names (siblings and shadowing, as build.py)

    def var(self) -> E.BoundVar:
        self.count += 1
        return E.BoundVar(f"v{self.count % self.names if self.names else self.count}")

    def leaf(self, scope: list[E.BoundVar]) -> E.SizeExpr:
        r = self.rng.random()
        if scope and r < 0.45:
            return self.rng.choice(scope)
        if r < 0.7:
            return E.Const(self.rng.randint(-2, 6))
        return self.read(scope)

    def index(self, scope: list[E.BoundVar], extent: int) -> E.SizeExpr:
        r = self.rng.random()
        if scope and r < 0.15:       # a computed index (as n-D loops and `n[(i + 1) % N]` give): in bounds
            return E.modulo(E.Add(self.rng.choice(scope), E.Const(self.rng.randint(-3, 3))), E.Const(extent))
        if scope and r < 0.8:
            return self.rng.choice(scope)
        return E.Const(self.rng.randint(0, extent - 1))

    def read(self, scope: list[E.BoundVar]) -> E.SizeExpr:
        s = self.rng.choice(SLOTS)
        shape = ARRAYS[SLOTS.index(s)].shape
        return read(s, *[self.index(scope, n) for n in shape])

    def range_end(self, scope: list[E.BoundVar]) -> E.SizeExpr:
        r = self.rng.random()
        if scope and r < 0.3:
            return E.Add(self.rng.choice(scope), E.Const(1))
        if r < 0.6:
            return read(B, self.index(scope, 9))
        return E.Const(self.rng.randint(0, 4))

    def expr(self, scope: list[E.BoundVar], depth: int) -> E.SizeExpr:
        if depth <= 0:
            return self.leaf(scope)
        r = self.rng.random()
        if r < 0.3:
            var = self.var()
            begin = E.Const(self.rng.randint(0, 2))
            return E.MaxOverRange(var, begin, self.range_end(scope), self.expr(scope + [var], depth - 1))
        if not self.monotone:
            kind = self.rng.choice([E.Add, E.Sub, E.Mul, E.Max, E.FloorDiv])
            if kind is E.FloorDiv and self.rng.random() < 0.7:     # else any divisor (0: both sides raise)
                return E.FloorDiv(self.expr(scope, depth - 1), E.Const(self.rng.randint(1, 5)))
            return kind(self.expr(scope, depth - 1), self.expr(scope, depth - 1))
        kind = self.rng.choice([E.Add, E.Mul, E.Max, E.FloorDiv])
        lhs, rhs = self.expr(scope, depth - 1), self.expr(scope, depth - 1)
        if kind is E.FloorDiv:
            return E.FloorDiv(lhs, E.Const(self.rng.randint(1, 5)))
        if kind is E.Mul:
            lhs, rhs = E.Max(lhs, E.Const(0)), E.Max(rhs, E.Const(0))
        return kind(lhs, rhs)

    def top(self) -> E.SizeExpr:
        var = self.var()
        return E.MaxOverRange(var, E.Const(0), E.Const(self.rng.randint(1, 4)), self.expr([var], 4))


def outcome(fn):
    try:
        return fn()
    except SizingError:
        return "SizingError"


@pytest.mark.parametrize("names", [0, 3])
@pytest.mark.parametrize("monotone", [False, True])
def test_random_exprs_host_walk_equals_reducers(make_context, monotone, names):
    generator = RandomExprs(seed=7, monotone=monotone, names=names)
    exprs = [generator.top() for _ in range(150)]
    context = make_context(SLOTS, ARRAYS)
    reduced = 0
    for expr in exprs:
        walked = outcome(lambda: evaluate(expr, context))
        fresh = make_context(SLOTS, ARRAYS)
        got = outcome(lambda: evaluate_sizes([expr], fresh)[0])
        assert got == walked, str(expr)
        assert not getattr(fresh.device_reducer, "errors", None)
        reduced += fresh.stats.max_reducer_dispatches > 0
    assert reduced > (130 if monotone else 75)    # most of them really ran on a reducer


def test_long_axis_in_grammar(make_context):
    n = (1 << 24) + 3
    a = np.zeros(n, np.int32)
    a[n - 1] = 77
    a[12345] = 50
    s = slot("big")
    i = E.BoundVar("i")
    expr = E.MaxOverRange(i, E.Const(0), E.ShapeOf(s, 0), E.Add(read(s, i), E.Const(1)))
    context = make_context([s], [a])
    assert evaluate_sizes([expr], context) == [78]
    assert context.stats.max_reducer_dispatches == 1


def test_out_of_grammar_above_tripwire_gets_a_sound_bound(make_context):
    s = slot("big")
    a = np.zeros(TRIPWIRE + 1, np.int32)
    a[[5, 1000, TRIPWIRE - 3]] = [4, 9, 6]
    i, j = E.BoundVar("i"), E.BoundVar("j")
    inner = E.MaxOverRange(j, i, E.Add(i, E.Const(1)), read(s, j))      # begin depends on i: not reduced
    walked = E.MaxOverRange(i, E.Const(0), E.Const(TRIPWIRE + 1), inner, "kernel.py:12 (for j in ...)")
    # exactly max(a) = 9; the interval bound reads a over i's whole range [0, TRIPWIRE]: also 9
    assert evaluate_sizes([walked], make_context([s], [a])) == [9]
    # a[j] - j: exactly max over j of a[j] - j = 9 - 1000 -> 0 (a MaxOverRange is never negative); the bound
    # takes j in [0, TRIPWIRE] independently in both terms: max(a) - 0 = 9, sound but loose
    loose = E.MaxOverRange(i, E.Const(0), E.Const(TRIPWIRE + 1),
                           E.MaxOverRange(j, i, E.Add(i, E.Const(1)), E.Sub(read(s, j), j)))
    assert evaluate_sizes([loose], make_context([s], [a])) == [9]


def test_reused_variable_names_are_independent_maxima(make_context):
    a, b = slot("a"), slot("b")
    arrays = [np.array([5, 0, 0], np.int32), np.array([0, 0, 7], np.int32)]
    i, j = E.BoundVar("i"), E.BoundVar("j")
    m1 = E.MaxOverRange(j, E.Const(0), E.Add(i, E.Const(1)), read(a, j))
    m2 = E.MaxOverRange(j, E.Const(0), E.Add(i, E.Const(1)), read(b, j))
    expr = E.MaxOverRange(i, E.Const(0), E.Const(3), E.Mul(m1, m2))
    # at i = 2: max(a[0..2]) * max(b[0..2]) = 5 * 7 (each j maximised on its own, not one j for both)
    context = make_context([a, b], arrays)
    assert evaluate_sizes([expr], context) == [35] == [evaluate(expr, context)]
    assert context.stats.max_reducer_dispatches >= 1


def test_repeated_inner_reductions_share_one_axis():
    from wgkern.sizing.reducers import Recogniser
    i, j = E.BoundVar("i"), E.BoundVar("j")
    inner = E.MaxOverRange(j, E.Const(0), E.Add(i, E.Const(1)), read(A, j))
    other = E.MaxOverRange(j, E.Const(0), E.Add(i, E.Const(1)), read(B, j))
    job = Recogniser(lambda dtype: True).job(
        E.MaxOverRange(i, E.Const(0), E.Const(4), E.Add(E.Mul(inner, inner), E.Add(inner, other))))
    # i, one axis for the three copies of `inner`, one (renamed) for `other`
    assert [axis.var.name for axis in job.axes] == ["i", "j", "j#2"]


def test_cross_product_past_the_reducer_limit_gets_a_sound_bound(make_context):
    n = 1 << 11
    a, b, c = slot("a"), slot("b"), slot("c")
    rng = np.random.default_rng(5)
    arrays = [np.arange(n, dtype=np.int32), np.arange(n, dtype=np.int32)[::-1].copy(),
              rng.integers(-50, 50, n).astype(np.int32)]
    i, j, k = E.BoundVar("i"), E.BoundVar("j"), E.BoundVar("k")
    # three axes of 2^11: 2^33 points, over MAX_POINTS; the reducer grammar takes it, so no host walk either
    body = E.Add(E.Add(read(a, i), read(b, i)), E.Max(read(c, E.modulo(E.Add(i, k), E.Const(n))), j))
    expr = E.MaxOverRange(i, E.Const(0), E.Const(n),
                          E.MaxOverRange(j, E.Const(0), E.Add(i, E.Const(1)),
                                         E.MaxOverRange(k, E.Const(0), E.Const(n), body)))
    assert MAX_POINTS < n ** 3
    # a[i] + b[i] = n - 1 at every i; max over k of c[(i + k) % n] = max(c); max over j <= i of j = i, so
    # the exact value is n - 1 + max(max(c), n - 1) = 2n - 2. The bound enumerates i (n <= SPLIT_BUDGET) and
    # keeps a[i] + b[i] exact; with j in [0, i] and the whole of c for k it is exact here too.
    (got,) = evaluate_sizes([expr], make_context([a, b, c], arrays))
    assert got == 2 * n - 2


def test_overflow_raises_never_wraps(make_context):
    a = np.array([2_000_000_000, 3], np.int32)
    i = E.BoundVar("i")
    big = E.MaxOverRange(i, E.Const(0), E.Const(2), E.Mul(read(A, i), read(A, i)))
    assert evaluate_sizes([big], make_context([A], [a])) == [4_000_000_000_000_000_000]
    huger = E.Mul(big, big)
    with pytest.raises(SizingError):
        evaluate_sizes([huger], make_context([A], [a]))


def test_unsigned_beyond_i32_falls_back_exactly(make_context):
    u = slot("u", T.u32)
    a = np.array([5, 0xFFFF_FFF0, 7], np.uint32)
    i = E.BoundVar("i")
    expr = E.MaxOverRange(i, E.Const(0), E.Const(3), read(u, i))
    assert evaluate_sizes([expr, read(u, E.Const(1))], make_context([u], [a])) == [0xFFFF_FFF0] * 2


def test_cache_keyed_by_generation(make_context):
    a = np.array([1, 4, 2], np.int32)
    i = E.BoundVar("i")
    expr = E.MaxOverRange(i, E.Const(0), E.ShapeOf(A, 0), read(A, i))
    stats, cache, generations = Stats(), SizeCache(), Generations()
    context = make_context([A], [a], cache=cache, stats=stats, generations=generations)
    assert evaluate_sizes([expr], context) == [4]
    before = (stats.max_reducer_dispatches, stats.sizer_host_evals)
    for _ in range(3):
        assert evaluate_sizes([expr], make_context([A], [a], cache=cache, stats=stats, generations=generations)) \
            == [4]
    assert (stats.max_reducer_dispatches, stats.sizer_host_evals) == before
    a[0] = 9
    generations.bump(A)
    assert evaluate_sizes([expr], make_context([A], [a], cache=cache, stats=stats, generations=generations)) == [9]
    assert stats.sizer_host_evals == before[1] + 1


def test_uncacheable_container_is_always_evaluated():
    a = np.array([3], np.int32)
    i = E.BoundVar("i")
    expr = E.MaxOverRange(i, E.Const(0), E.Const(1), read(A, i))
    kernel = ir.OffloadedKernel("k", [], [A], [])
    context = host_context(kernel, [a])
    context.tokens = lambda s: None
    evaluate_sizes([expr], context)
    evaluate_sizes([expr], context)
    assert context.stats.sizer_host_evals == 2


def test_printing():
    i = E.BoundVar("i")
    expr = E.Max(E.MaxOverRange(i, E.Const(0), E.ShapeOf(A, 0), E.Add(E.Const(1), read(A, i))), E.Const(1))
    assert str(expr) == "max(max_{i in 0..shape(a, 0)} ((1 + a[i])), 1)"


@pytest.mark.parametrize("dtype, values", [(T.i32, [-7, -3, -9]), (T.i32, [-7, 12, 0]), (T.u32, [5, 0xFFFF_FFFF, 3]),
                                           (T.i16, [-2, -1, -5]), (T.u8, [0, 200, 7])])
def test_slice_reduction_of_monotone_bodies(make_context, dtype, values):
    s = slot("s", dtype)
    a = np.array(values, dtype.np_dtype)
    i = E.BoundVar("i")
    bodies = [read(s, i), E.Add(read(s, i), E.Const(4)), E.Max(E.Sub(read(s, i), E.Const(1)), E.Const(0)),
              E.Mul(E.Const(3), E.Add(E.Const(1), read(s, i)))]
    exprs = [E.MaxOverRange(i, E.Const(0), E.Const(3), body) for body in bodies]
    exprs.append(E.MaxOverRange(i, E.Const(1), E.Const(1), bodies[1]))     # empty range
    expected = [evaluate(e, host_context(ir.OffloadedKernel("k", [], [s], []), [a])) for e in exprs]
    assert evaluate_sizes(exprs, make_context([s], [a])) == expected


def test_slice_out_of_bounds_raises(make_context):
    i = E.BoundVar("i")
    expr = E.MaxOverRange(i, E.Const(0), E.Const(5), read(A, i))
    with pytest.raises(SizingError, match="outside"):
        evaluate_sizes([expr], make_context([A], [np.arange(3, dtype=np.int32)]))


def test_bytecode_listing():
    from wgkern.sizing.bytecode import disassemble, encode
    from wgkern.sizing.reducers import Recogniser, prepare
    i, j = E.BoundVar("i"), E.BoundVar("j")
    node = E.MaxOverRange(i, E.Const(0), E.Const(4), E.Mul(E.Max(read(A, i), E.Const(0)),
                                                           E.MaxOverRange(j, E.Const(0), read(A, i), read(M, i, j))))
    job = Recogniser(lambda d: True).job(node)
    assert [a.var for a in job.axes] == [i, j]
    prepared = prepare(job, lambda b: 4)
    listing = disassemble(encode(prepared, lambda s: SLOTS.index(s), lambda s: ARRAYS[SLOTS.index(s)].shape))
    assert listing[0] == "0: read_var 0 12 0 1" and listing[1] == "5: clamp0"
    assert any(line.endswith("guard 1 40") or " guard 1 " in line for line in listing)


def test_dependent_inner_range_over_many_points(make_context):
    rng = np.random.default_rng(5)
    a = rng.integers(-20, 300, 300).astype(np.int32)
    i, j = E.BoundVar("i"), E.BoundVar("j")
    inner = E.MaxOverRange(j, E.Const(0), read(A, i), E.Max(E.Sub(read(A, j), j), E.Const(0)))
    expr = E.MaxOverRange(i, E.Const(0), E.Const(300), E.Add(E.Const(1), E.Mul(E.Max(read(A, i), E.Const(0)), inner)))
    expected = max(1 + max(int(a[k]), 0) * max([max(int(a[m]) - m, 0) for m in range(max(int(a[k]), 0))], default=0)
                   for k in range(300))
    context = make_context([A], [a])
    assert evaluate_sizes([expr], context) == [expected]
    assert context.stats.max_reducer_dispatches == 2      # the bounding range of j, then the cross product


def test_floor_division_rounds_down_on_every_reducer(make_context):
    """An n-D loop's flattened index (v // 5, v % 5) and a floor division of negative values: the reducer's
    bytecode (FLOORDIV) rounds towards negative infinity like Python, so device and host agree exactly."""
    v = E.BoundVar("v")
    row, col = E.floordiv(v, E.Const(5)), E.modulo(v, E.Const(5))
    for shift in (-4, 0, 3):                                # M holds -2 .. 5: quotients of both signs
        body = E.FloorDiv(E.Add(read(M, row, col), E.Const(shift)), E.Const(3))
        expr = E.MaxOverRange(v, E.Const(0), E.Const(20), E.Sub(body, E.Const(-2)))
        want = max(0, max((int(ARRAYS[2][p // 5, p % 5]) + shift) // 3 + 2 for p in range(20)))
        context = make_context(SLOTS, ARRAYS)
        assert evaluate_sizes([expr], context) == [want] == [evaluate(expr, context)]
        assert context.stats.max_reducer_dispatches == 1
    assert str(row) == "(v // 5)" and str(col) == "(v - (5 * (v // 5)))"


def test_division_by_zero_in_a_bound_raises():
    a = np.array([0, 1], np.int32)
    i = E.BoundVar("i")
    expr = E.MaxOverRange(i, E.Const(0), E.Const(2), E.FloorDiv(E.Const(7), read(A, i)))
    with pytest.raises(SizingError, match="divides by zero"):
        evaluate_sizes([expr], host_context(ir.OffloadedKernel("k", [], [A], []), [a]))
