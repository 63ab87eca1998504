"""The PTX shape of fast_math on CUDA, compiled without a GPU: f32 square roots become the hardware's
approximations (sqrt.approx.ftz.f32, rsqrt.approx.ftz.f32 for 1/sqrt) under fast_math and stay correctly
rounded (sqrt.rn) without it and at f64; f32 subnormals flush to zero under fast_math in every function of the
module, which still inlines; the n-body inner loop (bench.py's nbody) is one approximate root and one
reciprocal."""
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
    """The square-root and reciprocal instructions of a PTX text, in order, e.g. 'sqrt.approx.ftz.f32'."""
    return re.findall(r"\b(?:r?sqrt|rcp)\.[\w.]+?\.f\d+\b", code)


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
    assert roots_of(to_ptx(compile_roots())) == ["sqrt.approx.ftz.f32", "rsqrt.approx.ftz.f32", "sqrt.rn.f64",
                                                 "sqrt.rn.f64", "rcp.rn.f64"]


def test_roots_stay_correctly_rounded_without_fast_math(cpu_program):
    code = to_ptx(compile_roots(), fast_math=False)
    assert roots_of(code) == ["sqrt.rn.f32", "sqrt.rn.f32", "rcp.rn.f32", "sqrt.rn.f64", "sqrt.rn.f64",
                              "rcp.rn.f64"]


def test_nbody_inner_loop_has_no_correctly_rounded_root(cpu_program):
    n = 256
    px, py, pz, ax, ay, az = (wk.field(wk.f32, shape=n) for _ in range(6))

    @wk.kernel
    def nbody():
        for i in px:
            xi, yi, zi = px[i], py[i], pz[i]
            sx, sy, sz = 0.0, 0.0, 0.0
            for j in range(n):
                dx, dy, dz = px[j] - xi, py[j] - yi, pz[j] - zi
                r2 = dx * dx + dy * dy + dz * dz + 1e-2
                inv = 1.0 / (r2 * wk.sqrt(r2))
                sx += dx * inv
                sy += dy * inv
                sz += dz * inv
            ax[i], ay[i], az[i] = sx, sy, sz

    nbody()
    found = set(roots_of(to_ptx(offloaded_kernels("nbody")[0])))
    assert found == {"sqrt.approx.ftz.f32", "rcp.approx.ftz.f32"}


ARITHMETIC = r"\b(?:add|sub|mul|fma)(?:\.rn)?(?:\.ftz)?\.f32\b"     # f32 add, sub, mul, fma in PTX


def compile_math() -> object:
    x = wk.field(wk.f32, 8)
    n = wk.field(wk.i32, 8)

    @wk.kernel
    def math():
        for i in x:
            x[i] = wk.sin(x[i]) * wk.exp(x[i]) + x[i] ** n[i] + wk.cast(n[i] ** 3, wk.f32)

    math()
    return offloaded_kernels("math")[0]


def test_fast_math_flushes_f32_subnormals_in_every_function(cpu_program):
    """Under fast_math the f32 arithmetic is PTX's .ftz forms, and libdevice's functions and the module's
    helpers (integer pow, sin) take the kernel's denormal mode, so they still inline: the one function left is
    sin's large-argument reduction, which is never inlined (trig_f32.py)."""
    code = to_ptx(compile_math())
    arithmetic = re.findall(ARITHMETIC, code)
    assert arithmetic and all(".ftz." in op for op in arithmetic)
    assert re.findall(r"\.func\b[^\n]*?(\w+(?:_\$_\w+)*)\(", code) == ["wk_$_trig_$_reduce"]
    assert set(re.findall(r"\bcall(?:\.uni)? [^\n]*?(\w+(?:_\$_\w+)*), \(", code)) == {"wk_$_trig_$_reduce"}


def test_subnormals_are_kept_without_fast_math(cpu_program):
    arithmetic = re.findall(ARITHMETIC, to_ptx(compile_math(), fast_math=False))
    assert arithmetic and not any(".ftz." in op for op in arithmetic)
