"""Fused f32 sin and cos of one value on CPU targets: one range reduction and two short polynomials.

libm's `sincosf` (what LLVM fuses a sin and a cos of one value into) costs about 1.6x a `sinf` call, and two
separate calls cost as much again; the runtime function here computes both in double precision from one
reduction for about 1.25x. It is JIT-compiled once per process, so the kernels calling it do not compile it.
It is used only where a kernel takes both the sine and the cosine of the same f32 value (a rotation, or the
replay of a `.grad` kernel that saves the derivative of a sin in a loop: passes/autodiff/derivative_cache.py);
a lone sin or cos stays a libm call, whose latency is lower.

Accuracy: |x| < 2^19 is reduced by k = rint(x * 2/pi) with pi/2 split in two doubles (the first 33 bits wide,
so k * hi is exact), and the polynomials (backends/polynomials.py) are evaluated in double, so the result is
the correctly rounded f32 value or 1 ulp from it. Larger, infinite and NaN arguments call libm."""
from __future__ import annotations

import math
import struct

from wgkern.ir import nodes as ir
from wgkern.ir.ops import UnaryOpKind
from wgkern.ir.visitor import walk
from wgkern import dtypes as T
from wgkern.backends.polynomials import tail_for

from .soft_math import horner_fma

SYMBOL = "wk_sincos_f32"
_LIMIT = 2.0 ** 19
_PIO2_HI = 1.57079632673412561417e+00       # the first 33 bits of pi/2
_PIO2_LO = 6.07710050650619224932e-11       # pi/2 - _PIO2_HI


def _hex(value: float) -> str:
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0]


DECLARATIONS = (
    "declare double @llvm.rint.f64(double)",
    "declare double @llvm.fma.f64(double, double, double)",
    "declare double @llvm.fabs.f64(double)",
)


def module_text(math_attributes: str) -> str:
    """The module defining `{float, float} @wk_sincos_f32(float x)` = (sin(x), cos(x)), compiled once per
    process (`ensure_compiled`); kernels declare it (`declaration`) like a libm function: pure, so the sin
    and the cos of one value are two calls that LLVM merges into one, and no kernel compiles its body."""
    sin_q = [float(c) for c in tail_for("sin", 32)]      # sin(r) = r (1 + r^2 q(r^2))
    cos_q = [float(c) for c in tail_for("cos", 32)]      # cos(r) = 1 - r^2/2 + r^4 q(r^2)
    body: list[str] = []
    s_tail = horner_fma("s", "%r2", sin_q, body)
    c_tail = horner_fma("c", "%r2", cos_q, body)
    polys = "\n".join(body)
    declarations = (*DECLARATIONS, f"declare float @sinf(float) {math_attributes}",
                    f"declare float @cosf(float) {math_attributes}")
    return "\n".join(declarations) + f"""
define {{float, float}} @{SYMBOL}(float %x) nounwind willreturn memory(none) {{
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
  %qodd = and i32 %ki, 1
  %odd = icmp ne i32 %qodd, 0
  %sv = select i1 %odd, double %c, double %s
  %cv = select i1 %odd, double %s, double %c
  %nsv = fneg double %sv
  %ncv = fneg double %cv
  %qs = and i32 %ki, 2
  %sneg = icmp ne i32 %qs, 0
  %qc = add i32 %ki, 1
  %qc2 = and i32 %qc, 2
  %cneg = icmp ne i32 %qc2, 0
  %sw = select i1 %sneg, double %nsv, double %sv
  %cw = select i1 %cneg, double %ncv, double %cv
  %sf = fptrunc double %sw to float
  %cf = fptrunc double %cw to float
  %p0 = insertvalue {{float, float}} poison, float %sf, 0
  %p1 = insertvalue {{float, float}} %p0, float %cf, 1
  ret {{float, float}} %p1
libm:
  %ls = call float @sinf(float %x)
  %lc = call float @cosf(float %x)
  %l0 = insertvalue {{float, float}} poison, float %ls, 0
  %l1 = insertvalue {{float, float}} %l0, float %lc, 1
  ret {{float, float}} %l1
}}
"""


def declaration(math_attributes: str) -> str:
    return f"declare {{float, float}} @{SYMBOL}(float) {math_attributes}"


_compiled = False


def ensure_compiled(math_attributes: str, use_cache: bool = False) -> None:
    """JIT the helper's module once per process (from the offline cache with `use_cache`) and make its symbol
    resolvable by later kernel modules."""
    global _compiled  # noqa: PLW0603 - one runtime function per process, alive as long as the JIT
    if _compiled:
        return
    from .jit import add_symbol, compile_ir, function_address
    compile_ir(module_text(math_attributes), use_cache=use_cache)
    add_symbol(SYMBOL, function_address(SYMBOL))
    _compiled = True


def paired_operands(blocks: list[ir.Block]) -> set[ir.Stmt]:
    """f32 values whose sine and cosine the code both takes."""
    seen: dict[ir.Stmt, set[UnaryOpKind]] = {}
    for block in blocks:
        for stmt in walk(block):
            if isinstance(stmt, ir.UnaryOp) and stmt.op in (UnaryOpKind.SIN, UnaryOpKind.COS) \
                    and stmt.operand.dtype == T.f32:
                seen.setdefault(stmt.operand, set()).add(stmt.op)
    return {value for value, ops in seen.items() if len(ops) == 2}
