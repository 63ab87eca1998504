"""Host-side evaluation of pure IR values with exactly the semantics of docs/internals.md.

Owns the scalar op semantics the host needs: `evaluate_bounds` (a range task's begin/end at launch, for WGSL
dispatch sizing), `evaluate_pure` (any pure value given argument values and shapes) and `fold_*` (constant
folding in passes/simplify.py; `exact_only` refuses float ops that backends may compute differently)."""
from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from wgkern.errors import InternalCompilerError
from wgkern.ir import nodes as ir
from wgkern.ir.ops import BinaryOpKind, UnaryOpKind
from wgkern import dtypes as T


def round_half_away(x: Any) -> Any:
    """Round half away from zero (UnaryOpKind.ROUND), keeping the sign of a zero result."""
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)[()]


class NotFoldable(Exception):
    """The value cannot be computed here (reads memory, an argument that is not given, or an op not
    computed bit-exactly on the host)."""


Value = Any   # Python int (ints), bool (u1), numpy scalar of the dtype (floats)


def to_value(value: Any, dtype: T.DataType) -> Value:
    """A Python number -> the host representation of a value of `dtype`."""
    if dtype.is_bool:
        return bool(value)
    if dtype.is_float:
        return dtype.np_dtype.type(value)
    return T.wrap_int(int(value), dtype)


def to_python(value: Value, dtype: T.DataType) -> int | float | bool:
    """The host representation -> what a `Const.value` holds."""
    if dtype.is_bool:
        return bool(value)
    if dtype.is_float:
        return float(value)
    return int(value)


# ---- integer semantics ----------------------------------------------------------------------------------------

def _int_floordiv(a: int, b: int, t: T.DataType) -> int:
    return 0 if b == 0 else T.wrap_int(a // b, t)    # INT_MIN // -1 wraps back to INT_MIN


def _int_mod(a: int, b: int, t: T.DataType) -> int:
    return 0 if b == 0 else T.wrap_int(a % b, t)     # Python sign rule: the divisor's sign


def _int_pow(a: int, b: int, t: T.DataType) -> int:
    if b < 0:
        if a == 1:
            return 1
        if a == -1:
            return 1 if b % 2 == 0 else -1
        return 0
    return T.wrap_int(pow(a, b, 1 << t.bits), t)


def _shift_amount(b: int, t: T.DataType) -> int:
    return T.wrap_int(b, t) & (t.bits - 1)


_INT_BINARY: dict[BinaryOpKind, Callable[[int, int, T.DataType], int]] = {
    BinaryOpKind.ADD: lambda a, b, t: T.wrap_int(a + b, t),
    BinaryOpKind.SUB: lambda a, b, t: T.wrap_int(a - b, t),
    BinaryOpKind.MUL: lambda a, b, t: T.wrap_int(a * b, t),
    BinaryOpKind.FLOORDIV: _int_floordiv,
    BinaryOpKind.MOD: _int_mod,
    BinaryOpKind.POW: _int_pow,
    BinaryOpKind.MIN: lambda a, b, t: b if a != a else a if b != b else min(a, b),    # a NaN operand is ignored
    BinaryOpKind.MAX: lambda a, b, t: b if a != a else a if b != b else max(a, b),
    BinaryOpKind.BIT_AND: lambda a, b, t: T.wrap_int(a & b, t),
    BinaryOpKind.BIT_OR: lambda a, b, t: T.wrap_int(a | b, t),
    BinaryOpKind.BIT_XOR: lambda a, b, t: T.wrap_int(a ^ b, t),
    BinaryOpKind.SHL: lambda a, b, t: T.wrap_int(a << _shift_amount(b, t), t),
    BinaryOpKind.SHR: lambda a, b, t: T.wrap_int(a >> _shift_amount(b, t), t),  # a is in range: sign-correct
}

_BOOL_BINARY: dict[BinaryOpKind, Callable[[bool, bool], bool]] = {
    BinaryOpKind.BIT_AND: lambda a, b: a and b,
    BinaryOpKind.BIT_OR: lambda a, b: a or b,
    BinaryOpKind.BIT_XOR: lambda a, b: a != b,
    BinaryOpKind.MIN: lambda a, b: a and b,
    BinaryOpKind.MAX: lambda a, b: a or b,
}

_COMPARE: dict[BinaryOpKind, Callable[[Any, Any], bool]] = {
    BinaryOpKind.CMP_LT: lambda a, b: bool(a < b),
    BinaryOpKind.CMP_LE: lambda a, b: bool(a <= b),
    BinaryOpKind.CMP_GT: lambda a, b: bool(a > b),
    BinaryOpKind.CMP_GE: lambda a, b: bool(a >= b),
    BinaryOpKind.CMP_EQ: lambda a, b: bool(a == b),
    BinaryOpKind.CMP_NE: lambda a, b: bool(a != b),
}


def _int_sign(a: int, t: T.DataType) -> int:
    return (a > 0) - (a < 0)


_INT_UNARY: dict[UnaryOpKind, Callable[[int, T.DataType], int]] = {
    UnaryOpKind.NEG: lambda a, t: T.wrap_int(-a, t),
    UnaryOpKind.ABS: lambda a, t: T.wrap_int(abs(a), t),          # abs(INT_MIN) wraps to INT_MIN
    UnaryOpKind.SIGN: _int_sign,
    UnaryOpKind.BIT_NOT: lambda a, t: T.wrap_int(~a, t),
}

# ---- float semantics ------------------------------------------------------------------------------------------
# "Exact" ops are IEEE correctly rounded (or exact) on every backend, so folding them cannot change a result.
# Transcendentals, pow, atan2 and float `%` (a - b*floor(a/b), which a backend may contract into an fma) are
# evaluated on the host only when asked for a best-effort value (bounds), never folded.


def _float_sign(a: Any) -> Any:
    if np.isnan(a):
        return a
    return type(a)(int(a > 0) - int(a < 0))   # +0.0 for both zeros


_FLOAT_UNARY_EXACT: dict[UnaryOpKind, Callable[[Any], Any]] = {
    UnaryOpKind.NEG: lambda a: -a,
    UnaryOpKind.ABS: np.abs,
    UnaryOpKind.SIGN: _float_sign,
    UnaryOpKind.SQRT: np.sqrt,
    UnaryOpKind.FLOOR: np.floor,
    UnaryOpKind.CEIL: np.ceil,
    UnaryOpKind.ROUND: lambda x: round_half_away(x),
}

_FLOAT_UNARY_APPROX: dict[UnaryOpKind, Callable[[Any], Any]] = {
    UnaryOpKind.RSQRT: lambda a: type(a)(1) / np.sqrt(a),
    UnaryOpKind.EXP: np.exp, UnaryOpKind.LOG: np.log, UnaryOpKind.LOG2: np.log2,
    UnaryOpKind.SIN: np.sin, UnaryOpKind.COS: np.cos, UnaryOpKind.TAN: np.tan,
    UnaryOpKind.ASIN: np.arcsin, UnaryOpKind.ACOS: np.arccos, UnaryOpKind.ATAN: np.arctan,
    UnaryOpKind.SINH: np.sinh, UnaryOpKind.COSH: np.cosh, UnaryOpKind.TANH: np.tanh,
}

_FLOAT_BINARY_EXACT: dict[BinaryOpKind, Callable[[Any, Any], Any]] = {
    BinaryOpKind.ADD: lambda a, b: a + b,
    BinaryOpKind.SUB: lambda a, b: a - b,
    BinaryOpKind.MUL: lambda a, b: a * b,
    BinaryOpKind.DIV: lambda a, b: a / b,
    BinaryOpKind.FLOORDIV: lambda a, b: np.floor(a / b),
    BinaryOpKind.MIN: np.fmin,        # a NaN operand is ignored (IEEE minNum)
    BinaryOpKind.MAX: np.fmax,
}

_FLOAT_BINARY_APPROX: dict[BinaryOpKind, Callable[[Any, Any], Any]] = {
    BinaryOpKind.MOD: lambda a, b: a - b * np.floor(a / b),
    BinaryOpKind.POW: np.power,
    BinaryOpKind.ATAN2: np.arctan2,
}


def fold_unary(op: UnaryOpKind, value: Value, dtype: T.DataType, exact_only: bool = True) -> Value:
    """`op(value)` for an operand of `dtype`; raises NotFoldable where no host rule applies."""
    if dtype.is_bool:
        if op is UnaryOpKind.LOGICAL_NOT:
            return not value
        raise NotFoldable(op)
    if dtype.is_int:
        rule = _INT_UNARY.get(op)
        if rule is None:
            raise NotFoldable(op)
        return rule(value, dtype)
    rule = _FLOAT_UNARY_EXACT.get(op)
    if rule is None and not exact_only:
        rule = _FLOAT_UNARY_APPROX.get(op)
    if rule is None:
        raise NotFoldable(op)
    with np.errstate(all="ignore"):
        return dtype.np_dtype.type(rule(dtype.np_dtype.type(value)))


def fold_binary(op: BinaryOpKind, lhs: Value, rhs: Value, dtype: T.DataType, exact_only: bool = True) -> Value:
    """`lhs op rhs` for operands of `dtype` (shifts: the lhs dtype); comparisons give bool."""
    compare = _COMPARE.get(op)
    if compare is not None:
        return compare(lhs, rhs)
    if dtype.is_bool:
        rule = _BOOL_BINARY.get(op)
        if rule is None:
            raise NotFoldable(op)
        return rule(bool(lhs), bool(rhs))
    if dtype.is_int:
        rule = _INT_BINARY.get(op)
        if rule is None:
            raise NotFoldable(op)
        return rule(int(lhs), int(rhs), dtype)
    rule = _FLOAT_BINARY_EXACT.get(op)
    if rule is None and not exact_only:
        rule = _FLOAT_BINARY_APPROX.get(op)
    if rule is None:
        raise NotFoldable(op)
    np_type = dtype.np_dtype.type
    with np.errstate(all="ignore"):
        return np_type(rule(np_type(lhs), np_type(rhs)))


def _float_to_int(value: Any, dst: T.DataType) -> int:
    """Truncate toward zero, saturate, NaN -> 0."""
    if math.isnan(value):
        return 0
    low, high = _int_range(dst)
    if math.isinf(value):
        return high if value > 0 else low
    return min(max(int(value), low), high)


def _int_range(dtype: T.DataType) -> tuple[int, int]:
    if dtype.is_signed:
        return -(1 << (dtype.bits - 1)), (1 << (dtype.bits - 1)) - 1
    return 0, (1 << dtype.bits) - 1


def _int_to_float(value: int, dst: T.DataType) -> Any:
    # Python's int -> float is correctly rounded to f64; going on to f32/f16 could round twice, so only
    # values that f64 holds exactly are converted for narrower floats.
    if dst.bits < 64 and abs(value) > (1 << 53):
        raise NotFoldable("int too wide for an exact narrow float conversion")
    with np.errstate(all="ignore"):
        return dst.np_dtype.type(float(value))


def fold_cast(value: Value, src: T.DataType, dst: T.DataType, bitcast: bool = False) -> Value:
    """Convert `value` of `src` to `dst` as a Cast statement does."""
    if bitcast:
        if src.bits != dst.bits or src.is_bool or dst.is_bool:
            raise NotFoldable("bitcast between different widths")
        raw = np.array(to_value(value, src), dtype=src.np_dtype).view(dst.np_dtype)[()]
        return to_value(raw.item(), dst) if not dst.is_float else dst.np_dtype.type(raw)
    if dst.is_bool:
        return bool(value != 0)
    if src.is_bool:
        return to_value(1 if value else 0, dst)
    if src.is_float and dst.is_float:
        with np.errstate(all="ignore"):
            return dst.np_dtype.type(value)
    if src.is_float:
        return _float_to_int(float(value), dst)
    if dst.is_float:
        return _int_to_float(int(value), dst)
    return T.wrap_int(int(value), dst)


# ---- evaluating statements -----------------------------------------------------------------------------------

Shapes = Mapping[ir.ContainerSlot, Sequence[int]]


def shapes_by_slot(containers: Sequence[ir.ContainerSlot], shapes: Sequence[Sequence[int]]) -> dict:
    """LaunchArgs.shapes (indexed like kernel.containers) -> the mapping `evaluate_*` take."""
    return dict(zip(containers, shapes))


def _operand_values(stmt: ir.Stmt, env: dict[ir.Stmt, Value]) -> list[Value]:
    try:
        return [env[o] for o in stmt.operands()]
    except KeyError as missing:
        raise NotFoldable(f"operand not evaluated: {missing}") from None


def evaluate_stmt(stmt: ir.Stmt, env: dict[ir.Stmt, Value], scalars: Sequence[Any] | None,
                  shapes: Shapes | None, exact_only: bool = False) -> Value:
    """The value of one pure statement given the values of its operands in `env`."""
    values = _operand_values(stmt, env)
    if isinstance(stmt, ir.Const):
        return to_value(stmt.value, stmt.dtype)
    if isinstance(stmt, ir.ArgLoad):
        if scalars is None or stmt.arg_index >= len(scalars) or scalars[stmt.arg_index] is None:
            raise NotFoldable("argument value unknown")
        return to_value(scalars[stmt.arg_index], stmt.dtype)
    if isinstance(stmt, ir.ShapeOf):
        shape = shapes.get(stmt.container) if shapes is not None else None
        if shape is None:
            shape = stmt.container.shape
        if shape is None:
            raise NotFoldable("shape unknown")
        return T.wrap_int(int(shape[stmt.axis]), T.i32)
    if isinstance(stmt, ir.UnaryOp):
        return fold_unary(stmt.op, values[0], stmt.operand.dtype, exact_only)
    if isinstance(stmt, ir.BinaryOp):
        return fold_binary(stmt.op, values[0], values[1], stmt.lhs.dtype, exact_only)
    if isinstance(stmt, ir.Cast):
        return fold_cast(values[0], stmt.operand.dtype, stmt.dtype, stmt.bitcast)
    if isinstance(stmt, ir.TernarySelect):
        return values[1] if values[0] else values[2]
    raise NotFoldable(type(stmt).__name__)


def evaluate_pure(stmt: ir.Stmt, scalars: Sequence[Any] | None = None, shapes: Shapes | None = None,
                  exact_only: bool = False) -> Value:
    """Evaluate `stmt` and (recursively) its operands. Raises NotFoldable when the value depends on memory,
    an unknown argument or shape, or (with `exact_only`) a float op not computed bit-exactly here."""
    env: dict[ir.Stmt, Value] = {}
    pending: list[tuple[ir.Stmt, bool]] = [(stmt, False)]
    while pending:   # iterative post-order walk: operand chains of any depth
        current, operands_done = pending.pop()
        if current in env:
            continue
        if operands_done:
            env[current] = evaluate_stmt(current, env, scalars, shapes, exact_only)
            continue
        pending.append((current, True))
        pending.extend((o, False) for o in current.operands() if o not in env)
    return env[stmt]


def try_constant(stmt: ir.Stmt) -> int | float | bool | None:
    """The compile-time value of `stmt` (constants and exact arithmetic on them), else None."""
    try:
        value = evaluate_pure(stmt, None, {}, exact_only=True)
    except NotFoldable:
        return None
    return to_python(value, stmt.dtype)


_PURE = (ir.Const, ir.ArgLoad, ir.ShapeOf, ir.UnaryOp, ir.BinaryOp, ir.Cast, ir.TernarySelect)


def bounds_inputs(task: ir.Task, containers: Sequence[ir.ContainerSlot]) -> tuple[list[int], list[int]] | None:
    """(the scalar argument indices, the container slot indices) a range task's bounds read, when they are a
    function of those alone (evaluate_stmt's statements: no memory read), else None."""
    args: set[int] = set()
    slots: set[int] = set()
    index = {id(c): k for k, c in enumerate(containers)}
    for stmt in task.bounds.stmts:
        if not isinstance(stmt, _PURE):
            return None
        if isinstance(stmt, ir.ArgLoad):
            args.add(stmt.arg_index)
        elif isinstance(stmt, ir.ShapeOf):
            if id(stmt.container) not in index:
                return None
            slots.add(index[id(stmt.container)])
    return sorted(args), sorted(slots)


def evaluate_bounds(task: ir.Task, scalars: Sequence[Any] | None, shapes: Shapes | None,
                    read: Callable[[ir.ContainerSlot, list[int]], Any] | None = None) -> tuple[int, int] | None:
    """(begin, end) of a range task computed on the host. Bounds that read global memory give None, unless
    `read(slot, indices)` is given to fetch the element (a device read-back)."""
    if task.kind != "range" or task.loop is None:
        raise InternalCompilerError(f"evaluate_bounds on a {task.kind} task {task.name}", task.loc)
    env: dict[ir.Stmt, Value] = {}
    for stmt in task.bounds.stmts:
        if isinstance(stmt, (ir.GlobalLoad, ir.GlobalPtr)):
            if read is None:
                return None
            if isinstance(stmt, ir.GlobalPtr):
                env[stmt] = [int(env[index]) for index in stmt.indices]
            else:
                env[stmt] = to_value(read(stmt.ptr.container, env[stmt.ptr]), stmt.dtype)
            continue
        try:
            env[stmt] = evaluate_stmt(stmt, env, scalars, shapes)
        except NotFoldable as reason:
            raise InternalCompilerError(f"cannot evaluate bounds of task {task.name}: {reason}", stmt.loc)
    begin, end = task.loop.begin, task.loop.end
    for bound in (begin, end):
        if bound not in env:   # a bound defined outside the bounds block breaks the offload contract
            raise InternalCompilerError(f"task {task.name}: loop bound is not defined in its bounds", task.loc)
    return int(env[begin]), int(env[end])
