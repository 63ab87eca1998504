"""Fused f32 sin and cos of one value on CPU targets: one range reduction and two short polynomials, inline.

libm's `sincosf` (what LLVM fuses a sin and a cos of one value into) costs about 1.6x a `sinf` call, and two
separate calls cost as much again; the helper here computes both in double precision from one reduction for
about 1.1x, and being inline, lets the CPU overlap it with the code around it. It is used only where a kernel
takes both the sine and the cosine of the same f32 value (a rotation, or the replay of a `.grad` kernel that
saves the derivative of a sin in a loop: passes/autodiff/derivative_cache.py); a lone sin or cos stays a libm
call, whose latency is lower.

Accuracy: |x| < 2^19 is reduced by k = rint(x * 2/pi) with pi/2 split in two doubles (the first 33 bits wide,
so k * hi is exact), and the polynomials (backends/polynomials.py) are evaluated in double, so the result is
the correctly rounded f32 value or 1 ulp from it. Larger, infinite and NaN arguments call libm."""
from __future__ import annotations

import math
import struct
from functools import lru_cache

from wgkern.ir import nodes as ir
from wgkern.ir.ops import UnaryOpKind
from wgkern.ir.visitor import walk
from wgkern.lang import types as T
from wgkern.backends.polynomials import tail_for

HELPER = "wk.sincos_f32"
_LIMIT = 2.0 ** 19
_PIO2_HI = 1.57079632673412561417e+00       # the first 33 bits of pi/2
_PIO2_LO = 6.07710050650619224932e-11       # pi/2 - _PIO2_HI


def _hex(value: float) -> str:
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0]


def _horner(name: str, z: str, coefficients: list[float], lines: list[str]) -> str:
    """Emit q(z) by Horner's rule with fma; returns the final value's name."""
    acc = _hex(coefficients[-1])
    for n, c in enumerate(reversed(coefficients[:-1])):
        out = f"%{name}{n}"
        lines.append(f"  {out} = call double @llvm.fma.f64(double {z}, double {acc}, double {_hex(c)})")
        acc = out
    return acc


DECLARATIONS = (
    "declare double @llvm.rint.f64(double)",
    "declare double @llvm.fma.f64(double, double, double)",
    "declare double @llvm.fabs.f64(double)",
)


@lru_cache(maxsize=None)
def helper_text(math_attributes: str) -> tuple[tuple[str, ...], str]:
    """`float @wk.sincos_f32(float x, i32 shift)`: sin(x) for shift 0, cos(x) for shift 1 (cos(x) is
    sin(x + pi/2): the quadrant moves by one). Two calls on one x share everything but the final select
    once inlined. Returns (declarations, definition); libm's sinf/cosf are declared with `math_attributes`."""
    sin_q = [float(c) for c in tail_for("sin", 32)]      # sin(r) = r (1 + r^2 q(r^2))
    cos_q = [float(c) for c in tail_for("cos", 32)]      # cos(r) = 1 - r^2/2 + r^4 q(r^2)
    body: list[str] = []
    s_tail = _horner("s", "%r2", sin_q, body)
    c_tail = _horner("c", "%r2", cos_q, body)
    polys = "\n".join(body)
    declarations = (*DECLARATIONS, f"declare float @sinf(float) {math_attributes}",
                    f"declare float @cosf(float) {math_attributes}")
    return declarations, f"""
define internal float @{HELPER}(float %x, i32 %shift) alwaysinline nounwind willreturn memory(none) {{
entry:
  %d = fpext float %x to double
  %a = call double @llvm.fabs.f64(double %d)
  %small = fcmp olt double %a, {_hex(_LIMIT)}
  br i1 %small, label %reduce, label %libm
reduce:
  %t = fmul double %d, {_hex(2.0 / math.pi)}
  %k = call double @llvm.rint.f64(double %t)
  %ki = fptosi double %k to i32
  %r1 = call double @llvm.fma.f64(double %k, double {_hex(-_PIO2_HI)}, double %d)
  %rk = call double @llvm.fma.f64(double %k, double {_hex(-_PIO2_LO)}, double %r1)
  %k0 = icmp eq i32 %ki, 0
  %r = select i1 %k0, double %d, double %rk
  %r2 = fmul double %r, %r
{polys}
  %sp = call double @llvm.fma.f64(double %r2, double {s_tail}, double 1.0)
  %s = fmul double %r, %sp
  %r4 = fmul double %r2, %r2
  %ch = call double @llvm.fma.f64(double %r2, double -0.5, double 1.0)
  %c = call double @llvm.fma.f64(double %r4, double {c_tail}, double %ch)
  %q = add i32 %ki, %shift
  %qodd = and i32 %q, 1
  %odd = icmp ne i32 %qodd, 0
  %v = select i1 %odd, double %c, double %s
  %qneg = and i32 %q, 2
  %neg = icmp ne i32 %qneg, 0
  %nv = fneg double %v
  %w = select i1 %neg, double %nv, double %v
  %f = fptrunc double %w to float
  ret float %f
libm:
  %is_cos = icmp ne i32 %shift, 0
  br i1 %is_cos, label %libm_cos, label %libm_sin
libm_sin:
  %ls = call float @sinf(float %x)
  ret float %ls
libm_cos:
  %lc = call float @cosf(float %x)
  ret float %lc
}}
"""


def paired_operands(blocks: list[ir.Block]) -> set[ir.Stmt]:
    """f32 values whose sine and cosine the code both takes."""
    seen: dict[ir.Stmt, set[UnaryOpKind]] = {}
    for block in blocks:
        for stmt in walk(block):
            if isinstance(stmt, ir.UnaryOp) and stmt.op in (UnaryOpKind.SIN, UnaryOpKind.COS) \
                    and stmt.operand.dtype == T.f32:
                seen.setdefault(stmt.operand, set()).add(stmt.op)
    return {value for value, ops in seen.items() if len(ops) == 2}
