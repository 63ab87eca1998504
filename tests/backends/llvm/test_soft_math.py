"""soft_math.py's functions, JIT-compiled for this CPU (they are target-independent LLVM IR) and compared with
numpy's libm in f64 over their domains, at f32 against the correctly rounded value, and at the special values
C99 defines."""
from __future__ import annotations

import ctypes
import math
from decimal import Decimal, localcontext

import numpy as np
import pytest

from wgkern.backends.llvm import soft_math
from wgkern.backends.llvm.jit import compile_ir, function_address

_BINARY = ("atan2", "pow")
_REFERENCE = {"exp": np.exp, "log": np.log, "log2": np.log2, "sin": np.sin, "cos": np.cos, "tan": np.tan,
              "atan": np.arctan, "asin": np.arcsin, "acos": np.arccos, "sinh": np.sinh, "cosh": np.cosh,
              "tanh": np.tanh, "atan2": np.arctan2, "pow": np.power}
# Sample domains: the whole finite range each function has, with log-spaced magnitudes where it is wide.
_DOMAINS = {"exp": (-745.0, 709.0), "log": (1e-300, 1e300), "log2": (1e-300, 1e300), "sin": (-1.6e6, 1.6e6),
            "cos": (-1.6e6, 1.6e6), "tan": (-100.0, 100.0), "atan": (-1e6, 1e6), "asin": (-1.0, 1.0),
            "acos": (-1.0, 1.0), "sinh": (-709.0, 709.0), "cosh": (-709.0, 709.0), "tanh": (-30.0, 30.0),
            "atan2": (-10.0, 10.0), "pow": (1e-3, 1e3)}
# f32 keeps arguments and results finite and normal: exp's and the hyperbolic functions' below 88.7, logs' within
# f32's normal range
_DOMAINS_F32 = {**_DOMAINS, "exp": (-87.0, 88.0), "sinh": (-88.0, 88.0), "cosh": (-88.0, 88.0),
                "log": (1e-37, 1e38), "log2": (1e-37, 1e38)}
_WIDE = ("log", "log2", "pow")
_compiled: dict[tuple[str, int], object] = {}


def soft(name: str, bits: int):
    """A ctypes function calling soft_math's `name` at f32 or f64."""
    key = (name, bits)
    if key not in _compiled:
        symbol = soft_math.symbol(name, bits)
        helpers, declarations = soft_math.definitions(symbol)
        ty = "double" if bits == 64 else "float"
        params = ", ".join(f"{ty} %a{k}" for k in range(2 if name in _BINARY else 1))
        wrapper = f"t_soft_{name}_{bits}"
        compile_ir("\n".join([*sorted(set(declarations)), *helpers.values(),
                              f"define {ty} @{wrapper}({params}) {{\n  %y = call {ty} @{symbol}({params})\n"
                              f"  ret {ty} %y\n}}"]))
        c_type = ctypes.c_double if bits == 64 else ctypes.c_float
        arity = 2 if name in _BINARY else 1
        _compiled[key] = ctypes.CFUNCTYPE(c_type, *[c_type] * arity)(function_address(wrapper))
    return _compiled[key]


def samples(name: str, count: int = 1500, bits: int = 64) -> tuple[np.ndarray, np.ndarray | None]:
    rng = np.random.default_rng(7)
    low, high = (_DOMAINS if bits == 64 else _DOMAINS_F32)[name]
    if name in _WIDE:
        xs = np.exp(rng.uniform(math.log(low), math.log(high), count))
    else:
        xs = np.concatenate([rng.uniform(low, high, count), rng.uniform(-1.0, 1.0, count // 3) * min(high, 3.0)])
    ys = rng.uniform(-20.0, 20.0, xs.size) if name == "pow" else \
        rng.uniform(-10.0, 10.0, xs.size) if name == "atan2" else None
    return xs, ys


@pytest.mark.parametrize("name", soft_math.FUNCTIONS)
def test_f64_within_its_error_bound(name):
    # Bound: each core's polynomial tail is below 0.5 ulp on its reduced range (polynomials.py); reduction and
    # reconstruction add at most 6 roundings of 0.5 ulp each (the split-constant products are exact), and
    # tan, atan2, asin, acos and the hyperbolic functions chain two cores: 4 ulp covers each. pow's exp(y log x)
    # also carries log's and the product's rounding amplified by |y ln x|: 2 |y ln x| + 4 ulp.
    function = soft(name, 64)
    xs, ys = samples(name)
    for k, x in enumerate(xs):
        args = (float(x),) if ys is None else (float(x), float(ys[k]))
        want = float(_REFERENCE[name](*args))
        got = function(*args)
        bound = 4.0 + (2 * abs(args[1] * math.log(args[0])) if name == "pow" else 0.0)
        if want == 0.0 or not math.isfinite(want):
            assert got == want, (name, args, got, want)
            continue
        assert abs(got - want) <= bound * np.spacing(abs(want)), (name, args, got, want)


@pytest.mark.parametrize("name", soft_math.FUNCTIONS)
def test_f32_is_the_rounded_f64_within_one_ulp(name):
    # The f32 function rounds the f64 one (a few f64 ulps from exact, far below half an f32 ulp) once: the
    # result is the correctly rounded f32 value or, next to a rounding boundary, its neighbour (1 ulp).
    function = soft(name, 32)
    xs, ys = samples(name, 600, 32)
    xs = xs.astype(np.float32)
    if name == "pow":                               # keep f32 results finite and normal
        ys = np.clip(ys, -6.0, 6.0)
    for k, x in enumerate(xs):
        args = (float(x),) if ys is None else (float(x), float(np.float32(ys[k])))
        want = np.float32(_REFERENCE[name](*args))
        assert np.isfinite(want) and want != 0 or name == "pow", (name, args)        # the domains keep them
        got = np.float32(function(*args))
        if not np.isfinite(want) or want == 0:
            assert got == want or (np.isnan(got) and np.isnan(want)), (name, args, got, want)
            continue
        assert abs(float(got) - float(want)) <= float(np.spacing(abs(want))), (name, args, got, want)


INF, NAN = math.inf, math.nan
_SPECIAL = [
    ("exp", (INF,)), ("exp", (-INF,)), ("exp", (NAN,)), ("exp", (710.0,)), ("exp", (-746.0,)), ("exp", (0.0,)),
    ("log", (0.0,)), ("log", (-1.0,)), ("log", (INF,)), ("log", (NAN,)), ("log", (5e-324,)), ("log", (1.0,)),
    ("log2", (8.0,)), ("log2", (2.0 ** -1074,)), ("log2", (0.0,)),
    ("sin", (INF,)), ("sin", (NAN,)), ("sin", (-0.0,)), ("cos", (-INF,)), ("tan", (0.0,)),
    ("atan", (INF,)), ("atan", (-INF,)), ("atan", (-0.0,)), ("atan", (NAN,)),
    ("atan2", (0.0, 0.0)), ("atan2", (0.0, -0.0)), ("atan2", (-0.0, -0.0)), ("atan2", (-0.0, 1.0)),
    ("atan2", (1.0, 0.0)), ("atan2", (INF, INF)), ("atan2", (INF, -INF)), ("atan2", (-INF, 1.0)),
    ("atan2", (NAN, 1.0)), ("asin", (1.0,)), ("asin", (2.0,)), ("acos", (-1.0,)), ("acos", (1.0,)),
    ("sinh", (INF,)), ("sinh", (-0.0,)), ("cosh", (-INF,)), ("tanh", (INF,)), ("tanh", (-INF,)),
    ("tanh", (-0.0,)), ("tanh", (NAN,)), ("sinh", (710.0,)),
    ("pow", (NAN, 0.0)), ("pow", (1.0, NAN)), ("pow", (-1.0, INF)), ("pow", (-2.0, 3.0)), ("pow", (-2.0, 2.0)),
    ("pow", (-2.0, 0.5)), ("pow", (0.0, -1.0)), ("pow", (-0.0, -1.0)), ("pow", (-0.0, 3.0)), ("pow", (0.0, 0.5)),
    ("pow", (0.5, INF)), ("pow", (0.5, -INF)), ("pow", (2.0, INF)), ("pow", (INF, -2.0)), ("pow", (-INF, 3.0)),
    ("pow", (-8.0, 1.0 / 3.0)), ("pow", (2.0, 10.0)),
]


@pytest.mark.parametrize("name,args", _SPECIAL)
def test_special_values_follow_c99(name, args):
    with np.errstate(all="ignore"):
        want = float(_REFERENCE[name](*args))
    got = soft(name, 64)(*args)
    if math.isnan(want):
        assert math.isnan(got)
    elif want == 0.0 or math.isinf(want):
        assert got == want and math.copysign(1.0, got) == math.copysign(1.0, want), (got, want)
    else:                       # a finite result: within test_f64_within_its_error_bound's 4 ulp
        assert abs(got - want) <= 4 * np.spacing(abs(want)) and (got > 0) == (want > 0), (got, want)


def test_sine_beyond_the_reduction_range_is_nan():
    # 2^20 pi/2 is where the two-part products k pi/2 stop being exact (module docstring of soft_math.py)
    assert not math.isnan(soft("sin", 64)(1.6e6))
    assert math.isnan(soft("sin", 64)(1.7e6)) and math.isnan(soft("cos", 64)(-1e300))


def _pi_by_gauss_legendre(digits: int) -> Decimal:
    """pi by the Gauss-Legendre iteration (quadratic convergence: 8 steps give over 500 digits), a formula
    independent of the Machin series pi_decimal sums."""
    with localcontext() as context:
        context.prec = digits + 10
        a, b, t, p = Decimal(1), 1 / Decimal(2).sqrt(), Decimal(1) / 4, Decimal(1)
        for _ in range(8):
            a, b, t, p = (a + b) / 2, (a * b).sqrt(), t - p * ((a - b) / 2) ** 2, 2 * p
        return (a + b) ** 2 / (4 * t)


@pytest.mark.parametrize("digits", [17, 50, 110, 400])
def test_pi_decimal_has_the_digits_asked_for(digits):
    # pi_decimal sums at digits + 5 (its last digits carry the sum's rounding errors, a few units); the reference
    # has digits + 10. Rounded to `digits` significant digits the two agree unless pi's digits after that point
    # run 9999 or 0000 (they do not at these lengths).
    with localcontext() as context:
        context.prec = digits
        ours = +soft_math.pi_decimal(digits)
        reference = +_pi_by_gauss_legendre(digits)
    assert float(ours) == math.pi
    assert ours == reference
