"""Run one generated program and compare: f64 reverse mode against f64 central differences (on the CPU and on
every other arch with f64), f32 results of each arch against the f64 reference, and the arches against each
other (`run_seed`).

The program's module is written to a file and imported after each `wk.init`, so fields belong to that run and
errors name real lines. The f64 reference runs on the CPU under `wk.init(default_fp=wk.f64)` (the program's
`float` fields, ndarrays and literals are then f64); the arches under test run in f32. Inputs are drawn in f32 and
widened, so every run sees the same numbers. A run whose `trace` counts (the taken sides of the float
comparisons) differ between the base point, the finite-difference points and the f32 runs sits too close to a
branch flip to have a derivative there: its inputs are drawn again, at most RESAMPLES times."""
from __future__ import annotations

import dataclasses
import importlib.util
import linecache
import os
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

import wgkern as wk
from wgkern.fuzz import tolerance
from wgkern.fuzz.generator import SCALAR_MAX, GeneratedProgram, generate

RESAMPLES = 4
OVERFLOW_RETRY = 4096      # slots per stack when a seed is run again after an overflow (more in --long mode)
PARAMS = ("x", "w", "p")
OUTPUTS = ("loss", "out", "y")


@dataclasses.dataclass
class Inputs:
    params: dict[str, np.ndarray]       # f32 values of x, w, p
    tables: dict[str, np.ndarray]
    weights: dict[str, np.ndarray]      # cw, dw: the objective's weights of out and y
    m: int


@dataclasses.dataclass
class Evaluation:
    outputs: dict[str, np.ndarray]
    trace: np.ndarray
    objective: float


@dataclasses.dataclass
class SeedResult:
    seed: int
    status: str                         # pass, unstable, wrong_gradient, wrong_forward, arch_mismatch, overflow,
    detail: str = ""                    # overflow_expected (small-stack mode), crash:<ErrorType>
    source: str = ""
    path: str = ""

    @property
    def failed(self) -> bool:
        return self.status not in ("pass", "unstable", "overflow_expected")


class Mismatch(Exception):
    def __init__(self, status: str, detail: str):
        super().__init__(detail)
        self.status = status
        self.detail = detail


class Unstable(Exception):
    """A float comparison flips within the finite-difference steps or under f32 rounding."""


def draw_inputs(program: GeneratedProgram, seed: int, attempt: int) -> Inputs:
    rng = np.random.default_rng([seed, attempt])
    sizes = {"x": program.n, "w": program.m, "p": program.p}
    params = {k: rng.uniform(-1.0, 1.0, size).astype(np.float32) for k, size in sizes.items()}
    tables: dict[str, np.ndarray] = {}
    for t in program.tables:
        values = rng.integers(t.low, t.high + 1, t.size).astype(np.int32)
        tables[t.name] = values + (tables[t.base] if t.base else 0)
    weights = {"cw": rng.uniform(-1.0, 1.0, program.m).astype(np.float32),
               "dw": rng.uniform(-1.0, 1.0, program.n).astype(np.float32)}
    return Inputs(params, tables, weights, int(rng.integers(0, SCALAR_MAX + 1)))


class ProgramRun:
    """The program loaded under one `wk.init`: forward evaluations and gradients."""

    def __init__(self, program: GeneratedProgram, path: Path, arch: str, fp64: bool,
                 stack_options: dict[str, int] | None = None, debug: bool = False):
        self.program = program
        wk.reset()
        options: dict[str, Any] = {"arch": getattr(wk, arch), "debug": debug, **(stack_options or {})}
        if fp64:
            options["default_fp"] = wk.f64
        wk.init(**options)
        self.np_float = np.float64 if fp64 else np.float32
        self.module = _load(path)

    def set_inputs(self, inputs: Inputs, params: dict[str, np.ndarray] | None = None) -> None:
        mod = self.module
        for name, values in (params or inputs.params).items():
            getattr(mod, name).from_numpy(values.astype(self.np_float))
        for name, values in inputs.tables.items():
            getattr(mod, name).from_numpy(values)
        for name, values in inputs.weights.items():
            getattr(mod, name).from_numpy(values.astype(self.np_float))
        self.m = inputs.m

    def _clear_outputs(self) -> None:
        mod = self.module
        for name in OUTPUTS:
            getattr(mod, name).fill(0)
        mod.trace.fill(0)

    def _launch(self) -> None:
        self.module.compute(self.module.p, self.m)
        if self.program.tape:
            self.module.reduce()

    def evaluate(self) -> Evaluation:
        mod = self.module
        self._clear_outputs()
        self._launch()
        outputs = {name: np.atleast_1d(getattr(mod, name).to_numpy()).astype(np.float64) for name in OUTPUTS}
        objective = float(outputs["loss"][0])
        if not self.program.tape:
            objective += float(outputs["out"] @ mod.cw.to_numpy().astype(np.float64))
            objective += float(outputs["y"] @ mod.dw.to_numpy().astype(np.float64))
        return Evaluation(outputs, mod.trace.to_numpy().copy(), objective)

    def gradient(self) -> tuple[Evaluation, dict[str, np.ndarray]]:
        """Forward, then reverse mode: `compute.grad()` seeded with loss 1 and the weights, or a Tape over compute
        and reduce. Returns the forward results read after the gradient and the gradients of x, w, p."""
        mod = self.module
        for name in PARAMS + OUTPUTS:
            getattr(mod, name).grad.fill(0)
        self._clear_outputs()
        if self.program.tape:
            with wk.ad.Tape(loss=mod.loss):
                self._launch()
        else:
            self._launch()
            mod.loss.grad[None] = 1.0
            mod.out.grad.copy_from(mod.cw)
            mod.y.grad.copy_from(mod.dw)
            mod.compute.grad(mod.p, self.m)
        grads = {name: getattr(mod, name).grad.to_numpy().astype(np.float64) for name in PARAMS}
        wk.sync()
        outputs = {name: np.atleast_1d(getattr(mod, name).to_numpy()).astype(np.float64) for name in OUTPUTS}
        return Evaluation(outputs, mod.trace.to_numpy().copy(), float("nan")), grads


def _load(path: Path) -> ModuleType:
    name = f"wk_fuzz_{path.stem}_{os.urandom(4).hex()}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module


@dataclasses.dataclass
class Reference:
    base: Evaluation
    grads: dict[str, np.ndarray]        # D(h/2), the f64 central differences
    error: dict[str, np.ndarray]        # bound on |D(h/2) - true gradient| per element


def reference(program: GeneratedProgram, path: Path, inputs: Inputs, default_ad_stack_size: int) -> Reference:
    """f64 on the CPU: central differences at steps h and h/2 (no trace count may change), and the f64 reverse-mode
    gradient checked against them."""
    options = {"default_ad_stack_size": default_ad_stack_size} if default_ad_stack_size else {}
    run = ProgramRun(program, path, "cpu", fp64=True, stack_options=options)
    run.set_inputs(inputs)
    base = run.evaluate()
    value_scale = max(abs(base.objective), 1.0)
    eps_f = tolerance.f64_forward_error(program.error_units, value_scale)
    grads: dict[str, np.ndarray] = {}
    error: dict[str, np.ndarray] = {}
    try:
        ad_base, ad = run.gradient()
    except wk.AdStackOverflowError as exc:
        raise Mismatch("overflow", f"f64 reference on cpu: {exc}") from None
    if not np.array_equal(ad_base.trace, base.trace):
        raise Mismatch("wrong_forward", "the forward run before .grad() took other branches than the same run alone")
    for name in PARAMS:
        values = inputs.params[name].astype(np.float64)
        grads[name] = np.zeros_like(values)
        error[name] = np.zeros_like(values)
        for k in range(values.size):
            h = tolerance.fd_step(program.error_units, value_scale, values[k])
            d = [_difference(run, inputs, name, values, k, step, base.trace) for step in (h, h / 2)]
            grads[name][k] = d[1]
            error[name][k] = tolerance.f64_tolerance(d[0], d[1], eps_f, h / 2)
            if abs(ad[name][k] - d[1]) > error[name][k]:
                raise Mismatch("wrong_gradient",
                               f"f64 reverse mode d(objective)/d{name}[{k}] = {ad[name][k]!r}, central differences "
                               f"(h={h / 2:.3g}) give {d[1]!r} (tolerance {error[name][k]:.3g}, "
                               f"Richardson estimate of their error {abs(d[0] - d[1]) / 3:.3g})")
    return Reference(base, grads, error)


def _difference(run: ProgramRun, inputs: Inputs, name: str, values: np.ndarray, k: int, h: float,
                trace: np.ndarray) -> float:
    results = []
    for sign in (1.0, -1.0):
        moved = values.copy()
        moved[k] += sign * h
        params = dict(inputs.params)
        params[name] = moved
        for pname, pvalues in params.items():
            getattr(run.module, pname).from_numpy(pvalues.astype(np.float64))
        ev = run.evaluate()
        if not np.array_equal(ev.trace, trace):
            raise Unstable(f"a float comparison flips when {name}[{k}] moves by {sign * h:.3g}")
        results.append(ev.objective)
    for pname, pvalues in inputs.params.items():
        getattr(run.module, pname).from_numpy(pvalues.astype(np.float64))
    return (results[0] - results[1]) / (2.0 * h)


def _first_mismatch(label: str, got: dict[str, np.ndarray], want: dict[str, np.ndarray],
                    tol: dict[str, np.ndarray | float]) -> str | None:
    for name in want:
        bad = np.nonzero(~(np.abs(got[name] - want[name]) <= tol[name]))[0]
        if bad.size:
            k = int(bad[0])
            t = tol[name] if np.isscalar(tol[name]) else tol[name][k]   # type: ignore[index]
            return (f"{label}: {name}[{k}] = {got[name][k]!r}, expected {want[name][k]!r} "
                    f"(|difference| {abs(got[name][k] - want[name][k]):.3g} > tolerance {float(t):.3g})")
    return None


def check_arch(program: GeneratedProgram, path: Path, inputs: Inputs, ref: Reference, arch: str,
               stack_options: dict[str, int]) -> tuple[Evaluation, dict[str, np.ndarray]]:
    run = ProgramRun(program, path, arch, fp64=False, stack_options=stack_options)
    run.set_inputs(inputs)
    forward = run.evaluate()
    if not np.array_equal(forward.trace, ref.base.trace):
        raise Unstable(f"a float comparison takes another side in f32 on {arch}")
    out_ref = ref.base.outputs
    fwd_tol = tolerance.f32_tolerance(program.error_units, np.concatenate(list(out_ref.values())))
    message = _first_mismatch(f"f32 forward on {arch}", forward.outputs, out_ref, dict.fromkeys(out_ref, fwd_tol))
    if message:
        raise Mismatch("wrong_forward", message)
    after, grads = run.gradient()
    message = _first_mismatch(f"f32 forward on {arch}, run again before .grad()", after.outputs, forward.outputs,
                              dict.fromkeys(out_ref, fwd_tol))
    if message or not np.array_equal(after.trace, forward.trace):
        raise Mismatch("wrong_forward", message or f"the forward run before .grad() on {arch} took other branches")
    grad_tol = tolerance.f32_tolerance(program.error_units, np.concatenate(list(ref.grads.values())))
    tol = {name: grad_tol + ref.error[name] for name in PARAMS}
    message = _first_mismatch(f"f32 gradient on {arch}", grads, ref.grads, tol)
    if message:
        raise Mismatch("wrong_gradient", message)
    return forward, grads


def check_arch_f64(program: GeneratedProgram, path: Path, inputs: Inputs, ref: Reference, arch: str,
                   stack_options: dict[str, int]) -> None:
    """The f64 program on an arch other than the CPU (where it supports f64): forward results within the f64
    bound of the CPU's, reverse-mode gradients within the reference's own tolerance (as tight as the CPU's f64
    check, where the f32 bound is loose)."""
    try:
        run = ProgramRun(program, path, arch, fp64=True, stack_options=stack_options)
    except wk.DeviceFeatureError:
        return              # no f64 on this device (no shader-f64, or wk.init(webgpu_profile="baseline"))
    run.set_inputs(inputs)
    forward = run.evaluate()
    if not np.array_equal(forward.trace, ref.base.trace):
        raise Mismatch("wrong_forward", f"the f64 forward run on {arch} took other branches than on the cpu")
    out_ref = ref.base.outputs
    fwd_tol = 2 * tolerance.f64_forward_error(program.error_units, tolerance.scale(np.concatenate(list(out_ref.values()))))
    message = _first_mismatch(f"f64 forward on {arch}", forward.outputs, out_ref, dict.fromkeys(out_ref, fwd_tol))
    if message:
        raise Mismatch("wrong_forward", message)
    _, grads = run.gradient()
    message = _first_mismatch(f"f64 reverse mode on {arch} against central differences", grads, ref.grads, ref.error)
    if message:
        raise Mismatch("wrong_gradient", message)


def run_seed(seed: int, arches: list[str], folder: Path, *, small_stack: bool = False, long: bool = False) -> SeedResult:
    """Generate the program of `seed`, run every comparison, and classify the outcome."""
    return run_program(generate(seed, long), arches, folder, small_stack=small_stack)


def run_program(program: GeneratedProgram, arches: list[str], folder: Path, *, small_stack: bool = False) -> SeedResult:
    """Run every comparison on `program` (its module is written into `folder`). Under default settings an
    AdStackOverflowError is a failure of its own; the program then runs again with larger stacks, so its
    gradients are still checked (a wrong one there is reported as a wrong gradient): OVERFLOW_RETRY slots, or in
    --long mode as many as there can be pushes (a push is a statement execution or a loop trip: program.work +
    program.iterations bound them; loose, so kept to --long, where lavapipe may find them too large)."""
    seed = program.seed
    pushes = program.work + program.iterations + 2
    retry = max(OVERFLOW_RETRY, pushes) if program.long else min(OVERFLOW_RETRY, pushes)
    path = folder / f"wk_fuzz_{seed}{'_long' if program.long else ''}.py"
    path.write_text(program.source)
    linecache.checkcache(str(path))
    result = SeedResult(seed, "pass", source=program.source, path=str(path))
    if small_stack:    # a user-set cap of 1 or 2 slots on the arches under test; a reference that does not overflow
        result.status, result.detail = _run(program, path, seed, arches, {"ad_stack_size": 1 + seed % 2},
                                            retry)
    else:
        result.status, result.detail = _run(program, path, seed, arches, {}, 0)
    if result.status == "overflow" and small_stack and not result.detail.startswith("f64 reference"):
        result.status = "overflow_expected"
    elif result.status == "overflow":
        status, detail = _run(program, path, seed, arches, {"default_ad_stack_size": retry}, retry)
        if status == "pass":
            result.detail += f"\n(with default_ad_stack_size={retry} every comparison passes)"
        elif status == "crash:OutOfMemoryError":     # stacks that large do not fit the device: nothing to check
            result.detail += f"\n(with default_ad_stack_size={retry} the stacks do not fit: {detail})"
        else:
            result.status = status
            result.detail = f"with default_ad_stack_size={retry}: {detail}\n(under default settings: " \
                            f"{result.detail})"
    return result


def _run(program: GeneratedProgram, path: Path, seed: int, arches: list[str], stack_options: dict[str, int],
         reference_stack: int) -> tuple[str, str]:
    """One pass over every arch; an arch that overflows its adstacks does not keep the others from being checked."""
    status, detail = "unstable", ""
    try:
        for attempt in range(RESAMPLES):
            inputs = draw_inputs(program, seed, attempt)
            results = {}
            overflows = []
            try:
                ref = reference(program, path, inputs, reference_stack)
                for arch in arches:
                    try:
                        results[arch] = check_arch(program, path, inputs, ref, arch, stack_options)
                        if arch != "cpu":
                            check_arch_f64(program, path, inputs, ref, arch, stack_options)
                    except wk.AdStackOverflowError as exc:
                        overflows.append(f"{arch}: {exc}")
            except Unstable as exc:
                detail = str(exc)
                continue
            _compare_arches(program, results, ref)
            return ("overflow", "\n".join(overflows)) if overflows else ("pass", "")
    except Mismatch as exc:
        return exc.status, exc.detail
    except Exception as exc:   # noqa: BLE001 - every other error is a crash to report, by type
        return f"crash:{type(exc).__name__}", "".join(traceback.format_exception_only(type(exc), exc)).strip()
    finally:
        wk.reset()
    return status, detail


def _compare_arches(program: GeneratedProgram, results: dict[str, tuple[Evaluation, dict[str, np.ndarray]]],
                    ref: Reference) -> None:
    names = list(results)
    fwd_tol = 2 * tolerance.f32_tolerance(program.error_units, np.concatenate(list(ref.base.outputs.values())))
    grad_tol = 2 * tolerance.f32_tolerance(program.error_units, np.concatenate(list(ref.grads.values())))
    for other in names[1:]:
        a, b = results[names[0]], results[other]
        label = f"{names[0]} against {other}"
        message = _first_mismatch(f"forward, {label}", b[0].outputs, a[0].outputs, dict.fromkeys(OUTPUTS, fwd_tol)) \
            or _first_mismatch(f"gradient, {label}", b[1], a[1], dict.fromkeys(PARAMS, grad_tol))
        if message:
            raise Mismatch("arch_mismatch", message)
