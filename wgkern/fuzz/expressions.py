"""Random smooth float expressions for the fuzz generator, with the bounds the tolerances and the step choice use.

An `Expr` is kernel source text plus three numbers the generator keeps exact upper bounds of:
- `bound`: |value| <= bound for every input the runner draws (inputs lie in [-1, 1], locals in [-LOCAL, LOCAL]);
- `lip`: Lipschitz constant with respect to the float locals (sup norm), so a carried update can be made
  a contraction: `v = c * v + k * E` with c + k * lip <= 0.8 (generator.RHO);
- `depth`: the longest chain of rounded operations in it, and `peak`, a bound on every intermediate value: the
  rounding error of one evaluation is at most ULPS * u * depth * peak (tolerance.py).

Every function applied is smooth on the whole range it can see: `log`, `sqrt` and `pow` only take arguments of
the form `e * e + c` with c > 0, `exp` takes `e / bound(e)`, divisions divide by `e * e + 1`. No `abs`, `min`,
`max`, casts to int or float comparisons appear in expressions; comparisons are statements (generator.py), so each
can be traced."""
from __future__ import annotations

import dataclasses
import math
import random

LOCAL = 2.0           # every float local stays in [-LOCAL, LOCAL] (generator.py normalises what it stores)
MAX_DEPTH = 3         # nesting of operators in one generated expression


@dataclasses.dataclass(frozen=True)
class Expr:
    text: str
    bound: float
    lip: float
    depth: int
    peak: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "peak", max(self.peak, self.bound, 1.0))

    def scaled(self, limit: float) -> "Expr":
        """This expression times a constant that brings its bound to at most `limit`."""
        if self.bound <= limit:
            return self
        text, k = _factor(limit / self.bound)
        return Expr(f"{text} * ({self.text})", self.bound * k, self.lip * k, self.depth + 1, self.peak)

    def normalised(self) -> "Expr":
        """Bound at most LOCAL and Lipschitz constant at most 1: what a new local or a func argument stores, so
        no statement expands an error already in the locals."""
        e = self.scaled(LOCAL)
        if e.lip <= 1.0:
            return e
        text, k = _factor(1.0 / e.lip)
        return Expr(f"{text} * ({e.text})", e.bound * k, e.lip * k, e.depth + 1, e.peak)


def _factor(k: float) -> tuple[str, float]:
    """`k` > 0 written with 6 significant digits, rounded down, so the bounds computed with it stay bounds."""
    exponent = math.floor(math.log10(k)) - 5
    value = math.floor(k / 10.0 ** exponent) * 10.0 ** exponent
    text = f"{value:.{max(-exponent, 0)}f}"
    return text, float(text)


@dataclasses.dataclass
class Leaves:
    """What an expression may read at one point of the kernel: float locals, input loads and loop terms."""
    floats: list[str]                 # float locals in scope (each bounded by LOCAL)
    loads: list[str]                  # input loads, e.g. "x[(i + t) % N]" (bounded by 1, no local dependence)
    ints: list[str]                   # int loop variables (used as smooth terms `wk.sin(0.37 * t)`)


def leaf(rng: random.Random, leaves: Leaves) -> Expr:
    choices = ["const"] + ["local"] * (2 if leaves.floats else 0) + ["load"] * (2 if leaves.loads else 0) \
        + ["index"] * (1 if leaves.ints else 0)
    kind = rng.choice(choices)
    if kind == "local":
        return Expr(rng.choice(leaves.floats), LOCAL, 1.0, 0)
    if kind == "load":
        return Expr(rng.choice(leaves.loads), 1.0, 0.0, 0)
    if kind == "index":
        return Expr(f"wk.sin({rng.choice((0.37, 0.61, 1.3))} * {rng.choice(leaves.ints)})", 1.0, 0.0, 2)
    c = round(rng.uniform(-1.0, 1.0), 3)
    return Expr(f"({c})" if c < 0 else str(c), abs(c), 0.0, 0)


def _unary(rng: random.Random, e: Expr, used: set[str]) -> Expr:
    op = rng.choice(("sin", "cos", "tanh", "exp", "log", "sqrt", "pow", "neg", "square"))
    used.add(op)
    b, lip, d = e.bound, e.lip, e.depth
    pk = e.peak
    if op in ("sin", "cos", "tanh"):
        return Expr(f"wk.{op}({e.text})", 1.0, lip, d + 1, pk)
    if op == "exp":
        text, k = _factor(1.0 / max(b, 1.0))                    # |k e| <= 1
        return Expr(f"wk.exp({text} * ({e.text}))", math.e, lip * k * math.e, d + 2, pk)
    if op == "log":
        # d/de log(e^2 + 1/2) = 2e / (e^2 + 1/2) <= sqrt(2); |log(e^2 + 1/2)| <= max(log 2, log(b^2 + 1/2))
        return Expr(f"wk.log(({e.text}) * ({e.text}) + 0.5)", max(math.log(2.0), math.log(b * b + 0.5)),
                    lip * math.sqrt(2.0), d + 3, max(pk, b * b + 0.5))
    if op == "sqrt":
        # d/de sqrt(e^2 + 1/4) = e / sqrt(e^2 + 1/4) <= 1
        return Expr(f"wk.sqrt(({e.text}) * ({e.text}) + 0.25)", math.sqrt(b * b + 0.25), lip, d + 3,
                    max(pk, b * b + 0.25))
    if op == "pow":
        c = rng.choice((0.5, 1.3, 2.0))
        # d/de (e^2 + 1/2)^c = 2 c e (e^2 + 1/2)^(c - 1), bounded by 2 c b max((b^2 + 1/2)^(c-1), (1/2)^(c-1))
        top = b * b + 0.5
        slope = 2 * c * b * max(top ** (c - 1), 0.5 ** (c - 1))
        return Expr(f"wk.pow(({e.text}) * ({e.text}) + 0.5, {c})", top ** c, lip * slope, d + 3, max(pk, top))
    if op == "neg":
        return Expr(f"-({e.text})", b, lip, d, pk)
    return Expr(f"({e.text}) * ({e.text})", b * b, 2 * b * lip, d + 1, pk)


def _binary(rng: random.Random, a: Expr, b: Expr, used: set[str]) -> Expr:
    op = rng.choice(("add", "sub", "mul", "div", "powvar"))
    used.add(op)
    d = max(a.depth, b.depth)
    pk = max(a.peak, b.peak)
    if op == "add":
        return Expr(f"{a.text} + {b.text}", a.bound + b.bound, a.lip + b.lip, d + 1, pk)
    if op == "sub":
        return Expr(f"{a.text} - ({b.text})", a.bound + b.bound, a.lip + b.lip, d + 1, pk)
    if op == "mul":
        return Expr(f"({a.text}) * ({b.text})", a.bound * b.bound, a.lip * b.bound + b.lip * a.bound, d + 1, pk)
    if op == "div":
        # a / (b^2 + 1): |d/db (b^2 + 1)^-1| = 2|b| / (b^2 + 1)^2 <= 0.65
        return Expr(f"({a.text}) / (({b.text}) * ({b.text}) + 1.0)", a.bound, a.lip + 0.65 * a.bound * b.lip, d + 3,
                    max(pk, b.bound * b.bound + 1.0))
    # (a^2 + 1/2)^(1 + tanh(b) / 4): the exponent's derivative too; exponent in [3/4, 5/4]
    top = a.bound * a.bound + 0.5
    bound = max(top ** 1.25, 0.5 ** 0.75 if top < 1 else 1.0, top ** 0.75)
    slope_a = 2.5 * a.bound * max(top ** 0.25, 0.5 ** -0.25)
    slope_b = 0.25 * bound * max(abs(math.log(0.5)), math.log(top))
    return Expr(f"wk.pow(({a.text}) * ({a.text}) + 0.5, 1.0 + 0.25 * wk.tanh({b.text}))", bound,
                a.lip * slope_a + b.lip * slope_b, d + 5, max(pk, top))


def expression(rng: random.Random, leaves: Leaves, used: set[str], depth: int | None = None) -> Expr:
    """A random expression over `leaves` of at most `depth` nested operators (default: 1 to MAX_DEPTH, mostly
    2); `used` collects the ops drawn."""
    if depth is None:
        depth = rng.choice((1, 2, 2, MAX_DEPTH))
    roll = rng.random()
    if depth <= 0 or roll < 0.2:
        return leaf(rng, leaves)
    if roll < 0.55:
        return _unary(rng, expression(rng, leaves, used, depth - 1).scaled(4.0), used)
    return _binary(rng, expression(rng, leaves, used, depth - 1).scaled(4.0),
                   expression(rng, leaves, used, depth - 1).scaled(4.0), used)


def reading(rng: random.Random, leaves: Leaves, used: set[str], need: str) -> Expr:
    """An expression that reads at least one leaf of kind `need` ("local" or "load"), so updates are not constant."""
    for _ in range(20):
        e = expression(rng, leaves, used)
        if (need == "local" and e.lip > 0) or (need == "load" and any(ld in e.text for ld in leaves.loads)):
            return e
    base = Expr(rng.choice(leaves.floats), LOCAL, 1.0, 0) if need == "local" and leaves.floats else \
        Expr(rng.choice(leaves.loads), 1.0, 0.0, 0)
    return _binary(rng, base, expression(rng, leaves, used, 1).scaled(4.0), used)
