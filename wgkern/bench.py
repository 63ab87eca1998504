"""`python -m wgkern bench`: the standard benchmark suite (saxpy, launch_overhead, nbody, compile).

Each benchmark warms up, then reports the median of >= 5 timed repetitions; a failing benchmark reports its
error and the others still run. Definitions and units are in docs/benchmarks.md."""
from __future__ import annotations

import json
import platform
import statistics
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable

import numpy as np

import wgkern as wk

SAXPY_N = 1 << 22
LAUNCH_COUNT = 2000
NBODY_N = 4096
NBODY_FLOPS_PER_PAIR = 20      # the customary n-body count (sub x3, mul/add x9, sqrt, div, accumulate x3)


@dataclass(slots=True)
class BenchResult:
    """One row of the table: `value` in `unit` (higher or lower is better as `better` says)."""
    name: str
    value: float | None
    unit: str
    better: str
    median_ms: float | None
    reps: int
    detail: str = ""
    error: str = ""


def _median_ms(run: Callable[[], None], reps: int, warmup: int = 1) -> float:
    for _ in range(warmup):
        run()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


# ---- kernels ------------------------------------------------------------------------------------------------

@wk.kernel
def saxpy_kernel(x: wk.template(), y: wk.template(), a: wk.f32):
    for i in x:
        y[i] = a * x[i] + y[i]


@wk.kernel
def increment_kernel(z: wk.template()):
    for i in z:
        z[i] += 1.0


@wk.kernel
def nbody_kernel(px: wk.template(), py: wk.template(), pz: wk.template(), ax: wk.template(),
                 ay: wk.template(), az: wk.template()):
    for i in px:
        xi = px[i]
        yi = py[i]
        zi = pz[i]
        sx = 0.0
        sy = 0.0
        sz = 0.0
        for j in range(px.shape[0]):
            dx = px[j] - xi
            dy = py[j] - yi
            dz = pz[j] - zi
            r2 = dx * dx + dy * dy + dz * dz + 1e-2
            inv = 1.0 / (r2 * wk.sqrt(r2))
            sx += dx * inv
            sy += dy * inv
            sz += dz * inv
        ax[i] = sx
        ay[i] = sy
        az[i] = sz


@wk.func
def _smooth_step(edge0: wk.f32, edge1: wk.f32, x: wk.f32) -> wk.f32:
    t = wk.clamp((x - edge0) / (edge1 - edge0), 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def _compile_body(src: wk.template(), dst: wk.template(), steps: wk.i32):
    for i in src:
        acc = 0.0
        weight = 0.0
        for k in range(-3, 4):
            j = wk.min(wk.max(i + k, 0), src.shape[0] - 1)
            w = _smooth_step(-4.0, 4.0, wk.cast(k, wk.f32))
            acc += w * src[j]
            weight += w
        value = acc / weight
        n = 0
        while n < steps:
            if value > 1.0:
                value = value * 0.5
            elif value < -1.0:
                value = -value * 0.25
            else:
                value = wk.sin(value) + 0.1 * value
            n += 1
        count = 0
        for b in range(8):
            if (i >> b) & 1:
                count += 1
            else:
                continue
        mix = 0.0
        for s in wk.static(range(3)):
            mix += wk.cos(value * (s + 1)) / (s + 1)
        dst[i] = value + mix + wk.cast(count, wk.f32) * 0.01


# ---- benchmarks ---------------------------------------------------------------------------------------------

def bench_saxpy(reps: int) -> BenchResult:
    x = wk.field(wk.f32, shape=SAXPY_N)
    y = wk.field(wk.f32, shape=SAXPY_N)
    x.from_numpy(np.ones(SAXPY_N, np.float32))
    y.fill(0.5)

    def run() -> None:
        saxpy_kernel(x, y, 2.0)
        wk.sync()
    ms = _median_ms(run, reps)
    gbps = SAXPY_N * 12 / (ms * 1e-3) / 1e9
    return BenchResult("saxpy", gbps, "GB/s", "higher", ms, reps, "N=2^22 f32, 12 B/elem")


def bench_launch_overhead(reps: int) -> BenchResult:
    z = wk.field(wk.f32, shape=1)

    def run() -> None:
        for _ in range(LAUNCH_COUNT):
            increment_kernel(z)
        wk.sync()
    ms = _median_ms(run, reps)
    return BenchResult("launch_overhead", ms * 1e3 / LAUNCH_COUNT, "us/launch", "lower", ms, reps,
                       f"{LAUNCH_COUNT} launches of z[i] += 1 (1 element), one sync")


def bench_nbody(reps: int) -> BenchResult:
    rng = np.random.default_rng(0)
    fields = [wk.field(wk.f32, shape=NBODY_N) for _ in range(6)]
    for f in fields[:3]:
        f.from_numpy(rng.random(NBODY_N, dtype=np.float32))

    def run() -> None:
        nbody_kernel(*fields)
        wk.sync()
    ms = _median_ms(run, reps)
    gflops = NBODY_N * NBODY_N * NBODY_FLOPS_PER_PAIR / (ms * 1e-3) / 1e9
    return BenchResult("nbody", ms, "ms", "lower", ms, reps,
                       f"N={NBODY_N}, {gflops:.1f} GFLOP/s at {NBODY_FLOPS_PER_PAIR} FLOP/pair")


def bench_compile(reps: int) -> BenchResult:
    src = wk.field(wk.f32, shape=256)
    dst = wk.field(wk.f32, shape=256)
    src.from_numpy(np.linspace(-2, 2, 256, dtype=np.float32))

    def run() -> None:
        fresh = wk.kernel(_compile_body)      # a new Kernel object: nothing cached in memory
        fresh(src, dst, 4)
        wk.sync()
    ms = _median_ms(run, reps, warmup=1)
    return BenchResult("compile", ms, "ms", "lower", ms, reps, "cold compile + first launch, ~40-line kernel")


BENCHMARKS: dict[str, Callable[[int], BenchResult]] = {
    "saxpy": bench_saxpy,
    "launch_overhead": bench_launch_overhead,
    "nbody": bench_nbody,
    "compile": bench_compile,
}


def run_all(arch: Any = None, reps: int = 7, only: list[str] | None = None) -> tuple[dict[str, Any], list[BenchResult]]:
    reps = max(int(reps), 5)
    program = wk.init(arch=arch, offline_cache=False)
    header = {"arch": str(program.arch.value), "device": program.description,
              "python": platform.python_version(), "machine": platform.machine(), "wgkern": wk.__version__}
    results = []
    for name, bench in BENCHMARKS.items():
        if only and name not in only:
            continue
        try:
            results.append(bench(reps))
        except Exception as exc:  # noqa: BLE001 - report and go on with the other benchmarks
            results.append(BenchResult(name, None, "", "", None, 0, error=f"{type(exc).__name__}: {exc}"))
    wk.reset()
    return header, results


def format_table(header: dict[str, Any], results: list[BenchResult]) -> str:
    lines = [f"wgkern {header['wgkern']} bench on {header['arch']} ({header['device']})",
             f"{'benchmark':16s} {'value':>12s} {'unit':10s} {'median':>10s}  detail"]
    for r in results:
        if r.error:
            lines.append(f"{r.name:16s} {'FAILED':>12s} {'':10s} {'':>10s}  {r.error.splitlines()[0][:100]}")
            continue
        lines.append(f"{r.name:16s} {r.value:12.3f} {r.unit:10s} {r.median_ms:8.2f}ms  {r.detail}")
    return "\n".join(lines)


def main(arch: Any = None, json_path: str | None = None, reps: int = 7, only: str | None = None) -> int:
    names = [n.strip() for n in only.split(",")] if only else None
    header, results = run_all(arch, reps, names)
    print(format_table(header, results))
    if json_path:
        with open(json_path, "w") as f:
            json.dump({**header, "results": [asdict(r) for r in results]}, f, indent=2)
    return 1 if any(r.error for r in results) else 0
