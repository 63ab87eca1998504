"""Polynomial tails of the software transcendentals, shared by the backends that compute them themselves
(the WGSL backend; the LLVM backends call libm): exact rational Taylor coefficients after range reduction.

Each tail q(z) is the coefficient list of z^j, e.g. sin(r) = r + r (r^2 q(r^2)). The term counts per precision
keep the error below half an ulp at the edge of the reduced range."""
from __future__ import annotations

from fractions import Fraction
from math import factorial

# exp(r) = 1 + r + r^2 q(r),           q = sum_{n>=2} r^(n-2) / n!            |r| <= ln2/2
# log(m) = 2s + 2s (s^2 q(s^2)),       q = sum_{k>=1} z^(k-1) / (2k+1)         s^2 <= 0.0295
# sin(r) = r + r (r^2 q(r^2)),         q = sum_{k>=1} (-1)^k z^(k-1) / (2k+1)!  r^2 <= (pi/4)^2
# cos(r) = 1 - r^2/2 + r^4 q(r^2),     q = sum_{k>=2} (-1)^k z^(k-2) / (2k)!
# atan(a) = a + a (a^2 q(a^2)),        q = sum_{k>=1} (-1)^k z^(k-1) / (2k+1)   a^2 <= tan(pi/12)^2
# sinh(a) = a + a (a^2 q(a^2)),        q = sum_{k>=1} z^(k-1) / (2k+1)!         a^2 < 1
# Highest n (exp) or k (others) kept, for (f32, f64). The f32 counts are the fewest whose results, evaluated in
# f32 over the whole reduced range, are as close as with more terms (checked against f64: sin 0.71, cos 1.24,
# exp 1.08, atan 0.56, log 0.52 ulp); each term dropped is an fma less per call and less for a driver to compile.
LAST_TERM = {
    "exp": (8, 15), "log": (5, 11), "sin": (4, 10), "cos": (5, 10), "atan": (6, 14), "sinh": (6, 10),
}


def taylor_tail(name: str, last: int) -> list[Fraction]:
    if name == "exp":
        return [Fraction(1, factorial(n)) for n in range(2, last + 1)]
    if name == "log":
        return [Fraction(1, 2 * k + 1) for k in range(1, last + 1)]
    if name == "sin":
        return [Fraction((-1) ** k, factorial(2 * k + 1)) for k in range(1, last + 1)]
    if name == "cos":
        return [Fraction((-1) ** k, factorial(2 * k)) for k in range(2, last + 1)]
    if name == "atan":
        return [Fraction((-1) ** k, 2 * k + 1) for k in range(1, last + 1)]
    if name == "sinh":
        return [Fraction(1, factorial(2 * k + 1)) for k in range(1, last + 1)]
    raise KeyError(name)


def tail_for(name: str, bits: int) -> list[Fraction]:
    return taylor_tail(name, LAST_TERM[name][1 if bits == 64 else 0])
