"""The fuzz runner: a fixed list of seeds on every arch, the small-stack mode, and the checks themselves (a wrong
gradient, a branch flip within the finite-difference step and a wrong f32 result are each caught)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import wgkern as wk
from wgkern.fuzz import runner
from wgkern.fuzz.generator import GeneratedProgram, IntTable
from wgkern.fuzz.runner import (Inputs, Mismatch, Unstable, check_arch, check_arch_f64, reference, run_program,
                                run_seed)

# The seeds CI runs on each arch (2 to 20 s a seed on lavapipe, mostly shader compiles; 1 to 8 s on the CPU). Seed
# 1's nested `while` loops need more than the default 32 adstack slots: its stacks grow (runtime/adstack_regrow.py).
CI_SEEDS = list(range(4))


def _arch_name(arch) -> str:
    return arch.value


@pytest.mark.parametrize("seed", CI_SEEDS)
def test_fixed_seeds(arch, seed, tmp_path):
    result = run_seed(seed, [_arch_name(arch)], tmp_path)
    assert result.status == "pass", f"{result.status}: {result.detail}\n{result.source}"


def test_small_stack_gives_right_gradients_or_overflow_and_the_next_seed_runs(arch, tmp_path):
    results = [run_seed(seed, [_arch_name(arch)], tmp_path, small_stack=True) for seed in (0, 1, 2)]
    assert {r.status for r in results} <= {"pass", "overflow_expected"}, [(r.status, r.detail) for r in results]
    assert "overflow_expected" in {r.status for r in results}
    assert all("capacity 1 " in r.detail or "capacity 2 " in r.detail for r in results if r.detail)
    # the process keeps working after an overflow: the next seed passes under default settings
    result = run_seed(3, [_arch_name(arch)], tmp_path)
    assert result.status == "pass", result.detail


# ---- the checks catch what they are for ----------------------------------------------------------------------

TEMPLATE = '''import wgkern as wk

N = 3
M = 2
P = 2

x = wk.field(float, shape=N, needs_grad=True)
w = wk.field(float, shape=M, needs_grad=True)
p = wk.ndarray(float, shape=P, needs_grad=True)
loss = wk.field(float, shape=(), needs_grad=True)
out = wk.field(float, shape=M, needs_grad=True)
y = wk.field(float, shape=N, needs_grad=True)
cw = wk.field(float, shape=M)
dw = wk.field(float, shape=N)
trace = wk.field(wk.i32, shape=1)
tab0 = wk.field(wk.i32, shape=N)


@wk.kernel
def compute(p: wk.types.ndarray(), m: wk.i32):
    for i in range(N):
        v = x[i]
        for t in range(tab0[i]):
            v = 0.5 * v + 0.3 * wk.sin(v + w[t % M])
BODY


@wk.kernel
def reduce():
    for j in range(M):
        loss[None] += cw[j] * out[j] * out[j]
'''


def _program(body: str, seed: int = 90001) -> GeneratedProgram:
    source = TEMPLATE.replace("BODY", body)
    return GeneratedProgram(seed, False, source, 3, 2, 2, [IntTable("tab0", 3, 0, 4)], 1, False, set(), 40,
                            200.0, 3, 12)


def _inputs() -> Inputs:
    return Inputs({"x": np.array([0.3, -0.6, 0.9], np.float32), "w": np.array([0.2, -0.4], np.float32),
                   "p": np.array([0.1, 0.2], np.float32)},
                  {"tab0": np.array([3, 0, 4], np.int32)},
                  {"cw": np.array([0.5, -0.25], np.float32), "dw": np.array([1.0, -1.0, 0.5], np.float32)}, 2)


def _write(program: GeneratedProgram, tmp_path):
    path = tmp_path / "wk_fuzz_check.py"
    path.write_text(program.source)
    return path


def test_a_right_program_passes(arch, tmp_path):
    program = _program("        loss[None] += v * v\n        out[i % M] += wk.cos(v)")
    result = run_program(program, [_arch_name(arch)], tmp_path)
    assert result.status == "pass", result.detail


def test_a_wrong_gradient_is_caught(tmp_path):
    # stop_grad hides half of d(v*v)/dv from reverse mode; the central differences see all of it
    program = _program("        loss[None] += wk.stop_grad(v) * v")
    with pytest.raises(Mismatch, match=r"f64 reverse mode d\(objective\)/dx\[0\]") as info:
        reference(program, _write(program, tmp_path), _inputs(), 0)
    assert info.value.status == "wrong_gradient"
    wk.reset()
    assert run_program(program, ["cpu"], tmp_path).status == "wrong_gradient"


def test_a_branch_flip_within_the_step_is_refused(tmp_path):
    # x[0] = 0.3 (in f32) sits 1e-7 below the threshold: a finite-difference step crosses it
    threshold = float(np.float32(0.3)) + 1e-7
    program = _program(f"        if x[i] > {threshold!r}:\n            trace[0] += 1\n            loss[None] += 2.0 * v\n"
                       "        loss[None] += v")
    with pytest.raises(Unstable, match=r"flips when x\[0\] moves"):
        reference(program, _write(program, tmp_path), _inputs(), 0)
    wk.reset()


def test_a_wrong_f32_result_is_caught(arch, tmp_path):
    program = _program("        loss[None] += v * v")
    path = _write(program, tmp_path)
    ref = reference(program, path, _inputs(), 0)
    wrong = dataclasses.replace(ref, grads=dict(ref.grads, w=ref.grads["w"] + np.array([0.0, 1e-2])))
    with pytest.raises(Mismatch, match=r"f32 gradient on .*: w\[1\]"):
        check_arch(program, path, _inputs(), wrong, _arch_name(arch), {})
    wk.reset()


def test_a_wrong_f64_gradient_on_an_arch_is_caught(arch, tmp_path):
    # the f64 check of an arch is as tight as the reference: a change of 1e-5 is caught
    if not wk.runtime.program.current().backend.supports(wk.f64):
        pytest.skip(f"needs f64 on {arch}, which this device lacks (no shader-f64, or webgpu_profile='baseline')")
    program = _program("        loss[None] += v * v")
    path = _write(program, tmp_path)
    ref = reference(program, path, _inputs(), 0)
    check_arch_f64(program, path, _inputs(), ref, _arch_name(arch), {})
    wrong = dataclasses.replace(ref, grads=dict(ref.grads, x=ref.grads["x"] + np.array([0.0, 0.0, 1e-5])))
    with pytest.raises(Mismatch, match=r"f64 reverse mode on .* against central differences: x\[2\]"):
        check_arch_f64(program, path, _inputs(), wrong, _arch_name(arch), {})
    wk.reset()
