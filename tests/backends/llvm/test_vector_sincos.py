"""The f32 sin and cos of lane-vectorised CPU tasks (backends/llvm/vector_sincos.py): within 1 ulp of the exact
value (numpy's float64 sin and cos) over the whole f32 range, libm's results at the edges (infinities, NaN,
signed zeros, |x| >= 2^19), and libm's exact calls kept where fast_math is off."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

import wgkern as wk
from wgkern.backends.llvm import lanes, vector_sincos

from ._trig_helpers import sin_cos as _sin_cos, ulps as _ulps


def _inputs() -> np.ndarray:
    """Random bit patterns (every exponent, subnormals included), the hardest reductions (the f32 values
    nearest to multiples of pi/2, and their neighbours, up to 6e5), small arguments, and the 2^19 switch."""
    rng = np.random.default_rng(11)
    bits = rng.integers(0, 1 << 32, 200000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    near = (np.arange(-400000, 400000, 7, dtype=np.float64) * (np.pi / 2)).astype(np.float32)
    limit = np.float32(2.0 ** 19)
    edges = [np.nextafter(limit, np.float32(0)), limit, np.nextafter(limit, np.float32(np.inf)),
             np.float32(1e-40), np.float32(-3e-39), np.float32(0.7853982), np.finfo(np.float32).max]
    parts = [bits[np.isfinite(bits)], near, np.nextafter(near, np.float32(np.inf)),
             rng.uniform(-8, 8, 50000).astype(np.float32), np.asarray(edges, np.float32)]
    return np.concatenate(parts)


@pytest.fixture
def fast_cpu():
    wk.init(arch=wk.cpu, offline_cache=False, fast_math=True)
    yield
    wk.reset()


def test_within_one_ulp_of_the_exact_value(fast_cpu) -> None:
    values = _inputs()
    s, c, kernel = _sin_cos(values)
    assert kernel.last_compiled.compiled.lanes == lanes.LANES
    assert vector_sincos.helper_name("sin", lanes.LANES) in kernel.source()
    wide = values.astype(np.float64)
    for name, got, exact in (("sin", s, np.sin(wide)), ("cos", c, np.cos(wide))):
        error = _ulps(got, exact)
        worst = int(np.argmax(error))
        # the polynomial is evaluated in double (error near 2^-50 relative), so only the final rounding to
        # f32 (0.5 ulp) remains, and libm's sinf/cosf take |x| >= 2^19: both within 1 ulp
        assert error.max() < 1.0, f"{name}({values[worst]!r}) = {got[worst]!r}, exact {exact[worst]!r}"


def test_edges_are_libm_s(fast_cpu) -> None:
    values = np.asarray([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-45, -1e-45], np.float32)
    s, c, _ = _sin_cos(values)
    assert np.isnan(s[:3]).all() and np.isnan(c[:3]).all()
    assert s[3] == 0 and not np.signbit(s[3]) and s[4] == 0 and np.signbit(s[4])
    assert (c[3:] == 1).all()
    assert (s[5:] == values[5:]).all()       # sin(x) = x for the smallest subnormals, sign kept


def _lone(values: np.ndarray, op) -> tuple[np.ndarray, object]:
    """y[i] = op(x[i]): a lone sin or cos, which is a libm call in scalar code (sincos.py fuses pairs only)."""
    x, y = (wk.field(wk.f32, shape=values.size) for _ in range(2))

    @wk.kernel
    def lone():
        for i in x:
            y[i] = op(x[i])

    x.from_numpy(values)
    lone()
    return y.to_numpy(), lone


@pytest.mark.parametrize("name", ["sin", "cos"])
def test_without_fast_math_libm_computes_each_value(name: str) -> None:
    values = _inputs()[::20].copy()
    wk.init(arch=wk.cpu, offline_cache=False, fast_math=False)
    try:
        got, kernel = _lone(values, getattr(wk, name))
        assert kernel.last_compiled.compiled.lanes == 1
        assert vector_sincos.helper_name(name, lanes.LANES) not in kernel.source()
    finally:
        wk.reset()
    libm = getattr(ctypes.CDLL(None), name + "f")
    libm.restype, libm.argtypes = ctypes.c_float, [ctypes.c_float]
    expected = np.asarray([libm(float(v)) for v in values], np.float32)
    assert np.array_equal(got, expected, equal_nan=True)
