"""Small-matrix decompositions inside kernels: `wk.polar_decompose(A)` and `wk.svd(A)` for 2x2 and 3x3.

Both are built from scalar IR (branch-free: every choice is a select), so they run the same on every backend
and inside differentiated kernels. Conventions (those of Taichi's ti.polar_decompose / ti.svd, which MPM
codes rely on): 3x3: `R, S = polar_decompose(A)` with A = R S, R a rotation and S symmetric; `U, sigma, V =
svd(A)` with A = U sigma V^T, U and V rotations (determinant +1) and sigma diagonal, decreasing, its last entry
carrying the sign of det(A). 2x2: `U, P = polar_decompose(A)` with P positive semi-definite and U orthogonal (a
reflection where det(A) < 0), in closed form; svd's sigma is then non-negative and decreasing, V a rotation and
U = U_polar V (one Jacobi rotation, none below an off-diagonal of 1e-5). 3x3: cyclic Jacobi sweeps (a fixed
number, unrolled) on A^T A give V and sigma^2; U's columns are A v / sigma, completed by cross products
where A is (nearly) singular. Through A^T A, small singular values lose relative accuracy when A is badly
conditioned (errors near eps * s1^2 / s3), which deformation gradients rarely are."""
from __future__ import annotations

from wgkern.errors import CompileError
from wgkern.frontend import arith
from wgkern.frontend.values import VectorValue
from wgkern.ir import nodes as ir
from wgkern.ir.builder import IRBuilder
from wgkern.ir.ops import BinaryOpKind as B
from wgkern.ir.ops import UnaryOpKind as U
from wgkern.lang import types as T

# Below this |off-diagonal| the 2x2 symmetric factor is taken as diagonal (no rotation), as Taichi's svd does.
_DIAGONAL_TOLERANCE = 1e-5


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

    def either(self, x: ir.Stmt, y: ir.Stmt) -> ir.Stmt:
        return arith.binary(self.b, B.BIT_OR, x, y)

    def pick(self, cond: ir.Stmt, x: ir.Stmt, y: ir.Stmt) -> ir.Stmt:
        return self.b.select(cond, x, y)

    def dot(self, x: list[ir.Stmt], y: list[ir.Stmt]) -> ir.Stmt:
        total = self.mul(x[0], y[0])
        for p, q in zip(x[1:], y[1:]):
            total = self.add(total, self.mul(p, q))
        return total

    def cross(self, x: list[ir.Stmt], y: list[ir.Stmt]) -> list[ir.Stmt]:
        return [self.sub(self.mul(x[1], y[2]), self.mul(x[2], y[1])),
                self.sub(self.mul(x[2], y[0]), self.mul(x[0], y[2])),
                self.sub(self.mul(x[0], y[1]), self.mul(x[1], y[0]))]

    def scale(self, x: list[ir.Stmt], f: ir.Stmt) -> list[ir.Stmt]:
        return [self.mul(e, f) for e in x]

    def normalized(self, x: list[ir.Stmt], fallback: list[ir.Stmt]) -> list[ir.Stmt]:
        """x / |x|, or `fallback` where |x| is (nearly) zero."""
        length2 = self.dot(x, x)
        tiny = self.less(length2, self.c(1e-24))
        inverse = self.div(self.c(1.0), self.sqrt(self.pick(tiny, self.c(1.0), length2)))
        return [self.pick(tiny, f, self.mul(e, inverse)) for e, f in zip(x, fallback)]


def _matrix2(a: ir.Stmt, b: ir.Stmt, c: ir.Stmt, d: ir.Stmt) -> VectorValue:
    return VectorValue([a, b, c, d], 2, 2)


def _square_float(b: IRBuilder, m: object, what: str, any_size: bool = False) -> tuple[VectorValue, _Ops]:
    if not isinstance(m, VectorValue) or not m.is_matrix or m.n != m.m:
        raise CompileError(f"{what} needs a square matrix")
    if m.n not in (2, 3) and not any_size:
        raise CompileError(f"{what} is implemented for 2x2 and 3x3 matrices; this one is {m.n}x{m.m}")
    dtype = m.dtype if m.dtype.is_float else T.DEFAULT_FLOAT
    return VectorValue([b.cast(e, dtype) for e in m.elements], m.n, m.n), _Ops(b, dtype)


def _mul2(o: _Ops, x: VectorValue, y: VectorValue) -> VectorValue:
    return _matrix2(*(o.add(o.mul(x.at(i, 0), y.at(0, j)), o.mul(x.at(i, 1), y.at(1, j)))
                      for i in range(2) for j in range(2)))


def _polar(o: _Ops, a: VectorValue) -> tuple[VectorValue, VectorValue]:
    """2x2 A = U P with P symmetric positive semi-definite and U orthogonal: a rotation where det(A) >= 0, a
    reflection where det(A) < 0 (Taichi's convention). Closed form: U = B / sqrt|det B| with B = A + sign(det A)
    cof(A), and P = (A^T A + |det A| I) / sqrt|det B|; the zero matrix gives (I, 0)."""
    a00, a01, a10, a11 = a.at(0, 0), a.at(0, 1), a.at(1, 0), a.at(1, 1)
    det = o.sub(o.mul(a00, a11), o.mul(a10, a01))
    flip = o.less(det, o.c(0.0))
    b00 = o.pick(flip, o.sub(a00, a11), o.add(a00, a11))
    b01 = o.pick(flip, o.add(a01, a10), o.sub(a01, a10))
    b10 = o.pick(flip, o.add(a10, a01), o.sub(a10, a01))
    b11 = o.pick(flip, o.sub(a11, a00), o.add(a11, a00))
    det_b = o.abs(o.sub(o.mul(b00, b11), o.mul(b10, b01)))
    zero = o.less(det_b, o.c(1e-300 if o.dtype == T.f64 else 1e-37))       # only for A = 0
    scale = o.div(o.c(1.0), o.sqrt(o.pick(zero, o.c(1.0), det_b)))    # the root of 1 there: gradients stay finite
    u = _matrix2(*(o.pick(zero, o.c(1.0 if k in (0, 3) else 0.0), o.mul(e, scale))
                   for k, e in enumerate((b00, b01, b10, b11))))
    ata = _mul2(o, _matrix2(a00, a10, a01, a11), a)
    abs_det = o.abs(det)
    shifted = [o.add(ata.at(0, 0), abs_det), ata.at(0, 1), ata.at(1, 0), o.add(ata.at(1, 1), abs_det)]
    p = _matrix2(*(o.pick(zero, e, o.mul(x, scale)) for e, x in zip(a.elements, shifted)))
    return u, p


def polar_decompose(b: IRBuilder, m: object) -> tuple[VectorValue, VectorValue]:
    a, o = _square_float(b, m, "wk.polar_decompose()")
    if a.n == 3:
        u, sigma, v = _svd3(o, a)
        rotation = _matmul(o, u, _transpose(v))
        return rotation, _matmul(o, _matmul(o, v, sigma), _transpose(v))
    return _polar(o, a)


def svd(b: IRBuilder, m: object) -> tuple[VectorValue, VectorValue, VectorValue]:
    a, o = _square_float(b, m, "wk.svd()")
    if a.n == 3:
        return _svd3(o, a)
    rotation, s = _polar(o, a)
    # one Jacobi rotation diagonalises the positive semi-definite S = V sigma V^T
    values, vectors = _jacobi_eigen2(o, [[s.at(0, 0), s.at(0, 1)], [s.at(1, 0), s.at(1, 1)]],
                                     _DIAGONAL_TOLERANCE)
    values, columns = _sort_decreasing(o, values, [[vectors[k][i] for k in range(2)] for i in range(2)], True)
    v = _matrix2(columns[0][0], columns[1][0], columns[0][1], columns[1][1])
    sigma = _matrix2(values[0], o.c(0.0), o.c(0.0), values[1])
    return _mul2(o, rotation, v), sigma, v


# ---- 3x3 ---------------------------------------------------------------------------------------------------

_JACOBI_SWEEPS = 6          # cyclic sweeps over (0,1), (0,2), (1,2): converged to f32/f64 round-off for 3x3
_LOOP_SWEEPS = 12           # cyclic sweeps for 4x4 and larger (Jacobi converges quadratically: 12x12 in ~8)


def _transpose(m: VectorValue) -> VectorValue:
    return VectorValue([m.at(j, i) for i in range(m.m) for j in range(m.n)], m.m, m.n)


def _matmul(o: _Ops, x: VectorValue, y: VectorValue) -> VectorValue:
    return VectorValue([o.dot([x.at(i, k) for k in range(x.m)], [y.at(k, j) for k in range(y.n)])
                        for i in range(x.n) for j in range(y.m)], x.n, y.m)


def _jacobi_eigen(o: _Ops, s: list[list[ir.Stmt]]) -> tuple[list[ir.Stmt], list[list[ir.Stmt]]]:
    """Eigenvalues and eigenvectors (columns of v, a rotation) of the symmetric 3x3 `s`."""
    zero, one = o.c(0.0), o.c(1.0)
    v = [[one if i == j else zero for j in range(3)] for i in range(3)]
    for _ in range(_JACOBI_SWEEPS):
        for p, q in ((0, 1), (0, 2), (1, 2)):
            spq = s[p][q]
            skip = o.less(o.abs(spq), o.c(1e-30))
            # t = tan(theta), the smaller root of t^2 + 2 tau t - 1 = 0, tau = (s_qq - s_pp) / (2 s_pq), written
            # without dividing by s_pq: t = 2 s_pq sign(gap) / (|gap| + sqrt(gap^2 + 4 s_pq^2)). Converged pairs
            # (tiny s_pq, huge tau) then keep finite derivatives, and a skipped pair takes the root of 1 rather
            # than of a possible 0, so gradients through the unused branch add 0, never 0 * inf = NaN.
            gap = o.sub(s[q][q], s[p][p])
            radicand = o.add(o.mul(gap, gap), o.mul(o.c(4.0), o.mul(spq, spq)))
            # a radicand of 0 (gap 0 and s_pq^2 below the smallest float, flushed to 0): s_pq is negligible
            skip = o.either(skip, o.less(radicand, o.c(1e-300 if o.dtype == T.f64 else 1e-37)))
            denominator = o.add(o.abs(gap), o.sqrt(o.pick(skip, one, radicand)))
            signed = o.pick(o.less(gap, zero), o.neg(spq), spq)
            t = o.pick(skip, zero, o.div(o.mul(o.c(2.0), signed), denominator))
            c = o.div(one, o.sqrt(o.add(one, o.mul(t, t))))
            sn = o.mul(t, c)
            # s <- J^T s J with J the rotation in the (p, q) plane; v <- v J
            rotated = [row[:] for row in s]
            for k in range(3):
                skp, skq = s[k][p], s[k][q]
                rotated[k][p] = o.sub(o.mul(c, skp), o.mul(sn, skq))
                rotated[k][q] = o.add(o.mul(sn, skp), o.mul(c, skq))
            final = [row[:] for row in rotated]
            for k in range(3):
                spk, sqk = rotated[p][k], rotated[q][k]
                final[p][k] = o.sub(o.mul(c, spk), o.mul(sn, sqk))
                final[q][k] = o.add(o.mul(sn, spk), o.mul(c, sqk))
            final[p][q] = final[q][p] = zero
            s = final
            for k in range(3):
                vkp, vkq = v[k][p], v[k][q]
                v[k][p] = o.sub(o.mul(c, vkp), o.mul(sn, vkq))
                v[k][q] = o.add(o.mul(sn, vkp), o.mul(c, vkq))
    return [s[0][0], s[1][1], s[2][2]], v


def _svd3(o: _Ops, a: VectorValue) -> tuple[VectorValue, VectorValue, VectorValue]:
    ata = [[o.dot([a.at(k, i) for k in range(3)], [a.at(k, j) for k in range(3)]) for j in range(3)]
           for i in range(3)]
    eigen, v = _jacobi_eigen(o, ata)
    eigen, columns = _sort_decreasing(o, eigen, [[v[k][i] for k in range(3)] for i in range(3)])
    # sqrt(max(e, 0)), with the gradient 0 (not inf, then NaN) where e <= 0: a singular A's zero singular value
    sigma = []
    for e in eigen:
        empty = o.less(e, o.c(1e-300 if o.dtype == T.f64 else 1e-37))
        sigma.append(o.pick(empty, o.c(0.0), o.sqrt(o.pick(empty, o.c(1.0), e))))
    av = [[o.dot([a.at(r, k) for k in range(3)], col) for r in range(3)] for col in columns]
    zero, one = o.c(0.0), o.c(1.0)
    u0 = o.normalized(av[0], [one, zero, zero])
    # u1: A v1 made orthogonal to u0, or any unit vector orthogonal to u0 when A v1 vanishes
    projected = [o.sub(x, o.mul(o.dot(u0, av[1]), y)) for x, y in zip(av[1], u0)]
    helper = o.normalized(o.cross(u0, [zero, zero, one]), o.cross(u0, [zero, one, zero]))
    u1 = o.normalized(projected, helper)
    u2 = o.cross(u0, u1)
    # sigma2 takes the sign of A v2 . u2 (negative when det(A) < 0), keeping U a rotation
    s2 = o.dot(av[2], u2)
    u = VectorValue([u0[0], u1[0], u2[0], u0[1], u1[1], u2[1], u0[2], u1[2], u2[2]], 3, 3)
    v_matrix = VectorValue([columns[c][r] for r in range(3) for c in range(3)], 3, 3)
    diag = VectorValue([sigma[0], zero, zero, zero, sigma[1], zero, zero, zero, s2], 3, 3)
    return u, diag, v_matrix


def sym_eig(b: IRBuilder, m: object) -> tuple[VectorValue, VectorValue]:
    """`wk.sym_eig(A)` for a symmetric A: (eigenvalues, increasing as Taichi's; eigenvectors as the columns of a
    rotation for 2x2 and 3x3, of an orthogonal matrix for larger A). Jacobi rotations (one for 2x2, unrolled
    sweeps for 3x3, a loop of sweeps for larger A, as Quadrants has them); only A's upper triangle is read."""
    a, o = _square_float(b, m, "wk.sym_eig()", any_size=True)
    d = a.n
    sym = [[a.at(min(i, j), max(i, j)) for j in range(d)] for i in range(d)]
    if d == 1:
        return VectorValue([sym[0][0]], 1), VectorValue([o.c(1.0)], 1, 1)
    if d > 3:
        return _jacobi_eigen_loop(o, sym)
    if d == 3:
        values, vectors = _jacobi_eigen(o, sym)
    else:
        values, vectors = _jacobi_eigen2(o, sym, 1e-30)
    values, columns = _sort_decreasing(o, values, [[vectors[k][i] for k in range(d)] for i in range(d)])
    # increasing: reversed, with the (new) last column negated so the columns still form a rotation (reversing
    # 2 or 3 columns is one swap)
    values, columns = values[::-1], columns[::-1]
    columns[-1] = [o.neg(x) for x in columns[-1]]
    return (VectorValue(values, d), VectorValue([columns[c][r] for r in range(d) for c in range(d)], d, d))


def _jacobi_eigen_loop(o: _Ops, s: list[list[ir.Stmt]]) -> tuple[VectorValue, VectorValue]:
    """Eigenvalues (increasing) and eigenvectors (columns) of a symmetric d x d `s`, d >= 4: the matrix and the
    accumulated rotations live in local variables and a serial loop runs _LOOP_SWEEPS cyclic sweeps, each one
    rotation per (p, q) pair written out (the 3x3 rotation of _jacobi_eigen); code size grows as d^3, run time
    with the sweep count."""
    b, d = o.b, len(s)
    zero, one = o.c(0.0), o.c(1.0)
    upper = {(i, j): b.alloca(o.dtype, f"sym_eig.a{i}_{j}") for i in range(d) for j in range(i, d)}
    vectors = {(i, j): b.alloca(o.dtype, f"sym_eig.v{i}_{j}") for i in range(d) for j in range(d)}
    for (i, j), slot in upper.items():
        b.store(slot, s[i][j])
    for (i, j), slot in vectors.items():
        b.store(slot, one if i == j else zero)

    def at(i: int, j: int) -> ir.Alloca:
        return upper[(min(i, j), max(i, j))]

    sweeps = b.range_for(b.const(0, T.i32), b.const(_LOOP_SWEEPS, T.i32), serialize=True, name="sym_eig sweeps")
    with b.at(sweeps.body):
        for p in range(d):
            for q in range(p + 1, d):
                spp, sqq, spq = b.load(at(p, p)), b.load(at(q, q)), b.load(at(p, q))
                gap = o.sub(sqq, spp)
                radicand = o.add(o.mul(gap, gap), o.mul(o.c(4.0), o.mul(spq, spq)))
                skip = o.either(o.less(o.abs(spq), o.c(1e-30)),
                                o.less(radicand, o.c(1e-300 if o.dtype == T.f64 else 1e-37)))
                denominator = o.add(o.abs(gap), o.sqrt(o.pick(skip, o.c(1.0), radicand)))
                signed = o.pick(o.less(gap, o.c(0.0)), o.neg(spq), spq)
                t = o.pick(skip, o.c(0.0), o.div(o.mul(o.c(2.0), signed), denominator))
                c = o.div(o.c(1.0), o.sqrt(o.add(o.c(1.0), o.mul(t, t))))
                sn = o.mul(t, c)
                cc, ss, cs2 = o.mul(c, c), o.mul(sn, sn), o.mul(o.c(2.0), o.mul(c, sn))
                for k in range(d):
                    if k in (p, q):
                        continue
                    skp, skq = b.load(at(k, p)), b.load(at(k, q))
                    b.store(at(k, p), o.sub(o.mul(c, skp), o.mul(sn, skq)))
                    b.store(at(k, q), o.add(o.mul(sn, skp), o.mul(c, skq)))
                b.store(at(p, p), o.add(o.sub(o.mul(cc, spp), o.mul(cs2, spq)), o.mul(ss, sqq)))
                b.store(at(q, q), o.add(o.add(o.mul(ss, spp), o.mul(cs2, spq)), o.mul(cc, sqq)))
                b.store(at(p, q), o.c(0.0))
                for k in range(d):
                    vkp, vkq = b.load(vectors[(k, p)]), b.load(vectors[(k, q)])
                    b.store(vectors[(k, p)], o.sub(o.mul(c, vkp), o.mul(sn, vkq)))
                    b.store(vectors[(k, q)], o.add(o.mul(sn, vkp), o.mul(c, vkq)))
    values = [b.load(at(i, i)) for i in range(d)]
    columns = [[b.load(vectors[(k, i)]) for k in range(d)] for i in range(d)]
    for i in range(d):                  # increasing order: a compare-and-swap for every pair
        for j in range(i + 1, d):
            swap = o.less(values[j], values[i])
            values[i], values[j] = o.pick(swap, values[j], values[i]), o.pick(swap, values[i], values[j])
            columns[i], columns[j] = ([o.pick(swap, y, x) for x, y in zip(columns[i], columns[j])],
                                      [o.pick(swap, x, y) for x, y in zip(columns[i], columns[j])])
    return VectorValue(values, d), VectorValue([columns[c][r] for r in range(d) for c in range(d)], d, d)


def eig(b: IRBuilder, m: object) -> tuple[VectorValue, VectorValue]:
    """Taichi's `wk.eig(A)` for a real 2x2 A: (values, vectors) with complex numbers as (real, imaginary) pairs:
    values is 2x2, row k the k-th eigenvalue; vectors is 4x2, column k the k-th unit eigenvector, rows 2i and
    2i+1 its i-th component. Closed form from the trace and determinant; a complex pair has the eigenvector
    (b, lambda - a), a real one the larger of (b, lambda - a) and (lambda - d, c), e_k where A is a multiple of
    the identity."""
    a, o = _square_float(b, m, "wk.eig()")
    if a.n != 2:
        raise CompileError(f"wk.eig() is implemented for 2x2 matrices; this one is {a.n}x{a.n}")
    a00, a01, a10, a11 = a.at(0, 0), a.at(0, 1), a.at(1, 0), a.at(1, 1)
    zero, one = o.c(0.0), o.c(1.0)
    half_trace = o.mul(o.c(0.5), o.add(a00, a11))
    half_gap = o.mul(o.c(0.5), o.sub(a00, a11))
    disc = o.add(o.mul(half_gap, half_gap), o.mul(a01, a10))
    is_complex = o.less(disc, zero)
    root = o.sqrt(o.abs(disc))
    # real parts of the eigenvalues and imaginary parts (0 for a real pair); lambda_0 has the + root
    re = [o.pick(is_complex, half_trace, o.add(half_trace, root)),
          o.pick(is_complex, half_trace, o.sub(half_trace, root))]
    im = [o.pick(is_complex, root, zero), o.pick(is_complex, o.neg(root), zero)]
    tiny = o.c(1e-300 if o.dtype == T.f64 else 1e-37)
    columns = []
    for k in range(2):
        # complex: (b, lambda - a) = (b, (d - a) / 2 + i im); b != 0 there (b c < 0)
        c_re = [a01, o.sub(re[k], a00)]
        c_im = [zero, im[k]]
        # real: (b, lambda - a) or (lambda - d, c), whichever is longer; e_k for a multiple of the identity
        first = [a01, o.sub(re[k], a00)]
        second = [o.sub(re[k], a11), a10]
        n_first, n_second = o.dot(first, first), o.dot(second, second)
        use_first = o.less(n_second, n_first)
        real = [o.pick(use_first, x, y) for x, y in zip(first, second)]
        n_real = o.pick(use_first, n_first, n_second)
        identity = o.less(n_real, tiny)
        real = [o.pick(identity, one if i == k else zero, x) for i, x in enumerate(real)]
        n_real = o.pick(identity, one, n_real)
        n_complex = o.add(o.dot(c_re, c_re), o.mul(im[k], im[k]))
        norm = o.sqrt(o.pick(is_complex, o.pick(o.less(n_complex, tiny), one, n_complex), n_real))
        vec_re = [o.div(o.pick(is_complex, x, y), norm) for x, y in zip(c_re, real)]
        vec_im = [o.div(o.pick(is_complex, x, zero), norm) for x in c_im]
        columns.append([vec_re[0], vec_im[0], vec_re[1], vec_im[1]])
    values = VectorValue([re[0], im[0], re[1], im[1]], 2, 2)
    vectors = VectorValue([columns[c][r] for r in range(4) for c in range(2)], 4, 2)
    return values, vectors


def make_spd(b: IRBuilder, m: object) -> VectorValue:
    """Quadrants' `make_spd(A)`: Q diag(max(lambda, 0)) Q^T from `sym_eig(A)`, for a symmetric A."""
    values, q = sym_eig(b, m)
    o = _Ops(b, values.elements[0].dtype)
    d = values.n
    clamped = [b.binary(B.MAX, v, o.c(0.0)) for v in values.elements]
    out = []
    for r in range(d):
        for c in range(d):
            total = None
            for k in range(d):
                term = o.mul(o.mul(q.at(r, k), clamped[k]), q.at(c, k))
                total = term if total is None else o.add(total, term)
            out.append(total)
    return VectorValue(out, d, d)


def _jacobi_eigen2(o: _Ops, s: list[list[ir.Stmt]], tolerance: float
                   ) -> tuple[list[ir.Stmt], list[list[ir.Stmt]]]:
    """The one Jacobi rotation that diagonalises a symmetric 2x2: t = tan(theta) is the smaller root of
    t^2 + 2 tau t - 1 = 0, tau = (s00 - s11) / (2 s01), written without dividing by s01 (no rotation when
    |s01| < tolerance)."""
    s00, s01, s11 = s[0][0], s[0][1], s[1][1]
    half_gap = o.mul(o.c(0.5), o.sub(s00, s11))
    skip = o.less(o.abs(s01), o.c(tolerance))
    # skipped: the root of 1, not of a possible 0, so the unused branch's derivatives stay finite (no NaN)
    root = o.sqrt(o.pick(skip, o.c(1.0), o.add(o.mul(half_gap, half_gap), o.mul(s01, s01))))
    denominator = o.pick(o.less(o.c(0.0), half_gap), o.add(half_gap, root), o.sub(half_gap, root))
    t = o.pick(skip, o.c(0.0), o.div(s01, denominator))
    cos = o.div(o.c(1.0), o.sqrt(o.add(o.mul(t, t), o.c(1.0))))
    sin = o.neg(o.mul(t, cos))
    cc, ss, cs2 = o.mul(cos, cos), o.mul(sin, sin), o.mul(o.c(2.0), o.mul(cos, sin))
    first = o.add(o.sub(o.mul(cc, s00), o.mul(cs2, s01)), o.mul(ss, s11))
    second = o.add(o.add(o.mul(ss, s00), o.mul(cs2, s01)), o.mul(cc, s11))
    return [first, second], [[cos, sin], [o.neg(sin), cos]]


def _sort_decreasing(o: _Ops, values: list[ir.Stmt], columns: list[list[ir.Stmt]], negate_first: bool = False
                     ) -> tuple[list[ir.Stmt], list[list[ir.Stmt]]]:
    """Eigen- or singular values in decreasing order with their columns; each swap negates one column (the one
    moved last, or with `negate_first` the one moved first, as Taichi's 2x2 svd does), so a rotation stays a
    rotation."""
    values, columns = list(values), [list(c) for c in columns]
    pairs = ((0, 1), (0, 2), (1, 2)) if len(values) == 3 else ((0, 1),)
    for i, j in pairs:
        swap = o.less(values[i], values[j])
        values[i], values[j] = o.pick(swap, values[j], values[i]), o.pick(swap, values[i], values[j])
        ci, cj = columns[i], columns[j]
        if negate_first:
            columns[i] = [o.pick(swap, o.neg(y), x) for x, y in zip(ci, cj)]
            columns[j] = [o.pick(swap, x, y) for x, y in zip(ci, cj)]
        else:
            columns[i] = [o.pick(swap, y, x) for x, y in zip(ci, cj)]
            columns[j] = [o.pick(swap, o.neg(x), y) for x, y in zip(ci, cj)]
    return values, columns
