"""The AMDGPU backend's compile path without an AMD GPU: kernels of every shape through amdgpu_codegen, LLVM's
amdgcn target and ld.lld to code objects for gfx90a (wave64) and gfx1100 (wave32), checked by amdgpu_check; the
checker's own failures; the kernel frame's AMDGPU spelling; and the MessagePack reader."""
from __future__ import annotations

import dataclasses
import struct

import numpy as np
import pytest

import wgkern as wk
from wgkern.backends.adstack import collect_stacks
from wgkern.backends.llvm import amdgpu_check, amdgpu_link
from wgkern.backends.llvm.amdgpu_check import ExpectedKernel, check_code_object
from wgkern.backends.llvm.amdgpu_codegen import emit_amdgpu_module
from wgkern.backends.llvm.amdgpu_compile import build_code_object
from wgkern.backends.llvm.amdgpu_elf import read_code_object, unpack
from wgkern.backends.llvm.amdgpu_target import COMPILE_CHECK_PROCESSORS, amdgpu_target
from wgkern.backends.llvm.layout import build_layout
from wgkern.errors import CompileError
from wgkern.runtime import program as program_module

needs_linker = pytest.mark.skipif(amdgpu_link.find_linker() is None,
                                  reason="no ld.lld here (ROCm, ld.lld on PATH, WK_LLD, or pip install ziglang)")


@pytest.fixture
def cpu_program():
    wk.init(arch=wk.cpu)
    yield
    wk.reset()


def offloaded_kernels(name_part: str) -> list:
    entries = program_module.get_program().kernel_cache.values()
    return [entry.offloaded for entry in entries if name_part in entry.offloaded.name]


def layout_of(kernel, debug: bool = False):
    return build_layout(kernel, (1 << 40, (1 << 40) + 64) if debug else None,
                        1 << 41 if any(collect_stacks(kernel)) else None)


def build_all(kernel, debug: bool = False) -> list:
    """The kernel's checked code object for each processor the compile-only mode builds."""
    built = [build_code_object(kernel, layout_of(kernel, debug), processor, "t", (1 << 42, 1 << 10), debug,
                               use_cache=False)
             for processor in COMPILE_CHECK_PROCESSORS]
    for code in built:
        assert len(code.reports) == len(kernel.tasks) == len(code.kernel_names)
    return built


def shapes_kernel():
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
    return offloaded_kernels("shapes")[0]


def test_frame_spells_amdgpu_intrinsics_and_address_spaces(cpu_program):
    kernel = shapes_kernel()
    text, names, _ = emit_amdgpu_module(kernel, layout_of(kernel), amdgpu_target("gfx90a"), "t", (0, 0))
    assert len(names) == len(kernel.tasks) and text.count("define amdgpu_kernel void @") == len(kernel.tasks)
    assert "ptr addrspace(4) byref(" in text and "@llvm.amdgcn.workitem.id.x()" in text
    assert "@llvm.amdgcn.dispatch.ptr()" in text and "nvvm" not in text
    assert "alloca i32, addrspace(5)" in text and "load ptr addrspace(1)" in text


@needs_linker
def test_kernels_without_math_become_checked_code_objects(cpu_program):
    kernel = shapes_kernel()
    gfx90a, gfx1100 = build_all(kernel)
    assert read_code_object(gfx90a.data).metadata["amdhsa.kernels"][0][".wavefront_size"] == 64
    assert read_code_object(gfx1100.data).metadata["amdhsa.kernels"][0][".wavefront_size"] == 32
    assert all(report.vgprs > 0 and report.sgprs > 0 for report in gfx90a.reports + gfx1100.reports)


@needs_linker
def test_f32_math_print_and_reverse_kernels_become_code_objects(cpu_program):
    x = wk.field(wk.f32, shape=16, needs_grad=True)
    m = wk.field(wk.i32, shape=16)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def chain():
        for i in x:
            v = x[i]
            for _ in range(m[i]):                     # a dynamic loop: the reverse kernel keeps adstacks
                v = wk.sin(v) + wk.exp(v) * 0.01 + wk.log(1.5 + wk.cos(v))
            print("v", i, v)
            loss[None] += v

    chain()
    chain.grad()
    kernels = offloaded_kernels("chain")
    backward = [k for k in kernels if "grad" in k.name]
    assert backward and any(collect_stacks(backward[0]))
    for kernel in kernels:
        build_all(kernel)
    build_all(backward[0], debug=True)                # bounds-checked build: the error word's address


@needs_linker
def test_f64_math_becomes_code_objects(cpu_program):
    y = wk.field(wk.f64, shape=4)

    @wk.kernel
    def wide():
        for i in y:
            y[i] = wk.sin(y[i]) + wk.atan2(y[i], 2.0) + y[i] ** 1.5 + wk.tanh(y[i]) + wk.acos(y[i] * 0.1)

    wide()
    kernel = offloaded_kernels("wide")[0]
    text = emit_amdgpu_module(kernel, layout_of(kernel), amdgpu_target("gfx90a"), "t", (0, 0))[0]
    assert "define internal double @wk.soft.sin.f64" in text and "@llvm.sin" not in text
    build_all(kernel)


def test_math_a_target_lacks_raises_at_its_line(cpu_program, monkeypatch):
    from wgkern.backends.llvm import soft_math
    y = wk.field(wk.f64, shape=4)

    @wk.kernel
    def wide():
        for i in y:
            y[i] = wk.sin(y[i])

    wide()
    kernel = offloaded_kernels("wide")[0]
    monkeypatch.setattr(soft_math, "symbol", lambda name, bits: None)
    with pytest.raises(CompileError, match=r"sin of f64 has no implementation on the amdgpu \(gfx90a\) target"
                                           r"(.|\n)*y\[i\] = wk.sin"):
        emit_amdgpu_module(kernel, layout_of(kernel), amdgpu_target("gfx90a"), "t", (0, 0))


def test_unknown_processor_names_the_supported_ones():
    with pytest.raises(ValueError, match="unknown AMDGPU processor 'gfx803'; supported: gfx90a, gfx1100"):
        amdgpu_target("gfx803")


@needs_linker
def test_checker_rejects_what_does_not_match(cpu_program, monkeypatch):
    kernel = shapes_kernel()
    code = build_all(kernel)[0]
    args_bytes = max(layout_of(kernel).size, 8)
    expected = [ExpectedKernel(name, 256, task.kind == "range") for name, task in zip(code.kernel_names, kernel.tasks)]
    assert len(check_code_object(code.data, "gfx90a", expected, args_bytes)) == len(kernel.tasks)
    with pytest.raises(CompileError, match="for amdgcn-amd-amdhsa--gfx90a.*, not gfx1100"):
        check_code_object(code.data, "gfx1100", expected, args_bytes)
    with pytest.raises(CompileError, match=f"not the launch's {args_bytes + 8}-byte argument block"):
        check_code_object(code.data, "gfx90a", expected, args_bytes + 8)
    with pytest.raises(CompileError, match="no function symbol"):
        check_code_object(code.data, "gfx90a", [ExpectedKernel("t_missing", 1, False)], args_bytes)
    serial = expected[-1]
    assert not serial.reads_dispatch
    with pytest.raises(CompileError, match="does not enable the dispatch pointer"):
        check_code_object(code.data, "gfx90a", [dataclasses.replace(serial, reads_dispatch=True)], args_bytes)
    with pytest.raises(CompileError, match="launched with 2048 threads per block, at most 1024"):
        check_code_object(code.data, "gfx90a", [dataclasses.replace(expected[0], block=2048)], args_bytes)
    with pytest.raises(CompileError, match="cannot be read: not a 64-bit little-endian ELF"):
        check_code_object(b"\0" * 64, "gfx90a", expected, args_bytes)
    small = dataclasses.replace(amdgpu_check.PROCESSORS["gfx90a"], max_vgprs=1)
    monkeypatch.setitem(amdgpu_check.PROCESSORS, "gfx90a", small)
    with pytest.raises(CompileError, match="VGPRs .* exceed gfx90a's 1 and 108"):
        check_code_object(code.data, "gfx90a", expected, args_bytes)


def test_missing_linker_names_the_remedy(monkeypatch):
    monkeypatch.setattr(amdgpu_link, "linker_candidates", lambda: [])
    with pytest.raises(CompileError, match=r"ld.lld, and none was found.*wgkern\[amdgpu\].*WK_LLD"):
        amdgpu_link.link_code_object(b"")


def test_linker_is_found_through_wk_lld(monkeypatch, tmp_path):
    zig = tmp_path / "zig"
    zig.write_text("")
    lld = tmp_path / "ld.lld"
    lld.write_text("")
    monkeypatch.setenv("WK_LLD", str(zig))
    assert amdgpu_link.linker_candidates()[0] == [str(zig), "ld.lld"]     # zig runs its bundled ld.lld
    monkeypatch.setenv("WK_LLD", str(lld))
    assert amdgpu_link.linker_candidates()[0] == [str(lld)]


def test_messagepack_reader():
    # {"a": 1, "bc": [true, nil, -3, 300, 1.5, "x" * 40], "d": {}} written out by hand from the format's spec
    data = (b"\x83" + b"\xa1a" + b"\x01" + b"\xa2bc" + b"\x96\xc3\xc0\xfd\xcd\x01\x2c\xcb" + struct.pack(">d", 1.5)
            + b"\xd9\x28" + b"x" * 40 + b"\xa1d\x80")
    assert unpack(data) == {"a": 1, "bc": [True, None, -3, 300, 1.5, "x" * 40], "d": {}}
    with pytest.raises(ValueError, match="1 bytes after the MessagePack value"):
        unpack(b"\x01\x02")


@needs_linker
def test_compile_check_mode_runs_on_the_cpu_and_builds_every_kernel(monkeypatch):
    from wgkern.backends.llvm import soft_math
    from wgkern.backends.llvm.amdgpu_compile_check import AmdgpuCompileCheckBackend
    wk.init(arch="amdgpu-compile")
    try:
        backend = program_module.get_program().backend
        assert isinstance(backend, AmdgpuCompileCheckBackend) and program_module.get_program().arch is wk.cpu
        x = wk.field(wk.f64, shape=8)

        @wk.kernel
        def fill():
            for i in x:
                x[i] = wk.exp(wk.cast(i, wk.f64))

        fill()
        assert np.allclose(x.to_numpy(), np.exp(np.arange(8)), rtol=1e-15)    # the CPU's libm: exact to rounding
        built = backend.code_objects["fill"]
        assert [code.processor for code in built] == list(COMPILE_CHECK_PROCESSORS)
        assert all(read_code_object(code.data).descriptors for code in built)

        @wk.kernel
        def unbuildable():
            for i in x:
                x[i] = wk.sin(x[i])

        monkeypatch.setattr(soft_math, "symbol", lambda name, bits: None)
        with pytest.raises(CompileError, match=r"sin of f64 has no implementation on the amdgpu \(gfx90a\)"):
            unbuildable()
    finally:
        wk.reset()


def test_compile_check_mode_without_a_linker_names_the_remedy(monkeypatch):
    monkeypatch.setattr(amdgpu_link, "linker_candidates", lambda: [])
    with pytest.raises(wk.ArchUnavailableError, match=r"amdgpu-compile links AMDGPU code objects with ld.lld.*"
                                                      r"wgkern\[amdgpu\]"):
        wk.init(arch="amdgpu-compile")


@pytest.fixture
def offloaded(monkeypatch):
    """Kernels compiled on a CPU program up to the backend: the OffloadedKernel the CPU backend would refuse
    (it has no wk.simt)."""
    wk.init(arch=wk.cpu)
    captured = []

    class Captured(Exception):
        pass

    def capture(kernel, origin=None):
        captured.append(kernel)
        raise Captured

    monkeypatch.setattr(program_module.get_program().backend, "compile", capture)

    def compile_kernel(kernel, *args):
        with pytest.raises(Captured):
            kernel(*args)
        return captured[-1]
    yield compile_kernel
    wk.reset()


@needs_linker
def test_block_shared_arrays_and_barriers_become_lds_and_s_barrier(offloaded):
    n = 100
    a = wk.field(wk.f32, shape=n)
    out = wk.field(wk.i32, shape=n)

    @wk.kernel
    def block_kernel():
        wk.loop_config(block_dim=64)
        for i in range(n):
            t = wk.simt.block.thread_idx()
            scalars = wk.simt.block.SharedArray((64,), wk.f32)
            scalars[t] = a[i]
            wk.atomic_add(scalars[0], 1.0)
            wk.simt.block.sync()
            wk.simt.block.mem_sync()
            wk.simt.grid.memfence()
            out[i] = wk.cast(scalars[63 - t], wk.i32) + wk.simt.block.global_thread_idx()

    kernel = offloaded(block_kernel)
    text = emit_amdgpu_module(kernel, layout_of(kernel), amdgpu_target("gfx1100"), "t", (0, 0))[0]
    assert "internal addrspace(3) global [64 x float]" in text and "@llvm.amdgcn.s.barrier()" in text
    assert 'fence syncscope("workgroup") release' in text and 'fence syncscope("agent") seq_cst' in text
    for code in build_all(kernel) + build_all(kernel, debug=True):
        assert code.reports[0].lds_bytes == 64 * 4            # the shared array, in LDS


def test_shared_arrays_past_lds_raise(offloaded):
    n = 64

    @wk.kernel
    def too_big():
        for i in range(n):
            big = wk.simt.block.SharedArray((16385,), wk.f32)
            big[i] = 1.0

    kernel = offloaded(too_big)
    with pytest.raises(CompileError, match="take 65540 bytes, more than AMDGPU's 65536 bytes"):
        emit_amdgpu_module(kernel, layout_of(kernel), amdgpu_target("gfx90a"), "t", (0, 0))
