"""Host evaluation of pure values and task bounds (wgkern/ir/host_eval.py) against Python/numpy references."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from wgkern.ir import nodes as ir
from wgkern.ir.builder import IRBuilder
from wgkern.ir.host_eval import (NotFoldable, evaluate_bounds, evaluate_pure, fold_binary, fold_cast, fold_unary,
                                 shapes_by_slot, try_constant)
from wgkern.ir.ops import BinaryOpKind as B
from wgkern.ir.ops import UnaryOpKind as U
from wgkern.lang import types as T

INT_MIN, INT_MAX = -2 ** 31, 2 ** 31 - 1


def _wrap32(value: int) -> int:
    return (value + 2 ** 31) % 2 ** 32 - 2 ** 31


def _py_floordiv(a: int, b: int) -> int:
    return 0 if b == 0 else _wrap32(a // b)


def _py_mod(a: int, b: int) -> int:
    return 0 if b == 0 else _wrap32(a % b)


SAMPLES = [0, 1, -1, 2, -2, 3, -3, 7, -7, 100, -100, INT_MIN, INT_MAX, INT_MIN + 1]


@pytest.mark.parametrize("a", SAMPLES)
@pytest.mark.parametrize("b", SAMPLES)
def test_i32_floordiv_and_mod_are_python_with_zero_divisor_rules(a, b):
    assert fold_binary(B.FLOORDIV, a, b, T.i32) == _py_floordiv(a, b)
    assert fold_binary(B.MOD, a, b, T.i32) == _py_mod(a, b)


def test_named_corner_cases():
    assert fold_binary(B.FLOORDIV, -7, 2, T.i32) == -4
    assert fold_binary(B.MOD, -7, 2, T.i32) == 1
    assert fold_binary(B.MOD, 7, -2, T.i32) == -1
    assert fold_binary(B.FLOORDIV, 5, 0, T.i32) == 0
    assert fold_binary(B.MOD, 5, 0, T.i32) == 0
    assert fold_binary(B.FLOORDIV, INT_MIN, -1, T.i32) == INT_MIN
    assert fold_binary(B.MOD, INT_MIN, -1, T.i32) == 0
    assert fold_binary(B.FLOORDIV, 7, 0, T.u32) == 0


def test_wrapping_arithmetic():
    assert fold_binary(B.ADD, INT_MAX, 1, T.i32) == INT_MIN
    assert fold_binary(B.MUL, 65536, 65536, T.i32) == 0
    assert fold_binary(B.SUB, 0, 1, T.u32) == 2 ** 32 - 1
    assert fold_binary(B.ADD, 255, 1, T.u8) == 0
    assert fold_unary(U.NEG, INT_MIN, T.i32) == INT_MIN
    assert fold_unary(U.ABS, INT_MIN, T.i32) == INT_MIN
    assert fold_unary(U.BIT_NOT, 0, T.u16) == 0xFFFF


def test_random_i32_arithmetic_matches_numpy():
    rng = random.Random(1)
    ops = {B.ADD: np.add, B.SUB: np.subtract, B.MUL: np.multiply, B.BIT_AND: np.bitwise_and,
           B.BIT_OR: np.bitwise_or, B.BIT_XOR: np.bitwise_xor, B.MIN: np.minimum, B.MAX: np.maximum}
    with np.errstate(all="ignore"):
        for _ in range(300):
            a, b = rng.randint(INT_MIN, INT_MAX), rng.randint(INT_MIN, INT_MAX)
            for op, reference in ops.items():
                assert fold_binary(op, a, b, T.i32) == int(reference(np.int32(a), np.int32(b))), (op, a, b)


def test_shifts_mask_the_amount_and_respect_signedness():
    assert fold_binary(B.SHL, 1, 33, T.i32) == 2          # 33 & 31 == 1
    assert fold_binary(B.SHR, -8, 1, T.i32) == -4         # arithmetic
    assert fold_binary(B.SHR, 2 ** 32 - 8, 1, T.u32) == 2 ** 31 - 4   # logical
    assert fold_binary(B.SHL, 1, 31, T.i32) == INT_MIN
    assert fold_binary(B.SHL, 1, -1, T.i32) == INT_MIN    # -1 & 31 == 31


def test_integer_pow():
    assert fold_binary(B.POW, 3, 4, T.i32) == 81
    assert fold_binary(B.POW, 2, 31, T.i32) == INT_MIN
    assert fold_binary(B.POW, 0, 0, T.i32) == 1
    assert fold_binary(B.POW, 2, -1, T.i32) == 0
    assert fold_binary(B.POW, 1, -5, T.i32) == 1
    assert fold_binary(B.POW, -1, -3, T.i32) == -1
    assert fold_binary(B.POW, -1, -4, T.i32) == 1


def test_bool_ops_and_comparisons():
    assert fold_binary(B.BIT_AND, True, False, T.u1) is False
    assert fold_binary(B.BIT_XOR, True, True, T.u1) is False
    assert fold_binary(B.CMP_LT, -1, 0, T.i32) is True
    assert fold_unary(U.LOGICAL_NOT, True, T.u1) is False
    with pytest.raises(NotFoldable):
        fold_binary(B.ADD, True, True, T.u1)


def test_float_ops_round_to_the_dtype():
    third = fold_binary(B.DIV, np.float32(1), np.float32(3), T.f32)
    assert isinstance(third, np.float32) and third == np.float32(1) / np.float32(3)
    assert fold_binary(B.FLOORDIV, -7.0, 2.0, T.f32) == -4.0
    assert fold_binary(B.MIN, float("nan"), 1.0, T.f32) == 1.0        # a NaN operand is ignored (minNum)
    assert fold_binary(B.MAX, 1.0, float("nan"), T.f64) == 1.0
    assert math.isnan(fold_binary(B.MAX, float("nan"), float("nan"), T.f64))
    assert fold_unary(U.ROUND, 2.5, T.f32) == 3.0          # half away from zero, as Taichi's round
    assert fold_unary(U.ROUND, -3.5, T.f32) == -4.0
    assert fold_unary(U.SIGN, -0.0, T.f32) == 0.0
    assert math.isnan(fold_unary(U.SIGN, float("nan"), T.f32))
    assert fold_binary(B.DIV, 1.0, 0.0, T.f32) == np.inf


def test_inexact_float_ops_are_not_folded_but_can_be_evaluated():
    with pytest.raises(NotFoldable):
        fold_unary(U.SIN, 1.0, T.f32)
    with pytest.raises(NotFoldable):
        fold_binary(B.MOD, 5.0, 3.0, T.f32)
    assert fold_unary(U.SIN, 0.0, T.f32, exact_only=False) == 0.0
    assert fold_binary(B.MOD, -1.0, 3.0, T.f32, exact_only=False) == 2.0


@pytest.mark.parametrize("value, dst, expected", [
    (3.9, T.i32, 3), (-3.9, T.i32, -3), (1e20, T.i32, INT_MAX), (-1e20, T.i32, INT_MIN),
    (float("nan"), T.i32, 0), (float("inf"), T.u8, 255), (-5.0, T.u32, 0), (300.0, T.u8, 255),
])
def test_float_to_int_truncates_and_saturates(value, dst, expected):
    assert fold_cast(value, T.f32, dst) == expected


def test_other_casts():
    assert fold_cast(-1, T.i32, T.u32) == 2 ** 32 - 1
    assert fold_cast(2 ** 32 - 1, T.u32, T.i64) == 2 ** 32 - 1       # zero-extends by the source's sign
    assert fold_cast(-1, T.i8, T.u16) == 0xFFFF                      # sign-extends then wraps
    assert fold_cast(0.0, T.f32, T.u1) is False
    assert fold_cast(float("nan"), T.f32, T.u1) is True
    assert fold_cast(True, T.u1, T.f32) == 1.0
    assert fold_cast(1.0, T.f32, T.i32, bitcast=True) == 0x3F800000
    assert fold_cast(0x3F800000, T.i32, T.f32, bitcast=True) == 1.0
    assert fold_cast(2 ** 24 + 1, T.i32, T.f32) == np.float32(2 ** 24)
    with pytest.raises(NotFoldable):
        fold_cast(2 ** 60 + 1, T.i64, T.f32)      # would round twice


def test_evaluate_pure_with_arguments_and_shapes():
    nd = ir.ContainerSlot(name="a", kind="ndarray", dtype=T.f32, ndim=2, arg_index=1)
    b = IRBuilder()
    n = b.insert(ir.ArgLoad(arg_index=0, dtype=T.i32))
    rows = b.insert(ir.ShapeOf(container=nd, axis=0, dtype=T.i32))
    total = b.binary(B.FLOORDIV, b.mul(n, rows), b.const(-4, T.i32))
    assert evaluate_pure(total, [10, None], {nd: (6, 3)}) == (10 * 6) // -4
    with pytest.raises(NotFoldable):
        evaluate_pure(total, [10, None], {})
    assert try_constant(total) is None
    assert try_constant(b.add(b.const(2, T.i32), b.const(3, T.i32))) == 5


def _range_task(bounds: ir.Block, begin: ir.Stmt, end: ir.Stmt) -> ir.Task:
    loop = ir.RangeFor(begin=begin, end=end, body=ir.Block(), parallel=True)
    return ir.Task("t", "range", bounds, loop, loop.body)


def test_evaluate_bounds_and_shapes_by_slot():
    field = ir.ContainerSlot(name="f", kind="field", dtype=T.f32, ndim=1, shape=(16,))
    nd = ir.ContainerSlot(name="a", kind="ndarray", dtype=T.f32, ndim=1, arg_index=0)
    b = IRBuilder()
    begin = b.insert(ir.ShapeOf(container=field, axis=0, dtype=T.i32))
    end = b.add(b.insert(ir.ShapeOf(container=nd, axis=0, dtype=T.i32)), begin)
    task = _range_task(b.block, begin, end)
    assert evaluate_bounds(task, [None], shapes_by_slot([field, nd], [(16,), (5,)])) == (16, 21)


def test_evaluate_bounds_reading_memory_gives_none():
    n = ir.ContainerSlot(name="n", kind="field", dtype=T.i32, ndim=0, shape=())
    b = IRBuilder()
    begin = b.const(0, T.i32)
    end = b.global_load(b.global_ptr(n, []))
    assert evaluate_bounds(_range_task(b.block, begin, end), [], {}) is None
