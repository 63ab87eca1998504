"""The source text of a random differentiable program, built from a seeded RNG (`generate(seed)`).

A program is one module: input fields `x`, `w` and an ndarray `p` (the differentiated parameters), integer tables
that decide trip counts, output fields (`loss`, `out`, `y`), a `trace` field counting the taken side of every
float comparison, a few `@wk.func`s with loops inside, the kernel `compute(p, m)` (one or two parallel loops:
`range`, struct-for, `wk.ndrange` 1-D or 2-D) and a `reduce()` kernel for tape mode. Constructs drawn: nested
`range` loops with bounds read from tables (at the thread index or at a computed index), `range(lo, hi)`,
`range(m)` over a scalar argument, constant and triangular ranges, `while` loops with counter and float exits,
`if`/`else`, `break`, `continue`, carried locals, accumulations, func calls, atomics and one plain store per
thread.

Programs stay differentiable by construction: expressions are smooth everywhere (expressions.py); the only
non-smooth points are the float comparisons, and each one's taken side is counted in `trace[site]`, so the
runner can check that no comparison flips within its finite-difference steps. Kernels only read the inputs
and tables and only write outputs (never read them), so the global data access rule holds. Every local stays
in [-LOCAL, LOCAL] and every carried update is non-expansive in the locals, which keeps f32 rounding errors
growing at most linearly with the work (tolerance.py)."""
from __future__ import annotations

import dataclasses
import random

from wgkern.fuzz.expressions import LOCAL, Expr, Leaves, expression, reading

RHO = 0.8                       # every carried update contracts the locals by this factor at least
CONTRACTION = 5                 # 1 / (1 - RHO): the trips of a loop whose errors add up (tolerance.py)
DEFAULT_MAX_TRIP = 50           # trip counts drawn in [0, 50] by default
DEFAULT_LOOP_BUDGET = 1000      # product of the maximum trip counts along one nest
ITERATION_CAP = 6000            # loop iterations of one thread, all loops together (long mode: + 10^4)
FUNC_LOOP_BUDGET = 100          # nest product inside a func (calls multiply it)
LONG_MAX_TRIP = 10_000          # --long: one loop of a program may run up to 10^4 trips
SCALAR_MAX = 6                  # the scalar argument m lies in [0, SCALAR_MAX]


@dataclasses.dataclass(frozen=True)
class IntTable:
    """An i32 field of `size` elements holding base[k] + an integer drawn in [low, high] (base: another table)."""
    name: str
    size: int
    low: int
    high: int
    base: str | None = None


@dataclasses.dataclass
class GeneratedProgram:
    seed: int
    long: bool
    source: str
    n: int                          # sizes of x (and y), w (and out), p
    m: int
    p: int
    tables: list[IntTable]
    sites: int                      # length of `trace`
    tape: bool                      # differentiate through wk.ad.Tape over compute + reduce, else compute.grad()
    constructs: set[str]
    work: int                       # bound on statement executions of one thread
    error_units: float              # sum over statements of depth * peak * capped executions (tolerance.py)
    threads: int                    # threads of all parallel loops together
    iterations: int                 # bound on the loop iterations of one thread (lavapipe stops at 65535)


@dataclasses.dataclass
class _Local:
    name: str
    mult: int                       # work multiplier where it was defined
    accumulator: bool = False
    accumulations: int = 0
    fixed: bool = False             # a func parameter: read, never assigned


@dataclasses.dataclass
class _Loop:
    var: str                        # int variable of the loop (for index arithmetic and smooth terms)
    trips: int                      # its maximum trip count


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def emit(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)


class _Generator:
    def __init__(self, seed: int, long: bool):
        self.rng = random.Random(seed)
        self.seed = seed
        self.long = long
        self.long_left = long
        rng = self.rng
        self.n = rng.randint(3, 8)
        self.m = rng.randint(2, 5)
        self.p = rng.randint(2, 6)
        self.tables: list[IntTable] = []
        self.sites = 0
        self.constructs: set[str] = set()
        self.ops: set[str] = set()
        self.work = 0
        self.error_units = 0.0
        self.cmult = 1                                  # executions with every trip count capped at CONTRACTION
        self.names = 0
        self.funcs: list[tuple[str, int, int, float]] = []   # (name, work, loop iterations, error units of a call)
        self.iterations = 0
        self.in_func = False
        self.out = _Writer()

    # ---- names, tables, indices ------------------------------------------------------------------------------

    def fresh(self, prefix: str) -> str:
        self.names += 1
        return f"{prefix}{self.names}"

    def table(self, low: int, high: int, base: str | None = None) -> str:
        name = f"tab{len(self.tables)}"
        self.tables.append(IntTable(name, self.n, low, high, base))
        return name

    def index(self, ints: list[str], size: str) -> str:
        """An index into a container of `size` elements computed from the int variables in scope (all >= 0)."""
        rng = self.rng
        picked = rng.sample(ints, min(len(ints), rng.randint(1, 2)))
        terms = [v if rng.random() < 0.6 else f"{rng.randint(2, 3)} * {v}" for v in picked]
        offset = rng.randint(0, 3)
        body = " + ".join(terms + ([str(offset)] if offset else []))
        return f"({body}) % {size}"

    def loads(self, ints: list[str], with_p: bool) -> list[str]:
        loads = [f"x[{self.index(ints, 'N')}]", f"w[{self.index(ints, 'M')}]"]
        if with_p:
            loads.append(f"p[{self.index(ints, 'P')}]")
        return loads

    def site(self, indent: int) -> None:
        self.out.emit(indent, f"trace[{self.sites}] += 1")
        self.sites += 1

    def note(self, e: Expr) -> Expr:
        """Count the rounding of one evaluation of `e` (plus the store or update around it) in the error units."""
        self.error_units += self.cmult * (e.depth + 3) * e.peak
        return e

    # ---- statements ------------------------------------------------------------------------------------------

    def block(self, indent: int, scope: list[_Local], loops: list[_Loop], ints: list[str], mult: int,
              with_p: bool, count: int, budget: int) -> None:
        """`count` random statements at `indent`; `budget` bounds the product of nested trip counts."""
        scope = list(scope)
        for _ in range(count):
            self.statement(indent, scope, loops, ints, mult, with_p, budget)

    def leaves(self, scope: list[_Local], loops: list[_Loop], ints: list[str], with_p: bool) -> Leaves:
        return Leaves([v.name for v in scope], self.loads(ints, with_p), list(ints))

    def statement(self, indent: int, scope: list[_Local], loops: list[_Loop], ints: list[str], mult: int,
                  with_p: bool, budget: int) -> None:
        rng = self.rng
        self.work += mult
        kinds = ["new", "update", "update", "accumulate", "atomic", "if"]
        room = min(budget // mult, (self.cap() - self.iterations) // mult)
        if room >= 2:
            kinds += ["range", "range", "while"]
        if any(self.iterations + mult * iters <= self.cap() for _, _, iters, _ in self.funcs):
            kinds.append("call")
        if loops:
            kinds += ["break", "continue"]
        kind = rng.choice(kinds)
        leaves = self.leaves(scope, loops, ints, with_p)
        emit = self.out.emit
        if kind == "new" or (kind in ("update", "accumulate") and not scope):
            name = self.fresh("v")
            if rng.random() < 0.3:
                emit(indent, f"{name} = 0.0")
                scope.append(_Local(name, mult, accumulator=True))
                self.constructs.add("accumulator")
            else:
                e = self.note(expression(rng, leaves, self.ops).normalised())
                emit(indent, f"{name} = {e.text}")
                scope.append(_Local(name, mult))
        elif kind == "update":
            self.update(indent, scope, leaves, mult)
        elif kind == "accumulate":
            self.accumulate(indent, scope, leaves, mult)
        elif kind == "atomic":
            self.atomic(indent, leaves, ints, mult)
        elif kind == "call":
            self.call(indent, scope, leaves, ints, mult)
        elif kind == "if":
            self.branch(indent, scope, loops, ints, mult, with_p, budget)
        elif kind == "range":
            self.range_loop(indent, scope, loops, ints, mult, with_p, budget)
        elif kind == "while":
            self.while_loop(indent, scope, loops, ints, mult, with_p, budget)
        else:
            self.leave(indent, kind, scope, loops, ints, with_p)

    def update(self, indent: int, scope: list[_Local], leaves: Leaves, mult: int) -> None:
        """A carried update `v = c * v + k * E` (or `v += k * (E - v)`), a contraction: c + k * lip(E) <= RHO.
        Accumulators only accumulate (so their bound holds) and func parameters are never assigned."""
        rng = self.rng
        candidates = [v for v in scope if not v.accumulator and not v.fixed]
        if not candidates:
            e = self.note(expression(rng, leaves, self.ops).normalised())
            name = self.fresh("v")
            self.out.emit(indent, f"{name} = {e.text}")
            scope.append(_Local(name, mult))
            return
        local = rng.choice(candidates)
        e = self.note(reading(rng, leaves, self.ops, "local" if rng.random() < 0.7 else "load").scaled(LOCAL))
        self.constructs.add("carried_update")
        if rng.random() < 0.3 and e.lip < RHO:
            # v += k * (E - v) == (1 - k) v + k E: (1 - k) + k lip(E) <= RHO for k >= (1 - RHO) / (1 - lip(E))
            k = rng.uniform(1.001 * (1.0 - RHO) / (1.0 - e.lip), 1.0)
            self.out.emit(indent, f"{local.name} += {k:.4f} * ({e.text} - {local.name})")
            return
        c = round(rng.uniform(0.3, RHO - 0.1), 2)
        k = min(1.0 - c, (RHO - c) / max(e.lip, 1e-9))
        self.out.emit(indent, f"{local.name} = {c} * {local.name} + {float(f'{k * 0.999:.4g}')} * ({e.text})")

    def accumulate(self, indent: int, scope: list[_Local], leaves: Leaves, mult: int) -> None:
        """`s += k * E` into an accumulator: at most 3 per accumulator, each adding at most LOCAL / 3 in total
        over its executions, and k * lip(E) * executions <= 1/3 so errors grow at most by e^(1/3) per site."""
        rng = self.rng
        candidates = [v for v in scope if v.accumulator and v.accumulations < 3]
        if not candidates:
            self.update(indent, scope, leaves, mult)
            return
        local = rng.choice(candidates)
        local.accumulations += 1
        executions = mult // local.mult
        e = self.note(expression(rng, leaves, self.ops).scaled(LOCAL))
        k = 0.999 * (LOCAL / 3) / (executions * max(e.bound, e.lip, 1.0))
        self.constructs.add("accumulate")
        op = rng.choice(("+=", "-="))
        self.out.emit(indent, f"{local.name} {op} {k:.4g} * ({e.text})")

    def atomic(self, indent: int, leaves: Leaves, ints: list[str], mult: int) -> None:
        rng = self.rng
        e = self.note(expression(rng, leaves, self.ops).scaled(LOCAL))
        k = f"{1.0 / mult:.4g}"
        form = rng.choice(("loss", "out", "atomic_add"))
        self.constructs.add(f"atomic_{form}")
        if form == "loss":
            self.out.emit(indent, f"loss[None] += {k} * ({e.text})")
        elif form == "out":
            self.out.emit(indent, f"out[{self.index(ints, 'M')}] += {k} * ({e.text})")
        else:
            self.out.emit(indent, f"wk.atomic_add(out[{self.index(ints, 'M')}], {k} * ({e.text}))")

    def cap(self) -> int:
        return ITERATION_CAP + (LONG_MAX_TRIP if self.long else 0)

    def call(self, indent: int, scope: list[_Local], leaves: Leaves, ints: list[str], mult: int) -> None:
        rng = self.rng
        name, work, iterations, units = rng.choice(
            [f for f in self.funcs if self.iterations + mult * f[2] <= self.cap()])
        self.work += mult * work
        self.iterations += mult * iterations
        self.error_units += self.cmult * units
        arg = self.note(expression(rng, leaves, self.ops, 2).normalised())
        target = self.fresh("v")
        self.out.emit(indent, f"{target} = {name}({arg.text}, {self.index(ints, 'N')})")
        scope.append(_Local(target, mult))
        self.constructs.add("func_call")

    def condition(self, indent: int, leaves: Leaves, loops: list[_Loop], ints: list[str]) -> tuple[str, bool]:
        """A branch condition; float comparisons are traced (returns text, traced)."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.6 and (leaves.floats or leaves.loads):
            e = self.note(reading(rng, leaves, self.ops, "local" if leaves.floats else "load"))
            return f"{e.text} > {round(rng.uniform(-0.5, 0.5), 3)}", True
        if roll < 0.8 and loops:
            loop = rng.choice(loops)
            return f"{loop.var} % {rng.randint(2, 3)} == {rng.randint(0, 1)}", False
        tab = self.table(0, 4)
        return f"{tab}[{self.index(ints, 'N')}] > {rng.randint(1, 3)}", False

    def branch(self, indent: int, scope: list[_Local], loops: list[_Loop], ints: list[str], mult: int,
               with_p: bool, budget: int) -> None:
        rng = self.rng
        cond, traced = self.condition(indent, self.leaves(scope, loops, ints, with_p), loops, ints)
        self.out.emit(indent, f"if {cond}:")
        if traced:
            self.site(indent + 1)
        self.block(indent + 1, scope, loops, ints, mult, with_p, rng.randint(1, 3), budget)
        if rng.random() < 0.5:
            self.out.emit(indent, "else:")
            self.block(indent + 1, scope, loops, ints, mult, with_p, rng.randint(1, 3), budget)
            self.constructs.add("if_else")
        else:
            self.constructs.add("if")

    def leave(self, indent: int, kind: str, scope: list[_Local], loops: list[_Loop], ints: list[str],
              with_p: bool) -> None:
        cond, traced = self.condition(indent, self.leaves(scope, loops, ints, with_p), loops, ints)
        self.out.emit(indent, f"if {cond}:")
        if traced:
            self.site(indent + 1)
        self.out.emit(indent + 1, kind)
        self.constructs.add(kind)

    def trips(self, mult: int, budget: int) -> int:
        """The maximum trip count of a new loop at work multiplier `mult`. In long mode the first top-level loop
        runs up to 10^4 trips and holds no nested loop (the budget leaves room 1), so a thread's forward replay
        plus reverse sweep stays under lavapipe's 65535 loop iterations per invocation."""
        rng = self.rng
        if self.long_left and mult == 1:
            self.long_left = False
            self.constructs.add("long_loop")
            self.iterations += LONG_MAX_TRIP
            return LONG_MAX_TRIP
        top = min(DEFAULT_MAX_TRIP, budget // mult, (self.cap() - self.iterations) // mult)
        trips = top if rng.random() < 0.5 else rng.randint(1, top)
        self.iterations += mult * trips
        return trips

    def range_loop(self, indent: int, scope: list[_Local], loops: list[_Loop], ints: list[str], mult: int,
                   with_p: bool, budget: int) -> None:
        rng = self.rng
        trips = self.trips(mult, budget)
        forms = ["table", "table", "lo_hi", "computed_index", "const"]
        if trips >= SCALAR_MAX and not self.in_func:
            forms.append("scalar_arg")
        dependent = [lp for lp in loops if lp.trips <= trips]
        if dependent:
            forms += ["dependent", "dependent_table"]
        form = rng.choice(forms) if trips <= DEFAULT_MAX_TRIP else "table"
        var = self.fresh("t")
        if form == "table":
            bound = f"range({self.table(0, trips)}[{self.index(ints, 'N')}])"
        elif form == "computed_index":
            bound = f"range({self.table(0, trips)}[({rng.choice(ints)} * 3 + {rng.randint(1, 4)}) % N])"
        elif form == "lo_hi":
            lo = self.table(0, 3)
            hi = self.table(0, max(trips - 3, 0), base=lo)
            idx = self.index(ints, "N")
            bound = f"range({lo}[{idx}], {hi}[{idx}])"
        elif form == "const":
            trips = min(trips, 6)
            bound = f"range({rng.randint(0, trips)})"
        elif form == "scalar_arg":
            trips = SCALAR_MAX
            bound = "range(m)"
        elif form == "dependent":
            outer = rng.choice(dependent)
            trips = outer.trips
            bound = f"range({outer.var})"
        else:
            outer = rng.choice(dependent)
            bound = f"range({self.table(0, trips)}[({outer.var} + {rng.choice(ints)}) % N])"
        self.constructs.add(f"range_{form}")
        self.out.emit(indent, f"for {var} in {bound}:")
        inner = loops + [_Loop(var, trips)]
        saved, self.cmult = self.cmult, self.cmult * max(min(trips, CONTRACTION), 1)
        self.block(indent + 1, scope, inner, ints + [var], mult * max(trips, 1), with_p, rng.randint(1, 3), budget)
        self.cmult = saved

    def while_loop(self, indent: int, scope: list[_Local], loops: list[_Loop], ints: list[str], mult: int,
                   with_p: bool, budget: int) -> None:
        rng = self.rng
        trips = self.trips(mult, budget)
        counter = self.fresh("k")
        tab = self.table(0, trips)
        self.out.emit(indent, f"{counter} = 0")
        header = f"{counter} < {tab}[{self.index(ints, 'N')}]"
        floats = [v.name for v in scope]
        float_exit = bool(floats) and rng.random() < 0.5
        if float_exit:
            header += f" and {rng.choice(floats)} > {round(rng.uniform(-1.5, -0.2), 3)}"
            self.constructs.add("while_float_exit")
        else:
            self.constructs.add("while_counter")
        self.out.emit(indent, f"while {header}:")
        self.out.emit(indent + 1, f"{counter} += 1")
        if float_exit:
            self.site(indent + 1)             # the trip count is the taken side of the float exit
        inner = loops + [_Loop(counter, trips)]
        saved, self.cmult = self.cmult, self.cmult * max(min(trips, CONTRACTION), 1)
        self.block(indent + 1, scope, inner, ints + [counter], mult * max(trips, 1), with_p, rng.randint(1, 3),
                   budget)
        self.cmult = saved

    # ---- funcs, kernels, module ------------------------------------------------------------------------------

    def func(self) -> None:
        rng = self.rng
        name = f"f{len(self.funcs)}"
        saved_work, self.work = self.work, 0
        saved_iterations, self.iterations = self.iterations, 0
        saved_units, self.error_units = self.error_units, 0.0
        self.out.emit(0, "@wk.func")
        self.out.emit(0, f"def {name}(a, i):")
        scope = [_Local("a", 1, fixed=True)]
        self.in_func = True
        self.out.emit(1, "s = 0.5 * a")
        scope.append(_Local("s", 1))
        self.range_loop(1, scope, [], ["i"], 1, False, FUNC_LOOP_BUDGET)
        self.constructs.add("func_loop")
        self.block(1, scope, [], ["i"], 1, False, rng.randint(0, 2), FUNC_LOOP_BUDGET)
        ret = self.note(reading(rng, self.leaves(scope, [], ["i"], False), self.ops, "local").normalised())
        self.out.emit(1, f"return {ret.text}")
        self.out.emit(0, "")
        self.out.emit(0, "")
        self.funcs.append((name, self.work + 1, self.iterations, self.error_units))
        self.in_func = False
        self.work = saved_work
        self.iterations = saved_iterations
        self.error_units = saved_units

    def task(self, first: bool, budget: int) -> int:
        """One top-level parallel loop of `compute`; returns its thread count."""
        rng = self.rng
        form = rng.choice(("range", "struct_for", "ndrange_1d", "ndrange_2d"))
        header = {"range": "for i in range(N):", "struct_for": "for i in x:", "ndrange_1d": "for i in wk.ndrange(N):",
                  "ndrange_2d": "for i, j in wk.ndrange(N, M):"}[form]
        self.constructs.add(form)
        self.out.emit(1, header)
        ints = ["i", "j"] if form == "ndrange_2d" else ["i"]
        leaves = Leaves([], self.loads(ints, True), [])
        e = self.note(reading(self.rng, leaves, self.ops, "load").normalised())
        self.out.emit(2, f"v0 = {e.text}")
        scope = [_Local("v0", 1)]
        self.work += 1
        for _ in range(rng.randint(2, 4)):
            self.statement(2, scope, [], ints, 1, True, budget)
        final = self.note(reading(rng, self.leaves(scope, [], ints, True), self.ops, "local").scaled(LOCAL))
        if first and form != "ndrange_2d":
            self.out.emit(2, f"y[i] = {final.text}")
            self.constructs.add("store")
        else:
            self.out.emit(2, f"loss[None] += {final.text}")
            self.constructs.add("atomic_loss")
        self.work += 1
        return self.n * (self.m if form == "ndrange_2d" else 1)

    def program(self) -> GeneratedProgram:
        rng = self.rng
        budget = DEFAULT_LOOP_BUDGET
        body = _Writer()
        self.out = body
        for _ in range(rng.randint(0, 2)):
            self.long_left, saved = False, self.long_left
            self.func()
            self.long_left = saved
        self.out.emit(0, "@wk.kernel")
        self.out.emit(0, "def compute(p: wk.types.ndarray(), m: wk.i32):")
        threads = 0
        for k in range(rng.choice((1, 1, 2))):
            threads += self.task(k == 0, budget)
        tape = rng.random() < 0.5
        self.constructs.add("tape" if tape else "kernel_grad")
        head = _Writer()
        emit = head.emit
        emit(0, f'"""Program generated by wgkern.fuzz from seed {self.seed}{" (long mode)" if self.long else ""}: '
                f'python -m wgkern fuzz --start {self.seed} --seeds 1{" --long" if self.long else ""}"""')
        emit(0, "import wgkern as wk")
        emit(0, "")
        emit(0, f"N = {self.n}")
        emit(0, f"M = {self.m}")
        emit(0, f"P = {self.p}")
        emit(0, "")
        emit(0, "x = wk.field(float, shape=N, needs_grad=True)")
        emit(0, "w = wk.field(float, shape=M, needs_grad=True)")
        emit(0, "p = wk.ndarray(float, shape=P, needs_grad=True)")
        emit(0, "loss = wk.field(float, shape=(), needs_grad=True)")
        emit(0, "out = wk.field(float, shape=M, needs_grad=True)")
        emit(0, "y = wk.field(float, shape=N, needs_grad=True)")
        emit(0, "cw = wk.field(float, shape=M)")
        emit(0, "dw = wk.field(float, shape=N)")
        emit(0, f"trace = wk.field(wk.i32, shape={max(self.sites, 1)})")
        for t in self.tables:
            how = f"{t.base} + [{t.low}, {t.high}]" if t.base else f"[{t.low}, {t.high}]"
            emit(0, f"{t.name} = wk.field(wk.i32, shape=N)  # {how}")
        emit(0, "")
        emit(0, "")
        tail = _Writer()
        tail.emit(0, "")
        tail.emit(0, "")
        tail.emit(0, "@wk.kernel")
        tail.emit(0, "def reduce():")
        tail.emit(1, "for j in range(M):")
        tail.emit(2, "loss[None] += cw[j] * out[j] * out[j]")
        tail.emit(1, "for i in range(N):")
        tail.emit(2, "loss[None] += dw[i] * y[i]")
        source = "\n".join(head.lines + body.lines + tail.lines) + "\n"
        self.constructs |= {f"op_{op}" for op in self.ops}
        return GeneratedProgram(self.seed, self.long, source, self.n, self.m, self.p, self.tables,
                                max(self.sites, 1), tape, self.constructs, self.work, self.error_units, threads,
                                self.iterations)


def generate(seed: int, long: bool = False) -> GeneratedProgram:
    """The program of `seed` (the same text for the same seed and mode, on every machine)."""
    return _Generator(seed, long).program()
