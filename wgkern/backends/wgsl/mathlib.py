"""Software transcendentals for WGSL: instantiates wgsl/f64_math.wgsl for f64 and f32 (f16 goes through f32).

Vulkan has no 64-bit transcendentals (lavapipe returns garbage) and its f32 ones are loose (lavapipe: asin off by
thousands of ulps, log by hundreds near 1, sinh(1e-30) == 0), so every backend device computes them here, the same
way. This module owns the polynomial tails (Taylor coefficients after range reduction, term counts per precision)
and each function's helper dependencies; the algorithms (range reduction, special cases) are in the .wgsl file."""
from __future__ import annotations

from fractions import Fraction

from wgkern.backends.polynomials import LAST_TERM as _LAST_TERM
from wgkern.backends.polynomials import taylor_tail as _tail


def _horner(coefficients: list[Fraction], reg: str) -> str:
    """Horner form in `z`; literals are abstract floats converted to the register type (one rounding)."""
    terms = [f"{reg}({float(c)!r})" for c in coefficients]
    expr = terms[-1]
    for term in reversed(terms[:-1]):
        expr = f"{term} + z * ({expr})"
    return expr


def polynomial(name: str, reg: str) -> str:
    """`fn wk_poly_<name>_<reg>(z)`: the tail polynomial of `name` at f32 or f64 precision."""
    last = _LAST_TERM[name][1 if reg == "f64" else 0]
    return f"fn wk_poly_{name}_{reg}(z: {reg}) -> {reg} {{\n  return {_horner(_tail(name, last), reg)};\n}}\n"


# Which template sections (wgsl/f64_math.wgsl) and polynomials each math helper needs, itself included.
MATH_DEPENDENCIES: dict[str, tuple[str, ...]] = {
    "exp": ("poly_exp", "ldexp", "exp"),
    "log": ("poly_log", "frexp", "log"),
    "log2": ("poly_log", "frexp", "log2"),
    "sin": ("poly_sin", "poly_cos", "reduce_pio2", "trig_poly", "sin"),
    "cos": ("poly_sin", "poly_cos", "reduce_pio2", "trig_poly", "cos"),
    "tan": ("poly_sin", "poly_cos", "reduce_pio2", "trig_poly", "tan"),
    "atan": ("poly_atan", "atan"),
    "atan2": ("poly_atan", "atan", "atan2"),
    "asin": ("poly_atan", "atan", "atan2", "asin"),
    "acos": ("poly_atan", "atan", "atan2", "acos"),
    "sinh": ("poly_sinh", "poly_exp", "ldexp", "exp", "sinh_small", "sinh"),
    "cosh": ("poly_exp", "ldexp", "exp", "cosh"),
    "tanh": ("poly_sinh", "poly_exp", "ldexp", "exp", "sinh_small", "tanh"),
    "pow": ("poly_exp", "ldexp", "exp", "poly_log", "frexp", "log", "pow"),
}

# Sections replaced per precision: lavapipe's LLVM aborts on a 64-bit frexp, so f64 reads the exponent bits
# (needs shader-int64, which every f64-capable adapter seen so far also has).
SECTION_FOR: dict[tuple[str, str], str] = {("frexp", "f64"): "frexp_bits"}

# f32 trigonometry on a device with shader-f64 reduces large arguments in f64: this f32 section replaces
# reduce_pio2 and needs the f64 reduce_pio2 too.
WIDE_REDUCTION = ("reduce_pio2", "f32", "reduce_pio2_wide")
# ... and on an adapter that runs both sides of every branch (shader_common.MASKED_BRANCHES), all arguments in f64.
WIDE_REDUCTION_UNBRANCHED = "reduce_pio2_via_f64"

# Per-precision constants substituted into the templates ($EXP_MAX, ...).
MATH_CONSTANTS: dict[str, dict[str, str]] = {
    "f64": {"EXP_MAX": "709.782712893384", "EXP_MIN": "-745.2", "TANH_ONE": "22.0", "PIO2_3": "7.549533620476723e-08",
            "PIO2_4": "2.563344151594519e-12"},
    "f32": {"EXP_MAX": "88.72283905206835", "EXP_MIN": "-104.0", "TANH_ONE": "9.5", "PIO2_3": "7.549533620476723e-08",
            "PIO2_4": "2.563344151594519e-12"},
}
