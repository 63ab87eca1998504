"""The CUDA backend's compile path without a GPU: kernels of every shape through cuda_codegen and NVPTX to PTX
(checked by ptxas where a CUDA toolkit is installed), libdevice lookup and its error, grid sizing.

Running kernels on CUDA is the whole suite under WK_ARCH=cuda on a machine with an NVIDIA GPU."""
from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

import wgkern as wk
from wgkern.backends.adstack import collect_stacks
from wgkern.backends.llvm import cuda, ptx
from wgkern.backends.llvm.cuda_codegen import THREADS_PER_BLOCK, emit_cuda_module
from wgkern.backends.llvm.layout import build_layout
from wgkern.backends.llvm.target import CUDA_TARGET
from wgkern.errors import CompileError
from wgkern.runtime import program as program_module

from ._reduction_kernel import register_reductions

HAS_LIBDEVICE = ptx.find_libdevice() is not None


@pytest.fixture
def cpu_program():
    wk.init(arch=wk.cpu)
    yield
    wk.reset()


def offloaded_kernels(name_part: str) -> list:
    """The OffloadedKernels the running program compiled for kernels whose name contains `name_part`."""
    entries = program_module.get_program().kernel_cache.values()
    return [entry.offloaded for entry in entries if name_part in entry.offloaded.name]


def module_text(kernel, debug: bool = False, fast_math: bool = True) -> tuple[str, list[str]]:
    """(the CUDA module's LLVM IR, its kernel names) of an OffloadedKernel, with made-up device addresses."""
    layout = build_layout(kernel, (1 << 40, (1 << 40) + 64) if debug else None,
                          1 << 41 if any(collect_stacks(kernel)) else None)
    text, names, _ = emit_cuda_module(kernel, layout, CUDA_TARGET, "t", (1 << 42, 1 << 10), debug, fast_math)
    return text, names


def to_ptx(kernel, debug: bool = False, fast_math: bool = True) -> str:
    text, names = module_text(kernel, debug, fast_math)
    code = ptx.compile_ptx(text, "sm_80")
    assert code.count(".entry") == len(kernel.tasks) == len(names)
    ptxas = shutil.which("ptxas")
    if ptxas:
        checked = subprocess.run([ptxas, "-arch=sm_80", "-", "-o", "/dev/null"], input=code, text=True,
                                 capture_output=True)
        if checked.returncode:       # older ptxas read no stdin: write a file
            import tempfile
            with tempfile.NamedTemporaryFile("w", suffix=".ptx") as handle:
                handle.write(code)
                handle.flush()
                checked = subprocess.run([ptxas, "-arch=sm_80", handle.name, "-o", "/dev/null"], text=True,
                                         capture_output=True)
        assert checked.returncode == 0, checked.stderr
    return code


def test_kernels_without_math_become_ptx(cpu_program):
    n = 64
    a = wk.field(wk.i32, shape=n)
    f = wk.field(wk.f64, shape=(8, 8))
    flags = wk.field(wk.u1, shape=n)
    h = wk.field(wk.f16, shape=n)

    @wk.kernel
    def shapes(k: wk.i32) -> wk.i32:
        for i in a:                                   # range task: grid-stride loop
            wk.atomic_max(a[0], i)
            wk.atomic_mul(f[i % 8, 0], 1.5)
            wk.atomic_min(f[0, i % 8], -1.0)
            flags[i] = a[i] > k
            h[i] = h[i] * wk.f16(2)
            if wk.random() < 0.5:
                continue
            j = 0
            while j < k:
                j += 1
                if j > 10:
                    break
            a[i] += j
        for i, j in wk.ndrange(8, 8):
            f[i, j] += i * j
        total = 0                                     # serial task
        for i in range(4):
            total += a[i]
        return total

    shapes(3)
    kernels = offloaded_kernels("shapes")
    assert kernels
    code = to_ptx(kernels[0])
    assert "atom.global" in code and "%ctaid.x" in code and "%nctaid.x" in code


@pytest.mark.skipif(not HAS_LIBDEVICE, reason="no libdevice here (a CUDA toolkit or nvidia-cuda-nvcc-cu12)")
def test_math_print_and_reverse_kernels_become_ptx(cpu_program):
    x = wk.field(wk.f32, shape=16, needs_grad=True)
    m = wk.field(wk.i32, shape=16)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def chain():
        for i in x:
            v = x[i]
            for _ in range(m[i]):
                v = wk.sin(v) + wk.exp(v) * 0.01 + wk.atan2(v, 2.0) + wk.cast(v, wk.f64) ** 1.5
            print("v", i, v)
            loss[None] += v

    chain()
    chain.grad()
    forward, backward = offloaded_kernels("chain")[:1], [k for k in offloaded_kernels("chain") if "grad" in k.name]
    for kernel in forward + backward:
        code = to_ptx(kernel)
        assert "__nv_" not in code.split(".entry")[0] or ".func" in code   # libdevice was linked in
    assert backward and "ld.param" in to_ptx(backward[0], debug=True)


def test_missing_libdevice_names_the_remedy(cpu_program, monkeypatch):
    monkeypatch.setattr(ptx, "_libdevice", None)
    monkeypatch.setattr(ptx, "libdevice_candidates", lambda: [])
    with pytest.raises(CompileError, match="nvidia-cuda-nvcc-cu12.*WK_LIBDEVICE"):
        ptx.libdevice_bitcode()


def test_architecture_is_capped_at_what_llvm_knows():
    assert ptx.architecture((8, 0)) == "sm_80" and ptx.architecture((9, 0)) == "sm_90"
    assert ptx.architecture((12, 0)) == "sm_90"


def test_grid_sizes_cover_the_range_and_are_capped(cpu_program):
    a = wk.field(wk.f32, shape=1000)
    bound = wk.field(wk.i32, shape=())

    @wk.kernel
    def sized(n: wk.i32):
        for i in a:
            a[i] += 1.0
        for i in range(n):
            a[i] += 1.0
        for i in range(bound[None]):
            a[i] += 1.0

    sized(5)
    kernel = offloaded_kernels("sized")[0]
    slots = kernel.containers
    shapes = [tuple(s.shape) if s.shape is not None else () for s in slots]
    scalars = [5]
    sizers = [cuda._block_sizer(task, slots, 7) for task in kernel.tasks]
    assert sizers[0](scalars, shapes) == -(-1000 // THREADS_PER_BLOCK)
    assert sizers[1](scalars, shapes) == 1 and sizers[1]([0], shapes) is None
    assert sizers[1]([10 ** 6], shapes) == 7                  # capped: the grid-stride loop covers the rest
    assert sizers[2](scalars, shapes) == 7                    # bounds in device memory: the capped grid
    assert np.all(a.to_numpy()[:5] == 2.0)


def test_grid_sizes_from_bound_expressions_follow_their_arguments_and_shapes(cpu_program, monkeypatch):
    # bounds computed from a scalar and a shape are evaluated once per value of what they read, and again when
    # either changes (the sizes remembered must never be stale)
    x = wk.ndarray(wk.f32, shape=(300,))

    @wk.kernel
    def sized(a: wk.types.ndarray(wk.f32, ndim=1), n: wk.i32, unused: wk.f32):
        for i in range(n * 2 + a.shape[0] // 3):
            a[i % a.shape[0]] += unused

    sized(x, 50, 1.0)
    kernel = offloaded_kernels("sized")[0]
    slot = next(k for k, s in enumerate(kernel.containers) if s.shape is None)
    shapes = [(300,) if k == slot else tuple(s.shape or ()) for k, s in enumerate(kernel.containers)]
    evaluations = []
    real = cuda.host_eval.evaluate_bounds
    monkeypatch.setattr(cuda.host_eval, "evaluate_bounds", lambda *a: evaluations.append(a) or real(*a))
    sizer = cuda._block_sizer(kernel.tasks[0], kernel.containers, 1 << 20)
    blocks = lambda count: -(-count // THREADS_PER_BLOCK)     # noqa: E731
    assert sizer([None, 50, 1.0], shapes) == blocks(200) and len(evaluations) == 1
    assert sizer([None, 50, 2.5], shapes) == blocks(200) and len(evaluations) == 1    # `unused` is not read
    assert sizer([None, 500, 1.0], shapes) == blocks(1100) and len(evaluations) == 2
    shapes[slot] = (3000,)
    assert sizer([None, 500, 1.0], shapes) == blocks(2000) and len(evaluations) == 3
    assert sizer([None, -600, 1.0], shapes) is None                                    # an empty range
    shapes[slot] = (300,)
    assert sizer([None, 50, 1.0], shapes) == blocks(200) and len(evaluations) == 4


def test_compiled_ptx_is_kept_on_disk_between_runs(cpu_program, tmp_path, monkeypatch):
    values = wk.field(wk.f32, shape=8)

    @wk.kernel
    def double():
        for i in values:
            values[i] *= 2.0

    double()
    kernel = offloaded_kernels("double")[0]
    text, _, _ = emit_cuda_module(kernel, build_layout(kernel), CUDA_TARGET, "t", (0, 0))
    monkeypatch.setenv("WK_CACHE_DIR", str(tmp_path))
    compiles = []
    real = ptx.compile_ptx
    monkeypatch.setattr(ptx, "compile_ptx", lambda *a: compiles.append(a) or real(*a))
    first = ptx.cached_ptx(text, "sm_80", True)
    assert ptx.cached_ptx(text, "sm_80", True) == first and len(compiles) == 1      # the second came from disk
    assert list((tmp_path / "cuda").glob("*.ptx"))
    assert ptx.cached_ptx(text, "sm_90", True) != first and len(compiles) == 2      # another arch: compiled
    ptx.cached_ptx(text, "sm_80", False)                                            # offline_cache=False
    assert len(compiles) == 3


def test_register_reductions_combine_across_the_warp_before_one_atomic(cpu_program):
    """gpu_codegen.flush_chunk_reductions on CUDA: five shfl.sync.down steps per register (two per step at 64
    bits) over the warp's launched lanes, then one atomic per register from the warp's first lane."""
    register_reductions()()
    code = to_ptx(offloaded_kernels("reduce")[0])
    assert code.count("shfl.sync.down.b32") == 5 * (1 + 1 + 2) and "shfl.sync.bfly" not in code
    assert len(re.findall(r"\batom\.global\.", code)) == 3
