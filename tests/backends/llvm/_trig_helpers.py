"""Shared by the f32 sin/cos tests (test_vector_sincos.py, test_trig_f32.py): the error measure in f32 ulps and
a kernel computing sin and cos of an array on the current arch."""
from __future__ import annotations

import numpy as np

import wgkern as wk


def ulps(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """Distance in f32 ulps of `got` from the exact (f64) value, measured at the exact value's magnitude."""
    spacing = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - exact) / spacing


def sin_cos(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, object]:
    n = values.size
    x, s, c = (wk.field(wk.f32, shape=n) for _ in range(3))

    @wk.kernel
    def sin_cos():
        for i in x:
            s[i] = wk.sin(x[i])
            c[i] = wk.cos(x[i])

    x.from_numpy(values)
    sin_cos()
    return s.to_numpy(), c.to_numpy(), sin_cos
