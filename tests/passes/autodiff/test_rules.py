"""Every derivative in rules.py against f64 central differences, through the whole reverse transform."""
from __future__ import annotations

import numpy as np
import pytest

from wgkern.ir import nodes as ir
from wgkern.ir.builder import IRBuilder
from wgkern.ir.ops import AtomicOpKind, BinaryOpKind, UnaryOpKind
from wgkern.lang import types as T
from wgkern.passes.autodiff import rules

from .helpers import field_slot, parallel_kernel, run, run_grad

UNARY_POINTS = {
    UnaryOpKind.ASIN: [-0.7, 0.1, 0.6], UnaryOpKind.ACOS: [-0.7, 0.1, 0.6],
    UnaryOpKind.LOG: [0.3, 1.2, 4.0], UnaryOpKind.LOG2: [0.3, 1.2, 4.0],
    UnaryOpKind.SQRT: [0.3, 1.2, 4.0], UnaryOpKind.RSQRT: [0.3, 1.2, 4.0],
    UnaryOpKind.TAN: [-1.0, 0.2, 1.1],
}
DEFAULT_POINTS = [-1.3, -0.4, 0.35, 1.7]
BINARY_POINTS = {BinaryOpKind.POW: ([0.5, 1.3, 2.0], [-1.5, 0.7, 2.5])}


def _unary_kernel(op: UnaryOpKind, n: int):
    x = field_slot("x", T.f64, (n,), True)
    y = field_slot("y", T.f64, (n,), True)

    def body(b, i):
        b.global_store(b.global_ptr(y, [i]), b.unary(op, b.global_load(b.global_ptr(x, [i]))))
    return parallel_kernel(n, [x, y], body), x, y


def _forward(kernel, x, y, values):
    arrays = {x: np.array(values, np.float64), y: np.zeros(len(values), np.float64)}
    run(kernel, arrays)
    return arrays[y]


@pytest.mark.parametrize("op", sorted(rules.UNARY_DERIVATIVES, key=lambda o: o.value))
def test_unary_rule_matches_finite_differences(op):
    points = UNARY_POINTS.get(op, DEFAULT_POINTS)
    kernel, x, y = _unary_kernel(op, len(points))
    gx = np.zeros(len(points))
    run_grad(kernel, {x: np.array(points, np.float64), y: np.zeros(len(points))}, {x: gx, y: np.ones(len(points))})
    eps = 1e-6
    fd = (_forward(kernel, x, y, np.array(points) + eps) - _forward(kernel, x, y, np.array(points) - eps)) / (2 * eps)
    np.testing.assert_allclose(gx, fd, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("op", sorted(rules.BINARY_DERIVATIVES, key=lambda o: o.value))
def test_binary_rule_matches_finite_differences(op):
    lhs, rhs = BINARY_POINTS.get(op, ([-1.3, 0.4, 2.1], [0.7, -1.9, 0.5]))
    n = len(lhs)
    a = field_slot("a", T.f64, (n,), True)
    c = field_slot("c", T.f64, (n,), True)
    y = field_slot("y", T.f64, (n,), True)

    def body(b, i):
        value = b.binary(op, b.global_load(b.global_ptr(a, [i])), b.global_load(b.global_ptr(c, [i])))
        b.global_store(b.global_ptr(y, [i]), value)
    kernel = parallel_kernel(n, [a, c, y], body)

    def forward(av, cv):
        arrays = {a: np.array(av, np.float64), c: np.array(cv, np.float64), y: np.zeros(n)}
        run(kernel, arrays)
        return arrays[y]
    ga, gc = np.zeros(n), np.zeros(n)
    run_grad(kernel, {a: np.array(lhs, np.float64), c: np.array(rhs, np.float64), y: np.zeros(n)},
             {a: ga, c: gc, y: np.ones(n)})
    eps = 1e-6
    lhs, rhs = np.array(lhs), np.array(rhs)
    np.testing.assert_allclose(ga, (forward(lhs + eps, rhs) - forward(lhs - eps, rhs)) / (2 * eps), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gc, (forward(lhs, rhs + eps) - forward(lhs, rhs - eps)) / (2 * eps), rtol=1e-6, atol=1e-7)


def test_tables_cover_every_float_op():
    float_unary = {op for op in UnaryOpKind if op not in (UnaryOpKind.LOGICAL_NOT, UnaryOpKind.BIT_NOT)}
    assert set(rules.UNARY_DERIVATIVES) == float_unary
    float_binary = {op for op in BinaryOpKind if op.value in
                    ("add", "sub", "mul", "div", "pow", "atan2", "min", "max", "floordiv", "mod")}
    assert set(rules.BINARY_DERIVATIVES) == float_binary


def test_atomic_add_accumulates_adjoint_into_every_source():
    n = 5
    x = field_slot("x", T.f32, (n,), True)
    total = field_slot("total", T.f32, (), True)

    def body(b, i):
        v = b.global_load(b.global_ptr(x, [i]))
        b.atomic(AtomicOpKind.ADD, b.global_ptr(total, []), b.mul(v, v))
    kernel = parallel_kernel(n, [x, total], body)
    xs = np.arange(n, dtype=np.float32)
    gx = np.zeros(n, np.float32)
    run_grad(kernel, {x: xs, total: np.zeros((), np.float32)}, {x: gx, total: np.full((), 2.0, np.float32)})
    np.testing.assert_allclose(gx, 4 * xs)


# ---- what each rule reads (the needed analysis recomputes only that) ----------------------------------------

def _reads_of(built: ir.Block, result: ir.Stmt, named: dict[str, ir.Stmt]) -> str:
    used = {id(o) for s in built.stmts for o in s.operands()} | {id(result)}
    return "".join(sorted(name for name, value in named.items() if id(value) in used))


def _sentinels(names: str) -> dict[str, ir.Stmt]:
    holder = IRBuilder(ir.Block())
    return {name: holder.insert(ir.ArgLoad(arg_index=k, dtype=T.f64)) for k, name in enumerate(names)}


def test_every_rule_declares_what_it_reads():
    assert set(rules.UNARY_READS) == set(rules.UNARY_DERIVATIVES)
    assert set(rules.BINARY_READS) == set(rules.BINARY_DERIVATIVES)
    for op, rule in rules.UNARY_DERIVATIVES.items():
        named = _sentinels("xy")
        b = IRBuilder(ir.Block())
        result = rule(b, named["x"], named["y"])
        assert _reads_of(b.block, result, named) == "".join(sorted(rules.UNARY_READS[op])), op
    for op, partials in rules.BINARY_DERIVATIVES.items():
        for partial, declared in zip(partials, rules.BINARY_READS[op]):
            named = _sentinels("lry")
            b = IRBuilder(ir.Block())
            result = partial(b, named["l"], named["r"], named["y"])
            assert _reads_of(b.block, result, named) == "".join(sorted(declared)), op
