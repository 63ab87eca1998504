"""backends/llvm/trig_f32.py, CUDA's f32 sin and cos: the functions' LLVM IR run on the CPU JIT over every
kind of f32 argument (within 2 ulp of numpy's float64 sin and cos, C's results at infinities, NaN and signed
zeros), the same inputs through kernels on the LLVM arches of the suite (CUDA runs the module's functions, the
CPU libm's or its lanes' own), and the module's shape in PTX: one shared large-argument reduction, called, not
inlined; no libdevice needed."""
from __future__ import annotations

import ctypes
import re
from typing import Any

import numpy as np
import pytest

import wgkern as wk
from wgkern.backends.llvm import jit, ptx, trig_f32

from ._trig_helpers import sin_cos, ulps as _ulps
from .test_cuda import module_text, offloaded_kernels, to_ptx

# Error budget. Fast path: x - j P1 is exact, the next two fmas round once each (together at most 1 ulp of r),
# and pi/2 - P1 - P2 - P3 is 2^-76.3, times |j| < 2^16.4. Large arguments: r is exact to 2^-64 of a quadrant before
# its one rounding to f32. The polynomials' own error is below 0.1 ulp (Taylor remainder 0.04 ulp at |r| = pi/4,
# the roundings of z and of 1 - z/2 carried into cos's last addition) and the last addition rounds once (0.5
# ulp). An ulp of r can be 2 ulp of sin(r) (sin(r) one binade below r), so this sum alone allows 2.5 ulp in the
# fast path and about 1.6 in the other; every f32 argument was run through both (exhaustively against numpy's
# float64 sin and cos: at most 1.5 ulp), and the test holds libdevice's documented bound.
ULP_BOUND = 2.0


def _inputs() -> np.ndarray:
    """Random bit patterns (every exponent, subnormals included), the hardest reductions (the f32 values nearest
    to multiples of pi/2 below the fast path's limit, and their neighbours), arguments in the fast path, and
    both sides of the limit."""
    rng = np.random.default_rng(20)
    bits = rng.integers(0, 1 << 32, 400000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    near = (np.arange(-83000, 83000, dtype=np.float64) * (np.pi / 2)).astype(np.float32)
    limit = np.float32(trig_f32.LIMIT)
    edges = [np.nextafter(limit, np.float32(0)), limit, np.nextafter(limit, np.float32(np.inf)), -limit,
             np.float32(0.7853982), np.float32(-2.3561945), np.finfo(np.float32).max, np.finfo(np.float32).min]
    parts = [bits[np.isfinite(bits)], near, np.nextafter(near, np.float32(np.inf)), np.nextafter(near, np.float32(0)),
             rng.uniform(-8, 8, 100000).astype(np.float32), rng.uniform(-4e5, 4e5, 100000).astype(np.float32),
             np.asarray(edges, np.float32)]
    return np.concatenate(parts)


_LOOP = """define void @test.trig.{name}(ptr %x, ptr %y, i64 %n) {{
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %px = getelementptr float, ptr %x, i64 %i
  %v = load float, ptr %px, align 4
  %r = call float @{symbol}(float %v)
  %py = getelementptr float, ptr %y, i64 %i
  store float %r, ptr %py, align 4
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}}"""


@pytest.fixture(scope="module")
def on_cpu():
    """name -> values -> the module's f32 sin or cos of each value, computed by its LLVM IR on the CPU JIT."""
    helpers: dict[str, str] = {}
    declarations: set[str] = set()
    for symbol in (trig_f32.SIN, trig_f32.COS):
        defined, declared = trig_f32.definitions(symbol)
        helpers.update(defined)
        declarations.update(declared)
    loops = [_LOOP.format(name=name, symbol=trig_f32.symbol(name, 32)) for name in ("sin", "cos")]
    jit.compile_ir("\n\n".join([*sorted(declarations), *helpers.values(), *loops]) + "\n")
    signature = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
    loops = {name: signature(jit.function_address(f"test.trig.{name}")) for name in ("sin", "cos")}

    def run(name: str, values: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(values, np.float32)
        y = np.empty_like(x)
        loops[name](x.ctypes.data, y.ctypes.data, x.size)
        return y
    return run


@pytest.mark.parametrize("name", ["sin", "cos"])
def test_within_two_ulp_of_the_exact_value(on_cpu, name: str) -> None:
    values = _inputs()
    got = on_cpu(name, values)
    exact = getattr(np, name)(values.astype(np.float64))
    error = _ulps(got, exact)
    worst = int(np.argmax(error))
    assert error.max() <= ULP_BOUND, f"{name}({values[worst]!r}) = {got[worst]!r}, exact {exact[worst]!r}"
    large = np.abs(values) >= trig_f32.LIMIT
    assert large.sum() > 100000 and (~large).sum() > 100000          # both reductions were measured


def test_infinities_nan_and_zeros_give_c_s_results(on_cpu) -> None:
    values = np.asarray([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-45, -1e-45, 1e-30], np.float32)
    s, c = on_cpu("sin", values), on_cpu("cos", values)
    assert np.isnan(s[:3]).all() and np.isnan(c[:3]).all()
    assert s[3] == 0 and not np.signbit(s[3]) and s[4] == 0 and np.signbit(s[4])
    assert (s[5:] == values[5:]).all()                # sin(x) = x for tiny x, sign kept
    assert (c[3:] == 1).all()


def test_kernels_are_within_two_ulp_on_each_arch(arch) -> None:
    """The same inputs through a kernel: on CUDA these are the module's functions, on the CPU libm's (or the
    lanes' own polynomial, within 1 ulp)."""
    if getattr(wk.runtime.program.current().backend, "features", None) is not None:
        pytest.skip("the WGSL backends compute sin and cos themselves (backends/wgsl/mathlib.py), tested with "
                    "their own bounds in tests/frontend/test_random_and_math_on_device.py")
    values = _inputs()
    values = values[np.abs(values) >= np.finfo(np.float32).tiny]     # fast_math on CUDA flushes subnormals
    sines, cosines, _ = sin_cos(values)
    wide = values.astype(np.float64)
    for name, got, exact in (("sin", sines, np.sin(wide)), ("cos", cosines, np.cos(wide))):
        error = _ulps(got, exact)
        worst = int(np.argmax(error))
        assert error.max() <= ULP_BOUND, f"{name}({values[worst]!r}) = {got[worst]!r}, exact {exact[worst]!r}"


@pytest.fixture
def cpu_program():
    wk.init(arch=wk.cpu, offline_cache=False)
    yield
    wk.reset()


@pytest.mark.parametrize("fast_math", [True, False])
def test_each_call_inlines_its_fast_path_and_shares_one_reduction(cpu_program, fast_math: bool) -> None:
    x = wk.field(wk.f32, shape=8)

    @wk.kernel
    def four_calls():
        for i in x:
            v = x[i]
            x[i] = wk.sin(v) + wk.cos(v * 2.0) + wk.sin(v * 3.0) + wk.cos(v * 4.0)

    four_calls()
    code = to_ptx(offloaded_kernels("four_calls")[0], fast_math=fast_math)
    functions = re.findall(r"^\.func\b[^\n]*?(\w+(?:_\$_\w+)*)\(", code, re.M)
    calls = re.findall(r"\bcall(?:\.uni)? [^\n]*?(\w+(?:_\$_\w+)*), \(", code)
    assert functions == ["wk_$_trig_$_reduce"] and calls == ["wk_$_trig_$_reduce"] * 4
    assert "sin.approx" not in code and "cos.approx" not in code


def test_f32_sin_and_cos_need_no_libdevice(cpu_program, monkeypatch) -> None:
    monkeypatch.setattr(ptx, "_libdevice", None)
    monkeypatch.setattr(ptx, "libdevice_candidates", lambda: [])
    x = wk.field(wk.f32, shape=8)

    @wk.kernel
    def rotation():
        for i in x:
            x[i] = wk.sin(x[i]) * wk.cos(x[i])

    rotation()
    assert ".entry" in to_ptx(offloaded_kernels("rotation")[0])


def _same_code(code: str) -> tuple[list[str], list[str]]:
    """PTX as (its module-scope `.global` lines sorted, every other line) with the call-sequence comments'
    numbers dropped (a counter that lives as long as the target machine). The reduction linked in brings its
    table, which comes first where the module has globals of its own (bounds.py's sink for dropped stores): the
    order of independent global definitions changes no instruction."""
    lines = re.sub(r"callseq \d+", "callseq", code).split("\n")
    return sorted(line for line in lines if line.startswith(".global ")), [
        line for line in lines if not line.startswith(".global ")]


@pytest.mark.parametrize("fast_math", [True, False])
def test_the_reduction_optimised_once_gives_the_ptx_of_the_module_optimised_whole(cpu_program, monkeypatch,
                                                                                   fast_math: bool) -> None:
    monkeypatch.setattr(ptx, "_reductions", {})
    optimised: list[Any] = []
    optimise = ptx._optimise
    monkeypatch.setattr(ptx, "_optimise", lambda module, machine: optimised.append(module) or optimise(module, machine))
    x = wk.field(wk.f32, shape=64)

    @wk.kernel
    def mixed(steps: wk.i32):
        for i in x:
            v = x[i]
            n = 0
            while n < steps:                     # sin in a loop and a branch, cos unrolled: calls in many places
                if v > 1.0:
                    v = v * 0.5
                else:
                    v = wk.sin(v) + 0.1 * v
                n += 1
            for s in wk.static(range(3)):
                v += wk.cos(v * (s + 1))
            x[i] = v

    mixed(2)
    text, _ = module_text(offloaded_kernels("mixed")[0], fast_math=fast_math)
    assert trig_f32.reduce_definition() in text
    shared = [ptx.compile_ptx(text, "sm_80") for _ in range(2)]
    assert len(optimised) == 3                  # the reduction once, then each module
    whole = ptx.compile_ptx(text, "sm_80", shared_reduction=False)
    assert _same_code(shared[0]) == _same_code(shared[1]) == _same_code(whole)
    assert re.findall(r"^\.func\b[^\n]*?(\w+(?:_\$_\w+)*)\(", whole, re.M) == ["wk_$_trig_$_reduce"]
    reduction = shared[0][shared[0].index(".func"):shared[0].index(".entry")]
    assert (".ftz" in reduction) == fast_math   # the reduction linked in flushes where the module's functions do


def test_a_reduction_whose_calls_fold_away_is_not_linked(monkeypatch) -> None:
    """sin(1) takes the fast path: O3 folds the branch to the reduction away, and nothing is linked in."""
    defined, declared = trig_f32.definitions(trig_f32.SIN)
    text = "\n".join([*declared, *defined.values(), f"""define void @k(ptr %p) {{
  %v = call float @{trig_f32.SIN}(float 1.0)
  store float %v, ptr %p, align 4
  ret void
}}""", ""])
    shared = ptx.compile_ptx(text, "sm_80")
    assert "reduce" not in shared and "two_over_pi" not in shared and ".visible .func k(" in shared
    assert _same_code(shared) == _same_code(ptx.compile_ptx(text, "sm_80", shared_reduction=False))
