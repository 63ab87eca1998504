"""IEEE float arithmetic through drivers that rewrite it: which operands of a float add, subtract or multiply
to hide from the driver's algebra, and the WGSL that hides one.

WGSL has no way to mark an operation exact (SPIR-V's NoContraction, or the SignedZeroInfNanPreserve execution
mode, are not reachable through naga), so a Vulkan driver may apply algebra that holds for real numbers only.
Mesa's NIR does (its inexact `~` rules in nir_opt_algebraic; measured on lavapipe, Mesa 22.3, with raw WGSL
through wgpu, the WGSL naga is given being the IEEE expression): `a - a`, `a + (-a)`, `a*b - b*a` become 0 (NaN
for an inf or NaN `a`), `a * 0.0` becomes 0 (NaN for inf/NaN, -0 for negative `a`), `(a + b) - b` becomes `a`
(NaN when `b` is inf; rounding otherwise), `(a + 0.1) + 0.7` becomes `a + 0.8`, `a * b + a * c` becomes
`a * (b + c)` and `a + 0.0` becomes `a` (the sign of -0). Comparisons, min/max and division were left exact there; NVIDIA's
Vulkan driver folds `a / a` to 1 (measured on an H200: `0 / 0` with both operands one kernel argument gave 1).

An operand is hidden by passing it through `bitcast(bits ^ z)` (f64: `select(x, -x, z != 0)`) with `z` a zero
the driver cannot know at compile time (`num_workgroups.z - 1`: every dispatch is two-dimensional,
runtime.py), which it cannot see through, so no rule matches; the value is unchanged bit for bit. A hidden constant is loop-invariant, so the
driver hoists it out of loops. Which operands (hidden_operands):
- always (also under fast math, so inf and NaN propagate as in Taichi's CPU backend): a zero constant operand,
  for an add or subtract the right operand when both operands share a value at depth one (the same value, its
  negation, an operand of an add, subtract or multiply on the other side), and a divisor that is the dividend;
- with `wk.init(fast_math=False)` also every float constant operand (the driver reassociates constants, which
  changes roundings of finite values).
Rules the patterns do not reach (deeper reassociations, fused multiply-adds of the driver's choosing) remain
the driver's (docs/internals.md, IEEE results)."""
from __future__ import annotations

import math

from wgkern.ir import nodes as ir
from wgkern.ir.ops import BinaryOpKind, UnaryOpKind
from wgkern import dtypes as T
from wgkern.dtypes import DataType

# the pseudo-feature (backend.features) asking for every constant operand to be hidden: wk.init(fast_math=False)
STRICT_FLOATS = "wk-strict-floats"
OPAQUE_ZERO = "(wk_num_workgroups.z - 1u)"   # 0 at run time: the dispatch's third dimension is always 1

_ARITHMETIC = (BinaryOpKind.ADD, BinaryOpKind.SUB, BinaryOpKind.MUL)
_ADDITIVE = (BinaryOpKind.ADD, BinaryOpKind.SUB)


def _values(stmt: ir.Stmt) -> set[int]:
    """The values a driver sees in `stmt` at depth one (ids): itself and, through a negation, an add, a
    subtract or a multiply, their operands (a negation's operand's too)."""
    seen = {id(stmt)}
    operands: list[ir.Stmt] = []
    if isinstance(stmt, ir.UnaryOp) and stmt.op is UnaryOpKind.NEG:
        operands = [stmt.operand]
    elif isinstance(stmt, ir.BinaryOp) and stmt.op in _ARITHMETIC:
        operands = [stmt.lhs, stmt.rhs]
    for operand in operands:
        seen.add(id(operand))
        if isinstance(operand, ir.UnaryOp) and operand.op is UnaryOpKind.NEG:
            seen.add(id(operand.operand))
    return seen


def _hides_constant(operand: ir.Stmt, strict: bool) -> bool:
    return isinstance(operand, ir.Const) and (strict or float(operand.value) == 0.0)


def hidden_operands(stmt: ir.BinaryOp, strict: bool) -> tuple[bool, bool]:
    """(hide lhs, hide rhs) for a binary op (module docstring); (False, False) but for float add, subtract,
    multiply and divide."""
    if not stmt.dtype.is_float:
        return False, False
    if stmt.op is BinaryOpKind.DIV:      # a / a -> 1 (NVIDIA's Vulkan driver; NaN for 0, inf or NaN `a`)
        return False, stmt.lhs is stmt.rhs
    if stmt.op not in _ARITHMETIC:
        return False, False
    hide_lhs = _hides_constant(stmt.lhs, strict)
    hide_rhs = _hides_constant(stmt.rhs, strict)
    if stmt.op in _ADDITIVE and not hide_rhs and _values(stmt.lhs) & _values(stmt.rhs):
        hide_rhs = True
    return hide_lhs, hide_rhs


def hide(expr: str, dtype: DataType, site: int, constant: float | None = None) -> str:
    """WGSL of `expr` (of float `dtype`) that the driver cannot see through; the same bits at run time. `site`
    (1, 2, ... per shader) makes each hidden value distinct: two equal ones would be merged by the driver's
    common-subexpression elimination, and `(x + h) - h` folds again. `constant`: the value when `expr` is a
    float constant."""
    zero = OPAQUE_ZERO if site == 1 else f"({OPAQUE_ZERO} * {site}u)"
    if dtype == T.f64:
        # naga types bitcast<vec2<u32>> of an f64 as a 64-bit integer, so no bit flip here. A constant is built
        # from the opaque zero converted to f64 (NVIDIA sees through a select between c and -c, both zeros for
        # c = 0, and folded inf * 0 to 0); c + 0 is c for c != 0, and -0.0 is the negated zero
        if constant is not None:
            if constant == 0.0:
                return f"-f64({zero})" if math.copysign(1.0, constant) < 0 else f"f64({zero})"
            return f"({expr} + f64({zero}))"
        return f"select({expr}, -({expr}), {zero} != 0u)"
    if dtype == T.f16:    # f16 -> f32 -> f16 is exact, infinities and NaNs included
        return f"f16({hide(f'f32({expr})', T.f32, site)})"
    return f"bitcast<f32>(bitcast<u32>({expr}) ^ {zero})"
