"""The bounds expressions.py claims for a random expression hold when it is evaluated: |value| <= bound and
|E(s + d) - E(s)| <= lip * |d|_inf over the locals, and normalised() gives bound <= LOCAL and lip <= 1."""
from __future__ import annotations

import random
import types

import numpy as np
import pytest

from wgkern.fuzz.expressions import LOCAL, Leaves, expression

NP_WK = types.SimpleNamespace(sin=np.sin, cos=np.cos, tanh=np.tanh, exp=np.exp, log=np.log, sqrt=np.sqrt,
                              pow=np.power)
LEAVES = Leaves(["a", "b"], ["x0", "x1"], ["t"])


def _evaluate(text: str, env: dict[str, np.ndarray]) -> np.ndarray:
    return eval(text, {"wk": NP_WK}, env)   # noqa: S307 - the generator's own expression text


@pytest.mark.parametrize("seed", range(40))
def test_bound_and_lipschitz_constant_hold(seed):
    rng = random.Random(seed)
    samples = np.random.default_rng(seed)
    for _ in range(10):
        e = expression(rng, LEAVES, set())
        k = 2000
        env = {"a": samples.uniform(-LOCAL, LOCAL, k), "b": samples.uniform(-LOCAL, LOCAL, k),
               "x0": samples.uniform(-1, 1, k), "x1": samples.uniform(-1, 1, k),
               "t": samples.integers(0, 10_000, k)}
        env["a"][:2] = [-LOCAL, LOCAL]           # the ends of the range too
        value = _evaluate(e.text, env) * np.ones(k)
        assert np.all(np.isfinite(value)), e.text
        # 1e-12: rounding of the float64 evaluation; the bounds are exact in real arithmetic
        assert np.max(np.abs(value)) <= e.bound * (1 + 1e-12) + 1e-12, e.text
        d = samples.uniform(-1e-4, 1e-4, (2, k))
        moved = dict(env, a=env["a"] + d[0], b=env["b"] + d[1])
        change = np.abs(_evaluate(e.text, moved) - value)
        # first order in d: the second-order term is below (|d| * peak)^2 times the largest second derivative
        # of the composition, far under 1e-6 for |d| <= 1e-4
        assert np.all(change <= e.lip * np.max(np.abs(d), axis=0) + 1e-6), e.text
        n = e.normalised()
        assert n.bound <= LOCAL + 1e-12 and n.lip <= 1 + 1e-12
        assert np.max(np.abs(_evaluate(n.text, env) * np.ones(k))) <= n.bound * (1 + 1e-12) + 1e-12
