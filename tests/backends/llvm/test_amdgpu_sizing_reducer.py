"""amdgpu_sizing_reducer.py: the launch-time sizing reducer's kernels built for gfx90a (wave64) and gfx1100
(wave32) and checked (symbols, kernel descriptors, each kernel's parameter block as its one argument, the
instructions its reductions become); and wk.amdgpu's sizing path choosing them, on a fake HIP library whose
launches of the reducer kernels run the same LLVM bodies JIT-compiled for this CPU. Nothing here runs on an AMD
GPU (docs/amdgpu.md); what the bodies compute is checked against numpy in tests/sizing/test_cuda_reducer.py."""
from __future__ import annotations

import ctypes
import re

import numpy as np
import pytest

import wgkern as wk
from wgkern.backends.llvm import amdgpu_link, hip_driver
from wgkern.backends.llvm.amdgpu_check import ExpectedKernel, check_code_object
from wgkern.backends.llvm.amdgpu_elf import read_code_object
from wgkern.backends.llvm.amdgpu_object import compile_assembly
from wgkern.backends.llvm.amdgpu_sizing_reducer import KERNELS, amdgpu_module, device_atomics, reducer_code_object
from wgkern.backends.llvm.amdgpu_target import COMPILE_CHECK_PROCESSORS, PROCESSORS
from wgkern.backends.llvm.gpu_sizing_reducer import JOB_PARAMS_BYTES, THREADS, generic_ir
from wgkern.errors import CompileError, InternalCompilerError
from wgkern.runtime import program as program_module

from .test_hip_driver import FakeHip, topology  # noqa: F401 - the fixture

needs_linker = pytest.mark.skipif(amdgpu_link.find_linker() is None,
                                  reason="no ld.lld here (ROCm, ld.lld on PATH, WK_LLD, or pip install ziglang)")


def test_the_module_keeps_its_stack_memory_in_the_private_address_space():
    text = amdgpu_module()
    allocas = re.findall(r"= alloca .*", text)
    assert allocas and all(line.endswith("addrspace(5)") for line in allocas)
    assert text.count("define amdgpu_kernel void @") == 2 and "nvvm" not in text
    assert f"byref([{JOB_PARAMS_BYTES} x i8])" in text and "byref([32 x i8])" in text


def test_the_reducer_atomics_are_device_scoped_on_device_memory():
    """Every atomicrmw of the bodies gets device scope and the coarse-grained memory metadata on AMDGPU, and the
    bodies the host and CUDA run keep theirs; an atomicrmw of a form the rewrite does not know is refused."""
    atomics = re.findall(r"= atomicrmw .*", amdgpu_module())
    assert len(atomics) == len(re.findall(r"= atomicrmw ", generic_ir())) == 3
    assert all(re.search(r'syncscope\("agent"\) monotonic, align 4, !amdgpu\.no\.fine\.grained\.memory !0, '
                         r'!amdgpu\.no\.remote\.memory !0$', line) for line in atomics), atomics
    assert "syncscope" not in generic_ir() and "!amdgpu" not in generic_ir()
    bodies = ("  %a = atomicrmw umax ptr %p, i32 %v monotonic, align 4\n"
              "  %b = atomicrmw add ptr %p, i64 %w monotonic, align 8\n")
    with pytest.raises(InternalCompilerError, match=r"2 atomicrmw instructions, 1 of them of the form"):
        device_atomics(bodies)


@needs_linker
@pytest.mark.parametrize("processor", COMPILE_CHECK_PROCESSORS)
def test_reducer_kernels_become_checked_code_objects(processor):
    data, reports = reducer_code_object(processor, use_cache=False)
    code = read_code_object(data)
    meta = {entry[".name"]: entry for entry in code.metadata["amdhsa.kernels"]}
    assert set(meta) == {name for name, _ in KERNELS.values()}
    for (name, size), report in zip(KERNELS.values(), reports):
        assert report.name == name and name + ".kd" in code.symbols and name in code.descriptors
        explicit = [arg for arg in meta[name][".args"] if not arg[".value_kind"].startswith("hidden")]
        assert [(arg[".offset"], arg[".size"], arg[".value_kind"]) for arg in explicit] == [(0, size, "by_value")]
        assert meta[name][".wavefront_size"] == PROCESSORS[processor].wave_size
        assert report.spills == 0 and report.lds_bytes == 0
    # the check is the one every kernel gets: a parameter block of another size fails it, naming the kernel
    with pytest.raises(CompileError, match=r"wk_job_max \(%s\): its arguments are .* not the launch's 8-byte" %
                       processor):
        check_code_object(data, processor, [ExpectedKernel("wk_job_max", THREADS, True)], 8)


@needs_linker
@pytest.mark.parametrize("processor", COMPILE_CHECK_PROCESSORS)
def test_each_thread_folds_its_points_then_makes_one_atomic(processor):
    """The slice kernel makes one atomic per thread after its loop (the u32 max of its points), the job kernel
    two (the max and its flags word), each the processor's one instruction (device scope on coarse-grained
    memory, amdgpu_sizing_reducer.device_atomics), no compare-and-swap loop."""
    assembly = compile_assembly(amdgpu_module(), processor)
    bodies = dict(re.findall(r"^(wk_\w+_max):\n(.*?)\.Lfunc_end", assembly, re.S | re.M))
    assert set(bodies) == {"wk_slice_max", "wk_job_max"}
    atomics = {name: re.findall(r"^\s+global_atomic_(\w+)", body, re.M) for name, body in bodies.items()}
    umax, bit_or = {"gfx90a": ("umax", "or"), "gfx1100": ("max_u32", "or_b32")}[processor]
    assert atomics == {"wk_slice_max": [umax], "wk_job_max": [umax, bit_or]}, atomics
    for body in bodies.values():
        assert not re.search(r"^\s+(scratch|buffer)_", body, re.M)    # the bodies' stack memory is in registers
        assert re.search(r"^\s+s_load_(dword|b32)", body, re.M)     # the dispatch packet and the parameter block


class ReducingHip(FakeHip):
    """FakeHip whose launches of the reducer's kernels run their bodies (JIT-compiled for this CPU) over the
    whole range as one thread, on the fake's host memory; other launches are only recorded."""

    def __init__(self):
        from wgkern.backends.llvm.jit import compile_ir, function_address
        super().__init__()
        compile_ir(generic_ir())
        entry = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
        self.bodies = {"wk_slice_max": entry(function_address("wk_slice_range")),
                       "wk_job_max": entry(function_address("wk_job_range"))}
        self.functions: dict[int, str] = {}
        self.reduced: list[str] = []

    def hipModuleGetFunction(self, function, module, name):
        self.functions[len(self.functions) + 1] = name.decode()
        self._out(function, len(self.functions))
        return 0

    def hipModuleLaunchKernel(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        super().hipModuleLaunchKernel(function, gx, gy, gz, bx, by, bz, shared, stream, params, extra)
        name = self.functions.get(function.value)
        if name in self.bodies:
            size = ctypes.c_size_t.from_address(extra[3]).value
            block = ctypes.create_string_buffer(ctypes.string_at(extra[1], size), size)
            self.bodies[name](ctypes.addressof(block), 0, 1)
            self.reduced.append(name)
        return 0


def _sized_chains() -> list[tuple[int, dict]]:
    """Per reverse kernel, (adstack bytes per launched thread, wk.stats() after it) on the current arch: `chain`'s
    bound is a slice of n (the slice kernel), `rows`' a difference of reads (the bytecode kernel)."""
    size = 3000
    x = wk.field(wk.f32, shape=size, needs_grad=True)
    n = wk.field(wk.i32, shape=size)
    off = wk.field(wk.i32, shape=size + 1)
    y = wk.field(wk.f32, shape=size, needs_grad=True)
    n.from_numpy(((np.arange(size) * 7919) % 41).astype(np.int32))
    off.from_numpy(np.concatenate([[0], np.cumsum((np.arange(size) * 13) % 17)]).astype(np.int32))

    @wk.kernel
    def chain():
        for i in x:
            v = x[i]
            for _ in range(n[i]):
                v = wk.sin(v) + 0.1
            y[i] = v

    @wk.kernel
    def rows():
        for i in x:
            v = x[i]
            for _ in range(off[i], off[i + 1]):
                v = wk.cos(v)
            y[i] = v

    backend = program_module.get_program().backend
    sized = []
    for kernel in (chain, rows):
        kernel()
        kernel.grad()
        wk.sync()
        stats = wk.stats()
        sized.append((stats["adstack_heap_bytes"] // backend.adstack_threads(size), stats))
    return sized


@needs_linker
def test_amdgpu_sizes_adstacks_with_its_device_reducer(topology, monkeypatch):  # noqa: F811
    """The capacities wk.amdgpu's reducer kernels find (their bodies run on this CPU by the fake) are the numpy
    reducer's on wk.cpu, each bound one dispatch of a reducer kernel."""
    wk.init(arch=wk.cpu)
    try:
        expected = [per_thread for per_thread, _ in _sized_chains()]
    finally:
        wk.reset()
    lib = ReducingHip()
    monkeypatch.setattr(hip_driver, "load_library", lambda: (lib, ""))
    monkeypatch.setattr(hip_driver, "_DRIVERS", {})
    wk.init(arch=wk.amdgpu, offline_cache=False)
    try:
        (slice_bytes, after_slice), (rows_bytes, after_rows) = _sized_chains()
        kernels = program_module.get_program().backend._reducer_kernels
        assert [slice_bytes, rows_bytes] == expected and min(expected) > 0
        assert kernels.runs == {"slice": 1, "job": 1} and lib.reduced == ["wk_slice_max", "wk_job_max"]
        assert after_slice["max_reducer_dispatches"] == 1 and after_rows["max_reducer_dispatches"] == 2
        # launched as 256-thread blocks, each kernel's parameter block passed whole
        sizes = [len(args) for _, block, args in lib.launches if block == THREADS]
        assert sorted(size for _, size in KERNELS.values()) == sorted(set(sizes) & {32, JOB_PARAMS_BYTES})
    finally:
        wk.reset()


@needs_linker
def test_compile_check_mode_builds_the_reducer_with_the_first_reverse_kernel():
    wk.init(arch="amdgpu-compile", offline_cache=False)
    try:
        backend = program_module.get_program().backend
        (per_thread, _), _ = _sized_chains()
        assert per_thread > 0 and set(backend.reducer_reports) == set(COMPILE_CHECK_PROCESSORS)
        for processor, reports in backend.reducer_reports.items():
            assert [report.name for report in reports] == [name for name, _ in KERNELS.values()]
    finally:
        wk.reset()
