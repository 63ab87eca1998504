"""backends/wgsl/exact.py: which float operands are hidden from the driver's algebra, and that hiding keeps
every bit (the results across arches are tests/backends/test_ieee.py)."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from wgkern.backends.wgsl.exact import hidden_operands
from wgkern.ir import nodes as ir
from wgkern.ir.ops import BinaryOpKind as B, UnaryOpKind as U
from wgkern.lang import types as T


def _arg(index: int, dtype=T.f32) -> ir.ArgLoad:
    return ir.ArgLoad(dtype=dtype, arg_index=index)


def _op(op, lhs, rhs) -> ir.BinaryOp:
    return ir.BinaryOp(dtype=lhs.dtype, op=op, lhs=lhs, rhs=rhs)


def test_the_operands_a_driver_would_rewrite_are_hidden():
    a, b, c = _arg(0), _arg(1), _arg(2)
    zero, tenth = ir.Const(dtype=T.f32, value=0.0), ir.Const(dtype=T.f32, value=0.1)
    neg_a = ir.UnaryOp(dtype=T.f32, op=U.NEG, operand=a)
    for strict in (False, True):
        assert hidden_operands(_op(B.SUB, a, a), strict) == (False, True)               # a - a
        assert hidden_operands(_op(B.ADD, a, neg_a), strict) == (False, True)           # a + (-a)
        assert hidden_operands(_op(B.MUL, zero, a), strict) == (True, False)            # 0 * a
        assert hidden_operands(_op(B.SUB, _op(B.ADD, a, b), b), strict) == (False, True)
        assert hidden_operands(_op(B.SUB, _op(B.MUL, b, a), _op(B.MUL, a, b)), strict) == (False, True)
        assert hidden_operands(_op(B.ADD, _op(B.MUL, a, b), _op(B.MUL, a, c)), strict) == (False, True)
        assert hidden_operands(_op(B.SUB, a, b), strict) == (False, False)              # nothing to rewrite
        assert hidden_operands(_op(B.MUL, _op(B.MUL, a, b), b), strict) == (False, False)
        assert hidden_operands(_op(B.DIV, a, a), strict) == (False, True)               # a / a (NVIDIA: 1)
        assert hidden_operands(_op(B.DIV, a, b), strict) == (False, False)
        ints = _arg(3, T.i32)
        assert hidden_operands(_op(B.SUB, ints, ints), strict) == (False, False)        # integers are exact
    # other constants only without fast math: drivers reassociate them (a + 0.1) + 0.7 -> a + 0.8
    assert hidden_operands(_op(B.ADD, a, tenth), False) == (False, False)
    assert hidden_operands(_op(B.ADD, a, tenth), True) == (False, True)


@pytest.mark.parametrize("dtype", [wk.f16, wk.f32, wk.f64])
def test_hidden_values_keep_every_bit(dtype):
    """Every bit pattern class (signed zeros, subnormals, infinities, NaN) comes back unchanged through hidden
    constants: without fast math both are hidden in (x * 2) * 0.5, which is x for every x here."""
    try:
        wk.init(arch=wk.vulkan, fast_math=False)
    except wk.ArchUnavailableError as exc:
        pytest.skip(str(exc))
    if not wk.runtime.program.current().backend.supports(dtype):
        pytest.skip(f"{dtype!r} unsupported here")
    values = np.array([0.0, -0.0, 1.0, -2.5, np.finfo(dtype.np_dtype).tiny / 2, np.inf, -np.inf, np.nan, 1e-3],
                      dtype.np_dtype)
    x = wk.field(dtype, shape=values.size)
    y = wk.field(dtype, shape=values.size)

    @wk.kernel
    def copy_through():
        for i in x:
            y[i] = (x[i] * 2.0) * 0.5

    x.from_numpy(values)
    copy_through()
    assert "wk_num_workgroups.z - 1u" in copy_through.source()
    got = y.to_numpy()
    # Vulkan leaves NaN payloads and subnormals to the device (NVIDIA returns its own NaN and flushes
    # subnormal results to zero): a NaN stays a NaN, a subnormal its value or a zero of its sign
    nan = np.isnan(values)
    assert np.isnan(got[nan]).all()
    subnormal = (values != 0) & (np.abs(values) < np.finfo(dtype.np_dtype).tiny)
    flushed = subnormal & (got == 0) & (np.signbit(got) == np.signbit(values))
    kept = ~nan & ~flushed
    np.testing.assert_array_equal(got[kept].view(np.uint8), values[kept].view(np.uint8))
