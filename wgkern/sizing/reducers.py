"""Max-reducers: which MaxOverRange nodes are reduced in parallel, and the rounds that schedule them.

A closed MaxOverRange N is recognised when its body uses only constants, its bound variables, integer reads indexed
by those, `+ - * max`, `//` by a positive constant, and inner MaxOverRanges in monotone positions (left of `-`,
either side of `+`/`max`, beside a provably non-negative factor of `*`, left of `//` by a positive constant) whose
begin is closed. Every such variable becomes an axis of one cross product; an inner axis whose end depends on outer
variables runs over a bounding range (a reducer of its own, one round earlier) and is guarded per point, a failed
guard giving 0. Because the context is monotone and each MaxOverRange is >= 0, the maximum over the cross product
equals N exactly. Closed inner MaxOverRanges and bounding ranges are reduced first: rounds run deepest first."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Protocol

from wgkern.sizing import expr as E
from wgkern.sizing.records import Record

MAX_POINTS = (1 << 32) - 1        # largest cross product one reducer job covers


class Axis(Record):
    """One variable of a job's cross product. `begin`/`end` are the real range (end may use outer axes);
    `lo`/`hi` are closed bounds of every value the variable takes. `guarded`: an inner MaxOverRange."""
    __slots__ = ("var", "begin", "end", "lo", "hi", "guarded")
    FIELDS = COMPARED = ("var", "begin", "end", "lo", "hi", "guarded")
    var: E.BoundVar
    begin: E.SizeExpr
    end: E.SizeExpr
    lo: E.SizeExpr
    hi: E.SizeExpr
    guarded: bool


class Job(Record):
    """Replace `node` by max(0, max over the cross product of `body`) (mode 'max') or by the value of a
    single read (mode 'value', no axes)."""
    __slots__ = ("node", "axes", "body", "mode")
    FIELDS = COMPARED = ("node", "axes", "body", "mode")
    DEFAULTS = {"mode": "max"}
    node: E.SizeExpr
    axes: tuple[Axis, ...]
    body: E.SizeExpr
    mode: str


@dataclass(slots=True)
class PreparedJob:
    """A job with its bounds evaluated on the host: axis k runs lo[k] .. lo[k] + extents[k] - 1.
    `raw`/`outer`: the body is `outer` applied to `raw` (the bare axis variable, or its 1-D read), non-decreasing
    in it, so the reducer only needs the raw (signed) maximum of a contiguous slice (or nothing: `closed_form`);
    `finish` applies `outer`."""
    job: Job
    lo: list[int]
    extents: list[int]
    raw: E._Read | E.BoundVar | None = None
    outer: E.SizeExpr | None = None

    @property
    def closed_form(self) -> int | None:
        """The result without any reduction (body non-decreasing in the bare variable: its last value)."""
        if not isinstance(self.raw, E.BoundVar) or self.points == 0:
            return 0 if self.points == 0 and self.job.mode == "max" else None
        return self.finish(self.lo[0] + self.extents[0] - 1)

    def finish(self, raw_max: int) -> int:
        """max(0, outer(raw_max)) with the host evaluator's checked arithmetic."""
        from wgkern.sizing.evaluator import HostEvaluator
        return max(0, HostEvaluator(None)(self.outer, {RAW: raw_max}))

    @property
    def points(self) -> int:
        total = 1
        for extent in self.extents:
            total *= extent
        return total


class ReducerBackend(Protocol):
    """Runs prepared jobs of one round (one submission, one read-back); None marks a job it could not
    finish exactly (overflow flag): the caller falls back to the host."""
    name: str
    gathers_reads: bool

    def read_ok(self, dtype: Any) -> bool: ...

    def run(self, jobs: list[PreparedJob]) -> list[int | None]: ...


# ---- recognition --------------------------------------------------------------------------------------------

def is_closed(node: E.SizeExpr) -> bool:
    return not E.free_vars(node)


def nonnegative(node: E.SizeExpr) -> bool:
    """Provably >= 0 for every value of its variables."""
    if isinstance(node, E.Const):
        return node.value >= 0
    if isinstance(node, (E.MaxOverRange, E.ShapeOf)):
        return True
    if isinstance(node, E.Max):
        return nonnegative(node.lhs) or nonnegative(node.rhs)
    if isinstance(node, (E.Add, E.Mul)):
        return nonnegative(node.lhs) and nonnegative(node.rhs)
    if isinstance(node, E.FloorDiv):
        return nonnegative(node.lhs) and E.positive_const(node.rhs)
    return False


class _Unrecognised(Exception):
    pass


class _Blocked(Exception):
    """A closed inner MaxOverRange must be reduced first."""


class Recogniser:
    """Builds the Job of a closed MaxOverRange, or says why it cannot (unrecognised / blocked).

    The job body is the node's body with every inner MaxOverRange's variable renamed to its own axis: two
    different inner reductions that reuse a variable name (build.py numbers variables by loop depth, so
    `max_{j0} a[j0] * max_{j0} b[j0]` is common) are independent maxima and need independent axes. Structurally
    equal inner reductions over the same outer axes have the same value at every point and share one axis."""

    def __init__(self, read_ok: Callable[[Any], bool]):
        self.read_ok = read_ok

    def job(self, node: E.MaxOverRange) -> Job | None | str:
        """A Job; None when out of the reducer grammar; 'blocked' when an inner closed reduction comes first."""
        self.axes = [Axis(node.var, node.begin, node.end, node.begin, node.end, False)]
        self.names: dict[E.BoundVar, E.BoundVar] = {node.var: node.var}     # variable name -> its axis
        self.enclosing = [node.var]                                           # axes around the current node
        self.shared: dict[tuple, E.MaxOverRange] = {}                         # inner reduction -> its rewrite
        try:
            body = self.check(node.body, True)
        except _Unrecognised:
            return None
        except _Blocked:
            return "blocked"
        return Job(node, tuple(self.axes), body)

    def check(self, node: E.SizeExpr, monotone: bool) -> E.SizeExpr:
        """`node` with its variables renamed to their axes; raises when out of the grammar."""
        if isinstance(node, E.Const):
            return node
        if isinstance(node, E.BoundVar):
            if node not in self.names:
                raise _Unrecognised()
            return self.names[node]
        if isinstance(node, E._Read):
            if node.dtype is None or not node.dtype.is_int or not self.read_ok(node.dtype):
                raise _Unrecognised()
            return type(node)(node.slot, tuple(self.check(index, False) for index in node.index), node.dtype)
        if isinstance(node, (E.Add, E.Max)):
            return type(node)(self.check(node.lhs, monotone), self.check(node.rhs, monotone))
        if isinstance(node, E.Sub):
            return E.Sub(self.check(node.lhs, monotone), self.check(node.rhs, False))
        if isinstance(node, E.Mul):
            return E.Mul(self.check(node.lhs, monotone and nonnegative(node.rhs)),
                         self.check(node.rhs, monotone and nonnegative(node.lhs)))
        if isinstance(node, E.FloorDiv) and E.positive_const(node.rhs):
            return E.FloorDiv(self.check(node.lhs, monotone), node.rhs)   # non-decreasing in lhs for a positive divisor
        if isinstance(node, E.MaxOverRange):
            return self.inner(node, monotone)
        raise _Unrecognised()   # ScalarArg / ShapeOf are bound to constants before recognition

    def inner(self, node: E.MaxOverRange, monotone: bool) -> E.MaxOverRange:
        if is_closed(node):
            raise _Blocked()
        if not monotone or not is_closed(node.begin):
            raise _Unrecognised()
        key = (node, tuple(sorted(((v.name, self.names.get(v)) for v in E.free_vars(node)), key=str)))
        if key in self.shared:
            return self.shared[key]
        begin, end = self.check(node.begin, False), self.check(node.end, False)
        var = node.var
        taken = {axis.var for axis in self.axes}
        count = len(taken)
        while var in taken:
            var = E.BoundVar(f"{node.var.name}#{count}")
            count += 1
        hi = end if is_closed(end) else self.bounding_end(end)
        self.axes.append(Axis(var, begin, end, begin, hi, True))
        outer = self.names.get(node.var)
        self.names[node.var] = var
        self.enclosing.append(var)
        body = self.check(node.body, True)
        self.enclosing.pop()
        if outer is None:
            del self.names[node.var]
        else:
            self.names[node.var] = outer
        rewritten = self.shared[key] = E.MaxOverRange(var, begin, end, body, node.where)
        return rewritten

    def bounding_end(self, end: E.SizeExpr) -> E.SizeExpr:
        """max of `end` over the outer axes it depends on: a closed expression (a reducer of its own)."""
        for axis in reversed(self.axes):
            if axis.var in self.enclosing and axis.var in E.free_vars(end):
                end = E.MaxOverRange(axis.var, axis.begin, axis.end, end)
        return end


# ---- scheduling ----------------------------------------------------------------------------------------------

class Scheduler:
    """Finds the jobs of the next round. `failed` holds nodes left to the host walk (out of grammar or
    flagged); `gathers_reads`: single reads outside reducers are jobs too (device-resident data)."""

    def __init__(self, backend: ReducerBackend):
        self.backend = backend
        self.recogniser = Recogniser(backend.read_ok)
        self.failed: set[E.SizeExpr] = set()
        self.results: dict[E.SizeExpr, int] = {}

    def pending(self, node: E.SizeExpr) -> bool:
        """Does `node` still contain a closed reduction (or gathered read) that must run before the host
        can evaluate it?"""
        for sub in E.walk(node):
            if sub in self.failed:
                continue
            wanted = isinstance(sub, E.MaxOverRange) or (self.backend.gathers_reads and isinstance(sub, E._Read))
            if wanted and is_closed(sub):
                return True
        return False

    def round(self, exprs: Iterable[E.SizeExpr], results: dict[E.SizeExpr, int]) -> dict[E.SizeExpr, Job]:
        """Jobs ready now, given the `results` of earlier rounds (substituted into `exprs` already)."""
        self.results = results
        jobs: dict[E.SizeExpr, Job] = {}
        for expr in exprs:
            self.find(expr, jobs)
        return jobs

    def find(self, node: E.SizeExpr, jobs: dict[E.SizeExpr, Job]) -> None:
        if node in jobs or node in self.failed or isinstance(node, (E.Const, E.BoundVar)):
            return
        closed = is_closed(node)
        if closed and isinstance(node, E.MaxOverRange):
            found = self.recogniser.job(node)
            if isinstance(found, Job):
                bounds = [E.substitute(b, self.results) for axis in found.axes for b in (axis.lo, axis.hi)]
                waiting = [b for b in bounds if self.pending(b)]
                if not waiting:
                    jobs[node] = found
                for bound in waiting:
                    self.find(bound, jobs)
                return
            if found is None:
                self.failed.add(node)
        elif closed and self.backend.gathers_reads and isinstance(node, E._Read):
            if not any(self.pending(i) for i in node.index):
                if node.dtype is not None and node.dtype.is_int and self.backend.read_ok(node.dtype):
                    jobs[node] = Job(node, (), node, "value")
                else:
                    self.failed.add(node)
                return
        for child in node.children():
            self.find(child, jobs)


RAW = E.BoundVar("raw")


def peel(job: Job) -> tuple[E._Read | E.BoundVar, E.SizeExpr] | None:
    """(leaf, outer) when a one-axis body is outer(leaf), outer non-decreasing and made of constants, and leaf
    the bare axis variable v or a read a[v]: the maximum is outer(hi - 1), or outer(max of the slice a[lo:hi])."""
    if job.mode != "max" or len(job.axes) != 1:
        return None
    var = job.axes[0].var
    found: list[E._Read | E.BoundVar] = []

    def split(node: E.SizeExpr) -> E.SizeExpr | None:
        if node == var:
            found.append(var)
            return RAW
        if isinstance(node, E._Read):
            if node.index != (var,) or node.dtype is None or not node.dtype.is_int or node.dtype.bits > 32:
                return None
            found.append(node)
            return RAW
        sides = {E.Add: (True, True), E.Max: (True, True), E.Sub: (True, False)}.get(type(node))
        if type(node) is E.FloorDiv:
            sides = (E.positive_const(node.rhs), False)
        if type(node) is E.Mul:
            ok = [isinstance(other, E.Const) and other.value >= 0 for other in (node.rhs, node.lhs)]
            sides = tuple(ok)
        if sides is None:
            return None
        if sides[0] and isinstance(node.rhs, E.Const):
            inner = split(node.lhs)
            return None if inner is None else type(node)(inner, node.rhs)
        if sides[1] and isinstance(node.lhs, E.Const):
            inner = split(node.rhs)
            return None if inner is None else type(node)(node.lhs, inner)
        return None

    outer = split(job.body)
    return (found[0], outer) if outer is not None else None


def prepare(job: Job, evaluate_bound: Callable[[E.SizeExpr], int]) -> PreparedJob:
    """Evaluate the job's closed bounds on the host. Inner (guarded) axes get at least one point so the
    cross product never vanishes: a failed guard evaluates to 0."""
    lo: list[int] = []
    extents: list[int] = []
    for axis in job.axes:
        begin = evaluate_bound(axis.lo)
        extent = max(evaluate_bound(axis.hi) - begin, 0)
        lo.append(begin)
        extents.append(max(extent, 1) if axis.guarded else extent)
    peeled = peel(job)
    if peeled is None:
        return PreparedJob(job, lo, extents)
    return PreparedJob(job, lo, extents, peeled[0], peeled[1])
