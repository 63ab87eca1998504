"""The ports' shared gradient check: Tape gradients against central finite differences, in f64 where the
device has it."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as ti


def _real(arch: str) -> object:
    """f64 where the device has it (lavapipe may not), else f32; re-initialises with it as the default."""
    ti.init(arch=arch, default_fp=ti.f64)
    backend = ti.runtime.program.current().backend
    if getattr(backend, "supports", lambda dt: True)(ti.f64):
        return ti.f64
    ti.init(arch=arch, default_fp=ti.f32)
    return ti.f32


def _tolerance(real: object) -> tuple[float, float]:
    """(finite-difference step, relative tolerance) for the precision in use."""
    return (1e-6, 1e-4) if real == ti.f64 else (1e-2, 5e-2)


def check_gradients(run_tape, loss_value, params, probes: int = 6, real: object = ti.f64, seed: int = 0) -> int:
    """Compare the Tape gradient of each field in `params` with central finite differences of `loss_value()`
    at `probes` elements (those with the largest gradients, and random ones); returns the elements checked."""
    eps, rtol = _tolerance(real)
    run_tape()
    grads = [p.grad.to_numpy().astype(np.float64) for p in params]
    scale = max(float(np.abs(g).max()) for g in grads)
    assert scale > 0, "every gradient is zero"
    rng = np.random.default_rng(seed)
    checked = 0
    for param, grad in zip(params, grads):
        base = param.to_numpy()
        flat_grad = grad.reshape(-1)
        chosen = list(np.argsort(-np.abs(flat_grad))[:probes // 2])
        chosen += list(rng.choice(flat_grad.size, size=min(flat_grad.size, probes - len(chosen)), replace=False))
        for index in dict.fromkeys(int(c) for c in chosen):
            values = []
            for sign in (1.0, -1.0):
                moved = base.copy().astype(np.float64).reshape(-1)
                moved[index] += sign * eps
                param.from_numpy(moved.reshape(base.shape).astype(base.dtype))
                values.append(loss_value())
            numeric = (values[0] - values[1]) / (2 * eps)
            where = np.unravel_index(index, base.shape)
            assert flat_grad[index] == pytest.approx(numeric, rel=rtol, abs=rtol * 10 * scale + eps * 1e-3), \
                f"d loss / d {param.name}{list(where)}: autodiff {flat_grad[index]:.8g}, " \
                f"finite differences {numeric:.8g}"
            checked += 1
        param.from_numpy(base)
    return checked
