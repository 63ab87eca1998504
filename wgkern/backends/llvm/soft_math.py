"""Math functions as LLVM IR for targets that have no math library to link (AMDGPU without ROCm's ocml).

`definitions(symbol)` gives the internal functions (by name) a call to `@wk.soft.<name>.<f32|f64>` needs and the
intrinsic declarations they use, spelled as ModuleEmitter.intrinsic spells them so that they merge with the
kernel's own. Every function computes in f64; an f32 one is its f64 one between an fpext and an fptrunc (one
extra rounding of a result already within a few f64 ulps: the f32 result is the correctly rounded one or 1 ulp
from it). Only LLVM intrinsics every target lowers are used: fma, rint, fabs, sqrt, copysign, ldexp, frexp.

The cores use backends/polynomials.py's tails after range reduction:
- exp: k = rint(x / ln2), r = x - k ln2 (ln2 split in two), exp(r) = 1 + r + r^2 q(r), scaled by ldexp(., k).
  Above 709.78 the result is +inf, below -745.13 it is 0.
- log: x = m 2^e (frexp, subnormals included) with m in [sqrt(1/2), sqrt(2)); s = (m - 1) / (m + 1),
  log(m) = 2s + 2s (s^2 q(s^2)); log(x) = e ln2 + log(m) (log2: e + log(m) / ln2, exact at powers of two).
- sin, cos, tan: k = rint(x 2/pi), r = x - k pi/2 with pi/2 in three parts (Cody-Waite, the first two of 33
  bits: exact products for |k| < 2^20), then the sin and cos polynomials of r and the quadrant of k. Beyond
  |x| = 2^20 pi/2 (about 1.6e6) this reduction would lose accuracy: the result is NaN there (and for inf, NaN).
- atan: a = |x|, 1/a above 1, (a sqrt3 - 1) / (a + sqrt3) + pi/6 above tan(pi/12), then a + a (a^2 q(a^2)).
  atan2 from atan of min/max of |y|, |x| with C's signed zeros and infinities; asin = atan2(x, sqrt(1 - x^2)),
  acos = atan2(sqrt(1 - x^2), x).
- sinh, cosh, tanh: the sinh polynomial below |x| = 1; otherwise from h = exp(|x| / 2)^2 / 2, with
  sinh = h - 1/(4h) and cosh = h + 1/(4h); tanh = 1 - 2 / (exp(2|x|) + 1) above 0.55, sinh / cosh below.
- pow: exp(y log|x|) with C99's special cases (any x to the 0 is 1, 1 to any y is 1, a negative x needs an
  integer y, whose parity gives the sign, zeros and infinities as C says). Its relative error grows as
  |y log x| times f64's epsilon: exact to f32 precision, a few hundred f64 ulps at results near 1e300."""
from __future__ import annotations

import math
import struct
from decimal import Decimal, localcontext

from wgkern.backends.polynomials import tail_for

PREFIX = "wk.soft."
FUNCTIONS = ("exp", "log", "log2", "sin", "cos", "tan", "atan", "atan2", "asin", "acos", "sinh", "cosh", "tanh",
             "pow")
_ATTRIBUTES = "nounwind willreturn memory(none)"
_INTRINSICS = {
    "fma": "declare double @llvm.fma.f64(double, double, double)",
    "rint": "declare double @llvm.rint.f64(double)",
    "fabs": "declare double @llvm.fabs.f64(double)",
    "sqrt": "declare double @llvm.sqrt.f64(double)",
    "copysign": "declare double @llvm.copysign.f64(double, double)",
    "ldexp": "declare double @llvm.ldexp.f64.i32(double, i32)",
    "frexp": "declare { double, i32 } @llvm.frexp.f64.i32(double)",
}


def pi_decimal(digits: int) -> Decimal:
    """pi to `digits` digits (Machin: 16 atan(1/5) - 4 atan(1/239))."""
    with localcontext() as context:
        context.prec = digits + 5

        def arctan_inverse(n: int) -> Decimal:
            # Stops at the first term too small to change the sum at this precision: every later term is
            # smaller still, so it would not change it either (running on until the terms underflow Decimal's
            # exponent range, about a million terms, gives the same digits).
            total, term, k, square = Decimal(0), Decimal(1) / n, 0, n * n
            while True:
                following = total + term / (2 * k + 1) * (-1) ** k
                if following == total:
                    return total
                total = following
                term /= square
                k += 1
        return +(16 * arctan_inverse(5) - 4 * arctan_inverse(239))


def _split(value: Decimal, parts: int, bits: int) -> tuple[float, ...]:
    """`value` as `parts` doubles, all but the last keeping only their leading `bits` significant bits, so that
    their products with integers below 2^(53 - bits) are exact."""
    out = []
    rest = value
    for k in range(parts):
        x = float(rest)
        if k < parts - 1 and x:
            exponent = math.frexp(x)[1]
            x = math.ldexp(math.floor(math.ldexp(x, bits - exponent)), exponent - bits)
        out.append(x)
        rest -= Decimal(x)
    return tuple(out)


with localcontext() as _context:
    _context.prec = 60
    _LN2_EXACT = Decimal(2).ln()
    _LN2 = _split(_LN2_EXACT, 2, 32)                    # e ln2_hi is exact for every f64 exponent e
    _INV_LN2 = _split(1 / _LN2_EXACT, 2, 53)            # 1/ln2 as a double and its residue
    _PIO2 = _split(pi_decimal(50) / 2, 3, 33)           # k pi/2 exact in the first two parts for |k| < 2^20


def h(value: float) -> str:
    """An f64 constant as LLVM's exact hexadecimal spelling."""
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0]


def horner_fma(prefix: str, z: str, coefficients: list, lines: list[str], ty: str = "double") -> str:
    """Append to `lines` q(z) = sum c_j z^j by Horner's rule with fma in `ty` ("double", or "float" with each
    coefficient rounded to f32), the steps named %<prefix>0, %<prefix>1, ...; returns the last value's name."""
    suffix = "f64" if ty == "double" else "f32"
    values = [float(c) if ty == "double" else struct.unpack("<f", struct.pack("<f", float(c)))[0]
              for c in coefficients]
    acc = h(values[-1])
    for n, c in enumerate(reversed(values[:-1])):
        out = f"%{prefix}{n}"
        lines.append(f"  {out} = call {ty} @llvm.fma.{suffix}({ty} {z}, {ty} {acc}, {ty} {h(c)})")
        acc = out
    return acc


def _horner(z: str, coefficients: list, out: str) -> list[str]:
    """Lines computing q(z) = sum c_j z^j by Horner's rule with fma into %<out>."""
    values = [float(c) for c in coefficients]
    lines, acc = [], h(values[-1])
    for n, c in enumerate(reversed(values[:-1])):
        name = f"%{out}.{n}" if n < len(values) - 2 else f"%{out}"
        lines.append(f"  {name} = call double @llvm.fma.f64(double {z}, double {acc}, double {h(c)})")
        acc = name
    if len(values) == 1:
        lines.append(f"  %{out} = fadd double {acc}, 0.0")
    return lines


def _define(name: str, params: str, body: list[str]) -> str:
    return "\n".join([f"define internal double @{PREFIX}{name}.core({params}) {_ATTRIBUTES} {{", "entry:",
                      *body, "}"])


def _exp() -> str:
    return _define("exp", "double %x", [
        f"  %above = fcmp olt double {h(-746.0)}, %x",
        f"  %below = fcmp olt double %x, {h(710.0)}",
        "  %ok = and i1 %above, %below",
        "  %xc = select i1 %ok, double %x, double 0.0",     # k below stays an i32 (and no poison from NaN)
        f"  %t = fmul double %xc, {h(_INV_LN2[0])}",
        "  %k = call double @llvm.rint.f64(double %t)",
        f"  %r1 = call double @llvm.fma.f64(double %k, double {h(-_LN2[0])}, double %xc)",
        f"  %r = call double @llvm.fma.f64(double %k, double {h(-_LN2[1])}, double %r1)",
        *_horner("%r", tail_for("exp", 64), "q"),
        "  %r2 = fmul double %r, %r",
        "  %p1 = call double @llvm.fma.f64(double %r2, double %q, double %r)",
        "  %p = fadd double %p1, 1.0",
        "  %ki = fptosi double %k to i32",
        "  %y = call double @llvm.ldexp.f64.i32(double %p, i32 %ki)",
        f"  %big = fcmp ogt double %x, {h(709.782712893384)}",
        f"  %tiny = fcmp olt double %x, {h(-745.1332191019412)}",
        "  %y1 = select i1 %big, double 0x7FF0000000000000, double %y",
        "  %y2 = select i1 %tiny, double 0.0, double %y1",
        "  %nan = fcmp uno double %x, 0.0",
        "  %y3 = select i1 %nan, double %x, double %y2",
        "  ret double %y3"])


def _log_parts() -> str:
    """{e, log(m)} of x = m 2^e, m in [sqrt(1/2), sqrt(2)) (finite positive x)."""
    return "\n".join([
        f"define internal {{ double, double }} @{PREFIX}logparts(double %x) {_ATTRIBUTES} {{", "entry:",
        "  %fr = call { double, i32 } @llvm.frexp.f64.i32(double %x)",
        "  %m0 = extractvalue { double, i32 } %fr, 0",
        "  %e0 = extractvalue { double, i32 } %fr, 1",
        f"  %low = fcmp olt double %m0, {h(math.sqrt(0.5))}",
        "  %m1 = fmul double %m0, 2.0",
        "  %e1 = sub i32 %e0, 1",
        "  %m = select i1 %low, double %m1, double %m0",
        "  %e = select i1 %low, i32 %e1, i32 %e0",
        "  %num = fsub double %m, 1.0",
        "  %den = fadd double %m, 1.0",
        "  %s = fdiv double %num, %den",
        "  %z = fmul double %s, %s",
        *_horner("%z", tail_for("log", 64), "q"),
        "  %s2 = fadd double %s, %s",
        "  %zq = fmul double %z, %q",
        "  %lm = call double @llvm.fma.f64(double %s2, double %zq, double %s2)",
        "  %ef = sitofp i32 %e to double",
        "  %p0 = insertvalue { double, double } poison, double %ef, 0",
        "  %p1 = insertvalue { double, double } %p0, double %lm, 1",
        "  ret { double, double } %p1",
        "}"])


def _log_like(name: str) -> str:
    """log or log2 with the IEEE special cases (negative: NaN, zero: -inf, +inf: +inf, NaN: NaN)."""
    if name == "log":
        combine = [f"  %hi = fmul double %e, {h(_LN2[0])}",
                   f"  %lo = call double @llvm.fma.f64(double %e, double {h(_LN2[1])}, double %lm)",
                   "  %y = fadd double %hi, %lo"]
    else:
        combine = [f"  %t = fmul double %lm, {h(_INV_LN2[1])}",
                   f"  %u = call double @llvm.fma.f64(double %lm, double {h(_INV_LN2[0])}, double %t)",
                   "  %y = fadd double %e, %u"]
    return _define(name, "double %x", [
        f"  %parts = call {{ double, double }} @{PREFIX}logparts(double %x)",
        "  %e = extractvalue { double, double } %parts, 0",
        "  %lm = extractvalue { double, double } %parts, 1",
        *combine,
        "  %neg = fcmp olt double %x, 0.0",
        "  %zero = fcmp oeq double %x, 0.0",
        "  %inf = fcmp oeq double %x, 0x7FF0000000000000",
        "  %y1 = select i1 %inf, double %x, double %y",
        "  %y2 = select i1 %zero, double 0xFFF0000000000000, double %y1",
        "  %y3 = select i1 %neg, double 0x7FF8000000000000, double %y2",
        "  %nan = fcmp uno double %x, 0.0",
        "  %y4 = select i1 %nan, double %x, double %y3",
        "  ret double %y4"])


def _sincos() -> str:
    """{sin x, cos x}; NaN for |x| >= 2^20 pi/2, infinities and NaN."""
    return "\n".join([
        f"define internal {{ double, double }} @{PREFIX}sincos(double %x) {_ATTRIBUTES} {{", "entry:",
        "  %a = call double @llvm.fabs.f64(double %x)",
        f"  %ok = fcmp olt double %a, {h(2.0 ** 20 * math.pi / 2)}",
        "  %xc = select i1 %ok, double %x, double 0.0",
        f"  %t = fmul double %xc, {h(2 / math.pi)}",
        "  %k = call double @llvm.rint.f64(double %t)",
        f"  %r1 = call double @llvm.fma.f64(double %k, double {h(-_PIO2[0])}, double %xc)",
        f"  %r2 = call double @llvm.fma.f64(double %k, double {h(-_PIO2[1])}, double %r1)",
        f"  %r = call double @llvm.fma.f64(double %k, double {h(-_PIO2[2])}, double %r2)",
        "  %z = fmul double %r, %r",
        *_horner("%z", tail_for("sin", 64), "qs"),
        *_horner("%z", tail_for("cos", 64), "qc"),
        "  %rz = fmul double %r, %z",
        "  %s = call double @llvm.fma.f64(double %rz, double %qs, double %r)",
        "  %z2 = fmul double %z, %z",
        "  %ch = call double @llvm.fma.f64(double %z, double -0.5, double 1.0)",
        "  %c = call double @llvm.fma.f64(double %z2, double %qc, double %ch)",
        "  %ki = fptosi double %k to i32",
        "  %odd = trunc i32 %ki to i1",
        "  %sv = select i1 %odd, double %c, double %s",
        "  %cv = select i1 %odd, double %s, double %c",
        "  %q2 = and i32 %ki, 2",
        "  %sneg = icmp ne i32 %q2, 0",
        "  %k1 = add i32 %ki, 1",
        "  %q3 = and i32 %k1, 2",
        "  %cneg = icmp ne i32 %q3, 0",
        "  %nsv = fneg double %sv",
        "  %ncv = fneg double %cv",
        "  %sw = select i1 %sneg, double %nsv, double %sv",
        "  %cw = select i1 %cneg, double %ncv, double %cv",
        "  %sy = select i1 %ok, double %sw, double 0x7FF8000000000000",
        "  %cy = select i1 %ok, double %cw, double 0x7FF8000000000000",
        "  %nan = fcmp uno double %x, 0.0",
        "  %zero = fcmp oeq double %x, 0.0",                     # sin(-0) is -0
        "  %keep = or i1 %nan, %zero",
        "  %sz = select i1 %keep, double %x, double %sy",
        "  %cz = select i1 %nan, double %x, double %cy",
        "  %p0 = insertvalue { double, double } poison, double %sz, 0",
        "  %p1 = insertvalue { double, double } %p0, double %cz, 1",
        "  ret { double, double } %p1",
        "}"])


def _trig(name: str) -> str:
    pick = {"sin": ["  %y = extractvalue { double, double } %sc, 0"],
            "cos": ["  %y = extractvalue { double, double } %sc, 1"],
            "tan": ["  %s = extractvalue { double, double } %sc, 0", "  %c = extractvalue { double, double } %sc, 1",
                    "  %y = fdiv double %s, %c"]}[name]
    return _define(name, "double %x", [f"  %sc = call {{ double, double }} @{PREFIX}sincos(double %x)", *pick,
                                       "  ret double %y"])


def _atan() -> str:
    sqrt3 = math.sqrt(3)
    return _define("atan", "double %x", [
        "  %a0 = call double @llvm.fabs.f64(double %x)",
        "  %inv = fcmp ogt double %a0, 1.0",
        "  %ra = fdiv double 1.0, %a0",
        "  %a1 = select i1 %inv, double %ra, double %a0",
        f"  %mid = fcmp ogt double %a1, {h(math.tan(math.pi / 12))}",
        f"  %n = call double @llvm.fma.f64(double %a1, double {h(sqrt3)}, double -1.0)",
        f"  %d = fadd double %a1, {h(sqrt3)}",
        "  %ar = fdiv double %n, %d",
        "  %a = select i1 %mid, double %ar, double %a1",
        "  %z = fmul double %a, %a",
        *_horner("%z", tail_for("atan", 64), "q"),
        "  %az = fmul double %a, %z",
        "  %p = call double @llvm.fma.f64(double %az, double %q, double %a)",
        f"  %p6 = fadd double %p, {h(math.pi / 6)}",
        "  %y1 = select i1 %mid, double %p6, double %p",
        f"  %c = fsub double {h(math.pi / 2)}, %y1",
        "  %y2 = select i1 %inv, double %c, double %y1",
        "  %y = call double @llvm.copysign.f64(double %y2, double %x)",
        "  ret double %y"])


def _atan2() -> str:
    return _define("atan2", "double %y, double %x", [
        "  %ax = call double @llvm.fabs.f64(double %x)",
        "  %ay = call double @llvm.fabs.f64(double %y)",
        "  %swap = fcmp ogt double %ay, %ax",
        "  %num = select i1 %swap, double %ax, double %ay",
        "  %den = select i1 %swap, double %ay, double %ax",
        "  %t0 = fdiv double %num, %den",
        "  %zeros = fcmp oeq double %den, 0.0",                       # both zero: atan(0)
        "  %infs = fcmp oeq double %num, 0x7FF0000000000000",         # both infinite: atan(1)
        "  %t1 = select i1 %zeros, double 0.0, double %t0",
        "  %t = select i1 %infs, double 1.0, double %t1",
        f"  %z0 = call double @{PREFIX}atan.core(double %t)",
        f"  %zs = fsub double {h(math.pi / 2)}, %z0",
        "  %z1 = select i1 %swap, double %zs, double %z0",
        "  %xbits = bitcast double %x to i64",
        "  %xneg = icmp slt i64 %xbits, 0",
        f"  %zp = fsub double {h(math.pi)}, %z1",
        "  %z2 = select i1 %xneg, double %zp, double %z1",
        "  %r = call double @llvm.copysign.f64(double %z2, double %y)",
        "  %nan = fcmp uno double %x, %y",
        "  %sum = fadd double %x, %y",
        "  %out = select i1 %nan, double %sum, double %r",
        "  ret double %out"])


def _inverse_sine(name: str) -> str:
    args = "double %x, double %root" if name == "asin" else "double %root, double %x"
    return _define(name, "double %x", [
        "  %m = fsub double 1.0, %x",
        "  %p = fadd double 1.0, %x",
        "  %mp = fmul double %m, %p",
        "  %root = call double @llvm.sqrt.f64(double %mp)",
        f"  %y = call double @{PREFIX}atan2.core({args})",
        "  ret double %y"])


def _hyperbolic(name: str) -> str:
    """sinh, cosh or tanh (module docstring)."""
    small = [
        "  %z = fmul double %a, %a",
        *_horner("%z", tail_for("sinh", 64), "q"),
        "  %az = fmul double %a, %z",
        "  %sp = call double @llvm.fma.f64(double %az, double %q, double %a)",      # sinh(a), a < 1
        "  %half = fmul double %a, 0.5",
        f"  %e = call double @{PREFIX}exp.core(double %half)",
        "  %eh = fmul double %e, 0.5",                            # exp(a/2)^2 / 2 without overflowing
        "  %hh = fmul double %eh, %e",
        "  %qh = fdiv double 0.25, %hh",
        "  %sl = fsub double %hh, %qh",
        "  %c = fadd double %hh, %qh",
        "  %below = fcmp olt double %a, 1.0",
        "  %s = select i1 %below, double %sp, double %sl",
    ]
    if name == "sinh":
        tail = ["  %y = call double @llvm.copysign.f64(double %s, double %x)"]
    elif name == "cosh":
        tail = ["  %y = fadd double %c, 0.0"]
    else:
        tail = ["  %two = fmul double %a, 2.0",
                f"  %e2 = call double @{PREFIX}exp.core(double %two)",
                "  %e21 = fadd double %e2, 1.0",
                "  %f = fdiv double 2.0, %e21",
                "  %tl = fsub double 1.0, %f",
                "  %ts = fdiv double %s, %c",
                "  %lo = fcmp olt double %a, 0.55",
                "  %t = select i1 %lo, double %ts, double %tl",
                "  %sat = fcmp ogt double %a, 22.0",
                "  %t1 = select i1 %sat, double 1.0, double %t",
                "  %y = call double @llvm.copysign.f64(double %t1, double %x)"]
    return _define(name, "double %x", ["  %a = call double @llvm.fabs.f64(double %x)", *small, *tail,
                                       "  ret double %y"])


def _pow() -> str:
    return _define("pow", "double %x, double %y", [
        "  %ax = call double @llvm.fabs.f64(double %x)",
        f"  %l = call double @{PREFIX}log.core(double %ax)",
        "  %yl = fmul double %y, %l",
        f"  %r = call double @{PREFIX}exp.core(double %yl)",
        "  %yr = call double @llvm.rint.f64(double %y)",
        "  %yint = fcmp oeq double %yr, %y",                      # false for inf's and NaN: handled below
        "  %yh = fmul double %y, 0.5",
        "  %yhr = call double @llvm.rint.f64(double %yh)",
        "  %yodd0 = fcmp one double %yhr, %yh",
        "  %yodd = and i1 %yint, %yodd0",
        "  %xbits = bitcast double %x to i64",
        "  %xneg = icmp slt i64 %xbits, 0",
        "  %negodd = and i1 %xneg, %yodd",
        "  %rn = fneg double %r",
        "  %r1 = select i1 %negodd, double %rn, double %r",
        "  %ay = call double @llvm.fabs.f64(double %y)",
        "  %yfinite = fcmp olt double %ay, 0x7FF0000000000000",
        "  %ynotint = fcmp une double %yr, %y",
        "  %yfrac = and i1 %yfinite, %ynotint",
        "  %xlt0 = fcmp olt double %x, 0.0",
        "  %bad = and i1 %xlt0, %yfrac",                         # a negative base to a non-integer power
        "  %r2 = select i1 %bad, double 0x7FF8000000000000, double %r1",
        "  %xone = fcmp oeq double %ax, 1.0",
        "  %yinf = fcmp oeq double %ay, 0x7FF0000000000000",
        "  %oneinf = and i1 %xone, %yinf",                        # pow(-1, +-inf) = 1
        "  %r3 = select i1 %oneinf, double 1.0, double %r2",
        "  %yzero = fcmp oeq double %y, 0.0",
        "  %xisone = fcmp oeq double %x, 1.0",
        "  %one = or i1 %yzero, %xisone",
        "  %r4 = select i1 %one, double 1.0, double %r3",
        "  ret double %r4"])


_CORES = {"exp": _exp, "log": lambda: _log_like("log"), "log2": lambda: _log_like("log2"),
          "sin": lambda: _trig("sin"), "cos": lambda: _trig("cos"), "tan": lambda: _trig("tan"),
          "atan": _atan, "atan2": _atan2, "asin": lambda: _inverse_sine("asin"),
          "acos": lambda: _inverse_sine("acos"), "sinh": lambda: _hyperbolic("sinh"),
          "cosh": lambda: _hyperbolic("cosh"), "tanh": lambda: _hyperbolic("tanh"), "pow": _pow}
_SHARED = {"logparts": _log_parts, "sincos": _sincos}
_NEEDS = {"log": ["logparts"], "log2": ["logparts"], "sin": ["sincos"], "cos": ["sincos"], "tan": ["sincos"],
          "atan2": ["atan"], "asin": ["atan2"], "acos": ["atan2"], "sinh": ["exp"], "cosh": ["exp"],
          "tanh": ["exp"], "pow": ["log", "exp"]}
_ARITY = {"atan2": 2, "pow": 2}


def symbol(name: str, bits: int) -> str | None:
    """The function computing `name` at f32 or f64, or None where this module has none."""
    if name not in _CORES or bits not in (32, 64):
        return None
    return f"{PREFIX}{name}.f{bits}"


def _closure(name: str) -> list[str]:
    seen: list[str] = []

    def visit(part: str) -> None:
        for needed in _NEEDS.get(part, []):
            visit(needed)
        if part not in seen:
            seen.append(part)
    visit(name)
    return seen


def definitions(symbol_name: str) -> tuple[dict[str, str], list[str]]:
    """({helper name: definition}, intrinsic declarations) that a call to `symbol_name` needs."""
    name, width = symbol_name[len(PREFIX):].rsplit(".", 1)
    helpers: dict[str, str] = {}
    for part in _closure(name):
        key = f"@{PREFIX}{part}" + ("" if part in _SHARED else ".core")
        helpers[key] = (_SHARED[part] if part in _SHARED else _CORES[part])()
    arity = _ARITY.get(name, 1)
    ty = "double" if width == "f64" else "float"
    params = ", ".join(f"{ty} %a{k}" for k in range(arity))
    if width == "f64":
        args = ", ".join(f"double %a{k}" for k in range(arity))
        body = [f"  %y = call double @{PREFIX}{name}.core({args})", "  ret double %y"]
    else:
        body = [f"  %w{k} = fpext float %a{k} to double" for k in range(arity)]
        args = ", ".join(f"double %w{k}" for k in range(arity))
        body += [f"  %y = call double @{PREFIX}{name}.core({args})", "  %n = fptrunc double %y to float",
                 "  ret float %n"]
    helpers[f"@{symbol_name}"] = "\n".join([f"define internal {ty} @{symbol_name}({params}) {_ATTRIBUTES} {{",
                                            "entry:", *body, "}"])
    return helpers, list(_INTRINSICS.values())
