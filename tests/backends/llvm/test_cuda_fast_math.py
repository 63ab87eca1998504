"""The PTX shape of fast_math on CUDA, compiled without a GPU: f32 square roots become the hardware's
approximations (sqrt.approx.f32, rsqrt.approx.f32 for 1/sqrt) under fast_math and stay correctly rounded
(sqrt.rn) without it and at f64; the n-body inner loop (bench.py's nbody) has no correctly rounded root left."""
from __future__ import annotations

import re

import pytest

import wgkern as wk

from .test_cuda import offloaded_kernels, to_ptx


@pytest.fixture
def cpu_program():
    wk.init(arch=wk.cpu)
    yield
    wk.reset()


def roots_of(code: str) -> list[str]:
    """The square-root and reciprocal instructions of a PTX text, in order, e.g. 'sqrt.approx.f32'."""
    return re.findall(r"\b(?:r?sqrt|rcp)\.\w+\.f\d+", code)


def compile_roots() -> object:
    x, y = wk.field(wk.f32, 8), wk.field(wk.f64, 8)

    @wk.kernel
    def roots():
        for i in x:
            x[i] = wk.sqrt(x[i] * 2.0) + wk.rsqrt(x[i])
            y[i] = wk.sqrt(y[i] * 2.0) + wk.rsqrt(y[i])

    roots()
    return offloaded_kernels("roots")[0]


def test_f32_roots_are_the_hardware_approximations_under_fast_math(cpu_program):
    assert roots_of(to_ptx(compile_roots())) == ["sqrt.approx.f32", "rsqrt.approx.f32", "sqrt.rn.f64",
                                                 "sqrt.rn.f64", "rcp.rn.f64"]


def test_roots_stay_correctly_rounded_without_fast_math(cpu_program):
    code = to_ptx(compile_roots(), fast_math=False)
    assert roots_of(code) == ["sqrt.rn.f32", "sqrt.rn.f32", "rcp.rn.f32", "sqrt.rn.f64", "sqrt.rn.f64",
                              "rcp.rn.f64"]


def test_nbody_inner_loop_has_no_correctly_rounded_root(cpu_program):
    n = 256
    px, py, pz, ax = (wk.field(wk.f32, shape=n) for _ in range(4))

    @wk.kernel
    def nbody():
        for i in px:
            xi, yi, zi = px[i], py[i], pz[i]
            s = 0.0
            for j in range(n):
                dx, dy, dz = px[j] - xi, py[j] - yi, pz[j] - zi
                r2 = dx * dx + dy * dy + dz * dz + 1e-2
                s += dx / (r2 * wk.sqrt(r2))
            ax[i] = s

    nbody()
    found = set(roots_of(to_ptx(offloaded_kernels("nbody")[0])))
    assert "sqrt.approx.f32" in found and not any(".rn." in name for name in found)
