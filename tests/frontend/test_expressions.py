"""Literals, promotion, operators, casts and math intrinsics."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tests.frontend.helpers import FakeField, build, of_type, run, wk
from wgkern.ir import nodes as ir
from wgkern.ir.ops import AtomicOpKind, BinaryOpKind, UnaryOpKind
from wgkern.lang import types as T
from wgkern import launch as launch_module
from wgkern.ir.visitor import walk

out_f = FakeField(wk.f32, 8, "out_f")
out_i = FakeField(wk.i32, 8, "out_i")
out_d = FakeField(wk.f64, 8, "out_d")


def test_literals_default_to_i32_and_f32():
    @wk.kernel
    def k():
        a = 1
        b = 2.0
        c = True
        out_f[0] = a + b + c

    kir = build(k)
    allocas = {a.name: a.dtype for a in of_type(kir, ir.Alloca)}
    assert allocas == {"a": T.i32, "b": T.f32, "c": T.u1}


def test_promotion_int_float_and_widths():
    @wk.kernel
    def k(a: wk.i32, b: wk.f32, c: wk.i64, d: wk.f64, e: wk.u32):
        out_d[0] = a + b
        out_d[1] = a + c
        out_d[2] = b + d
        out_d[3] = a + e

    kir = build(k, 0, 0, 0, 0, 0)
    adds = [s for s in of_type(kir, ir.BinaryOp) if s.op is BinaryOpKind.ADD]
    assert [s.dtype for s in adds] == [T.f32, T.i64, T.f64, T.u32]


def test_true_division_of_ints_is_float():
    @wk.kernel
    def k(a: wk.i32, b: wk.i32):
        out_f[0] = a / b

    kir = build(k, 0, 0)
    (div,) = [s for s in of_type(kir, ir.BinaryOp) if s.op is BinaryOpKind.DIV]
    assert div.dtype == T.f32 and div.lhs.dtype == T.f32 and div.rhs.dtype == T.f32


@pytest.mark.parametrize("kind", [
    BinaryOpKind.FLOORDIV, BinaryOpKind.MOD, BinaryOpKind.POW, BinaryOpKind.BIT_AND, BinaryOpKind.BIT_OR,
    BinaryOpKind.BIT_XOR, BinaryOpKind.SHL, BinaryOpKind.SHR,
])
def test_integer_operators(kind):
    kernels = {
        BinaryOpKind.FLOORDIV: k_floordiv, BinaryOpKind.MOD: k_mod, BinaryOpKind.POW: k_pow,
        BinaryOpKind.BIT_AND: k_and, BinaryOpKind.BIT_OR: k_or, BinaryOpKind.BIT_XOR: k_xor,
        BinaryOpKind.SHL: k_shl, BinaryOpKind.SHR: k_shr,
    }
    kir = build(kernels[kind], 0, 0)
    ops = [s for s in of_type(kir, ir.BinaryOp) if s.op is kind]
    assert len(ops) == 1 and ops[0].dtype == T.i32


@wk.kernel
def k_floordiv(a: wk.i32, b: wk.i32):
    out_i[0] = a // b


@wk.kernel
def k_mod(a: wk.i32, b: wk.i32):
    out_i[0] = a % b


@wk.kernel
def k_pow(a: wk.i32, b: wk.i32):
    out_i[0] = a ** b


@wk.kernel
def k_and(a: wk.i32, b: wk.i32):
    out_i[0] = a & b


@wk.kernel
def k_or(a: wk.i32, b: wk.i32):
    out_i[0] = a | b


@wk.kernel
def k_xor(a: wk.i32, b: wk.i32):
    out_i[0] = a ^ b


@wk.kernel
def k_shl(a: wk.i32, b: wk.i32):
    out_i[0] = a << b


@wk.kernel
def k_shr(a: wk.i32, b: wk.i32):
    out_i[0] = a >> b


def test_python_constants_fold():
    @wk.kernel
    def k():
        out_i[0] = 7 // 2 + 2 ** 3

    kir = build(k)
    assert not of_type(kir, ir.BinaryOp)
    (store,) = of_type(kir, ir.GlobalStore)
    assert isinstance(store.value, ir.Const) and store.value.value == 11


def test_unary_operators():
    @wk.kernel
    def k(a: wk.i32, b: wk.f32):
        out_i[0] = -a
        out_i[1] = ~a
        out_i[2] = not a
        out_f[0] = +b

    kir = build(k, 0, 0)
    ops = [s.op for s in of_type(kir, ir.UnaryOp)]
    assert ops == [UnaryOpKind.NEG, UnaryOpKind.BIT_NOT, UnaryOpKind.LOGICAL_NOT]


def test_comparison_chain_is_anded():
    @wk.kernel
    def k(a: wk.f32, b: wk.f32, c: wk.f32):
        out_i[0] = a < b < c

    kir = build(k, 0, 0, 0)
    cmps = [s for s in of_type(kir, ir.BinaryOp) if s.op is BinaryOpKind.CMP_LT]
    ands = [s for s in of_type(kir, ir.BinaryOp) if s.op is BinaryOpKind.BIT_AND]
    assert len(cmps) == 2 and all(c.dtype == T.u1 for c in cmps)
    assert len(ands) == 1 and ands[0].dtype == T.u1
    out = run(kir, scalars=[1.0, 2.0, 3.0])
    assert out["out_i"][0] == 1
    out = run(kir, scalars=[1.0, 3.0, 2.0])
    assert out["out_i"][0] == 0


def test_and_or_not_on_runtime_values():
    @wk.kernel
    def k(a: wk.i32, b: wk.f32):
        out_i[0] = a and b
        out_i[1] = a or b > 1.0
        out_i[2] = not (a > 0)

    kir = build(k, 0, 0)
    bitops = [s for s in of_type(kir, ir.BinaryOp) if s.op in (BinaryOpKind.BIT_AND, BinaryOpKind.BIT_OR)]
    assert all(s.lhs.dtype == T.u1 and s.rhs.dtype == T.u1 for s in bitops)
    out = run(kir, scalars=[2, 0.0])
    assert list(out["out_i"][:3]) == [0, 1, 0]


def test_static_and_short_circuits():
    @wk.kernel
    def k(a: wk.i32):
        out_i[0] = False and a
        out_i[1] = True or a

    kir = build(k, 0)
    assert not [s for s in of_type(kir, ir.BinaryOp)]


def test_ternary_is_select():
    @wk.kernel
    def k(a: wk.f32):
        out_f[0] = 1.0 if a > 0 else 2

    kir = build(k, 0)
    (sel,) = of_type(kir, ir.TernarySelect)
    assert sel.dtype == T.f32 and sel.cond.dtype == T.u1


def test_casts():
    @wk.kernel
    def k(a: wk.f32):
        out_i[0] = wk.cast(a, wk.i32)
        out_i[1] = int(a)
        out_f[0] = float(out_i[2])
        out_d[0] = wk.f64(a)
        out_d[1] = np.float64(a)

    kir = build(k, 0)
    casts = [s.dtype for s in of_type(kir, ir.Cast)]
    assert casts[:5] == [T.i32, T.i32, T.f32, T.f64, T.f64]


@pytest.mark.parametrize("fn, op", [
    (wk.sin, UnaryOpKind.SIN), (wk.cos, UnaryOpKind.COS), (wk.tan, UnaryOpKind.TAN),
    (wk.asin, UnaryOpKind.ASIN), (wk.acos, UnaryOpKind.ACOS), (wk.atan, UnaryOpKind.ATAN),
    (wk.sinh, UnaryOpKind.SINH), (wk.cosh, UnaryOpKind.COSH), (wk.tanh, UnaryOpKind.TANH),
    (wk.exp, UnaryOpKind.EXP), (wk.log, UnaryOpKind.LOG), (wk.log2, UnaryOpKind.LOG2),
    (wk.sqrt, UnaryOpKind.SQRT), (wk.rsqrt, UnaryOpKind.RSQRT), (wk.abs, UnaryOpKind.ABS),
    (wk.floor, UnaryOpKind.FLOOR), (wk.ceil, UnaryOpKind.CEIL), (wk.round, UnaryOpKind.ROUND),
    (wk.sign, UnaryOpKind.SIGN), (math.sin, UnaryOpKind.SIN), (abs, UnaryOpKind.ABS),
])
def test_unary_math(fn, op):
    @wk.kernel
    def k(a: wk.f32):
        out_f[0] = fn(a)

    kir = build(k, 0)
    (u,) = of_type(kir, ir.UnaryOp)
    assert u.op is op and u.dtype == T.f32


def test_float_only_math_casts_int_argument():
    @wk.kernel
    def k(a: wk.i32):
        out_f[0] = wk.sqrt(a)
        out_i[0] = wk.abs(a)
        out_i[1] = wk.floor(a * 0.5, wk.i32)

    kir = build(k, 0)
    sqrt, abs_, floor = of_type(kir, ir.UnaryOp)
    assert sqrt.dtype == T.f32 and isinstance(sqrt.operand, ir.Cast)
    assert abs_.dtype == T.i32
    assert floor.dtype == T.f32
    assert any(isinstance(s, ir.Cast) and s.operand is floor and s.dtype == T.i32 for s in of_type(kir, ir.Cast))


def test_binary_math_and_reductions():
    @wk.kernel
    def k(a: wk.f32, b: wk.f32, c: wk.i32):
        out_f[0] = wk.atan2(a, b)
        out_f[1] = wk.pow(a, 2)
        out_f[2] = wk.min(a, b, 3.0)
        out_f[3] = max(a, c)
        out_f[4] = wk.clamp(a, 0.0, 1.0)

    kir = build(k, 0, 0, 0)
    ops = [s.op for s in of_type(kir, ir.BinaryOp)]
    assert ops == [BinaryOpKind.ATAN2, BinaryOpKind.POW, BinaryOpKind.MIN, BinaryOpKind.MIN, BinaryOpKind.MAX,
                   BinaryOpKind.MAX, BinaryOpKind.MIN]


def test_python_math_module_constants_and_functions():
    @wk.kernel
    def k(a: wk.f32):
        out_f[0] = math.pi * a + math.sqrt(4.0)

    kir = build(k, 0)
    consts = [s.value for s in of_type(kir, ir.Const) if s.dtype == T.f32]
    assert math.pi in consts and 2.0 in consts
    assert not [s for s in of_type(kir, ir.UnaryOp)]


def test_select_and_random():
    @wk.kernel
    def k(a: wk.f32):
        out_f[0] = wk.select(a > 0, a, 0)
        out_f[1] = wk.random()
        out_i[0] = wk.random(wk.i32)
        out_f[2] = wk.random(dtype=wk.f32)

    kir = build(k, 0)
    assert len(of_type(kir, ir.TernarySelect)) == 1
    randoms = of_type(kir, ir.RandomValue)
    assert [r.dtype for r in randoms] == [T.f32, T.i32, T.f32]
    assert len({r.site for r in randoms}) == 3


def test_global_store_casts_to_element_dtype():
    @wk.kernel
    def k(a: wk.f64):
        out_i[0] = a

    kir = build(k, 0)
    (store,) = of_type(kir, ir.GlobalStore)
    assert store.value.dtype == T.i32


def test_augmented_assign_on_global_is_atomic():
    @wk.kernel
    def k(v: wk.f32):
        out_f[0] += v
        out_f[1] -= v
        out_i[0] |= 3
        out_i[1] &= 3
        out_i[2] ^= 3
        out_f[2] *= v

    kir = build(k, 0)
    atomics = [s.op for s in of_type(kir, ir.AtomicOp)]
    assert atomics == [AtomicOpKind.ADD, AtomicOpKind.SUB, AtomicOpKind.OR, AtomicOpKind.AND, AtomicOpKind.XOR]
    muls = [s for s in of_type(kir, ir.BinaryOp) if s.op is BinaryOpKind.MUL]
    assert len(muls) == 1 and len(of_type(kir, ir.GlobalStore)) == 1


def test_atomic_functions_return_old_value():
    @wk.kernel
    def k(v: wk.i32):
        old = wk.atomic_add(out_i[0], v)
        out_i[1] = old
        wk.atomic_max(out_i[2], v)
        wk.atomic_min(out_f[0], 1.5)

    kir = build(k, 0)
    atomics = of_type(kir, ir.AtomicOp)
    assert [a.op for a in atomics] == [AtomicOpKind.ADD, AtomicOpKind.MAX, AtomicOpKind.MIN]
    out = run(kir, {"out_i": np.array([5, 0, 0, 0, 0, 0, 0, 0], np.int32)}, [3])
    assert list(out["out_i"][:3]) == [8, 5, 3]


def test_local_variable_dtype_is_fixed_at_first_assignment():
    @wk.kernel
    def k(a: wk.f32):
        x = 1
        x = a
        x += 0.5
        out_i[0] = x

    kir = build(k, 0)
    (alloca,) = of_type(kir, ir.Alloca)
    assert alloca.dtype == T.i32
    assert all(s.value.dtype == T.i32 for s in of_type(kir, ir.LocalStore))
    out = run(kir, scalars=[2.7])
    assert out["out_i"][0] == 2


def test_annotated_local():
    @wk.kernel
    def k():
        x: wk.f64 = 1
        y: wk.i16
        out_d[0] = x + y

    kir = build(k)
    assert [a.dtype for a in of_type(kir, ir.Alloca)] == [T.f64, T.i16]


def test_annotating_a_variable_again_with_another_type_is_a_compile_error():
    @wk.kernel
    def same():
        x: wk.f64 = 1
        x: wk.f64 = 2.5
        out_d[0] = x

    assert run(build(same))["out_d"][0] == 2.5

    @wk.kernel
    def other():
        d: wk.i32 = 2
        d: wk.f32 = 2.0
        out_d[0] = d

    with pytest.raises(wk.CompileError, match="variable 'd' is wk.i32; it cannot be annotated again as wk.f32"):
        build(other)


def test_tuple_swap():
    @wk.kernel
    def k():
        a = 1
        b = 2
        a, b = b, a
        out_i[0] = a
        out_i[1] = b

    out = run(build(k))
    assert list(out["out_i"][:2]) == [2, 1]


def test_integer_semantics_through_interpreter():
    @wk.kernel
    def k(a: wk.i32, b: wk.i32):
        out_i[0] = a // b
        out_i[1] = a % b
        out_f[0] = a / b
        out_i[2] = a ** 2

    out = run(build(k, 0, 0), scalars=[-7, 2])
    assert list(out["out_i"][:3]) == [-4, 1, 49]
    assert out["out_f"][0] == pytest.approx(-3.5)


def test_small_integer_powers_become_multiplications():
    @wk.kernel
    def k(a: wk.f32, n: wk.i32):
        out_f[0] = a ** 2
        out_f[1] = a ** -3
        out_f[2] = a ** 0
        out_i[0] = n ** 5
        out_f[3] = a ** 2.5
        out_i[1] = n ** -1

    kir = build(k, 0, 0)
    pows = [s for s in of_type(kir, ir.BinaryOp) if s.op is BinaryOpKind.POW]
    assert len(pows) == 2          # the float exponent and the negative int exponent on an int base
    result = run(kir, scalars=[-2.0, 3])
    assert result["out_f"][:3].tolist() == [4.0, -0.125, 1.0]
    assert result["out_i"][:2].tolist() == [243, 0]


def test_assert_is_dropped():
    @wk.kernel
    def k(a: wk.f32):
        assert a > 0
        out_f[0] = a

    assert len(of_type(build(k, 0), ir.GlobalStore)) == 1


def test_python_round_and_math_floor_give_ints():
    @wk.kernel
    def k(a: wk.f32):
        out_i[0] = round(a) * 2
        out_f[0] = math.floor(a) / 2

    kir = build(k, 0)
    result = run(kir, scalars=[2.5])
    assert result["out_i"][0] == 6 and result["out_f"][0] == 1.0


def test_global_swap_reads_before_writing():
    @wk.kernel
    def k():
        out_i[0], out_i[1] = out_i[1], out_i[0]

    result = run(build(k), {"out_i": np.arange(8, dtype=np.int32)})
    assert result["out_i"][:2].tolist() == [1, 0]


@wk.func
def overwrite_first() -> wk.i32:
    out_i[0] = 100
    return 1


def test_operand_read_before_a_later_call_writes_it():
    @wk.kernel
    def k():
        out_i[2] = out_i[0] + overwrite_first()

    result = run(build(k), {"out_i": np.arange(8, dtype=np.int32)})
    assert result["out_i"][2] == 1 and result["out_i"][0] == 100


@pytest.mark.parametrize("short_circuit", [False, True])
def test_short_circuit_operators_option(arch, short_circuit):
    wk.reset()
    wk.init(arch=arch, short_circuit_operators=short_circuit)
    calls = wk.field(wk.i32, shape=())

    @wk.func
    def counted(value: wk.i32) -> wk.u1:
        wk.atomic_add(calls[None], 1)
        return value > 0

    @wk.kernel
    def both(a: wk.i32, b: wk.i32) -> wk.i32:
        first = a > 0 and counted(b)
        second = a > 0 or counted(b)
        third = a > 0 and b > 0 and counted(b)
        return first + 2 * second + 4 * third

    assert both(0, 1) == 2          # False and ..., False or True, False and ...
    assert calls[None] == (1 if short_circuit else 3)
    calls[None] = 0
    assert both(1, 1) == 7
    assert calls[None] == (2 if short_circuit else 3)   # `1 > 0 or ...` is decided by its first operand


def test_an_if_on_a_short_circuit_and_reuses_what_its_test_read(arch):
    """`if i != j and |p_i - p_j| < h: total += |p_i - p_j|` (SPH's neighbour sums) under short-circuit
    operators: the body runs inside the second operand's branch, so p_j is read once per neighbour (not again
    in the body), the second operand is evaluated only where the first holds, and the sums are the loop's."""
    wk.reset()
    wk.init(arch=arch, short_circuit_operators=True)
    n, h = 16, 0.3
    pos = wk.field(wk.f32, shape=n)
    out = wk.field(wk.f32, shape=n)
    tested = wk.field(wk.i32, shape=())

    @wk.func
    def near(i: wk.i32, j: wk.i32) -> wk.u1:
        wk.atomic_add(tested[None], 1)
        return wk.abs(pos[i] - pos[j]) < h

    @wk.kernel
    def sums():
        for i in range(n):
            total = 0.0
            for j in range(n):
                if i != j and wk.abs(pos[i] - pos[j]) < h:
                    total += wk.abs(pos[i] - pos[j])
            out[i] = total

    @wk.kernel
    def count_near(first: wk.i32):
        for i in range(n):
            for j in range(n):
                if j >= first and i != j and near(i, j):
                    out[i] += 1.0

    points = np.random.default_rng(3).random(n).astype(np.float32)
    pos.from_numpy(points)
    sums()
    gaps = np.abs(points[:, None] - points[None, :])
    near_pairs = (gaps < np.float32(h)) & ~np.eye(n, dtype=bool)
    # each sum adds at most n terms of at most h, each addition rounding by at most 2^-24 of the running sum
    np.testing.assert_allclose(out.to_numpy(), np.where(near_pairs, gaps, 0).sum(axis=1), rtol=0,
                               atol=n * n * h * 2.0 ** -24)
    entry = launch_module._entry_for_introspection(sums)
    reads = [s for task in entry.offloaded.tasks for s in walk(task.body)
             if isinstance(s, ir.GlobalLoad) and s.ptr.container.name == pos.name]
    assert len(reads) == 2                       # p_i and p_j, read once each
    out.fill(0.0)
    count_near(n - 4)
    assert tested[None] == sum(1 for i in range(n) for j in range(n - 4, n) if i != j)   # only where both hold
    np.testing.assert_array_equal(out.to_numpy(), near_pairs[:, n - 4:].sum(axis=1))


def test_sum_min_max_of_a_list_of_run_time_values(arch):
    """`sum([I[i] * n ** i for i in range(dim)])` (GAMES201's implicit MPM flattens grid indices this way):
    Python's sum / min / max over a list of run-time values, as Taichi evaluates them with its operators."""
    out = wk.field(wk.f32, shape=(4, 5))
    extremes = wk.Vector.field(2, wk.i32, shape=(4, 5))

    @wk.func
    def flat(I):
        return sum([I[i] * 5 ** (1 - i) for i in range(2)])

    @wk.kernel
    def k(start: wk.f32):
        for I in wk.grouped(out):
            out[I] = flat(I) + sum([I[0] * 0.5, I[1] * 0.25], start)
            extremes[I] = [max([I[0], I[1], 2]), min([I[0] - I[1], 1])]

    k(10.0)
    i, j = np.meshgrid(np.arange(4), np.arange(5), indexing="ij")
    np.testing.assert_allclose(out.to_numpy(), i * 5 + j + 10.0 + i * 0.5 + j * 0.25)
    np.testing.assert_array_equal(extremes.to_numpy(), np.stack([np.maximum(np.maximum(i, j), 2),
                                                                 np.minimum(i - j, 1)], -1))
