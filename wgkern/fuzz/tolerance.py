"""Error bounds of the fuzz comparisons and the finite-difference step.

**f32 results against the float64 reference.** One evaluation of a generated expression of depth d whose
intermediate values are bounded by `peak` (expressions.py tracks both) has an absolute rounding error of at most
ULPS * u * d * peak, u = 2^-24: every operation is within ULPS units in the last place of its result, composed
through at most d operations of magnitude at most peak (first order). The generator keeps every statement from
expanding errors already in the locals: a new local or func argument is Lipschitz-1 in the locals (sup norm), a
carried update is a contraction by RHO = 0.8, an accumulator adds at most 1/3 of an error it reads over all its
executions. So an error made in one trip of a loop is multiplied by at most RHO at every later update of the
local holding it, and the errors of all trips add up to at most 1 / (1 - RHO) = CONTRACTION times those of one
trip: the error of a thread's state is at most ULPS * u * E, where E, the program's `error_units`, sums d * peak
over the statements, each counted as often as it runs with every trip count capped at CONTRACTION (a call
counts its func's units). Accumulations raise it by at most e^(1/3) per accumulator site, three at most: e^1.
Outputs are sums of per-thread contributions whose coefficients add up to at most one per atomic statement, and
the reverse sweep runs the transposed linearisation, a contraction of the same factor in the dual norm, so the
same bound holds for outputs and gradients relative to their scale S (the largest reference magnitude of the
group compared, at least 1, the scale of the locals). With a factor 2 for the second-order terms (derivatives
evaluated at primal values that carry the error above):

    tol32 = 2 * e * ULPS * u * E * S,

measured ULPS: at most 4.6 for the ops generated (pow with a constant exponent the worst, then log near 1, the
division under fast_math) on the CPU and on lavapipe; ULPS = 8. Two f32 backends differ by at most 2 * tol32.

**The float64 reference.** Central differences D(h) = (L(t + h) - L(t - h)) / 2h of the f64 program have a
rounding error of at most 2 eps_f / 2h = eps_f / h, eps_f = e * ULPS * u64 * E * S the f64 bound above, and a
truncation error c h^2. The step balancing both is h = cbrt(eps_f / S) (times max(1, |t|)), clipped to
[1e-6, 1e-2]. D(h/2) is the reference; its truncation error is at most |D(h) - D(h/2)| / 3 (Richardson: the h^2
terms of D(h) and D(h/2) differ by 3/4 of c h^2), so the f64 AD gradient must match within

    tol64 = 2 * (|D(h) - D(h/2)| + 2 eps_f / h) + eps_f,

and the f32 results within tol32 plus that same reference error."""
from __future__ import annotations

import math

import numpy as np

ULPS = 8
U32 = 2.0 ** -24
U64 = 2.0 ** -53
SECOND_ORDER = 2.0
ACCUMULATION = math.e


def scale(reference: np.ndarray) -> float:
    return max(float(np.max(np.abs(reference))) if reference.size else 0.0, 1.0)


def f32_tolerance(error_units: float, reference: np.ndarray) -> float:
    return SECOND_ORDER * ACCUMULATION * ULPS * U32 * error_units * scale(reference)


def f64_forward_error(error_units: float, value_scale: float) -> float:
    return ACCUMULATION * ULPS * U64 * error_units * max(value_scale, 1.0)


def fd_step(error_units: float, value_scale: float, t: float) -> float:
    eps = f64_forward_error(error_units, value_scale) / max(value_scale, 1.0)
    return float(np.clip(np.cbrt(eps), 1e-6, 1e-2)) * max(1.0, abs(t))


def f64_tolerance(d_h: float, d_half: float, eps_f: float, h: float) -> float:
    return 2.0 * (abs(d_h - d_half) + 2.0 * eps_f / h) + eps_f
