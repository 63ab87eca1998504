"""tolerance.py: the finite-difference step and the f64 bound hold on functions with known derivatives (the
same central differences and Richardson estimate as the runner), and the f32 bound grows with the error units
and the scale."""
from __future__ import annotations

import numpy as np
import pytest

from wgkern.fuzz import tolerance

FUNCTIONS = {
    "sin3": (lambda t: np.sin(3 * t), lambda t: 3 * np.cos(3 * t)),
    "exp_tanh": (lambda t: np.exp(np.tanh(t)), lambda t: np.exp(np.tanh(t)) / np.cosh(t) ** 2),
    "log_square": (lambda t: np.log(t * t + 0.5), lambda t: 2 * t / (t * t + 0.5)),
    "pow": (lambda t: (t * t + 0.5) ** 1.3, lambda t: 2.6 * t * (t * t + 0.5) ** 0.3),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("units", [10.0, 1e4])
def test_the_reference_error_bound_holds(name, units):
    f, df = FUNCTIONS[name]
    for t in np.linspace(-1, 1, 9):
        scale = max(abs(f(t)), 1.0)
        eps_f = tolerance.f64_forward_error(units, scale)
        h = tolerance.fd_step(units, scale, t)
        d = [(f(t + s) - f(t - s)) / (2 * s) for s in (h, h / 2)]
        assert abs(d[1] - df(t)) <= tolerance.f64_tolerance(d[0], d[1], eps_f, h / 2)
        assert 1e-6 <= h <= 1e-2


def test_the_f32_bound_grows_with_work_and_scale():
    small = tolerance.f32_tolerance(100.0, np.array([0.1, -0.2]))
    assert small == pytest.approx(2 * np.e * 8 * 2.0 ** -24 * 100.0)     # scale floored at 1
    assert tolerance.f32_tolerance(1000.0, np.array([0.1])) == pytest.approx(10 * small)
    assert tolerance.f32_tolerance(100.0, np.array([-4.0])) == pytest.approx(4 * small)
