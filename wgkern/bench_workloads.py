"""The workloads of the benchmark suite and their table (BENCHMARKS): saxpy, launch overhead, launch + sync, idle
sync, n-body, compile, adstack, split saxpy, the sizing reducer and cache, import. Each is written once against a
toolkit module `m` (wgkern or a peer whose API is nearly ours), warms up, then returns the median of its timed
repetitions as a BenchResult. Definitions and units are in docs/benchmarks.md."""
# No `from __future__ import annotations`: the workloads annotate kernel parameters with `m.f32`, which must
# be evaluated where `m` is in scope.
import importlib.util
import itertools
import os
import statistics
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import numpy as np

from wgkern import bench_floors
from wgkern.bench_report import BenchResult

SAXPY_N = 1 << 22
SAXPY_H200_TARGET_GBPS = 4000   # 16-byte accesses reach 4.27 TB/s there (hand-written WGSL, PyTorch)
SAXPY_N_GPU = 1 << 26     # 768 MB of traffic: past a GPU's L2 (50 MB on an H100), so it measures device memory
LAUNCH_COUNT = 2000
NBODY_N = 4096
NBODY_FLOPS_PER_PAIR = 20      # the customary n-body count (sub x3, mul/add x9, sqrt, div, accumulate x3)
ADSTACK_N = 1 << 16
ADSTACK_MAX_TRIPS = 32
REDUCER_N = 1 << 24
SIZING_HIT_CALLS = 2000
IDLE_SYNC_SAMPLES = 500
LAUNCH_SYNC_ROUNDS = 200
NOMINAL_BINDING = 128 << 20     # the binding limit used where the arch has none (the CPU, CUDA, peers)


def _median_ms(run: Callable[[], None], reps: int, warmup: int = 1) -> float:
    for _ in range(warmup):
        run()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def _batched_ms(run: Callable[[], None], reps: int, batch_seconds: float = 0.01, warm_seconds: float = 0.1) -> float:
    """Milliseconds a call of `run` takes, for calls far shorter than a millisecond: calls for `warm_seconds`
    first (a GPU that idled through compiles raises its clocks), then the median over `reps` batches of as
    many calls as fill about `batch_seconds`, divided by the batch's size."""
    calls = 0
    start = time.perf_counter()
    while time.perf_counter() - start < warm_seconds or calls == 0:
        run()
        calls += 1
    batch = max(1, round(batch_seconds * calls / (time.perf_counter() - start)))
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        for _ in range(batch):
            run()
        times.append((time.perf_counter() - start) / batch)
    return statistics.median(times) * 1e3


def _against_floor(run: Callable[[], None], floor_run: Callable[[], None] | None, reps: int,
                   warmup: int = 1) -> tuple[float, float | None]:
    """(median ms of `run`, median seconds of `floor_run`): timed alternately where there is a floor
    (bench_floors.paired_medians), else `run` alone (floor None)."""
    if floor_run is None:
        return _median_ms(run, reps, warmup), None
    seconds, floor_seconds = bench_floors.paired_medians(run, floor_run, reps)
    return seconds * 1e3, floor_seconds



_gpu_sizes = False      # set by each wgkern run; a peer measured after it in the same round uses the same sizes


def _on_gpu(m: ModuleType) -> bool:
    """Whether the workloads run on a real GPU (CUDA, or a wgpu adapter that is not a CPU one). Decided by
    wgkern's program; a peer toolkit (always measured after wgkern in a round) reuses wgkern's answer."""
    global _gpu_sizes
    if m.__name__ == "wgkern":
        from wgkern.runtime import program
        backend = program.get_program().backend
        adapter = getattr(backend, "adapter", None)
        _gpu_sizes = (str(program.get_program().arch.value) == "cuda"
                      or adapter is not None and adapter.info.get("adapter_type") != "CPU")
    return _gpu_sizes


def bench_saxpy(m: ModuleType, reps: int) -> BenchResult:
    n = SAXPY_N_GPU if _on_gpu(m) else SAXPY_N
    x = m.field(m.f32, shape=n)
    y = m.field(m.f32, shape=n)

    @m.kernel
    def saxpy(a: m.f32):
        for i in x:
            y[i] = a * x[i] + y[i]

    x.from_numpy(np.ones(n, np.float32))
    y.fill(0.5)

    def run() -> None:
        saxpy(2.0)
        m.sync()
    ms = _median_ms(run, reps)
    gbps = n * 12 / (ms * 1e-3) / 1e9
    detail = f"N=2^{n.bit_length() - 1} f32, 12 B/elem"
    gpu_seconds = _gpu_median_seconds(m, lambda: saxpy(2.0), reps)
    device_gbps = n * 12 / gpu_seconds / 1e9 if gpu_seconds else None
    if gpu_seconds:
        target = f"; target on an H200 {SAXPY_H200_TARGET_GBPS} GB/s" if _on_gpu(m) else ""
        detail += f"; GPU timestamps {device_gbps:.1f} GB/s ({gpu_seconds * 1e3:.3f} ms{target})"
    if m.__name__ == "wgkern":
        detail += "; " + _access_width()
    return BenchResult("saxpy", gbps, "GB/s", "higher", ms, reps, detail, device_value=device_gbps)


def _access_width() -> str:
    """How the running wgkern backend compiles saxpy's loads and stores (passes/vectorize.py)."""
    from wgkern.passes.pipeline import WIDE_ACCESS_ENV
    from wgkern.runtime import program
    if not program.get_program().backend.wide_memory_access:
        return "scalar accesses (the backend's own vectoriser)"
    if os.environ.get(WIDE_ACCESS_ENV, "1") == "0":
        return f"scalar accesses ({WIDE_ACCESS_ENV}=0)"
    return "16-byte accesses"


def bench_split_saxpy(m: ModuleType, reps: int) -> BenchResult:
    """saxpy over fields of 3/4 of the device's storage-binding limit (bound whole) and of 5/4 of it (a WGSL
    device binds them as two windows, backends/wgsl/split.py), side by side in ns per element; the value is
    split / whole."""
    from wgkern.runtime import program
    backend = program.get_program().backend if m.__name__ == "wgkern" else None
    binding = getattr(backend, "max_binding", NOMINAL_BINDING)
    if binding // 16 * 5 * 4 > getattr(backend, "max_buffer", binding * 2):
        raise RuntimeError(f"this device's max_buffer_size ({backend.max_buffer} B) leaves no room past its "
                           f"binding limit ({binding} B): no container is split")
    ns, ms = [], 0.0
    for n in (binding // 16 * 3, binding // 16 * 5):
        x = m.field(m.f32, shape=n)
        y = m.field(m.f32, shape=n)

        @m.kernel
        def saxpy(a: m.f32):
            for i in x:
                y[i] = a * x[i] + y[i]

        x.fill(1.0)
        y.fill(0.5)

        def run() -> None:
            saxpy(2.0)
            m.sync()
        ms = _median_ms(run, reps)
        ns.append(ms * 1e6 / n)
        del x, y
    return BenchResult("split_saxpy", ns[1] / ns[0], "x", "lower", ms, reps,
                       f"binding limit {binding} B; f32 saxpy {ns[0]:.3f} ns/elem at 3/4 of it (one binding), "
                       f"{ns[1]:.3f} ns/elem at 5/4 (two windows on WGSL)")


def _gpu_median_seconds(m: ModuleType, launch: Callable[[], None], reps: int) -> float | None:
    """wgkern on a WGSL arch with timestamp queries: median device time of `launch` (WgslBackend.gpu_timer),
    else None. The wall-clock number stays the reported value; this is a detail."""
    if m.__name__ != "wgkern":
        return None
    from wgkern.runtime import program
    backend = program.get_program().backend
    if not getattr(backend, "supports_gpu_timer", False):
        return None
    m.sync()
    samples = []
    for _ in range(reps):
        with backend.gpu_timer() as elapsed:
            launch()
        samples.append(elapsed.seconds)
    median = statistics.median(samples)
    return median if median > 0 else None


def bench_launch_overhead(m: ModuleType, reps: int) -> BenchResult:
    z = m.field(m.f32, shape=1)

    @m.kernel
    def increment():
        for i in z:
            z[i] += 1.0

    def run() -> None:
        for _ in range(LAUNCH_COUNT):
            increment()
        m.sync()
    run()
    floor_run = bench_floors.launch_floor(increment, z, LAUNCH_COUNT) if m.__name__ == "wgkern" else None
    ms, floor_seconds = _against_floor(run, floor_run, reps)
    floor = None if floor_seconds is None else floor_seconds * 1e6 / LAUNCH_COUNT
    us = ms * 1e3 / LAUNCH_COUNT
    detail = f"{LAUNCH_COUNT} launches of z[i] += 1 (1 element), one sync"
    if floor is not None:
        detail += f"; wgkern's own work {(us - floor) * 1e3:.0f} ns/launch above raw wgpu's {floor * 1e3:.0f}"
    return BenchResult("launch_overhead", us, "us/launch", "lower", ms, reps, detail, floor=floor,
                       floor_name="raw wgpu")


def bench_launch_sync(m: ModuleType, reps: int) -> BenchResult:
    """One launch of a 1-element kernel, then `sync()`: a batch of one, encoded, submitted and waited for. On
    WGSL arches beside the raw-wgpu floor of the same dispatch (encoder, pass, one dispatch, argument write,
    submit, the same wait)."""
    z = m.field(m.f32, shape=1)

    @m.kernel
    def touch():
        for i in z:
            z[i] += 1.0

    def run() -> None:
        for _ in range(LAUNCH_SYNC_ROUNDS):
            touch()
            m.sync()
    run()
    floor_one = bench_floors.launch_floor(touch, z, 1) if m.__name__ == "wgkern" else None

    def floor_run() -> None:
        for _ in range(LAUNCH_SYNC_ROUNDS):
            floor_one()
    ms, floor_seconds = _against_floor(run, None if floor_one is None else floor_run, reps)
    floor = None if floor_seconds is None else floor_seconds * 1e6 / LAUNCH_SYNC_ROUNDS
    us = ms * 1e3 / LAUNCH_SYNC_ROUNDS
    detail = f"median over {reps} runs of {LAUNCH_SYNC_ROUNDS} (launch, sync) pairs"
    if floor is not None:
        detail += f"; wgkern's own work {us - floor:.1f} us above raw wgpu's {floor:.1f}"
    return BenchResult("launch_sync", us, "us", "lower", ms, reps, detail, floor=floor, floor_name="raw wgpu")


def bench_idle_sync(m: ModuleType, reps: int) -> BenchResult:
    """`sync()` with nothing pending, right after a launch + sync: the floor of every synchronising call."""
    z = m.field(m.f32, shape=1)

    @m.kernel
    def touch():
        for i in z:
            z[i] += 1.0

    touch()
    m.sync()
    samples = []
    for _ in range(IDLE_SYNC_SAMPLES):
        touch()
        m.sync()
        start = time.perf_counter()
        m.sync()
        samples.append(time.perf_counter() - start)
    us = statistics.median(samples) * 1e6
    return BenchResult("idle_sync", us, "us", "lower", us * 1e-3, len(samples),
                       f"median of {len(samples)} idle syncs, each after launch + sync")


def bench_nbody(m: ModuleType, reps: int) -> BenchResult:
    rng = np.random.default_rng(0)
    px, py, pz, ax, ay, az = (m.field(m.f32, shape=NBODY_N) for _ in range(6))
    for f in (px, py, pz):
        f.from_numpy(rng.random(NBODY_N, dtype=np.float32))

    @m.kernel
    def nbody():
        for i in px:
            xi = px[i]
            yi = py[i]
            zi = pz[i]
            sx = 0.0
            sy = 0.0
            sz = 0.0
            for j in range(NBODY_N):
                dx = px[j] - xi
                dy = py[j] - yi
                dz = pz[j] - zi
                r2 = dx * dx + dy * dy + dz * dz + 1e-2
                inv = 1.0 / (r2 * m.sqrt(r2))
                sx += dx * inv
                sy += dy * inv
                sz += dz * inv
            ax[i] = sx
            ay[i] = sy
            az[i] = sz

    def run() -> None:
        nbody()
        m.sync()
    ms = _median_ms(run, reps)
    gflops = NBODY_N * NBODY_N * NBODY_FLOPS_PER_PAIR / (ms * 1e-3) / 1e9
    return BenchResult("nbody", gflops, "GFLOP/s", "higher", ms, reps,
                       f"N={NBODY_N}, {ms:.2f} ms/step at {NBODY_FLOPS_PER_PAIR} FLOP/pair")


_COMPILE_SOURCE = """
def make(m, src, dst):
    @m.func
    def smooth_step(edge0: m.f32, edge1: m.f32, x: m.f32) -> m.f32:
        t = m.min(m.max((x - edge0) / (edge1 - edge0), 0.0), 1.0)
        return t * t * (3.0 - 2.0 * t)

    @m.kernel
    def body(steps: m.i32):
        for i in src:
            acc = 0.0
            weight = 0.0
            for k in range(-3, 4):
                j = m.min(m.max(i + k, 0), 255)
                w = smooth_step(-4.0, 4.0, m.cast(k, m.f32))
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
                    value = m.sin(value) + 0.1 * value
                n += 1
            count = 0
            for b in range(8):
                if (i >> b) & 1:
                    count += 1
                else:
                    continue
            mix = 0.0
            for s in m.static(range(3)):
                mix += m.cos(value * (s + 1)) / (s + 1)
            dst[i] = value + mix + m.cast(count, m.f32) * SALT

    return body
"""
_ADSTACK_SOURCE = """
def make(m, x, n, loss):
    @m.kernel
    def sin_chain():
        for i in x:
            v = x[i]
            for _ in range(n[i]):
                v = m.sin(v) + STEP
            loss[None] += v

    return sin_chain
"""
_fresh_counter = itertools.count()


def _fresh_kernel(m: ModuleType, template: str, constant: str, value: float, *args: Any) -> Any:
    """`make(m, *args)` of `template`, with `constant` replaced by `value` plus a tiny unique offset, from a
    new file: the source text and the generated code are new every time, so no toolkit and no driver cache
    can answer from an earlier compile (a cold compile)."""
    salt = next(_fresh_counter)
    folder = Path(tempfile.gettempdir()) / f"wgkern-bench-{os.getpid()}"
    folder.mkdir(exist_ok=True)
    path = folder / f"fresh_{salt}.py"
    # distinct as an f32 in every repetition of every run, so no disk cache (the toolkits', Mesa's) has seen it
    unique = (time.time_ns() // 1000 + salt) % (1 << 16)    # the value changes by at most 1.6%
    path.write_text(template.replace(constant, repr(value * (1 + unique * 2.0 ** -22))))
    spec = importlib.util.spec_from_file_location(f"wgkern_bench_fresh_{salt}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make(m, *args)


def _compile_kernel(m: ModuleType, src: Any, dst: Any) -> Any:
    """A fresh ~40-line kernel (nested loops, while, if/elif/else, continue, static unrolling, a func)."""
    return _fresh_kernel(m, _COMPILE_SOURCE, "SALT", 0.01, src, dst)


def bench_compile(m: ModuleType, reps: int) -> BenchResult:
    src = m.field(m.f32, shape=256)
    dst = m.field(m.f32, shape=256)
    src.from_numpy(np.linspace(-2, 2, 256, dtype=np.float32))

    kernels = []

    def run() -> None:
        fresh = _compile_kernel(m, src, dst)     # a new kernel object: nothing cached in memory
        fresh(4)
        m.sync()
        kernels[:] = [fresh]
    run()
    # the floor: the driver compiles the WGSL of the kernel wgkern just compiled
    floor_run = bench_floors.compile_floor(kernels, [4]) if m.__name__ == "wgkern" else None
    ms, floor_seconds = _against_floor(run, floor_run, reps, warmup=0)
    floor = None if floor_seconds is None else floor_seconds * 1e3
    return BenchResult("compile", ms, "ms", "lower", ms, reps, "cold compile + first launch, ~40-line kernel",
                       floor=floor, floor_name="driver JIT")


def _adstack_workload(m: ModuleType) -> tuple[Any, Any, Any, Any]:
    """Fields and a fresh `sin_chain` kernel (v = sin(v) + ~0.1 per trip, trips 0-31 by thread)."""
    x = m.field(m.f32, shape=ADSTACK_N, needs_grad=True)
    n = m.field(m.i32, shape=ADSTACK_N)
    loss = m.field(m.f32, shape=(), needs_grad=True)
    sin_chain = _fresh_kernel(m, _ADSTACK_SOURCE, "STEP", 0.1, x, n, loss)
    x.from_numpy(np.linspace(0, 1, ADSTACK_N, dtype=np.float32))
    n.from_numpy((np.arange(ADSTACK_N) % ADSTACK_MAX_TRIPS).astype(np.int32))
    return x, n, loss, sin_chain


def _cold_backward_ms(m: ModuleType) -> float:
    """First `.grad()` of a fresh adstack kernel (its forward already compiled and run) minus its second:
    the backward's cold compile plus whatever else a first launch does."""
    _, _, loss, sin_chain = _adstack_workload(m)
    sin_chain()
    loss.grad[None] = 1.0
    m.sync()
    times = []
    for _ in range(2):
        start = time.perf_counter()
        sin_chain.grad()
        m.sync()
        times.append(time.perf_counter() - start)
    return max(times[0] - times[1], 0.0) * 1e3


def bench_adstack(m: ModuleType, reps: int) -> BenchResult:
    """Forward + backward through a dynamic loop (per-thread trip count 0-31), then a sync: the adstack
    workload, timed in batches (a call takes ~0.1 ms on a GPU). The detail adds the backward's cold compile, a
    median over `reps` fresh kernels."""
    cold_ms = statistics.median(_cold_backward_ms(m) for _ in range(reps))
    _, _, loss, sin_chain = _adstack_workload(m)

    def run() -> None:
        sin_chain()
        loss.grad[None] = 1.0
        sin_chain.grad()
        m.sync()
    ms = _batched_ms(run, reps)
    stats = getattr(m, "stats", None)
    heap = f", heap {stats()['adstack_heap_bytes']} B" if callable(stats) else ""
    return BenchResult("adstack", ms, "ms", "lower", ms, reps,
                       f"N=2^16, trips 0-31, fwd+bwd+sync, median of {reps} batches; "
                       f"cold backward compile {cold_ms:.0f} ms (median of {reps}){heap}")


def bench_sizing_reducer(m: ModuleType, reps: int) -> BenchResult:
    """The launch-time sizer's max-reduction over a 2^24-element i32 field (a cache miss each repetition):
    the device reducer on WGSL arches, numpy on the CPU. wgkern only (internal API)."""
    from wgkern.backends.adstack import StackSpec
    from wgkern.backends.base import LaunchArgs
    from wgkern.ir import nodes as ir
    from wgkern.runtime import program as program_module
    from wgkern.sizing import E, SizeCache, capacities_for_launch
    from wgkern.runtime.sizing_context import launch_context
    counts = m.field(m.i32, shape=REDUCER_N)
    values = np.random.default_rng(7).integers(0, 1000, REDUCER_N, dtype=np.int32)
    values[REDUCER_N // 3] = 4321
    counts.from_numpy(values)
    slot = ir.ContainerSlot(name="n", kind="field", dtype=m.i32, ndim=1, shape=(REDUCER_N,), host=counts)
    kernel = ir.OffloadedKernel("sizing", [], [slot], [])
    var = E.BoundVar("i")
    expr = E.MaxOverRange(var, E.Const(0), E.Const(REDUCER_N), E.FieldLoad(slot, (var,), m.i32))
    spec = StackSpec(0, "task", 0, "v", m.f32, None, None, expr)
    program = program_module.get_program()
    args = LaunchArgs([], [counts.buffer], [counts.full_shape], 0, 0)
    cache = SizeCache()
    tokens = itertools.count()

    def run() -> None:
        context = launch_context(kernel, args, program.backend, [(counts.uid, next(tokens))], program.stats,
                                 cache, 32)
        if capacities_for_launch([spec], context) != [4321]:
            raise RuntimeError("the reducer returned a wrong maximum")
    ms = _median_ms(run, reps)
    return BenchResult("sizing_reducer", REDUCER_N * 4 / (ms * 1e-3) / 1e9, "GB/s", "higher", ms, reps,
                       "max over 2^24 i32, cache miss, result read back")


def bench_sizing_hit(m: ModuleType, reps: int) -> BenchResult:
    """Per-launch sizing work in steady state: the adstack workload's `.grad()` capacities with unchanged
    bounds (a cache hit: the tokens of the containers the size expressions read, compared with the previous
    launch's). wgkern only (internal API)."""
    from wgkern.backends.base import LaunchArgs
    from wgkern.runtime import program as program_module
    from wgkern.runtime.stack_capacities import launch_capacities
    _, _, loss, sin_chain = _adstack_workload(m)
    sin_chain()
    loss.grad[None] = 1.0
    sin_chain.grad()
    m.sync()
    entry = sin_chain.last_compiled
    if entry.capacity_plan is None:
        raise RuntimeError("the adstack workload has no launch-sized stack")
    program = program_module.get_program()
    args = LaunchArgs([], list(entry.static_buffers), list(entry.static_shapes), 0, 0)
    dispatches = program.stats.max_reducer_dispatches + program.stats.sizer_host_evals

    def run() -> None:
        for _ in range(SIZING_HIT_CALLS):
            launch_capacities(entry.capacity_plan, entry.offloaded, args, program.backend, [], program)
    ms = _median_ms(run, reps)
    if program.stats.max_reducer_dispatches + program.stats.sizer_host_evals != dispatches:
        raise RuntimeError("steady-state sizing did work (the cache missed)")
    us = ms * 1e3 / SIZING_HIT_CALLS
    return BenchResult("sizing_hit", us, "us/launch", "lower", ms, reps,
                       f"{SIZING_HIT_CALLS} capacity computations with unchanged bounds (cache hits)")


def bench_import(m: ModuleType, reps: int) -> BenchResult:
    """`import <toolkit>` in a fresh interpreter (numpy already imported, as any user program has it)."""
    import subprocess
    import sys
    code = (f"import time, numpy; t = time.perf_counter(); import {m.__name__}; "
            "print(time.perf_counter() - t)")
    times = []
    for _ in range(reps):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        times.append(float(out.strip().splitlines()[-1]))
    ms = statistics.median(times) * 1e3
    return BenchResult("import", ms, "ms", "lower", ms, reps, f"import {m.__name__} in a fresh process")


BENCHMARKS: dict[str, Callable[[ModuleType, int], BenchResult]] = {
    "saxpy": bench_saxpy,
    "launch_overhead": bench_launch_overhead,
    "launch_sync": bench_launch_sync,
    "idle_sync": bench_idle_sync,
    "nbody": bench_nbody,
    "compile": bench_compile,
    "adstack": bench_adstack,
    "split_saxpy": bench_split_saxpy,
    "sizing_reducer": bench_sizing_reducer,
    "sizing_hit": bench_sizing_hit,
    "import": bench_import,
}
WGKERN_ONLY = {"sizing_reducer", "sizing_hit"}     # measure wgkern internals that peers do not have
