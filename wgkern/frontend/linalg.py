"""Small-matrix decompositions inside kernels: `wk.polar_decompose(A)` and `wk.svd(A)` for 2x2 matrices.

Both are built from scalar IR (branch-free: every choice is a select), so they run the same on every backend
and inside differentiated kernels. Conventions (those of Taichi's ti.polar_decompose / ti.svd, which MPM
codes rely on): `R, S = polar_decompose(A)` with A = R S, R a rotation and S symmetric; `U, sigma, V = svd(A)`
with A = U sigma V^T, U and V rotations (determinant +1) and sigma = diag(s1, s2), s1 >= s2, where s2 carries
the sign of det(A)."""
from __future__ import annotations

from wgkern.errors import CompileError
from wgkern.frontend import arith
from wgkern.frontend.values import VectorValue
from wgkern.ir import nodes as ir
from wgkern.ir.builder import IRBuilder
from wgkern.ir.ops import BinaryOpKind as B
from wgkern.ir.ops import UnaryOpKind as U
from wgkern.lang import types as T

# Below this |off-diagonal| the symmetric factor is taken as diagonal (no rotation).
_DIAGONAL_TOLERANCE = 1e-6


class _Ops:
    """Float arithmetic on IR values of one dtype."""

    def __init__(self, b: IRBuilder, dtype: T.DataType):
        self.b, self.dtype = b, dtype

    def c(self, value: float) -> ir.Stmt:
        return self.b.const(value, self.dtype)

    def add(self, x: ir.Stmt, y: ir.Stmt) -> ir.Stmt:
        return arith.binary(self.b, B.ADD, x, y)

    def sub(self, x: ir.Stmt, y: ir.Stmt) -> ir.Stmt:
        return arith.binary(self.b, B.SUB, x, y)

    def mul(self, x: ir.Stmt, y: ir.Stmt) -> ir.Stmt:
        return arith.binary(self.b, B.MUL, x, y)

    def div(self, x: ir.Stmt, y: ir.Stmt) -> ir.Stmt:
        return arith.binary(self.b, B.DIV, x, y)

    def neg(self, x: ir.Stmt) -> ir.Stmt:
        return arith.unary(self.b, U.NEG, x)

    def sqrt(self, x: ir.Stmt) -> ir.Stmt:
        return arith.unary(self.b, U.SQRT, x)

    def abs(self, x: ir.Stmt) -> ir.Stmt:
        return arith.unary(self.b, U.ABS, x)

    def less(self, x: ir.Stmt, y: ir.Stmt) -> ir.Stmt:
        return arith.binary(self.b, B.CMP_LT, x, y)

    def pick(self, cond: ir.Stmt, x: ir.Stmt, y: ir.Stmt) -> ir.Stmt:
        return self.b.select(cond, x, y)


def _matrix2(a: ir.Stmt, b: ir.Stmt, c: ir.Stmt, d: ir.Stmt) -> VectorValue:
    return VectorValue([a, b, c, d], 2, 2)


def _square_float(b: IRBuilder, m: object, what: str) -> tuple[VectorValue, _Ops]:
    if not isinstance(m, VectorValue) or not m.is_matrix or m.n != m.m:
        raise CompileError(f"{what} needs a square matrix")
    if m.n != 2:
        raise CompileError(f"{what} is implemented for 2x2 matrices; this one is {m.n}x{m.m}")
    dtype = m.dtype if m.dtype.is_float else T.DEFAULT_FLOAT
    return VectorValue([b.cast(e, dtype) for e in m.elements], 2, 2), _Ops(b, dtype)


def _mul2(o: _Ops, x: VectorValue, y: VectorValue) -> VectorValue:
    return _matrix2(*(o.add(o.mul(x.at(i, 0), y.at(0, j)), o.mul(x.at(i, 1), y.at(1, j)))
                      for i in range(2) for j in range(2)))


def _polar(o: _Ops, a: VectorValue) -> tuple[VectorValue, VectorValue]:
    # the rotation nearest to A turns by the angle of (a00 + a11, a10 - a01)
    x = o.add(a.at(0, 0), a.at(1, 1))
    y = o.sub(a.at(1, 0), a.at(0, 1))
    length2 = o.add(o.mul(x, x), o.mul(y, y))
    # x = y = 0 (A = [[a, b], [b, -a]]): every rotation leaves R^T A symmetric; take the identity
    degenerate = o.less(length2, o.c(1e-30))
    inverse_length = o.div(o.c(1.0), o.sqrt(o.pick(degenerate, o.c(1.0), length2)))
    cos = o.pick(degenerate, o.c(1.0), o.mul(x, inverse_length))
    sin = o.pick(degenerate, o.c(0.0), o.mul(y, inverse_length))
    rotation = _matrix2(cos, o.neg(sin), sin, cos)
    transposed = _matrix2(cos, sin, o.neg(sin), cos)
    return rotation, _mul2(o, transposed, a)


def polar_decompose(b: IRBuilder, m: object) -> tuple[VectorValue, VectorValue]:
    a, o = _square_float(b, m, "wk.polar_decompose()")
    return _polar(o, a)


def svd(b: IRBuilder, m: object) -> tuple[VectorValue, VectorValue, VectorValue]:
    a, o = _square_float(b, m, "wk.svd()")
    rotation, s = _polar(o, a)
    s00, s01, s11 = s.at(0, 0), s.at(0, 1), s.at(1, 1)
    # one Jacobi rotation diagonalises the symmetric S: t = tan(theta), the smaller root of
    # t^2 + 2 tau t - 1 = 0 with tau = (s00 - s11) / (2 s01), written without dividing by s01
    half_gap = o.mul(o.c(0.5), o.sub(s00, s11))
    root = o.sqrt(o.add(o.mul(half_gap, half_gap), o.mul(s01, s01)))
    denominator = o.pick(o.less(o.c(0.0), half_gap), o.add(half_gap, root), o.sub(half_gap, root))
    diagonal = o.less(o.abs(s01), o.c(_DIAGONAL_TOLERANCE))
    t = o.pick(diagonal, o.c(0.0), o.div(s01, denominator))
    cos = o.div(o.c(1.0), o.sqrt(o.add(o.mul(t, t), o.c(1.0))))
    sin = o.neg(o.mul(t, cos))
    cc, ss, cs2 = o.mul(cos, cos), o.mul(sin, sin), o.mul(o.c(2.0), o.mul(cos, sin))
    s1 = o.add(o.sub(o.mul(cc, s00), o.mul(cs2, s01)), o.mul(ss, s11))
    s2 = o.add(o.add(o.mul(ss, s00), o.mul(cs2, s01)), o.mul(cc, s11))
    swap = o.less(s1, s2)          # order s1 >= s2 by turning V a further quarter
    v = _matrix2(o.pick(swap, o.neg(sin), cos), o.pick(swap, cos, sin),
                 o.pick(swap, o.neg(cos), o.neg(sin)), o.pick(swap, o.neg(sin), cos))
    big, small = o.pick(swap, s2, s1), o.pick(swap, s1, s2)
    sigma = _matrix2(big, o.c(0.0), o.c(0.0), small)
    return _mul2(o, rotation, v), sigma, v
