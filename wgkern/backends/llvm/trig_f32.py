"""f32 sin and cos as LLVM IR for the CUDA target: a short fast path inlined at each call, and the rare
large-argument reduction in one shared function that is never inlined.

libdevice's `__nv_sinf` and `__nv_cosf` carry their Payne-Hanek reduction (a loop over a table, a local array)
inline, so every call pasted a few hundred lines of IR into the kernel and O3 spent most of a cold compile
simplifying them. Here `@wk.trig.sinf` and `@wk.trig.cosf` (always inlined) hold only:
- for |x| < 2^17: j = rint(x 2/pi) and r = x - j pi/2 by three fmas with pi/2 split in three f32 parts
  (the first is the f32 nearest pi/2, and x - j P1 is exact: a multiple of 2^-23, or of x's last bit where
  |x| < 1, below 1 in magnitude); r = x itself where j = 0 (so sin(-0) = -0);
- otherwise a call to `@wk.trig.reduce` (noinline, one per module): x = m 2^e, the 96 bits of 2/pi that
  matter for this e times the 24-bit m in 64-bit integer arithmetic (the product's integer part mod 4 is the
  quadrant, its fraction, centred on 0, becomes r through one f64 multiply by pi/2); inf and NaN give NaN.
  Its text is the same in every module, so ptx.py optimises it once per process and links it in after the
  module's own optimisation (`reduce_declaration` stands for it meanwhile, `reduce_module` is it alone);
- sin(r) = r + r z q(z) and cos(r) = 1 - z/2 + z^2 q(z), z = r^2, with the f32 tails of
  backends/polynomials.py by Horner's rule with fma, cos with the rounding errors of z and of w = 1 - z/2
  carried into its last addition (1 - w is exact, w being within a factor 2 of 1, and so is the error
  (1 - w) - z/2, which one fma gives); the quadrant j mod 4 picks +-sin or +-cos.

The result is within 2 ulp of the exact value for every f32 argument (libdevice's documented bound; run
over every f32 on the CPU JIT against numpy's float64 sin and cos: at most 1.5 ulp);
tests/backends/llvm/test_trig_f32.py runs these functions on the CPU JIT over the hardest arguments and random
ones, and the suite's `arch` fixture runs kernels calling them on CUDA. Under fast_math the module's functions
flush f32 subnormals (ptx.one_denormal_mode), as libdevice's FTZ paths do; no approximate instruction is used."""
from __future__ import annotations

import functools
import struct
from decimal import Decimal, localcontext

from wgkern.backends.polynomials import tail_for

from .soft_math import horner_fma, pi_decimal

PREFIX = "wk.trig."
SIN = PREFIX + "sinf"
COS = PREFIX + "cosf"
REDUCE = PREFIX + "reduce"
TABLE = PREFIX + "two_over_pi"
# below this |x| (|j| < 2^16.4) the three parts of pi/2 (2^-76.3 short of it) reduce with the fast path's accuracy
LIMIT = 2.0 ** 17
_ATTRIBUTES = "nounwind willreturn memory(none)"
DECLARATIONS = (
    "declare float @llvm.fabs.f32(float)",
    "declare float @llvm.rint.f32(float)",
    "declare float @llvm.fma.f32(float, float, float)",
    "declare i32 @llvm.fshl.i32(i32, i32, i32)",
)


def _f32(value: float) -> float:
    return struct.unpack("<f", struct.pack("<f", value))[0]


def _hex(value: float) -> str:
    """An f32 value in LLVM's hexadecimal spelling (that of the equal double)."""
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", _f32(value)))[0]


def _hex64(value: float) -> str:
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0]


with localcontext() as _context:
    _context.prec = 120
    _PI = pi_decimal(110)
    _rest = _PI / 2
    _PIO2: list[float] = []
    for _ in range(3):                       # each part the f32 nearest what the previous ones left
        _PIO2.append(_f32(float(_rest)))
        _rest -= Decimal(_PIO2[-1])
    _TWO_OVER_PI = int((2 / _PI) * (Decimal(2) ** 224))     # the first 224 fraction bits of 2/pi
    # 2/pi's bits as 32-bit words, the first word its (zero) integer part: bit t, counted from the first
    # word's most significant bit, weighs 2^(31 - t)
    WORDS = [0] + [(_TWO_OVER_PI >> (32 * (6 - k))) & 0xFFFFFFFF for k in range(7)]
    _PIO2_SCALED = float(_PI / 2 / Decimal(2) ** 64)         # a 64-bit fraction of a quadrant times pi/2


@functools.cache
def reduce_definition() -> str:
    """`{i32 quadrant, float r}` of x for |x| >= LIMIT, inf and NaN (Payne-Hanek), and its table: the text a
    module that calls sin or cos holds, the same in every module."""
    table = ", ".join(f"i32 {w}" for w in WORDS)
    return f"""@{TABLE} = internal unnamed_addr constant [{len(WORDS)} x i32] [{table}], align 4

define internal {{i32, float}} @{REDUCE}(float %x) noinline {_ATTRIBUTES} {{
entry:
  %bits = bitcast float %x to i32
  %eb = lshr i32 %bits, 23
  %e = and i32 %eb, 255
  %finite = icmp ne i32 %e, 255
  br i1 %finite, label %reduce, label %special
special:
  %nan = fsub float %x, %x
  %s0 = insertvalue {{i32, float}} poison, i32 0, 0
  %s1 = insertvalue {{i32, float}} %s0, float %nan, 1
  ret {{i32, float}} %s1
reduce:
  ; x = m 2^(e - 150): bits of 2/pi worth 2^-i for i <= e - 152 add multiples of 4 quadrants, so the
  ; 96-bit window starts at fraction bit e - 151, table bit e - 120
  %mb = and i32 %bits, 8388607
  %m32 = or i32 %mb, 8388608
  %m = zext i32 %m32 to i64
  %t0 = sub i32 %e, 120
  %w = lshr i32 %t0, 5
  %sh = and i32 %t0, 31
  %w1 = add i32 %w, 1
  %w2 = add i32 %w, 2
  %w3 = add i32 %w, 3
  %p0 = getelementptr inbounds [{len(WORDS)} x i32], ptr @{TABLE}, i32 0, i32 %w
  %p1 = getelementptr inbounds [{len(WORDS)} x i32], ptr @{TABLE}, i32 0, i32 %w1
  %p2 = getelementptr inbounds [{len(WORDS)} x i32], ptr @{TABLE}, i32 0, i32 %w2
  %p3 = getelementptr inbounds [{len(WORDS)} x i32], ptr @{TABLE}, i32 0, i32 %w3
  %d0 = load i32, ptr %p0, align 4
  %d1 = load i32, ptr %p1, align 4
  %d2 = load i32, ptr %p2, align 4
  %d3 = load i32, ptr %p3, align 4
  %a32 = call i32 @llvm.fshl.i32(i32 %d0, i32 %d1, i32 %sh)
  %b32 = call i32 @llvm.fshl.i32(i32 %d1, i32 %d2, i32 %sh)
  %c32 = call i32 @llvm.fshl.i32(i32 %d2, i32 %d3, i32 %sh)
  %a = zext i32 %a32 to i64
  %b = zext i32 %b32 to i64
  %c = zext i32 %c32 to i64
  ; P = m (a 2^64 + b 2^32 + c) is x 2/pi times 2^94 (mod 4 quadrants); hi = P >> 64
  %pa = mul nuw i64 %m, %a
  %pb = mul nuw i64 %m, %b
  %pc = mul nuw i64 %m, %c
  %pch = lshr i64 %pc, 32
  %mid = add nuw i64 %pb, %pch
  %midh = lshr i64 %mid, 32
  %hi = add nuw i64 %pa, %midh
  %qh = lshr i64 %hi, 30
  %q64 = and i64 %qh, 3
  ; the fraction's first 64 bits (P's bits 30 to 93); as a signed number it is centred on 0 and a
  ; negative one belongs to the next quadrant
  %f1 = shl i64 %hi, 34
  %mlo = and i64 %mid, 4294967295
  %f2 = shl i64 %mlo, 2
  %clo = and i64 %pc, 4294967295
  %f3 = lshr i64 %clo, 30
  %f12 = or i64 %f1, %f2
  %f = or i64 %f12, %f3
  %up = lshr i64 %f, 63
  %qa = add i64 %q64, %up
  %q = trunc i64 %qa to i32
  %fd = sitofp i64 %f to double
  %rd = fmul double %fd, {_hex64(_PIO2_SCALED)}
  %r = fptrunc double %rd to float
  %negative = icmp slt i32 %bits, 0
  %nr = fneg float %r
  %nq = sub i32 0, %q
  %rs = select i1 %negative, float %nr, float %r
  %qs = select i1 %negative, i32 %nq, i32 %q
  %v0 = insertvalue {{i32, float}} poison, i32 %qs, 0
  %v1 = insertvalue {{i32, float}} %v0, float %rs, 1
  ret {{i32, float}} %v1
}}"""


def _function(name: str, cosine: bool) -> str:
    """`float @<name>(float)`: sin, or cos with `cosine`."""
    polys: list[str] = []
    s_tail = horner_fma("s", "%z", tail_for("sin", 32), polys, "float")
    c_tail = horner_fma("c", "%z", tail_for("cos", 32), polys, "float")
    body = "\n".join(polys)
    # sin: quadrants 0-3 give s, c, -s, -c; cos: c, -s, -c, s (cos(x) = sin(x + pi/2): quadrant + 1)
    quadrant = "  %qq = add i32 %q, 1" if cosine else "  %qq = add i32 %q, 0"
    return f"""define internal float @{name}(float %x) alwaysinline {_ATTRIBUTES} {{
entry:
  %ax = call float @llvm.fabs.f32(float %x)
  %near = fcmp olt float %ax, {_hex(LIMIT)}
  br i1 %near, label %fast, label %far
fast:
  %t = fmul float %x, {_hex(2 / float(_PI))}
  %j = call float @llvm.rint.f32(float %t)
  %r1 = call float @llvm.fma.f32(float %j, float {_hex(-_PIO2[0])}, float %x)
  %r2 = call float @llvm.fma.f32(float %j, float {_hex(-_PIO2[1])}, float %r1)
  %r3 = call float @llvm.fma.f32(float %j, float {_hex(-_PIO2[2])}, float %r2)
  %j0 = fcmp oeq float %j, 0.0
  %rn = select i1 %j0, float %x, float %r3
  %qn = fptosi float %j to i32
  br label %poly
far:
  %red = call {{i32, float}} @{REDUCE}(float %x)
  %qf = extractvalue {{i32, float}} %red, 0
  %rf = extractvalue {{i32, float}} %red, 1
  br label %poly
poly:
  %q = phi i32 [ %qn, %fast ], [ %qf, %far ]
  %r = phi float [ %rn, %fast ], [ %rf, %far ]
  %z = fmul float %r, %r
{body}
  %rz = fmul float %r, %z
  %sp = call float @llvm.fma.f32(float %rz, float {s_tail}, float %r)
  %rzero = fcmp oeq float %r, 0.0
  %s = select i1 %rzero, float %r, float %sp
  %zn = fneg float %z
  %ze = call float @llvm.fma.f32(float %r, float %r, float %zn)
  %w = call float @llvm.fma.f32(float %z, float -0.5, float 1.0)
  %wd = fsub float 1.0, %w
  %wt = call float @llvm.fma.f32(float %z, float -0.5, float %wd)
  %z2 = fmul float %z, %z
  %ct = call float @llvm.fma.f32(float %z2, float {c_tail}, float %wt)
  %ce = call float @llvm.fma.f32(float %ze, float -0.5, float %ct)
  %c = fadd float %w, %ce
{quadrant}
  %odd.b = and i32 %qq, 1
  %odd = icmp ne i32 %odd.b, 0
  %v = select i1 %odd, float %c, float %s
  %neg.b = and i32 %qq, 2
  %neg = icmp ne i32 %neg.b, 0
  %nv = fneg float %v
  %y = select i1 %neg, float %nv, float %v
  ret float %y
}}"""


def symbol(name: str, bits: int) -> str | None:
    """The helper computing `name` at `bits`, or None where this module has none (only f32 sin and cos)."""
    if bits != 32 or name not in ("sin", "cos"):
        return None
    return SIN if name == "sin" else COS


def definitions(symbol_name: str) -> tuple[dict[str, str], list[str]]:
    """({helper name: definition}, intrinsic declarations) that a call to `symbol_name` needs."""
    return ({f"@{REDUCE}": reduce_definition(), f"@{symbol_name}": _function(symbol_name, symbol_name == COS)},
            list(DECLARATIONS))


def reduce_declaration() -> str:
    """`@wk.trig.reduce` declared, with the attributes of its definition that its callers' optimisation reads."""
    return f"declare {{i32, float}} @{REDUCE}(float) {_ATTRIBUTES}"


def reduce_module() -> str:
    """A module of the reduction alone, external so that optimising it keeps it."""
    return "\n".join([*DECLARATIONS, reduce_definition().replace(f"define internal {{i32, float}} @{REDUCE}",
                                                                  f"define {{i32, float}} @{REDUCE}", 1), ""])
