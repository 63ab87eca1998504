"""Every op of ir/ops.py on every dtype it takes, against numpy / Python references (docs/internals.md)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from ._kernels import elementwise, run

from wgkern.backends.llvm import ops as llvm_ops
from wgkern.ir.host_eval import round_half_away
from wgkern.ir import nodes as ir
from wgkern.ir.ops import (BOOL_ONLY_UNARY, FLOAT_ONLY_BINARY, FLOAT_ONLY_UNARY, INT_ONLY_ATOMIC, INT_ONLY_BINARY,
                           INT_ONLY_UNARY, AtomicOpKind, BinaryOpKind, UnaryOpKind)
from wgkern.lang import types as T

B = BinaryOpKind
U = UnaryOpKind
FLOATS = [T.f16, T.f32, T.f64]
INTS = [T.i8, T.i16, T.i32, T.i64, T.u8, T.u16, T.u32, T.u64]


# ---- table coverage ----------------------------------------------------------------------------------------

def test_binary_tables_cover_enum() -> None:
    assert set(llvm_ops.FLOAT_BINARY) == set(BinaryOpKind) - INT_ONLY_BINARY
    for kind in ("i", "u"):
        assert set(llvm_ops.BINARY[kind]) == set(BinaryOpKind) - FLOAT_ONLY_BINARY
    assert set(llvm_ops.BINARY) == {"f", "i", "u", "b"}


def test_unary_tables_cover_enum() -> None:
    assert set(llvm_ops.FLOAT_UNARY) == set(UnaryOpKind) - INT_ONLY_UNARY - BOOL_ONLY_UNARY
    for kind in ("i", "u"):
        assert set(llvm_ops.UNARY[kind]) == set(UnaryOpKind) - FLOAT_ONLY_UNARY - BOOL_ONLY_UNARY
    assert UnaryOpKind.LOGICAL_NOT in llvm_ops.BOOL_UNARY


def test_atomic_tables_cover_enum() -> None:
    """Every atomic is an atomicrmw, a cmpxchg loop (ATOMIC_CMPXCHG_LOOP) or CAS's own cmpxchg."""
    loops = set(llvm_ops.ATOMIC_CMPXCHG_LOOP)
    assert set(llvm_ops.ATOMIC["f"]) | loops == set(AtomicOpKind) - INT_ONLY_ATOMIC
    for kind in ("i", "u"):
        assert set(llvm_ops.ATOMIC[kind]) | loops | {AtomicOpKind.CAS} == set(AtomicOpKind)
    assert set(llvm_ops.ATOMIC["b"]) | {AtomicOpKind.CAS} == set(AtomicOpKind)


def test_stmt_classes_have_codegen_rules() -> None:
    from wgkern.backends.llvm.codegen import FunctionEmitter
    missing = [cls.__name__ for cls in ir.STMT_CLASSES if not hasattr(FunctionEmitter, "visit_" + cls.__name__)]
    assert missing == []


# ---- floats ------------------------------------------------------------------------------------------------

def float_inputs(dtype: T.DataType) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    a = np.concatenate([rng.uniform(-8, 8, 200), [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 7.0, np.inf, -np.inf, np.nan]])
    b = np.concatenate([rng.uniform(-4, 4, 200), [3.0, 3.0, -0.0, 0.0, 2.0, 2.0, -2.0, 1.0, 2.0, 1.0]])
    return a.astype(dtype.np_dtype), b.astype(dtype.np_dtype)


def _floor_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a - b * np.floor(a / b)


FLOAT_BINARY_REF = {
    B.ADD: np.add, B.SUB: np.subtract, B.MUL: np.multiply, B.DIV: np.divide,
    B.FLOORDIV: lambda a, b: np.floor(a / b), B.MOD: _floor_mod, B.POW: np.power, B.ATAN2: np.arctan2,
    B.MIN: np.fmin, B.MAX: np.fmax, B.CMP_LT: np.less, B.CMP_LE: np.less_equal,
    B.CMP_GT: np.greater, B.CMP_GE: np.greater_equal, B.CMP_EQ: np.equal, B.CMP_NE: np.not_equal,
}
TRANSCENDENTAL = {B.POW, B.ATAN2}
TOLERANCE = {"f16": 1e-3, "f32": 2e-6, "f64": 1e-14}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("op", list(FLOAT_BINARY_REF), ids=lambda o: o.value)
def test_float_binary(backend, op: BinaryOpKind, dtype: T.DataType) -> None:
    a, b = float_inputs(dtype)
    if op == B.POW:
        a = np.abs(a)
    out_type = T.u1 if op in llvm_ops.BINARY["b"] and op.value in ("lt", "le", "gt", "ge", "eq", "ne") else dtype
    kernel = elementwise([dtype, dtype], out_type, lambda bld, x, y: bld.binary(op, x, y))
    got = run(backend, backend.compile(kernel), [a, b, np.zeros(a.size, out_type.np_dtype)])[2]
    with np.errstate(all="ignore"):
        expected = FLOAT_BINARY_REF[op](a, b).astype(out_type.np_dtype)
    if op in TRANSCENDENTAL:
        np.testing.assert_allclose(got, expected, rtol=TOLERANCE[dtype.name], atol=1e-30)
    else:
        np.testing.assert_array_equal(got, expected)


FLOAT_UNARY_REF = {
    U.NEG: np.negative, U.ABS: np.abs, U.SIGN: np.sign, U.SQRT: np.sqrt, U.RSQRT: lambda x: 1 / np.sqrt(x),
    U.EXP: np.exp, U.LOG: np.log, U.LOG2: np.log2, U.SIN: np.sin, U.COS: np.cos, U.TAN: np.tan,
    U.ASIN: np.arcsin, U.ACOS: np.arccos, U.ATAN: np.arctan, U.SINH: np.sinh, U.COSH: np.cosh, U.TANH: np.tanh,
    U.FLOOR: np.floor, U.CEIL: np.ceil, U.ROUND: round_half_away,
}
EXACT_UNARY = {U.NEG, U.ABS, U.SIGN, U.FLOOR, U.CEIL, U.ROUND, U.SQRT}


def test_float_unary_reference_covers_table() -> None:
    assert set(FLOAT_UNARY_REF) == set(llvm_ops.FLOAT_UNARY)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("op", list(FLOAT_UNARY_REF), ids=lambda o: o.value)
def test_float_unary(backend, op: UnaryOpKind, dtype: T.DataType) -> None:
    a, _ = float_inputs(dtype)
    if op in (U.ASIN, U.ACOS):
        a = (a / 8).astype(dtype.np_dtype)
    kernel = elementwise([dtype], dtype, lambda bld, x: bld.unary(op, x))
    got = run(backend, backend.compile(kernel), [a, np.zeros_like(a)])[1]
    with np.errstate(all="ignore"):
        expected = FLOAT_UNARY_REF[op](a).astype(dtype.np_dtype)
    if op in EXACT_UNARY or op == U.RSQRT and dtype == T.f16:
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=TOLERANCE[dtype.name], atol=1e-30)


# ---- integers ----------------------------------------------------------------------------------------------

def wrap(value: int, dtype: T.DataType) -> int:
    return T.wrap_int(value, dtype)


def py_floordiv(a: int, b: int, dtype: T.DataType) -> int:
    return 0 if b == 0 else wrap(a // b, dtype)


def py_mod(a: int, b: int, dtype: T.DataType) -> int:
    return 0 if b == 0 else wrap(a % b, dtype)


def py_pow(a: int, b: int, dtype: T.DataType) -> int:
    if b < 0:
        return 1 if a == 1 else (-1 if b % 2 else 1) if a == -1 else 0
    return wrap(pow(a, b, 1 << dtype.bits), dtype)


INT_BINARY_REF = {
    B.ADD: lambda a, b, t: wrap(a + b, t), B.SUB: lambda a, b, t: wrap(a - b, t),
    B.MUL: lambda a, b, t: wrap(a * b, t), B.FLOORDIV: py_floordiv, B.MOD: py_mod, B.POW: py_pow,
    B.MIN: lambda a, b, t: min(a, b), B.MAX: lambda a, b, t: max(a, b),
    B.BIT_AND: lambda a, b, t: a & b, B.BIT_OR: lambda a, b, t: a | b, B.BIT_XOR: lambda a, b, t: a ^ b,
    B.SHL: lambda a, b, t: wrap(a << (b & (t.bits - 1)), t),
    B.SHR: lambda a, b, t: wrap((a if t.is_signed else a % (1 << t.bits)) >> (b & (t.bits - 1)), t),
    B.CMP_LT: lambda a, b, t: a < b, B.CMP_LE: lambda a, b, t: a <= b, B.CMP_GT: lambda a, b, t: a > b,
    B.CMP_GE: lambda a, b, t: a >= b, B.CMP_EQ: lambda a, b, t: a == b, B.CMP_NE: lambda a, b, t: a != b,
}


def int_inputs(dtype: T.DataType, op: BinaryOpKind) -> tuple[list[int], list[int]]:
    lo = -(1 << (dtype.bits - 1)) if dtype.is_signed else 0
    hi = (1 << (dtype.bits - 1)) - 1 if dtype.is_signed else (1 << dtype.bits) - 1
    edges = sorted({lo, lo + 1, -1 if dtype.is_signed else 1, 0, 1, 2, 3, 7, hi - 1, hi})
    a = [x for x in edges for _ in edges]
    b = [y for _ in edges for y in edges]
    rng = np.random.default_rng(dtype.bits)
    a += [int(v) for v in rng.integers(lo, hi, 100, endpoint=True, dtype=dtype.np_dtype)]
    b += [int(v) for v in rng.integers(-9 if dtype.is_signed else 0, 9, 100)]
    if op == B.POW:
        b = [y % 70 - (5 if dtype.is_signed else 0) for y in b]
    return a, b


@pytest.mark.parametrize("dtype", INTS, ids=str)
@pytest.mark.parametrize("op", list(INT_BINARY_REF), ids=lambda o: o.value)
def test_int_binary(backend, op: BinaryOpKind, dtype: T.DataType) -> None:
    a, b = int_inputs(dtype, op)
    comparison = op.value in ("lt", "le", "gt", "ge", "eq", "ne")
    out_type = T.u1 if comparison else dtype
    kernel = elementwise([dtype, dtype], out_type, lambda bld, x, y: bld.binary(op, x, y))
    arrays = [np.array(a, dtype.np_dtype), np.array(b, dtype.np_dtype), np.zeros(len(a), out_type.np_dtype)]
    got = run(backend, backend.compile(kernel), arrays)[2]
    expected = np.array([INT_BINARY_REF[op](x, y, dtype) for x, y in zip(a, b)], out_type.np_dtype)
    np.testing.assert_array_equal(got, expected)


INT_UNARY_REF = {
    U.NEG: lambda a, t: wrap(-a, t), U.BIT_NOT: lambda a, t: wrap(~a, t),
    U.ABS: lambda a, t: wrap(abs(a), t), U.SIGN: lambda a, t: (a > 0) - (a < 0),
}


@pytest.mark.parametrize("dtype", INTS, ids=str)
@pytest.mark.parametrize("op", list(INT_UNARY_REF), ids=lambda o: o.value)
def test_int_unary(backend, op: UnaryOpKind, dtype: T.DataType) -> None:
    a, _ = int_inputs(dtype, B.ADD)
    kernel = elementwise([dtype], dtype, lambda bld, x: bld.unary(op, x))
    got = run(backend, backend.compile(kernel), [np.array(a, dtype.np_dtype), np.zeros(len(a), dtype.np_dtype)])[1]
    expected = np.array([INT_UNARY_REF[op](x, dtype) for x in a], dtype.np_dtype)
    np.testing.assert_array_equal(got, expected)


def test_int_semantics_edge_cases(backend) -> None:
    """Python // and % (zero divisor gives 0, INT_MIN // -1 wraps), masked shifts: no trap, no UB."""
    cases = [(-7, 2), (7, -2), (-7, -2), (-8, 2), (5, 0), (-5, 0), (0, 0), (-2**31, -1), (-2**31, 1), (3, 33)]
    a = np.array([x for x, _ in cases], np.int32)
    b = np.array([y for _, y in cases], np.int32)
    kernel = elementwise([T.i32, T.i32], T.i32, lambda bld, x, y: bld.binary(B.FLOORDIV, x, y))
    assert run(backend, backend.compile(kernel), [a, b, np.zeros_like(a)])[2].tolist() == \
        [-4, -4, 3, -4, 0, 0, 0, -2**31, -2**31, 0]
    kernel = elementwise([T.i32, T.i32], T.i32, lambda bld, x, y: bld.binary(B.MOD, x, y))
    assert run(backend, backend.compile(kernel), [a, b, np.zeros_like(a)])[2].tolist() == \
        [1, -1, -1, 0, 0, 0, 0, 0, 0, 3]
    kernel = elementwise([T.i32, T.i32], T.i32, lambda bld, x, y: bld.binary(B.SHL, x, y))
    assert run(backend, backend.compile(kernel), [a, b, np.zeros_like(a)])[2][-1] == 6


# ---- bool --------------------------------------------------------------------------------------------------

BOOL_REF = {
    B.BIT_AND: np.logical_and, B.BIT_OR: np.logical_or, B.BIT_XOR: np.logical_xor, B.MIN: np.minimum,
    B.MAX: np.maximum, B.CMP_EQ: np.equal, B.CMP_NE: np.not_equal, B.CMP_LT: np.less,
    B.CMP_LE: np.less_equal, B.CMP_GT: np.greater, B.CMP_GE: np.greater_equal,
}


def test_bool_ops(backend) -> None:
    a = np.array([False, False, True, True])
    b = np.array([False, True, False, True])
    for op, ref in BOOL_REF.items():
        kernel = elementwise([T.u1, T.u1], T.u1, lambda bld, x, y, op=op: bld.binary(op, x, y))
        got = run(backend, backend.compile(kernel), [a, b, np.zeros(4, bool)])[2]
        np.testing.assert_array_equal(got, ref(a, b), err_msg=op.value)
    kernel = elementwise([T.u1], T.u1, lambda bld, x: bld.unary(U.LOGICAL_NOT, x))
    np.testing.assert_array_equal(run(backend, backend.compile(kernel), [a, np.zeros(4, bool)])[1], ~a)


def test_select(backend) -> None:
    kernel = elementwise([T.u1, T.f32, T.i32], T.f32, lambda bld, c, x, y: bld.select(c, x, y))
    c = np.array([True, False, True])
    got = run(backend, backend.compile(kernel), [c, np.array([1.5, 2.5, 3.5]), np.array([7, 8, 9]), np.zeros(3)])[3]
    assert got.tolist() == [1.5, 8.0, 3.5]
    assert math.isfinite(got.sum())


@pytest.mark.parametrize("dtype", list(T.ALL_SCALARS), ids=str)
def test_constants_are_bit_exact(backend, dtype: T.DataType) -> None:
    from ._kernels import ndarray_args, ndarray_slot, serial_task
    if dtype.is_float:
        values = [0.0, -0.0, 0.1, -2.5e-5, 1e-300 if dtype.bits == 64 else 1e-7, 65504.0, math.inf, -math.inf,
                  math.nan, 1 / 3]
    elif dtype.is_bool:
        values = [False, True]
    else:
        info = np.iinfo(dtype.np_dtype)
        values = [int(info.min), int(info.max), 0, 1, int(info.max) // 3]
    out = ndarray_slot("out", dtype)

    def body(b):
        for k, value in enumerate(values):
            b.global_store(b.global_ptr(out, [b.const(k, T.i32)]), b.const(value, dtype))

    kernel = ir.OffloadedKernel("consts", ndarray_args([out]), [out], [serial_task(body)])
    got = run(backend, backend.compile(kernel), [np.zeros(len(values), dtype.np_dtype)])[0]
    with np.errstate(over="ignore"):
        expected = np.array(values, dtype.np_dtype)
    np.testing.assert_array_equal(got.view(f"u{dtype.nbytes}"), expected.view(f"u{dtype.nbytes}"))


def test_op_outside_its_dtypes_is_an_internal_error(backend) -> None:
    from wgkern.errors import InternalCompilerError
    kernel = elementwise([T.i32, T.i32], T.i32, lambda bld, x, y: bld.insert(
        ir.BinaryOp(op=B.DIV, lhs=x, rhs=y, dtype=T.i32)))
    with pytest.raises(InternalCompilerError, match="div"):
        backend.compile(kernel)
