"""Undecorated Python functions and lambdas called from kernel code are inlined as wk.funcs (as in Taichi),
forward and reverse mode."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

import wgkern as wk


def cubic_minus_sin(v):
    return v * v * v - wk.sin(v)


def scaled(v, k=2.0):
    w = v * k
    return w + 1.0


OPS = [lambda v: v * v, lambda v: wk.exp(-v), lambda v: (v + 1) / (v - 3)]
REFERENCE = [lambda v: v * v, lambda v: np.exp(-v), lambda v: (v + 1) / (v - 3)]


def central_difference(f, v: np.ndarray) -> np.ndarray:
    step = 1e-6
    return (f(v + step) - f(v - step)) / (2 * step)


@pytest.mark.parametrize("which", range(len(OPS)))
def test_lambdas_from_one_line_value_and_gradient(arch, which):
    op = OPS[which]
    x = wk.field(wk.f32, shape=8, needs_grad=True)
    y = wk.field(wk.f32, shape=8, needs_grad=True)

    @wk.kernel
    def apply():
        for i in x:
            y[i] = op(x[i])

    values = np.linspace(0.1, 1.5, 8)
    x.from_numpy(values.astype(np.float32))
    apply()
    y.grad.fill(1.0)
    apply.grad()
    np.testing.assert_allclose(y.to_numpy(), REFERENCE[which](values), rtol=1e-5)
    np.testing.assert_allclose(x.grad.to_numpy(), central_difference(REFERENCE[which], values), rtol=1e-4)


def test_plain_functions_with_locals_defaults_and_keywords(arch):
    x = wk.field(wk.f32, shape=4, needs_grad=True)
    y = wk.field(wk.f32, shape=4, needs_grad=True)

    @wk.kernel
    def apply(k: wk.f32):
        for i in x:
            y[i] = cubic_minus_sin(x[i]) + scaled(x[i]) + scaled(x[i], k=k)

    values = np.array([0.2, 0.5, 0.9, 1.3])
    x.from_numpy(values.astype(np.float32))
    apply(3.0)
    y.grad.fill(1.0)
    apply.grad(3.0)

    def reference(v: np.ndarray) -> np.ndarray:
        return v**3 - np.sin(v) + (2 * v + 1) + (3 * v + 1)

    np.testing.assert_allclose(y.to_numpy(), reference(values), rtol=1e-5)
    np.testing.assert_allclose(x.grad.to_numpy(), central_difference(reference, values), rtol=1e-4)


def test_lambda_bound_to_a_name_with_compile_time_arguments(arch):
    out = wk.field(wk.i32, shape=4)
    offset = lambda base, n: base * 10 + n  # noqa: E731 - the pattern under test

    @wk.kernel
    def fill():
        for i in out:
            out[i] = offset(i, 3) + offset(1, 2)

    fill()
    np.testing.assert_array_equal(out.to_numpy(), np.arange(4) * 10 + 3 + 12)


@wk.data_oriented
class Ray:
    """A hit-record style class (Taichi's smallpt builds these in funcs): holds kernel values, plain methods."""

    def __init__(self, origin, direction):
        self.origin = origin
        self.direction = direction

    def at(self, t):
        return self.origin + t * self.direction


class Scaled:
    def __init__(self, v):
        self.v = v.normalized()      # computes with a kernel value: not runnable as Python


def test_user_classes_built_in_kernels_hold_values_and_inline_their_methods(arch):
    """`Ray(o, d)` in kernel code runs the class's Python constructor on the kernel's values, as Taichi does;
    `ray.origin` reads them back and the undecorated method `ray.at(t)` is inlined with its receiver."""
    out = wk.Vector.field(3, wk.f32, shape=4)

    @wk.func
    def make_ray(i):
        return Ray(wk.Vector([1.0, 2.0, 3.0]), wk.Vector([0.0, 1.0, float(i)]))

    @wk.kernel
    def trace():
        for i in out:
            ray = make_ray(i)
            out[i] = ray.at(2.0) + ray.origin

    trace()
    want = np.array([[2.0, 6.0, 6.0 + 2.0 * i] for i in range(4)], np.float32)
    np.testing.assert_allclose(out.to_numpy(), want)


def test_user_class_whose_constructor_computes_on_kernel_values_is_a_compile_error(arch):
    out = wk.field(wk.f32, shape=2)

    @wk.kernel
    def build():
        for i in out:
            s = Scaled(wk.Vector([1.0, float(i)]))
            out[i] = s.v[0]

    with pytest.raises(wk.CompileError, match=r"constructing Scaled\(\.\.\.\) in kernel code"):
        build()


TAICHI_HELPERS = '''
import taichi as ti
import taichi.math as tm


@ti.func
def ring(p: ti.template(), radius: float = 0.25):
    d = (p - 0.5).norm()
    inside = 0
    if d < radius:
        inside = 1
    return inside + tm.clamp(d, 0.0, 1.0)
'''


def test_a_func_of_the_taichi_package_runs_with_wgkern_standing_for_taichi(arch, tmp_path, monkeypatch):
    """A ported program that still imports a @ti.func from the taichi package (Taichi's examples import their
    logo pattern so) compiles its body with wgkern's modules in place of taichi's."""
    pytest.importorskip("taichi")
    (tmp_path / "taichi_helpers_for_port.py").write_text(TAICHI_HELPERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    ring = importlib.import_module("taichi_helpers_for_port").ring     # the module this test just wrote

    out = wk.field(wk.f32, shape=(4, 4))

    @wk.kernel
    def paint():
        for i, j in out:
            out[i, j] = ring(wk.Vector([i, j]) / 4.0) + ring(wk.Vector([i, j]) / 4.0, 0.5)

    paint()
    i, j = np.meshgrid(np.arange(4), np.arange(4), indexing="ij")
    d = np.hypot(i / 4 - 0.5, j / 4 - 0.5)
    expected = (d < 0.25).astype(int) + (d < 0.5).astype(int) + 2 * np.clip(d, 0, 1)
    np.testing.assert_allclose(out.to_numpy(), expected, rtol=1e-6)


def test_a_function_decorated_where_kernel_code_calls_it(arch):
    # Quadrants' test_unary_ops calls wk.func(f)(x) in a kernel: the decorator runs at compile time
    n = 4
    out = wk.field(wk.f64, shape=(3, n))

    def shifted(v):
        return v * 0.1 + 0.4

    def shifted_f64(v: wk.f64) -> wk.f64:     # a real function declares its types (Taichi, Quadrants)
        return v * 0.1 + 0.4

    @wk.kernel
    def fill():
        for i in range(n):
            out[0, i] = wk.sin(wk.func(shifted)(wk.cast(i, wk.f64)))
            out[1, i] = wk.real_func(shifted_f64)(wk.cast(i, wk.f64))
            out[2, i] = wk.func(scaled)(wk.cast(i, wk.f64), k=3.0)

    fill()
    i = np.arange(n, dtype=np.float64)
    np.testing.assert_allclose(out.to_numpy(), [np.sin(i * 0.1 + 0.4), i * 0.1 + 0.4, i * 3.0 + 1.0], rtol=1e-6)


def test_numpy_arrays_built_from_constants_in_kernel_code(arch):
    # Quadrants' test_type_check: np.array(3, dtype=np.int32) in a kernel is the number 3; a 1-D or 2-D array of
    # constants is a vector or matrix value; a run-time argument is still refused
    v = wk.Vector.field(2, wk.f32, shape=())

    @wk.kernel
    def build(x: wk.f32) -> wk.f32:
        three = np.array(3, dtype=np.int32)
        a = np.array([1.0, 2.0])
        m = np.asarray([[1, 2], [3, 4]])
        v[None] = a * x
        return three + (a * x).sum() + m[1, 0]

    assert build(2.0) == 3 + 6 + 3
    np.testing.assert_allclose(v[None], [2.0, 4.0])

    @wk.kernel
    def runtime_array(x: wk.f32) -> wk.f32:
        return np.array(x)

    with pytest.raises(wk.CompileError, match="cannot call 'array'"):
        runtime_array(1.0)
