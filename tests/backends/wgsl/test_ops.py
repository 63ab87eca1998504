"""Every unary and binary op on every dtype, WGSL on lavapipe against the reference interpreter (the semantics
of docs/internals.md, which the CPU backend is tested against too), plus the op-table coverage tests."""
from __future__ import annotations

import numpy as np
import pytest

from wgkern.backends.wgsl import ops as wops
from wgkern.ir import nodes as ir
from wgkern.ir.ops import (BOOL_ONLY_UNARY, COMPARISONS, FLOAT_ONLY_BINARY, FLOAT_ONLY_UNARY, INT_ONLY_BINARY,
                           INT_ONLY_UNARY, AtomicOpKind, BinaryOpKind, UnaryOpKind)
from wgkern.lang import types as T

from ._kernels import interpret, kernel, range_task, run, slot

# Ops whose float results are not correctly rounded on every device (Vulkan allows ulps of error).
APPROX_UNARY = frozenset(FLOAT_ONLY_UNARY - {UnaryOpKind.FLOOR, UnaryOpKind.CEIL, UnaryOpKind.ROUND,
                                             UnaryOpKind.SQRT})
APPROX_BINARY = frozenset({BinaryOpKind.DIV, BinaryOpKind.FLOORDIV, BinaryOpKind.MOD, BinaryOpKind.POW,
                           BinaryOpKind.ATAN2})


def test_tables_cover_enums() -> None:
    assert set(wops.WGSL_UNARY) == set(UnaryOpKind)
    assert set(wops.WGSL_BINARY) == set(BinaryOpKind)
    # MUL has no builtin (a compare-exchange loop); CAS has its own helper; EXCHANGE never combines
    assert set(wops.WGSL_ATOMIC_BUILTIN) == set(AtomicOpKind) - {AtomicOpKind.MUL, AtomicOpKind.CAS}
    assert set(wops.WGSL_ATOMIC_COMBINE) == set(AtomicOpKind) - {AtomicOpKind.EXCHANGE, AtomicOpKind.CAS}


def test_every_valid_op_dtype_pair_has_a_spelling() -> None:
    for dtype in T.ALL_SCALARS:
        for op in unary_ops(dtype):
            assert wops.lookup(wops.WGSL_UNARY[op], dtype) is not None, (op, dtype)
        for op in binary_ops(dtype):
            assert wops.lookup(wops.WGSL_BINARY[op], dtype) is not None, (op, dtype)


def unary_ops(dtype: T.DataType) -> list[UnaryOpKind]:
    if dtype.is_bool:
        return [UnaryOpKind.LOGICAL_NOT]
    if dtype.is_float:
        return [op for op in UnaryOpKind if op not in INT_ONLY_UNARY | BOOL_ONLY_UNARY]
    return [op for op in UnaryOpKind if op not in FLOAT_ONLY_UNARY | BOOL_ONLY_UNARY]


def binary_ops(dtype: T.DataType) -> list[BinaryOpKind]:
    if dtype.is_bool:
        return [BinaryOpKind.BIT_AND, BinaryOpKind.BIT_OR, BinaryOpKind.BIT_XOR, BinaryOpKind.MIN,
                BinaryOpKind.MAX, BinaryOpKind.ADD, BinaryOpKind.SUB, BinaryOpKind.MUL, *sorted(
                    COMPARISONS, key=lambda o: o.value)]
    if dtype.is_float:
        return [op for op in BinaryOpKind if op not in INT_ONLY_BINARY]
    return [op for op in BinaryOpKind if op not in FLOAT_ONLY_BINARY]


def edge_values(dtype: T.DataType) -> np.ndarray:
    """Values that exercise every corner: zero, signs, extremes, NaN/inf for floats."""
    if dtype.is_bool:
        return np.array([False, True])
    if dtype.is_float:
        values = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 3.7, -3.7, 7.0, -8.0, 1e4, -1e-3, 0.25,
                  np.inf, -np.inf, np.nan]
        return np.array(values, dtype=dtype.np_dtype)
    info = np.iinfo(dtype.np_dtype)
    values = [0, 1, 2, 3, 7, 13, dtype.bits - 1, dtype.bits + 1, 100, info.max, info.max - 1]
    if dtype.is_signed:
        values += [-1, -2, -3, -7, -13, info.min, info.min + 1, -100]
    return np.array([int(v) for v in values], dtype=object).astype(dtype.np_dtype)


def pairs(dtype: T.DataType) -> tuple[np.ndarray, np.ndarray]:
    values = edge_values(dtype)
    a, b = np.meshgrid(values, values, indexing="ij")
    return a.reshape(-1), b.reshape(-1)


def _load(b, container, i):
    return b.global_load(b.global_ptr(container, [i]))


def binary_kernel(dtype: T.DataType, n: int) -> tuple[ir.OffloadedKernel, list[BinaryOpKind], list[BinaryOpKind]]:
    ops = binary_ops(dtype)
    arith = [op for op in ops if op not in COMPARISONS]
    compares = [op for op in ops if op in COMPARISONS]
    a, b_ = slot("a", dtype, (n,)), slot("b", dtype, (n,))
    out = slot("out", dtype, (len(arith), n))
    cmp = slot("cmp", T.u1, (len(compares), n))

    def body(b, i):
        x, y = _load(b, a, i), _load(b, b_, i)
        for row, op in enumerate(arith):
            value = b.insert(ir.BinaryOp(op=op, lhs=x, rhs=y, dtype=dtype))
            b.global_store(b.global_ptr(out, [b.const(row, T.i32), i]), value)
        for row, op in enumerate(compares):
            value = b.insert(ir.BinaryOp(op=op, lhs=x, rhs=y, dtype=T.u1))
            b.global_store(b.global_ptr(cmp, [b.const(row, T.i32), i]), value)

    task = range_task("binary", lambda b: b.const(0, T.i32), lambda b: b.const(n, T.i32), body)
    return kernel(f"binary_{dtype.name}", [a, b_, out, cmp], [task]), arith, compares


def unary_kernel(dtype: T.DataType, n: int) -> tuple[ir.OffloadedKernel, list[UnaryOpKind]]:
    ops = unary_ops(dtype)
    a = slot("a", dtype, (n,))
    out = slot("out", dtype, (len(ops), n))

    def body(b, i):
        x = _load(b, a, i)
        for row, op in enumerate(ops):
            value = b.insert(ir.UnaryOp(op=op, operand=x, dtype=dtype))
            b.global_store(b.global_ptr(out, [b.const(row, T.i32), i]), value)

    task = range_task("unary", lambda b: b.const(0, T.i32), lambda b: b.const(n, T.i32), body)
    return kernel(f"unary_{dtype.name}", [a, out], [task]), ops


def assert_matches(got: np.ndarray, want: np.ndarray, dtype: T.DataType, approx: bool, what: str) -> None:
    if not dtype.is_float:
        bad = np.nonzero(got != want)[0]
        assert bad.size == 0, f"{what}: first mismatches at {bad[:5]}: got {got[bad[:5]]}, want {want[bad[:5]]}"
        return
    same_nan = np.isnan(got) == np.isnan(want)
    assert same_nan.all(), f"{what}: NaN mismatch at {np.nonzero(~same_nan)[0][:5]}: got {got[~same_nan][:5]}, " \
                           f"want {want[~same_nan][:5]}"
    finite = ~np.isnan(want)
    if approx:
        rtol = {16: 2e-3, 32: 4e-6, 64: 1e-13}[dtype.bits]
        np.testing.assert_allclose(got[finite], want[finite], rtol=rtol, atol=rtol, err_msg=what)
    else:
        np.testing.assert_array_equal(got[finite], want[finite], err_msg=what)


def _check(got: np.ndarray, want: np.ndarray, dtype: T.DataType, approx: bool, what: str) -> str:
    try:
        assert_matches(got, want, dtype, approx, what)
    except AssertionError as exc:
        detail = " ".join(line.strip() for line in str(exc).strip().splitlines() if "ACTUAL" in line
                          and "array" not in line)
        return f"{what}: {detail or str(exc).strip().splitlines()[0]}"[:400]
    return ""


def _host_inputs(dtype: T.DataType, values: np.ndarray) -> np.ndarray:
    return values.astype(dtype.np_dtype)


@pytest.mark.parametrize("dtype", T.ALL_SCALARS, ids=lambda d: d.name)
def test_binary_ops(backend, dtype: T.DataType) -> None:
    x, y = pairs(dtype)
    n = x.size
    kernel_ir, arith, compares = binary_kernel(dtype, n)
    arrays = [x, y, np.zeros((len(arith), n), dtype.np_dtype), np.zeros((len(compares), n), np.bool_)]
    with np.errstate(all="ignore"):
        want = interpret(kernel_ir, arrays)
    got = run(backend, kernel_ir, arrays)
    if dtype.is_float:   # numpy's power(x, 0.5) is sqrt(x): NaN for -inf where C99 (and we) give +inf
        quirk = (x == -np.inf) & (y == 0.5)
        want[2][arith.index(BinaryOpKind.POW)][quirk] = np.inf
        # float `%` is a - b * floor(a / b): a device may fuse it into an fma (docs/internals.md), which moves
        # the result by an ulp of max(|a|, |b|); compare it against that scale
        row = arith.index(BinaryOpKind.MOD)
        with np.errstate(all="ignore"):
            scale = np.maximum(np.abs(x), np.abs(y)).astype(np.float64) * np.finfo(dtype.np_dtype).eps * 4
            close = np.abs(got[2][row].astype(np.float64) - want[2][row]) <= scale
        got[2][row][close] = want[2][row][close]
    failures = [_check(got[2][row], want[2][row], dtype, op in APPROX_BINARY, f"{op} {dtype}")
                for row, op in enumerate(arith)]
    failures += [_check(got[3][row], want[3][row], T.u1, False, f"{op} {dtype}") for row, op in enumerate(compares)]
    failures = [f for f in failures if f]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("dtype", [T.i8, T.i16, T.i32, T.i64], ids=lambda d: d.name)
def test_floor_division_by_a_power_of_two_is_a_shift(backend, dtype: T.DataType) -> None:
    """x // 2^k and x % 2^k by a constant are `>>` and `&` (Python's floor semantics exactly, negatives too) for
    integers of at most 32 bits; other divisors and 64-bit integers keep the helpers."""
    values = edge_values(dtype)
    divisors = [2, 8, 64, 6]
    a = slot("a", dtype, (values.size,))
    out = slot("out", dtype, (2 * len(divisors), values.size))

    def body(b, i):
        x = _load(b, a, i)
        for row, (op, divisor) in enumerate((op, d) for d in divisors for op in (BinaryOpKind.FLOORDIV,
                                                                               BinaryOpKind.MOD)):
            value = b.insert(ir.BinaryOp(op=op, lhs=x, rhs=b.const(divisor, dtype), dtype=dtype))
            b.global_store(b.global_ptr(out, [b.const(row, T.i32), i]), value)

    task = range_task("pow2", lambda b: b.const(0, T.i32), lambda b: b.const(values.size, T.i32), body)
    kernel_ir = kernel(f"pow2_{dtype.name}", [a, out], [task])
    arrays = [values, np.zeros((2 * len(divisors), values.size), dtype.np_dtype)]
    want = interpret(kernel_ir, arrays)
    got = run(backend, kernel_ir, arrays)
    np.testing.assert_array_equal(got[1], want[1])
    source = backend.compile(kernel_ir).source()
    body = source[source.index("fn main"):]
    helper_calls = body.count("wk_floordiv_") + body.count("wk_mod_")
    if dtype.bits <= 32:
        assert ">> 3u" in body and "& 63" in body
    assert helper_calls == (2 if dtype.bits <= 32 else 8)     # only the divisor 6 there


@pytest.mark.parametrize("dtype", T.ALL_SCALARS, ids=lambda d: d.name)
def test_unary_ops(backend, dtype: T.DataType) -> None:
    x = edge_values(dtype)
    if dtype.is_float:    # add in-domain values for the inverse trig and logs
        x = np.concatenate([x, np.linspace(-0.99, 0.99, 9, dtype=dtype.np_dtype)])
    kernel_ir, ops = unary_kernel(dtype, x.size)
    arrays = [x, np.zeros((len(ops), x.size), dtype.np_dtype)]
    with np.errstate(all="ignore"):
        want = interpret(kernel_ir, arrays)
    got = run(backend, kernel_ir, arrays)
    failures = [_check(got[1][row], want[1][row], dtype, op in APPROX_UNARY, f"{op} {dtype}")
                for row, op in enumerate(ops)]
    failures = [f for f in failures if f]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("dtype", [T.f32, T.f64], ids=lambda d: d.name)
def test_division_is_correctly_rounded(backend, dtype: T.DataType) -> None:
    """`/` equals numpy's correctly rounded quotient bit for bit: through the residual correction on drivers
    that may be ulps off, or the driver's own division where the backend knows it is exact (llvmpipe)."""
    if dtype == T.f64 and "shader-f64" not in backend.features:
        pytest.skip("no shader-f64 on this adapter")
    rng = np.random.default_rng(5)
    n = 1 << 16
    x = (rng.uniform(-1, 1, n) * 10.0 ** rng.integers(-6, 6, n)).astype(dtype.np_dtype)
    y = (rng.uniform(-1, 1, n) * 10.0 ** rng.integers(-6, 6, n)).astype(dtype.np_dtype)
    a, b_, out = slot("a", dtype, (n,)), slot("b", dtype, (n,)), slot("out", dtype, (n,))

    def body(b, i):
        b.global_store(b.global_ptr(out, [i]), b.insert(ir.BinaryOp(op=BinaryOpKind.DIV, lhs=_load(b, a, i),
                                                                    rhs=_load(b, b_, i), dtype=dtype)))
    k = kernel("div", [a, b_, out], [range_task("div", lambda b: b.const(0, T.i32), lambda b: b.const(n, T.i32),
                                                body)])
    got = run(backend, k, [x, y, np.zeros(n, dtype.np_dtype)])[2]
    np.testing.assert_array_equal(got, x / y)
