"""The one Program: backend, init options, compiled-kernel cache, `wk.stats()` counters and live containers.

`wk.init` makes the Program and `wk.reset` drops it; this module keeps the current one in `_current` (the
only mutable global of the package). The launch sequence lives in launch.py, arch rules in arch.py."""
from __future__ import annotations

import dataclasses
import functools
import itertools
import weakref
from dataclasses import dataclass
from typing import Any, Callable

from wgkern.errors import ArgumentError
from wgkern import dtypes as T
from wgkern.runtime.arch import Arch, Selection, select


@dataclass(slots=True)
class Stats:
    """`wk.stats()` counters since `wk.init` (backends and the sizer increment theirs through
    `backend.runtime_stats`, which the Program sets to this object)."""
    kernel_compiles: int = 0
    cache_hits: int = 0
    launches: int = 0
    max_reducer_dispatches: int = 0
    sizer_host_evals: int = 0
    adstack_heap_bytes: int = 0
    adstack_heap_grows: int = 0
    adstack_reruns: int = 0        # re-runs of the units whose growable adstacks overflowed

    def as_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)

    def zero(self) -> None:
        # adstack_heap_bytes is a current value, not a counter: it survives a reset of the counters.
        for f in dataclasses.fields(self):
            if f.name != "adstack_heap_bytes":
                setattr(self, f.name, 0)


@dataclass(frozen=True, slots=True)
class InitOptions:
    """The keyword options of `wk.init`."""
    debug: bool = False
    ad_stack_size: int = 0
    default_ad_stack_size: int = 32
    offline_cache: bool = True
    device_memory_limit: int | None = None
    random_seed: int = 0
    fast_math: bool = True
    threads: int | None = None            # CPU backend: threads including the caller (None: every CPU)
    default_fp: Any = None                # dtype of float literals and `float` (None: f32)
    default_ip: Any = None                # dtype of int literals and `int` (None: i32)
    kernel_profiler: bool = False         # time every launch (wgkern/profiler.py)
    short_circuit_operators: bool = False  # Taichi's: run-time `and`/`or` skip operands once decided
    webgpu_profile: str | None = None     # WGSL arches: "baseline" limits the device to what WebGPU guarantees


_program_ids = itertools.count(1)


class Program:
    """All runtime state of one `wk.init`: the backend, caches and counters."""

    def __init__(self, selection: Selection, options: InitOptions):
        self.id = next(_program_ids)
        self.arch: Arch = selection.arch
        self.description = selection.description
        self.options = options
        self.stats = Stats()
        self.compile_seconds = 0.0      # wall time spent compiling kernels (launch.py get_entry)
        self.backend = selection.make_backend(options)
        try:
            self.backend.runtime_stats = self.stats
        except AttributeError:  # a backend with __slots__ simply does not report counters
            pass
        # (kernel, specialisation key, reverse) -> launch.CompiledEntry; arch is fixed per Program.
        self.kernel_cache: dict[tuple[Any, Any, bool], Any] = {}
        # kernel -> call form -> argument identities -> launch_plan.LaunchPlan (launch_plan.py)
        self.launch_plans: dict[Any, dict[Any, Any]] = {}
        self.containers: weakref.WeakSet[Any] = weakref.WeakSet()
        self.launch_counter = 0
        self.pending_work = False     # a launch happened since the last backend.sync()
        self.lazy_grad = False        # wk.root.lazy_grad() was called: every float field has a .grad
        self.lazy_dual = False        # wk.root.lazy_dual() was called: every float field has a .dual
        self.pending_layouts: list[Any] = []   # @wk.layout functions not run yet (lang/legacy.py)
        # containers or layouts were declared since the last materialisation (runtime/materialization.py)
        self.unmaterialized = False
        self.alive = True
        self.profiler: Any = None     # wgkern/profiler.py, with wk.init(kernel_profiler=True)
        self.fwd_mode: Any = None     # the open wk.ad.FwdMode block: launches compute tangents too
        if options.kernel_profiler:
            from wgkern.runtime.kernel_profiler import KernelProfiler
            self.profiler = KernelProfiler()
        # numpy-argument staging buffers, reused by (dtype, shape) (launch.py).
        self.staging: dict[tuple[Any, tuple[int, ...]], Any] = {}
        self.random_launch_ids: dict[tuple[Any, Any], int] = {}   # (kernel, spec) -> last forward launch id
        self.size_cache: Any = None     # sizing.SizeCache, made on the first launch that sizes adstacks
        self.unit_states: Any = None    # adstack_regrow.UnitStates, made by the first launch that may grow stacks
        # (kernel, key) -> generations of the containers its loop bounds read at the last forward launch.
        self.bound_records: dict[tuple[Any, Any], list[tuple[Any, int]]] = {}
        # Launches recorded by an active wk.ad.Tape (lang/ad.py), else None.
        self.tape: list[Any] | None = None
        # wk.ad.Tape(validation=True) under debug=True: forward launches mark what they read and check what they
        # overwrite (passes/autodiff/access_marks.py); the marks, per field, live here.
        self.tape_validation = False
        self.access_marks: dict[int, Any] = {}

    def sync(self) -> None:
        self.pending_work = False
        self.backend.sync()

    def synchronize(self) -> None:
        """Quadrants' `get_runtime().prog.synchronize()`: `sync()`."""
        self.sync()

    def run_pending_layouts(self) -> None:
        """Run the @wk.layout functions registered so far (Taichi ran them when the first kernel or field
        access needed the fields placed); each runs once."""
        while self.pending_layouts:
            self.pending_layouts.pop(0)()

    def before_host_access(self) -> None:
        """Called before touching container memory from the host: waits for (and raises the errors of) any
        launched work, but costs nothing when no launch happened since the last sync."""
        if self.pending_work:
            self.sync()

    def shutdown(self) -> None:
        if not self.alive:
            return
        self.alive = False
        for container in list(self.containers):
            container._release(backend_alive=False)
        self.kernel_cache.clear()
        self.launch_plans.clear()
        self.staging.clear()
        self.bound_records.clear()
        try:
            self.backend.shutdown()
        finally:
            self.backend = None

    def get_total_compilation_time(self) -> float:
        """Taichi's `get_runtime().prog.get_total_compilation_time()`: seconds spent compiling kernels (their
        forward, reverse and forward-mode versions) since `wk.init`; a kernel found in the offline cache counts
        the time it took to load."""
        return self.compile_seconds

    def __repr__(self) -> str:
        return f"<wk.Program #{self.id} {self.arch!r}: {self.description}>"


_current: Program | None = None


def init(arch: Any = None, *, debug: bool = False, ad_stack_size: int = 0, default_ad_stack_size: int = 32,
         offline_cache: bool = True, device_memory_limit: int | None = None, random_seed: int = 0,
         fast_math: bool = True, webgpu_profile: str | None = None, device: int | None = None,
         **taichi_options: Any) -> Program:
    """`wk.init`: drop any current Program and make a new one on the selected arch (on its device number
    `device`: runtime/devices.py). Also takes the options of
    Taichi's `ti.init` that ported programs pass (init_options.py): those with a meaning here act, the others
    are accepted; anything else is a TypeError."""
    from wgkern.runtime import ported_init
    from wgkern.runtime.init_options import taichi_init_options
    conventions = ported_init.current()
    fallback_note = _wgkern_fallback_note
    if conventions is not None:        # a Taichi or Quadrants program runs (wgkern.provide): its init's rules
        arch, taichi_options = conventions.read(arch, taichi_options)
        fallback_note = functools.partial(conventions.fallback_note, taichi_options)
    extra = taichi_init_options(taichi_options)
    if ad_stack_size < 0 or default_ad_stack_size <= 0:
        raise ValueError("ad_stack_size must be >= 0 and default_ad_stack_size > 0")
    selection = _select(arch, extra.enable_fallback, fallback_note, ported=conventions is not None, device=device)
    webgpu_profile = _webgpu_profile(webgpu_profile, selection.arch)
    if device_memory_limit is None and selection.arch != Arch.cpu:
        # Taichi's device_memory_GB sizes a GPU's memory pool; its CPU backend takes host memory as needed
        device_memory_limit = extra.device_memory_limit
    from wgkern import disk_cache
    disk_cache.configure(extra.cache_path, extra.cache_max_bytes, extra.cache_policy, extra.cache_factor)
    options = InitOptions(bool(debug) or extra.debug, int(ad_stack_size), int(default_ad_stack_size),
                          bool(offline_cache), device_memory_limit, int(random_seed), bool(fast_math),
                          extra.threads, extra.default_fp, extra.default_ip, extra.kernel_profiler,
                          extra.short_circuit_operators, webgpu_profile)
    return start(selection, options)


def _webgpu_profile(asked: str | None, arch: Arch) -> str | None:
    """The WebGPU profile of a WGSL device: `asked`, else $WK_WEBGPU_PROFILE (which checks a whole program
    against the profile unchanged, and means nothing on the CPU or CUDA)."""
    import os
    from wgkern.backends.wgsl.adapters import check_profile
    wgsl = arch not in (Arch.cpu, Arch.cuda, Arch.amdgpu)
    if asked is None:
        return check_profile(os.environ.get("WK_WEBGPU_PROFILE") or None) if wgsl else None
    check_profile(asked)
    if not wgsl:
        raise ValueError(f"webgpu_profile={asked!r} restricts a wgpu device; wk.init selected {arch.value}, which "
                         f"is not a WGSL arch (use vulkan, metal, dx12 or webgpu)")
    return asked


def _select(arch: Any, enable_fallback: bool, note: Callable[[str, str], None],
            ported: bool = False, device: int | None = None) -> Selection:
    """The arch asked for, or the first available one of a list or tuple of arches (Taichi's
    `init(arch=[wk.cuda, wk.vulkan])`); with Taichi's `enable_fallback=True`, when none is available, the CPU
    (after `note(asked, reason)`) instead of ArchUnavailableError. `ported`: `wk.gpu` without a GPU is noted
    the same way (else arch.select's own line on stderr says so)."""
    from wgkern.errors import ArchUnavailableError
    choices = list(arch) if isinstance(arch, (list, tuple)) else [arch]
    if not choices:
        raise ValueError("wk.init(arch=[]): give at least one arch")
    reasons = []
    def no_gpu(reason: str) -> None:     # a ported program's wk.gpu without a GPU: like any missing arch
        if not enable_fallback:
            raise ArchUnavailableError(f"wk.gpu: {reason}")
        note(str(Arch.gpu), reason)

    for choice in choices:
        try:
            return select(choice, no_gpu if ported else None, device)
        except ArchUnavailableError as exc:
            reasons.append(str(exc))
    asked = ", ".join(str(choice) for choice in choices)
    if not enable_fallback:
        raise ArchUnavailableError("; ".join(reasons) if len(choices) == 1 else
                                   f"none of the arches [{asked}] is available here: " + "; ".join(reasons))
    note(asked, "; ".join(reasons))
    return select(Arch.cpu, device=device)


def _wgkern_fallback_note(asked: str, reason: str) -> None:
    import sys
    print(f"wk.init(enable_fallback=True): {reason}; running on wk.cpu", file=sys.stderr)


def _finish_at_exit() -> None:
    """At interpreter exit: finish launched work, so kernel print() output of a GPU arch appears (Taichi:
    "program end implicitly invokes sync") and a pending device error is reported, not lost."""
    program = _current
    if program is None or not program.alive or not program.pending_work:
        return
    try:
        program.sync()
    except Exception as exc:  # noqa: BLE001 - reported, not raised, while the interpreter exits
        import sys
        print(f"wgkern: at exit, {type(exc).__name__}: {exc}", file=sys.stderr)


_exit_hook_registered = False


def start(selection: Selection, options: InitOptions | None = None) -> Program:
    """Replace the current Program by a new one built from `selection` (wk.init's last step; tests use it
    to run the runtime on a fake backend)."""
    global _current, _exit_hook_registered
    if not _exit_hook_registered:
        import atexit
        atexit.register(_finish_at_exit)
        _exit_hook_registered = True
    _release_hook()
    options = options or InitOptions()
    T.set_default_types(options.default_fp, options.default_ip)
    _current = Program(selection, options)
    return _current


def release_current() -> None:
    """Drop the current Program and release its device resources (the work of `wk.reset`)."""
    global _current
    program, _current = _current, None
    T.set_default_types()
    if program is not None:
        program.shutdown()


# How start() releases the running Program: runtime/materialization.py installs `wk.reset`, which runs through
# Quadrants' get_runtime().clear() (a program may have replaced it), when it is imported.
_release_hook: Callable[[], None] = release_current


def install_release_hook(hook: Callable[[], None]) -> None:
    global _release_hook
    _release_hook = hook


def current() -> Program | None:
    return _current


def get_program() -> Program:
    """The current Program, initialising with defaults first (as Taichi does) when there is none."""
    if _current is None:
        init()
    assert _current is not None
    return _current


def stats(reset: bool = False) -> dict[str, int]:
    """`wk.stats`: the counters since `wk.init` (all zero before any init); `reset=True` zeroes them after
    reading."""
    if _current is None:
        return Stats().as_dict()
    out = _current.stats.as_dict()
    if reset:
        _current.stats.zero()
    return out


def check_alive(program: Program, what: str) -> None:
    """Raise when a handle made under an older Program is used after `wk.reset()`/re-init."""
    if not program.alive or program is not _current:
        raise ArgumentError(f"{what} was created before the last wk.reset()/wk.init() and its memory is "
                            "gone; create it again after wk.init()")
