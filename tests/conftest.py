"""Shared fixtures: `arch` (every available arch, a fresh wk.init per test) and `fake_program` (the runtime on
an in-memory backend that runs kernels with the reference interpreter, for runtime tests without a device).

Vulkan (lavapipe) runs wherever a Vulkan wgpu adapter exists; under CI=true a missing one fails the test run.
WK_ARCH=cpu|vulkan|... restricts the `arch` fixture to that arch; WK_FAST_MATH=0 makes it call
wk.init(fast_math=False) (correctly rounded division, no reassociation) instead of the default fast_math=True."""
from __future__ import annotations

import math
import os
import tempfile
from typing import Any, Iterator

import numpy as np
import pytest

# Verify the IR after every compiler stage in tests (a plain compile skips it for speed).
os.environ.setdefault("WK_VERIFY_IR", "1")
# The offline cache (disk_cache.py) of a test run starts empty and stays out of the user's own.
os.environ.setdefault("WK_CACHE_DIR", tempfile.mkdtemp(prefix="wk-test-cache-"))
# GUIs the tests make stay off-screen even on a desktop (tests/test_screen.py opens its windows itself)
os.environ.setdefault("WK_GUI_OFFSCREEN", "1")

if not os.environ.get("XDG_RUNTIME_DIR"):
    # libwayland prints a harmless complaint on every adapter probe without it (PLATFORM.md 1.6).
    os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="wk-xdg-")

import wgkern as wk  # noqa: E402
from wgkern.backends.base import Backend, CompiledKernel, LaunchArgs  # noqa: E402
from wgkern.runtime import program as program_module  # noqa: E402
from wgkern.runtime.arch import Arch, Selection, list_wgpu_adapters  # noqa: E402

_IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
FAST_MATH = os.environ.get("WK_FAST_MATH", "1").strip().lower() not in ("0", "false", "no", "off")
# WK_WEBGPU_PROFILE=baseline: every WGSL device wk.init makes offers only what WebGPU guarantees; a test whose
# kernel needs a feature the profile leaves out (f64, int64, subgroups) is reported as skipped, naming it.
WEBGPU_PROFILE = os.environ.get("WK_WEBGPU_PROFILE") or None


def _cpu_available() -> tuple[bool, str]:
    try:
        import wgkern.backends.llvm.cpu  # noqa: F401
    except ImportError as exc:
        return False, f"LLVM CPU backend not importable ({exc})"
    return True, ""


def _vulkan_available() -> tuple[bool, str]:
    adapters, reason = list_wgpu_adapters()
    if any(a.backend_type == "Vulkan" for a in adapters):
        return True, ""
    found = ", ".join(f"{a.summary} [{a.backend_type}]" for a in adapters) or "no adapters"
    return False, reason or f"no Vulkan wgpu adapter (found: {found}); install mesa-vulkan-drivers"


def _selectable(name: str) -> tuple[bool, str]:
    from wgkern.runtime.arch import select
    try:
        select(name)
    except (wk.ArchUnavailableError, ValueError) as exc:
        return False, str(exc)
    return True, ""


_ARCH_PROBES = {"cpu": _cpu_available, "vulkan": _vulkan_available}
_probed: dict[str, tuple[bool, str]] = {}


def _probe(name: str) -> tuple[bool, str]:
    if name not in _probed:
        _probed[name] = _ARCH_PROBES.get(name, lambda: _selectable(name))()
    return _probed[name]


def _wanted_arches() -> list[str]:
    restrict = os.environ.get("WK_ARCH", "").strip().lower().removeprefix("wk.")
    if restrict:
        return [restrict]
    return list(_ARCH_PROBES)


def pytest_sessionstart(session: pytest.Session) -> None:
    if _IN_CI:
        for name in _wanted_arches():
            ok, why = _probe(name)
            if not ok:
                pytest.exit(f"CI=true but arch '{name}' is unavailable: {why}", returncode=1)


def pytest_report_header(config: pytest.Config) -> str:
    profile = f", webgpu_profile={WEBGPU_PROFILE} on WGSL arches (WK_WEBGPU_PROFILE)" if WEBGPU_PROFILE else ""
    return f"wgkern: fast_math={'on' if FAST_MATH else 'off'} in the arch fixture (WK_FAST_MATH){profile}"


def skip_if_profile_lacks_a_feature(done: Any) -> None:
    """For a test that runs a program in a subprocess (a `subprocess.CompletedProcess`): under
    WK_WEBGPU_PROFILE, a program stopped by DeviceFeatureError makes the test a skip naming the error, as the
    in-process hook below does; any other outcome is the test's to judge."""
    if WEBGPU_PROFILE and done.returncode != 0 and "DeviceFeatureError: " in done.stderr:
        message = done.stderr.split("DeviceFeatureError: ")[-1].strip().splitlines()[0]
        pytest.skip(f"the program needs what webgpu_profile={WEBGPU_PROFILE!r} leaves out: {message}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """Under WK_WEBGPU_PROFILE, a test stopped by DeviceFeatureError (a feature the profile leaves out) is a
    skip that names the feature; every other outcome stands."""
    outcome = yield
    if not WEBGPU_PROFILE or call.excinfo is None or not call.excinfo.errisinstance(wk.DeviceFeatureError):
        return
    report = outcome.get_result()
    features = ", ".join(call.excinfo.value.features) or "a device feature"
    report.outcome = "skipped"
    report.longrepr = (str(item.path), item.location[1] or 0,
                       f"Skipped: needs {features}, which webgpu_profile={WEBGPU_PROFILE!r} leaves out")


# Arches a test cannot run on, by the fixture it asks for: `gpu` is `arch` without the CPU backend (wk.simt's
# block and subgroup features; the CPU's refusal of them is tested on its own); `llvm` is `arch` on the LLVM
# backends only (their own runtime parts); `wgsl` is `arch` on the WGSL backends only (what they do with their
# shaders' text). Left out at collection, so they are neither run nor counted as skips.
_FIXTURE_EXCLUDES = {"gpu": {"cpu", "amdgpu-compile"}, "llvm": {"vulkan", "metal", "dx12", "webgpu", "gpu"},
                     "wgsl": {"cpu", "cuda", "amdgpu", "amdgpu-compile", "gpu"}}
# WK_ARCH=amdgpu-compile: the `arch` fixture is wk.cpu, every kernel also built and checked for AMDGPU
# (backends/llvm/amdgpu_compile_check.py); without ld.lld its tests are skipped, naming what is missing.
_RUNS_AS = {"amdgpu-compile": Arch.cpu}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "arch" not in metafunc.fixturenames:
        return
    excluded = set().union(*(_FIXTURE_EXCLUDES.get(name, set()) for name in metafunc.fixturenames))
    params = []
    for name in _wanted_arches():
        if name in excluded:
            continue
        ok, why = _probe(name)
        marks = [] if ok else [pytest.mark.skip(reason=f"{name}: {why}")]
        params.append(pytest.param(name, marks=marks, id=name))
    metafunc.parametrize("arch", params, indirect=True)


@pytest.fixture
def gpu(arch: Arch) -> Arch:
    """`arch` restricted to the GPU backends (WGSL arches, CUDA): see _FIXTURE_EXCLUDES."""
    return arch


@pytest.fixture
def llvm(arch: Arch) -> Arch:
    """`arch` restricted to the LLVM backends (CPU, CUDA, AMDGPU): see _FIXTURE_EXCLUDES."""
    return arch


@pytest.fixture
def wgsl(arch: Arch) -> Arch:
    """`arch` restricted to the WGSL backends (Vulkan, Metal, D3D12, WebGPU): see _FIXTURE_EXCLUDES."""
    return arch


@pytest.fixture
def arch(request: pytest.FixtureRequest) -> Iterator[Arch]:
    """A fresh wk.init on each available arch (fast_math as WK_FAST_MATH says); wk.reset afterwards."""
    chosen = _RUNS_AS.get(request.param) or Arch(request.param)
    wk.init(arch=request.param if request.param in _RUNS_AS else chosen,
            fast_math=FAST_MATH)                   # wk.init reads WK_WEBGPU_PROFILE itself
    try:
        yield chosen
    finally:
        wk.reset()


# ---- the fake backend ---------------------------------------------------------------------------------------

_WIDENED = {"i8": np.int32, "i16": np.int32, "u8": np.uint32, "u16": np.uint32, "u1": np.uint32}


class FakeBackend(Backend):
    """Host memory; `host_views=False` hides it behind upload/download and widens small ints like WGSL.
    Kernels run on the reference interpreter (ir/interpreter.py)."""
    name = "fake"

    def __init__(self, host_views: bool = True):
        self.host_views = host_views
        self.live: dict[int, np.ndarray] = {}
        self.syncs = 0
        self.compiles = 0
        self.launches: list[LaunchArgs] = []
        self.shut = False

    def storage_dtype(self, dtype: Any) -> np.dtype:
        if not self.host_views and dtype.name in _WIDENED:
            return np.dtype(_WIDENED[dtype.name])
        return dtype.np_dtype

    def allocate(self, nbytes: int) -> np.ndarray:
        buffer = np.zeros(nbytes, np.uint8)
        self.live[id(buffer)] = buffer
        return buffer

    def free(self, buffer: np.ndarray) -> None:
        self.live.pop(id(buffer), None)

    def upload(self, buffer: np.ndarray, data: np.ndarray, offset: int = 0) -> None:
        raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        buffer[offset:offset + raw.size] = raw

    def download(self, buffer: np.ndarray, nbytes: int, offset: int = 0) -> np.ndarray:
        return buffer[offset:offset + nbytes].copy()

    def copy(self, dst: np.ndarray, src: np.ndarray, nbytes: int) -> None:
        dst[:nbytes] = src[:nbytes]

    def _view(self, buffer: np.ndarray, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
        count = math.prod(shape)
        return buffer[:count * dtype.itemsize].view(dtype).reshape(shape)

    def host_view(self, buffer: np.ndarray, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray | None:
        return self._view(buffer, np.dtype(dtype), shape) if self.host_views else None

    def compile(self, kernel: Any, origin: str | None = None) -> CompiledKernel:
        self.compiles += 1
        return InterpretedKernel(self, kernel)

    def sync(self) -> None:
        self.syncs += 1

    def shutdown(self) -> None:
        self.shut = True
        self.live.clear()


class InterpretedKernel(CompiledKernel):
    def __init__(self, backend: FakeBackend, kernel: Any):
        self.backend = backend
        self.kernel = kernel

    def launch(self, args: LaunchArgs) -> None:
        from wgkern.ir.interpreter import Interpreter
        self.backend.launches.append(args)
        arrays = [self.backend._view(buffer, self.backend.storage_dtype(slot.dtype), shape)
                  for slot, buffer, shape in zip(self.kernel.containers, args.buffers, args.shapes)]
        Interpreter(self.kernel, arrays, args.scalars, args.launch_id, args.seed).run()

    def source(self) -> str:
        return f"// interpreted {self.kernel.name}"


@pytest.fixture(params=["view", "device"])
def fake_program(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The runtime on FakeBackend: 'view' has CPU-like host views, 'device' is WGSL-like (no views,
    widened small ints)."""
    backend = FakeBackend(host_views=request.param == "view")
    program = program_module.start(Selection(Arch.cpu, lambda _options: backend, f"fake ({request.param})"))
    try:
        yield program
    finally:
        wk.reset()
