"""Error bounds of f32 kernel results, from which the numerical tests derive their tolerances.

U = 2^-24 is f32's unit roundoff: a correctly rounded +, -, *, / or sqrt is off by at most U of its result.
Under fast_math (the default) the CPU may reassociate sums and contract a * b + c into one FMA, which moves the
rounding errors but keeps the usual first-order bound of a chain of operations (their count times U times the
largest magnitude met on the way), and its vectorized code may divide and take square roots through a hardware
estimate refined by one Newton step (x86's rcp/rsqrt: 2^-12 or 2^-14, after the step within 2^-21 = 8 U).
Vulkan allows 2.5 ulp (5 U) for a division and 3 ulp (6 U) for sqrt; CUDA's sqrt.approx.f32 is within 2^-23
(2 U) relative, rsqrt.approx.f32 within 2^-22.9 and rcp.approx.f32 within 1 ulp (f32 subnormals flushed to zero
under fast_math, an absolute error below 2^-126). So every operation is counted at
APPROX = 8 U, the worst of these, and a result reached through `ops` operations on values of magnitude M is within

    f32_bound(ops, M) = ops * APPROX * M

(first order: the ops are at most a few thousand, so the neglected terms are below 1e-6 of the bound). A test
states the count and the magnitude next to each use, so the tolerance follows the algorithm, not one machine."""
from __future__ import annotations

import numpy as np

U = 2.0 ** -24
APPROX = 8 * U


def f32_bound(ops: float, magnitude: float | np.ndarray = 1.0) -> float | np.ndarray:
    """The absolute error bound of a result reached through `ops` f32 operations on values of `magnitude`."""
    return ops * APPROX * np.asarray(magnitude, np.float64)


def assert_within(actual: np.ndarray, expected: np.ndarray, bound: float | np.ndarray, what: str) -> None:
    """|actual - expected| <= bound elementwise (bound broadcast), with the worst element in the message."""
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    error = np.abs(actual - expected)
    bound = np.broadcast_to(np.asarray(bound, np.float64), error.shape)
    bad = ~(error <= bound)
    if bad.any():
        worst = np.unravel_index(np.argmax(np.where(np.isnan(error), np.inf, error - bound)), error.shape)
        raise AssertionError(f"{what}: {int(bad.sum())} of {error.size} elements exceed the error bound; at "
                             f"{tuple(int(i) for i in worst)} |{actual[worst]} - {expected[worst]}| = {error[worst]:.3g} "
                             f"> {bound[worst]:.3g}")
