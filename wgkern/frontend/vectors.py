"""Scalarised vectors and matrices: element-wise arithmetic with scalar broadcasting, and the vector methods
(`dot`, `norm`, `cross`, `@`, `transpose`, ...). Each operation here emits scalar IR through arith.py; the IR
never sees a vector."""
from __future__ import annotations

from typing import Any, Callable

from wgkern.errors import CompileError, CompileValueError
from wgkern.frontend import arith
from wgkern.frontend.values import VectorValue
from wgkern.ir import nodes as ir
from wgkern.ir.builder import IRBuilder
from wgkern.ir.ops import BinaryOpKind, UnaryOpKind
from wgkern.lang import types as T

def shape_text(v: VectorValue) -> str:
    return "x".join(map(str, v.shape))


def zip_values(x: Any, y: Any, what: str) -> tuple[list[ir.Stmt], list[ir.Stmt], VectorValue]:
    """Element lists of two operands (a scalar broadcasts) and a template giving the result's shape."""
    if isinstance(x, VectorValue) and isinstance(y, VectorValue):
        if x.shape != y.shape:
            raise CompileError(f"{what}: shapes {shape_text(x)} and {shape_text(y)} do not match")
        return x.elements, y.elements, x
    if isinstance(x, VectorValue):
        return x.elements, [y] * len(x.elements), x
    return [x] * len(y.elements), y.elements, y


def like(template: VectorValue, elements: list[ir.Stmt]) -> VectorValue:
    return VectorValue(elements, template.n, template.m)


def binary(b: IRBuilder, op: BinaryOpKind, x: Any, y: Any) -> VectorValue:
    xs, ys, shape = zip_values(x, y, f"operator '{arith.BINARY_SYMBOL[op]}'")
    return like(shape, [arith.binary(b, op, p, q) for p, q in zip(xs, ys)])


def map_elements(v: VectorValue, fn: Callable[[ir.Stmt], ir.Stmt]) -> VectorValue:
    return like(v, [fn(e) for e in v.elements])


def unary(b: IRBuilder, op: UnaryOpKind, v: VectorValue) -> VectorValue:
    return map_elements(v, lambda e: arith.unary(b, op, e))


def cast(b: IRBuilder, v: VectorValue, dtype: T.DataType) -> VectorValue:
    return map_elements(v, lambda e: b.cast(e, dtype))


def unify_dtype(b: IRBuilder, elements: list[ir.Stmt]) -> list[ir.Stmt]:
    """Cast elements to their common promoted dtype (a vector has one dtype)."""
    common = elements[0].dtype
    for e in elements[1:]:
        common = T.promote(common, e.dtype)
    return [b.cast(e, common) for e in elements]


def select(b: IRBuilder, cond: Any, x: Any, y: Any) -> VectorValue:
    if isinstance(cond, VectorValue):
        xs, ys, shape = zip_values(x, y, "select") if isinstance(x, VectorValue) or isinstance(y, VectorValue) \
            else ([x] * len(cond.elements), [y] * len(cond.elements), cond)
        if shape.shape != cond.shape:
            raise CompileError("select: condition and values have different shapes")
        return like(shape, [b.select(c, p, q) for c, p, q in zip(cond.elements, xs, ys)])
    xs, ys, shape = zip_values(x, y, "select")
    return like(shape, [b.select(cond, p, q) for p, q in zip(xs, ys)])


def reduce(b: IRBuilder, op: BinaryOpKind, elements: list[ir.Stmt]) -> ir.Stmt:
    out = elements[0]
    for e in elements[1:]:
        out = arith.binary(b, op, out, e)
    return out


def require_vector(v: VectorValue, what: str) -> None:
    if v.is_matrix:
        raise CompileError(f"{what} needs a vector, got a {shape_text(v)} matrix")


def dot(b: IRBuilder, v: VectorValue, w: Any) -> ir.Stmt:
    if not isinstance(w, VectorValue):
        raise CompileError("dot() needs a vector argument")
    require_vector(v, "dot()")
    products = binary(b, BinaryOpKind.MUL, v, w)
    return reduce(b, BinaryOpKind.ADD, products.elements)


def norm_sqr(b: IRBuilder, v: VectorValue) -> ir.Stmt:
    """The sum of the squared elements (for a matrix: the squared Frobenius norm, as Taichi's)."""
    return reduce(b, BinaryOpKind.ADD, [arith.binary(b, BinaryOpKind.MUL, e, e) for e in v.elements])


def norm(b: IRBuilder, v: VectorValue, eps: Any = None) -> ir.Stmt:
    squared = norm_sqr(b, v)
    if eps is not None:
        squared = arith.binary(b, BinaryOpKind.ADD, squared, eps)
    return arith.unary(b, UnaryOpKind.SQRT, squared)


def norm_inv(b: IRBuilder, v: VectorValue, eps: Any = None) -> ir.Stmt:
    """Taichi's `v.norm_inv(eps)`: 1 / sqrt(norm_sqr + eps)."""
    length = norm(b, v, eps)
    return arith.binary(b, BinaryOpKind.DIV, b.const(1.0, length.dtype), length)


def normalized(b: IRBuilder, v: VectorValue, eps: Any = None) -> VectorValue:
    """Taichi's `v.normalized(eps)`: v * (1 / (norm(v) + eps)) (the eps is added to the norm, not its square)."""
    length = norm(b, v)
    if eps is not None:
        length = arith.binary(b, BinaryOpKind.ADD, length, eps)
    return binary(b, BinaryOpKind.MUL, v, arith.binary(b, BinaryOpKind.DIV, b.const(1.0, length.dtype), length))


def cross(b: IRBuilder, v: VectorValue, w: Any) -> Any:
    if not isinstance(w, VectorValue) or v.shape != w.shape or v.n not in (2, 3) or v.is_matrix:
        raise CompileError("cross() needs two vectors of size 2 or 3")

    def term(i: int, j: int) -> ir.Stmt:
        return arith.binary(b, BinaryOpKind.SUB, arith.binary(b, BinaryOpKind.MUL, v.at(i), w.at(j)),
                            arith.binary(b, BinaryOpKind.MUL, v.at(j), w.at(i)))
    if v.n == 2:
        return term(0, 1)
    return VectorValue([term(1, 2), term(2, 0), term(0, 1)], 3)


def transpose(b: IRBuilder, v: VectorValue) -> VectorValue:
    if not v.is_matrix:
        raise CompileError("transpose() needs a matrix, not a vector (older Taichi treated vectors as n x 1 "
                           "matrices): write `a @ b.transpose()` as a.outer_product(b) and `a.transpose() @ b` as "
                           "a.dot(b) (`transpose()` cannot apply to a vector. If you want something like "
                           "`a @ b.transpose()`, write `a.outer_product(b)` instead.)")
    return VectorValue([v.at(i, j) for j in range(v.m) for i in range(v.n)], v.m, v.n)


def matmul(b: IRBuilder, x: Any, y: Any) -> Any:
    if not isinstance(x, VectorValue) or not isinstance(y, VectorValue):
        raise CompileError("operator '@' needs vector/matrix operands")
    if not x.is_matrix and not y.is_matrix:
        return dot(b, x, y)
    if x.is_matrix and not y.is_matrix:
        if x.m != y.n:
            raise CompileError(f"operator '@': cannot multiply a {shape_text(x)} matrix by a size-{y.n} vector")
        return VectorValue([dot(b, x.row(i), y) for i in range(x.n)], x.n)
    if not x.is_matrix:
        raise CompileError("operator '@': a vector on the left needs a vector on the right (use .transpose())")
    if x.m != y.n:
        raise CompileError(f"operator '@': shapes {shape_text(x)} and {shape_text(y)} do not chain")
    columns = transpose(b, y)
    return VectorValue([dot(b, x.row(i), columns.row(j)) for i in range(x.n) for j in range(y.m)], x.n, y.m)


def outer_product(b: IRBuilder, v: VectorValue, w: Any) -> VectorValue:
    if not isinstance(w, VectorValue) or v.is_matrix or w.is_matrix:
        raise CompileError("outer_product() needs two vectors")
    return VectorValue([arith.binary(b, BinaryOpKind.MUL, p, q) for p in v.elements for q in w.elements], v.n, w.n)


def trace(b: IRBuilder, v: VectorValue) -> ir.Stmt:
    if not v.is_matrix or v.n != v.m:
        raise CompileValueError(f"trace() expected a square matrix, got shape {(v.n, v.m) if v.is_matrix else (v.n,)}")
    return reduce(b, BinaryOpKind.ADD, [v.at(i, i) for i in range(v.n)])


def _laplace_determinant(b: IRBuilder, rows: list[list[ir.Stmt]]) -> ir.Stmt:
    """Determinant by cofactor expansion along the first row (for the small sizes matrices have here)."""
    mul = lambda p, q: arith.binary(b, BinaryOpKind.MUL, p, q)  # noqa: E731
    if len(rows) == 1:
        return rows[0][0]
    if len(rows) == 2:
        return arith.binary(b, BinaryOpKind.SUB, mul(rows[0][0], rows[1][1]), mul(rows[0][1], rows[1][0]))
    total = None
    for j in range(len(rows)):
        term = mul(rows[0][j], _laplace_determinant(b, _minor(rows, 0, j)))
        if total is None:
            total = term
        else:
            total = arith.binary(b, BinaryOpKind.ADD if j % 2 == 0 else BinaryOpKind.SUB, total, term)
    return total


def _minor(rows: list[list[ir.Stmt]], i: int, j: int) -> list[list[ir.Stmt]]:
    return [[e for c, e in enumerate(row) if c != j] for r, row in enumerate(rows) if r != i]


def _square_rows(v: VectorValue, what: str) -> list[list[ir.Stmt]]:
    if not v.is_matrix or v.n != v.m or v.n not in (1, 2, 3, 4):
        raise CompileError(f"{what}() needs a square matrix of size 1 to 4")
    return [[v.at(i, j) for j in range(v.m)] for i in range(v.n)]


def determinant(b: IRBuilder, v: VectorValue) -> ir.Stmt:
    return _laplace_determinant(b, _square_rows(v, "determinant"))


def inverse(b: IRBuilder, v: VectorValue) -> VectorValue:
    """Inverse of a square matrix (size 1 to 4) via the adjugate (no pivoting; singular input gives inf/nan)."""
    _square_rows(v, "inverse")
    if not v.dtype.is_float:
        v = cast(b, v, T.DEFAULT_FLOAT)
    rows = _square_rows(v, "inverse")
    inv_det = arith.binary(b, BinaryOpKind.DIV, b.const(1.0, v.dtype), _laplace_determinant(b, rows))
    if v.n == 1:
        return VectorValue([inv_det], 1, 1)

    def cofactor(i: int, j: int) -> ir.Stmt:
        minor = _laplace_determinant(b, _minor(rows, i, j))
        return minor if (i + j) % 2 == 0 else arith.unary(b, UnaryOpKind.NEG, minor)
    adjugate = [cofactor(j, i) for i in range(v.n) for j in range(v.n)]
    return VectorValue([arith.binary(b, BinaryOpKind.MUL, e, inv_det) for e in adjugate], v.n, v.m)


def dynamic_element(b: IRBuilder, elements: list[ir.Stmt], index: ir.Stmt) -> ir.Stmt:
    """elements[index] for a runtime index: a select chain (out-of-range picks the last element)."""
    elements = unify_dtype(b, elements)
    index = b.cast(index, T.i32)
    out = elements[-1]
    for k in range(len(elements) - 2, -1, -1):
        hit = b.binary(BinaryOpKind.CMP_EQ, index, b.const(k, T.i32))
        out = b.select(hit, elements[k], out)
    return out


# name -> (function(builder, receiver, *args), number of extra args allowed)
def cast_method(b: IRBuilder, v: VectorValue, dtype: Any) -> VectorValue:
    """`v.cast(dtype)` (Taichi's Matrix.cast): every element converted."""
    if isinstance(dtype, T.VectorType):
        dtype = dtype.dtype
    try:
        target = T.to_dtype(dtype)
    except TypeError:
        raise CompileError(f"cast() needs a dtype, got {dtype!r}") from None
    return cast(b, v, target)


METHODS: dict[str, tuple[Callable[..., Any], tuple[int, ...]]] = {
    "dot": (dot, (1,)),
    "cast": (cast_method, (1,)),
    "norm": (norm, (0, 1)),
    "norm_sqr": (lambda b, v: norm_sqr(b, v), (0,)),
    "normalized": (normalized, (0, 1)),
    "norm_inv": (norm_inv, (0, 1)),
    "cross": (cross, (1,)),
    "transpose": (lambda b, v: transpose(b, v), (0,)),
    "outer_product": (outer_product, (1,)),
    "trace": (lambda b, v: trace(b, v), (0,)),
    "determinant": (lambda b, v: determinant(b, v), (0,)),
    "inverse": (lambda b, v: inverse(b, v), (0,)),
    "sum": (lambda b, v: reduce(b, BinaryOpKind.ADD, v.elements), (0,)),
    "max": (lambda b, v: reduce(b, BinaryOpKind.MAX, v.elements), (0,)),
    "min": (lambda b, v: reduce(b, BinaryOpKind.MIN, v.elements), (0,)),
    "any": (lambda b, v: reduce(b, BinaryOpKind.BIT_OR, [b.cast(e, T.u1) for e in v.elements]), (0,)),
    "all": (lambda b, v: reduce(b, BinaryOpKind.BIT_AND, [b.cast(e, T.u1) for e in v.elements]), (0,)),
}


def call_method(b: IRBuilder, v: VectorValue, name: str, args: list[Any]) -> Any:
    fn, arities = METHODS[name]
    if len(args) not in arities:
        raise CompileError(f"vector method '{name}' takes {' or '.join(map(str, arities))} argument(s), "
                           f"got {len(args)}")
    return fn(b, v, *args)
