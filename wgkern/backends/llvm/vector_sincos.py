"""f32 sin and cos over the lanes of a vector, for lane-vectorised range tasks on CPU targets (lanes.py).

`@wk.sin.v<W>f32` and `@wk.cos.v<W>f32` are module-internal functions (LLVM inlines them): the argument is
widened to double, reduced by k = rint(x * 2/pi) with pi/2 split in two doubles (the first 33 bits wide, so
k * hi is exact), and the polynomials of backends/polynomials.py are evaluated in double by Horner's rule with
fma, exactly as sincos.py does for one value. The result is the correctly rounded f32 value or 1 ulp from it
for |x| < 2^19 (tests/backends/llvm/test_vector_sincos.py measures it against numpy's float64 sin and cos).
Lanes with a larger, infinite or NaN argument take libm's sinf/cosf, one call per such lane, behind a branch
that only those vectors take; inactive lanes compute on whatever their register holds (nothing can trap)."""
from __future__ import annotations

import math

from wgkern.backends.polynomials import tail_for

from .sincos import _LIMIT, _PIO2_HI, _PIO2_LO, _hex


def _splat(width: int, ty: str, literal: str) -> str:
    return "<" + ", ".join([f"{ty} {literal}"] * width) + ">"


def _horner(name: str, z: str, coefficients: list[float], width: int, lines: list[str]) -> str:
    """q(z) over <width x double> by Horner's rule with fma; returns the final value's name."""
    vd = f"<{width} x double>"
    acc = _splat(width, "double", _hex(coefficients[-1]))
    for n, c in enumerate(reversed(coefficients[:-1])):
        out = f"%{name}{n}"
        lines.append(f"  {out} = call {vd} @llvm.fma.v{width}f64({vd} {z}, {vd} {acc}, "
                     f"{vd} {_splat(width, 'double', _hex(c))})")
        acc = out
    return acc


def helper_name(op: str, width: int) -> str:
    """The helper's symbol for `op` ('sin' or 'cos') over `width` f32 lanes."""
    return f"wk.{op}.v{width}f32"


def declarations(width: int, math_attributes: str) -> list[str]:
    """What a module holding the helpers must declare."""
    vd = f"<{width} x double>"
    return [f"declare {vd} @llvm.fma.v{width}f64({vd}, {vd}, {vd})",
            f"declare {vd} @llvm.rint.v{width}f64({vd})",
            f"declare {vd} @llvm.fabs.v{width}f64({vd})",
            f"declare i1 @llvm.vector.reduce.and.v{width}i1(<{width} x i1>)",
            f"declare float @sinf(float) {math_attributes}",
            f"declare float @cosf(float) {math_attributes}"]


def helper_text(op: str, width: int) -> str:
    """The definition of `<width x float> @wk.<op>.v<width>f32(<width x float>)`, op 'sin' or 'cos'."""
    vf, vd, vi = f"<{width} x float>", f"<{width} x double>", f"<{width} x i32>"
    d = lambda literal: _splat(width, "double", literal)      # noqa: E731 - a spelling helper
    i = lambda value: _splat(width, "i32", str(value))         # noqa: E731
    body: list[str] = []
    s_tail = _horner("s", "%r2", [float(c) for c in tail_for("sin", 32)], width, body)   # r (1 + r^2 q(r^2))
    c_tail = _horner("c", "%r2", [float(c) for c in tail_for("cos", 32)], width, body)   # 1 - r^2/2 + r^4 q
    polys = "\n".join(body)
    # sin: quadrant k picks sin(r) for even k, cos(r) for odd, negated where k & 2; cos: the other, negated
    # where (k + 1) & 2
    odd_pick, even_pick, sign_shift = ("%c", "%s", "%ki") if op == "sin" else ("%s", "%c", "%kc")
    libm = "sinf" if op == "sin" else "cosf"
    return f"""
define internal {vf} @{helper_name(op, width)}({vf} %x) alwaysinline nounwind willreturn memory(none) {{
entry:
  %d = fpext {vf} %x to {vd}
  %a = call {vd} @llvm.fabs.v{width}f64({vd} %d)
  %small = fcmp olt {vd} %a, {d(_hex(_LIMIT))}
  %t = fmul {vd} %d, {d(_hex(2.0 / math.pi))}
  %k = call {vd} @llvm.rint.v{width}f64({vd} %t)
  %ki = fptosi {vd} %k to {vi}
  %r1 = call {vd} @llvm.fma.v{width}f64({vd} %k, {vd} {d(_hex(-_PIO2_HI))}, {vd} %d)
  %rk = call {vd} @llvm.fma.v{width}f64({vd} %k, {vd} {d(_hex(-_PIO2_LO))}, {vd} %r1)
  %k0 = icmp eq {vi} %ki, zeroinitializer
  %r = select <{width} x i1> %k0, {vd} %d, {vd} %rk
  %r2 = fmul {vd} %r, %r
{polys}
  %sp = call {vd} @llvm.fma.v{width}f64({vd} %r2, {vd} {s_tail}, {vd} {d(_hex(1.0))})
  %s = fmul {vd} %r, %sp
  %r4 = fmul {vd} %r2, %r2
  %ch = call {vd} @llvm.fma.v{width}f64({vd} %r2, {vd} {d(_hex(-0.5))}, {vd} {d(_hex(1.0))})
  %c = call {vd} @llvm.fma.v{width}f64({vd} %r4, {vd} {c_tail}, {vd} %ch)
  %q1 = and {vi} %ki, {i(1)}
  %odd = icmp ne {vi} %q1, zeroinitializer
  %v = select <{width} x i1> %odd, {vd} {odd_pick}, {vd} {even_pick}
  %nv = fneg {vd} %v
  %kc = add {vi} %ki, {i(1)}
  %q2 = and {vi} {sign_shift}, {i(2)}
  %neg = icmp ne {vi} %q2, zeroinitializer
  %w = select <{width} x i1> %neg, {vd} %nv, {vd} %v
  %ps = fptrunc {vd} %w to {vf}
  %all = call i1 @llvm.vector.reduce.and.v{width}i1(<{width} x i1> %small)
  br i1 %all, label %done, label %wide
wide:
  %lm = call {vf} @{helper_name(op, width)}.libm({vf} %x)
  %big = select <{width} x i1> %small, {vf} %ps, {vf} %lm
  br label %done
done:
  %out = phi {vf} [ %ps, %entry ], [ %big, %wide ]
  ret {vf} %out
}}
{libm_text(op, width)}"""


def libm_text(op: str, width: int) -> str:
    """`@wk.<op>.v<width>f32.libm`: libm's sinf/cosf on every lane, one shared out-of-line copy per module
    (kernels only call it for vectors holding a large, infinite or NaN argument)."""
    vf = f"<{width} x float>"
    libm = "sinf" if op == "sin" else "cosf"
    lines = []
    for k in range(width):
        lines.append(f"  %x{k} = extractelement {vf} %x, i32 {k}\n"
                     f"  %l{k} = call float @{libm}(float %x{k})\n"
                     f"  %o{k} = insertelement {vf} {'poison' if k == 0 else f'%o{k - 1}'}, float %l{k}, i32 {k}")
    body = "\n".join(lines)
    return f"""
define internal {vf} @{helper_name(op, width)}.libm({vf} %x) noinline cold nounwind willreturn memory(none) {{
{body}
  ret {vf} %o{width - 1}
}}
"""
