"""WGSL spelling tables for the IR's unary, binary and atomic ops, keyed by the enums of ir/ops.py.

Each entry maps a dtype key (a dtype name such as 'f64' first, else its kind: 'f', 'i', 'u', 'b') to a Spelling:
a format string over `{a}`, `{b}` (operand expressions), `{T}` (register type), `{Z}`/`{O}` (zero/one literal),
`{M}` (shift mask), the helper templates it calls (wgsl/helpers.wgsl; `math_*` from f64_math.wgsl) and whether
a narrow-int result must be wrapped. tests/backends/wgsl/test_ops.py checks every table covers its enum."""
from __future__ import annotations

from dataclasses import dataclass

from wgkern.ir.ops import AtomicOpKind, BinaryOpKind, UnaryOpKind
from wgkern.dtypes import DataType


@dataclass(frozen=True, slots=True)
class Spelling:
    """`helper_type`: instantiate the helpers for this register type instead of the operand's (f16 math
    runs in f32)."""
    expr: str
    helpers: tuple[str, ...] = ()
    wraps: bool = False
    helper_type: str | None = None


def _s(expr: str, *helpers: str, wraps: bool = False, helper_type: str | None = None) -> Spelling:
    return Spelling(expr, helpers, wraps, helper_type)


def _all_ints(expr: str, *helpers: str, wraps: bool = False) -> dict[str, Spelling]:
    return {"i": _s(expr, *helpers, wraps=wraps), "u": _s(expr, *helpers, wraps=wraps)}


def _numeric(expr: str, wraps: bool = True) -> dict[str, Spelling]:
    return {"f": _s(expr), **_all_ints(expr, wraps=wraps)}


def _float_fn(name: str) -> dict[str, Spelling]:
    """A transcendental: software (wgsl/f64_math.wgsl via mathlib.py) for f32/f64, f16 through f32. Vulkan has
    no f64 ones and loose f32 ones, and results must agree across devices."""
    return {"f": _s(f"wk_{name}_{{T}}({{a}})", f"math_{name}"),
            "f16": _s(f"f16(wk_{name}_f32(f32({{a}})))", f"math_{name}", helper_type="f32")}


def _float_fn2(name: str) -> dict[str, Spelling]:
    return {"f": _s(f"wk_{name}_{{T}}({{a}}, {{b}})", f"math_{name}"),
            "f16": _s(f"f16(wk_{name}_f32(f32({{a}}), f32({{b}})))", f"math_{name}", helper_type="f32")}


def _via_f32(expr: str, *helpers: str) -> dict[str, Spelling]:
    """Spelling for f32/f64, and f16 computed in f32 then rounded once (as numpy does): NVIDIA's f16 sqrt and
    division are not correctly rounded."""
    f16_expr = "f16(" + expr.format(a="f32({a})", b="f32({b})", T="f32") + ")"
    return {"f": _s(expr, *helpers), "f16": _s(f16_expr, *helpers, helper_type="f32" if helpers else None)}


_F16_QUOTIENT = "f16(wk_div_f32(f32({a}), f32({b})))"
# Float min/max ignore a NaN operand (IEEE minNum/maxNum, as Taichi's ti.min/ti.max): spelled out, because
# drivers may assume no NaNs reach min()/max().
_NAN_IGNORE = "select(select({fn}({{a}}, {{b}}), {{b}}, !({{a}} == {{a}})), {{a}}, !({{b}} == {{b}}))"

WGSL_UNARY: dict[UnaryOpKind, dict[str, Spelling]] = {
    UnaryOpKind.NEG: {"f": _s("(-{a})"), "i": _s("(-{a})", wraps=True), "u": _s("({Z} - {a})", wraps=True)},
    UnaryOpKind.LOGICAL_NOT: {"b": _s("(!{a})")},
    UnaryOpKind.BIT_NOT: {"i": _s("(~{a})"), "u": _s("(~{a})", wraps=True), "b": _s("(!{a})")},
    UnaryOpKind.ABS: {"f": _s("abs({a})"), "i": _s("abs({a})", wraps=True), "u": _s("{a}"), "b": _s("{a}")},
    UnaryOpKind.SIGN: {"f": _s("select(sign({a}), {a}, !({a} == {a}))"), "i": _s("sign({a})"),
                       "u": _s("select({Z}, {O}, {a} > {Z})"), "b": _s("{a}")},
    UnaryOpKind.SQRT: _via_f32("sqrt({a})"),
    UnaryOpKind.RSQRT: _via_f32("inverseSqrt({a})"),
    UnaryOpKind.EXP: _float_fn("exp"),
    UnaryOpKind.LOG: _float_fn("log"),
    UnaryOpKind.LOG2: _float_fn("log2"),
    UnaryOpKind.SIN: _float_fn("sin"),
    UnaryOpKind.COS: _float_fn("cos"),
    UnaryOpKind.TAN: _float_fn("tan"),
    UnaryOpKind.ASIN: _float_fn("asin"),
    UnaryOpKind.ACOS: _float_fn("acos"),
    UnaryOpKind.ATAN: _float_fn("atan"),
    UnaryOpKind.SINH: _float_fn("sinh"),
    UnaryOpKind.COSH: _float_fn("cosh"),
    UnaryOpKind.TANH: _float_fn("tanh"),
    UnaryOpKind.FLOOR: {"f": _s("floor({a})")},
    UnaryOpKind.CEIL: {"f": _s("ceil({a})")},
    UnaryOpKind.ROUND: {"f": _s("wk_round_{T}({a})", "round_away")},    # WGSL round() is half to even
}

_BOOL_AS_U32 = "select(0u, 1u, {})"


def _bool_compare(op: str) -> Spelling:
    return _s(f"({_BOOL_AS_U32.format('{a}')} {op} {_BOOL_AS_U32.format('{b}')})")


def _compare(op: str) -> dict[str, Spelling]:
    return {"f": _s(f"({{a}} {op} {{b}})"), **_all_ints(f"({{a}} {op} {{b}})"), "b": _bool_compare(op)}


WGSL_BINARY: dict[BinaryOpKind, dict[str, Spelling]] = {
    # on u1 (as 0/1 ints converted back to bool): a + b is `or`, a - b is `xor`, a * b is `and`
    BinaryOpKind.ADD: {**_numeric("({a} + {b})"), "b": _s("({a} | {b})")},
    BinaryOpKind.SUB: {**_numeric("({a} - {b})"), "b": _s("({a} != {b})")},
    BinaryOpKind.MUL: {**_numeric("({a} * {b})"), "b": _s("({a} & {b})")},
    BinaryOpKind.DIV: _via_f32("wk_div_{T}({a}, {b})", "div_float"),
    # f16: the quotient is rounded to f16 before floor, as numpy's float16 ops each round
    BinaryOpKind.FLOORDIV: {"f": _s("floor(wk_div_{T}({a}, {b}))", "div_float"),
                            "f16": _s(f"floor({_F16_QUOTIENT})", "div_float", helper_type="f32"),
                            "i": _s("wk_floordiv_{T}({a}, {b})", "floordiv_signed", wraps=True),
                            "u": _s("select({a} / {b}, {Z}, {b} == {Z})")},
    BinaryOpKind.MOD: {"f": _s("({a} - {b} * floor(wk_div_{T}({a}, {b})))", "div_float"),
                       "f16": _s(f"({{a}} - {{b}} * floor({_F16_QUOTIENT}))", "div_float", helper_type="f32"),
                       "i": _s("wk_mod_{T}({a}, {b})", "mod_signed"),
                       "u": _s("select({a} % {b}, {Z}, {b} == {Z})")},
    BinaryOpKind.POW: {**_float_fn2("pow"),
                       "i": _s("wk_ipow_{T}({a}, {b})", "ipow_signed", wraps=True),
                       "u": _s("wk_ipow_{T}({a}, {b})", "ipow_unsigned", wraps=True)},
    BinaryOpKind.ATAN2: _float_fn2("atan2"),
    BinaryOpKind.MIN: {"f": _s(_NAN_IGNORE.format(fn="min")), **_all_ints("min({a}, {b})"),
                       "b": _s("({a} & {b})")},
    BinaryOpKind.MAX: {"f": _s(_NAN_IGNORE.format(fn="max")), **_all_ints("max({a}, {b})"),
                       "b": _s("({a} | {b})")},
    BinaryOpKind.BIT_AND: {**_all_ints("({a} & {b})"), "b": _s("({a} & {b})")},
    BinaryOpKind.BIT_OR: {**_all_ints("({a} | {b})"), "b": _s("({a} | {b})")},
    BinaryOpKind.BIT_XOR: {**_all_ints("({a} ^ {b})"), "b": _s("({a} != {b})")},
    # WGSL shift amounts are u32; the IR masks them to bits-1 of the lhs dtype.
    BinaryOpKind.SHL: _all_ints("({a} << (u32({b}) & {M}))", wraps=True),
    BinaryOpKind.SHR: _all_ints("({a} >> (u32({b}) & {M}))"),
    BinaryOpKind.CMP_LT: _compare("<"),
    BinaryOpKind.CMP_LE: _compare("<="),
    BinaryOpKind.CMP_GT: _compare(">"),
    BinaryOpKind.CMP_GE: _compare(">="),
    BinaryOpKind.CMP_EQ: {**_compare("=="), "b": _s("({a} == {b})")},
    # naga emits an ordered `!=` (false for NaN); `!(a == b)` is numpy's answer.
    BinaryOpKind.CMP_NE: {"f": _s("!({a} == {b})"), **_all_ints("({a} != {b})"), "b": _s("({a} != {b})")},
}

# Native WGSL atomic builtins per op, for i32/u32 (and i64/u64 with the int64-atomic features). MUL has none
# (a compare-exchange loop); CAS is the strong compare-and-swap helper (helpers.wgsl atomic_compare_exchange).
WGSL_ATOMIC_BUILTIN: dict[AtomicOpKind, str] = {
    AtomicOpKind.ADD: "atomicAdd", AtomicOpKind.SUB: "atomicSub", AtomicOpKind.MIN: "atomicMin",
    AtomicOpKind.MAX: "atomicMax", AtomicOpKind.AND: "atomicAnd", AtomicOpKind.OR: "atomicOr",
    AtomicOpKind.XOR: "atomicXor", AtomicOpKind.EXCHANGE: "atomicExchange",
}

# New value from the old one in a compare-exchange loop (floats, narrow ints); `old`/`v` are register values.
WGSL_ATOMIC_COMBINE: dict[AtomicOpKind, str] = {
    AtomicOpKind.ADD: "(old + v)",
    AtomicOpKind.SUB: "(old - v)",
    AtomicOpKind.MIN: "select(select(min(old, v), v, !(old == old)), old, !(v == v))",    # NaN ignored
    AtomicOpKind.MAX: "select(select(max(old, v), v, !(old == old)), old, !(v == v))",
    AtomicOpKind.AND: "(old & v)",
    AtomicOpKind.OR: "(old | v)",
    AtomicOpKind.XOR: "(old ^ v)",
    AtomicOpKind.MUL: "(old * v)",
}

# Ops on bits: they never look at the value stored, so a float (as u32/u64 bits) or a u1 (as 0/1) takes the
# native builtin, and CAS compares bits (u1 only: CAS is integer-only).
BITWISE_ATOMIC = frozenset({AtomicOpKind.EXCHANGE, AtomicOpKind.CAS})
# Ops a u1 container (0/1 in a u32) supports: those whose result stays 0/1.
BOOL_ATOMIC = frozenset({AtomicOpKind.AND, AtomicOpKind.OR, AtomicOpKind.XOR}) | BITWISE_ATOMIC
# Ops a native `atomic<f32>` supports (feature shader-float32-atomic); min/max are rejected by naga.
NATIVE_F32_ATOMIC = frozenset({AtomicOpKind.ADD, AtomicOpKind.SUB, AtomicOpKind.EXCHANGE})
# Which int64 atomic ops need which feature (compare-exchange loops and CAS need all-ops).
INT64_ATOMIC_FEATURE: dict[AtomicOpKind, str] = {
    AtomicOpKind.MIN: "shader-int64-atomic-min-max", AtomicOpKind.MAX: "shader-int64-atomic-min-max",
    **{op: "shader-int64-atomic-all-ops" for op in (AtomicOpKind.ADD, AtomicOpKind.SUB, AtomicOpKind.AND,
                                                     AtomicOpKind.OR, AtomicOpKind.XOR, AtomicOpKind.MUL,
                                                     AtomicOpKind.EXCHANGE, AtomicOpKind.CAS)},
}


def lookup(table: dict[str, Spelling], dtype: DataType) -> Spelling | None:
    """The spelling for `dtype`: its own name first, then its kind."""
    return table.get(dtype.name) or table.get(dtype.kind)
