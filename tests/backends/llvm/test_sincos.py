"""The fused f32 sin/cos helper (backends/llvm/sincos.py): used exactly where a kernel takes both the sine and
the cosine of one f32 value, within 1 ulp of the correctly rounded result, libm's behaviour at the edges."""
from __future__ import annotations

import numpy as np
import pytest

from ._kernels import elementwise, ndarray_args, ndarray_slot, range_task, run, shape_of

from wgkern.backends.llvm import sincos
from wgkern.ir import nodes as ir
from wgkern.ir.ops import UnaryOpKind
from wgkern.lang import types as T

U = UnaryOpKind


def _sin_and_cos_kernel(dtype: T.DataType = T.f32) -> ir.OffloadedKernel:
    """s[i] = sin(x[i]); c[i] = cos(x[i]): both of one value, so the fused helper computes them."""
    x, s, c = (ndarray_slot(name, dtype, 1, k) for k, name in enumerate(("x", "s", "c")))

    def body(b, i):
        value = b.global_load(b.global_ptr(x, [i]))
        b.insert(ir.GlobalStore(ptr=b.global_ptr(s, [i]), value=b.unary(U.SIN, value)))
        b.insert(ir.GlobalStore(ptr=b.global_ptr(c, [i]), value=b.unary(U.COS, value)))

    task = range_task(lambda b: b.const(0, T.i32), shape_of(x), body)
    return ir.OffloadedKernel("sincos", ndarray_args([x, s, c]), [x, s, c], [task])


def _ulps(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """Distance in f32 ulps of `got` from the exact (f64) value, measured at the exact value's magnitude."""
    spacing = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - exact) / spacing


def _inputs() -> np.ndarray:
    rng = np.random.default_rng(5)
    k = np.arange(-2000, 2000)
    near_multiples = (k * (np.pi / 2)).astype(np.float32)       # the hardest reductions: r close to 0
    parts = [rng.uniform(-4, 4, 20000), rng.uniform(-1e3, 1e3, 20000), rng.uniform(-5e5, 5e5, 20000),
             near_multiples, np.nextafter(near_multiples, np.float32(np.inf)),
             [1e-30, -1e-30, 1e-40, 3.0e-39, 0.785398, 0.7853982, 2.0 ** 19 - 0.03125, 2.0 ** 19]]
    return np.concatenate([np.asarray(p, np.float64) for p in parts]).astype(np.float32)


def test_a_lone_sin_or_cos_stays_a_libm_call(backend) -> None:
    kernel = elementwise([T.f32], T.f32, lambda b, x: b.unary(U.SIN, x))
    assert sincos.SYMBOL not in backend.compile(kernel).source()


def test_sin_and_cos_of_one_value_use_the_helper(backend) -> None:
    compiled = backend.compile(_sin_and_cos_kernel())
    # s and c are other ndarrays than x, so their stores are checked: the body has a guarded and an unguarded
    # copy (backends/llvm/bounds.py), each with a call for sin and one for cos
    assert "fast.task.body" in compiled.source()
    assert compiled.source().count(f"call {{float, float}} @{sincos.SYMBOL}(") == 2 * 2
    # the helper is pure: after O3 each copy's two calls are one, and the module does not define it
    optimized = compiled.source(optimized=True)
    assert optimized.count(f"@{sincos.SYMBOL}(float") == 1 + 2    # the declaration and one call per copy
    assert f"define {{float, float}} @{sincos.SYMBOL}" not in optimized


def test_f64_pairs_stay_libm(backend) -> None:
    assert sincos.SYMBOL not in backend.compile(_sin_and_cos_kernel(T.f64)).source()


def test_within_one_ulp_of_correctly_rounded(backend) -> None:
    x = _inputs()
    s, c = run(backend, backend.compile(_sin_and_cos_kernel()), [x, np.zeros_like(x), np.zeros_like(x)])[1:]
    wide = x.astype(np.float64)
    assert _ulps(s, np.sin(wide)).max() <= 1.0
    assert _ulps(c, np.cos(wide)).max() <= 1.0
    # most results are the correctly rounded ones
    assert np.mean(s == np.sin(wide).astype(np.float32)) > 0.99
    assert np.mean(c == np.cos(wide).astype(np.float32)) > 0.99


@pytest.mark.parametrize("value", [0.0, -0.0, np.inf, -np.inf, np.nan, 3.0e38, -1e7, 2.0 ** 19, -(2.0 ** 21)])
def test_edges_match_libm(backend, value: float) -> None:
    x = np.array([value], np.float32)
    s, c = run(backend, backend.compile(_sin_and_cos_kernel()), [x, np.zeros_like(x), np.zeros_like(x)])[1:]
    with np.errstate(invalid="ignore"):
        expected_s, expected_c = np.sin(x), np.cos(x)
    np.testing.assert_array_equal(s, expected_s)       # NaN == NaN here; the sign of zero is checked below
    np.testing.assert_array_equal(c, expected_c)
    assert np.signbit(s[0]) == np.signbit(expected_s[0]) or np.isnan(value)
