"""hip_driver.py and AmdgpuBackend without ROCm: a fake HIP library (host memory, launches recorded) stands in for
libamdhip64.so, so what is checked is the binding's glue (argument blocks, the `extra` array HIP reads, error
text, the gfx processor from the KFD topology) and that a kernel reaches the launch as a checked code object. It
does not show that anything runs on an AMD GPU (docs/amdgpu.md)."""
from __future__ import annotations

import ctypes
import os

import numpy as np
import pytest

import wgkern as wk
from tests.backends.llvm.fake_driver import FakeLibrary, install
from wgkern.backends.llvm import amdgpu_link, hip_driver
from wgkern.errors import ArchUnavailableError, OutOfMemoryError
from wgkern.runtime import program as program_module


class FakeHip(FakeLibrary):
    """The HIP calls hip_driver binds, on host memory; launches are recorded as (grid, block, argument block)."""

    def __init__(self, devices: int = 1, memory: int = 1 << 30):
        self.devices, self.memory = devices, memory
        self.buffers: dict[int, ctypes.Array] = {}
        self.launches: list[tuple[int, int, bytes]] = []
        self.modules: list[bytes] = []
        super().__init__(hip_driver._SIGNATURES)

    def hipGetDeviceCount(self, count):
        self._out(count, self.devices)
        return 0

    def hipDeviceGetName(self, raw, size, device):
        self._text(raw, "Fake MI250X")
        return 0

    def hipDeviceTotalMem(self, total, device):
        self._out(total, self.memory)
        return 0

    def hipDriverGetVersion(self, version):
        self._out(version, 60342)
        return 0

    def hipMalloc(self, pointer, nbytes):
        if nbytes > self.memory:
            return hip_driver.HIP_ERROR_OUT_OF_MEMORY
        buffer = ctypes.create_string_buffer(nbytes)
        self.buffers[ctypes.addressof(buffer)] = buffer
        self._out(pointer, ctypes.addressof(buffer))
        return 0

    def hipMemsetD8(self, pointer, value, nbytes):
        ctypes.memset(pointer, value, nbytes)
        return 0

    def hipMemcpyHtoD(self, dst, src, nbytes):
        ctypes.memmove(dst, src, nbytes)
        return 0

    hipMemcpyDtoH = hipMemcpyDtoD = hipMemcpyHtoD

    def hipModuleLoadData(self, module, image):
        data = ctypes.string_at(image, 4)
        self.modules.append(data)
        self._out(module, len(self.modules))
        return 0 if data == b"\x7fELF" else 200           # hipErrorInvalidImage

    def hipModuleLaunchKernel(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        assert extra[0] == 1 and extra[2] == 2 and extra[4] == 3     # BUFFER_POINTER, BUFFER_SIZE, END
        size = ctypes.c_size_t.from_address(extra[3]).value
        self.launches.append((gx, bx, ctypes.string_at(extra[1], size)))
        return 0

    def hipGetErrorName(self, code):
        return b"hipErrorInvalidImage" if code == 200 else b"hipErrorUnknown"

    def hipGetErrorString(self, code):
        return b"device kernel image is invalid"


@pytest.fixture
def topology(tmp_path, monkeypatch):
    for node, lines in (("0", ["cpu_cores_count 16", "gfx_target_version 0"]),
                        ("1", ["simd_count 440", "simd_per_cu 4", "gfx_target_version 90010"]),
                        ("2", ["simd_count 384", "simd_per_cu 2", "gfx_target_version 110000"])):
        (tmp_path / node).mkdir()
        (tmp_path / node / "properties").write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(hip_driver, "KFD_TOPOLOGY", tmp_path)
    return tmp_path


def test_gfx_names_and_compute_units_come_from_the_kfd_topology(topology):
    assert hip_driver.gfx_processors(topology) == ["gfx90a", "gfx1100"]
    assert hip_driver._compute_units(0, topology) == 110 and hip_driver._compute_units(1, topology) == 192


def test_driver_memory_modules_and_errors(topology):
    lib = FakeHip()
    driver = hip_driver.Driver(lib, processors=hip_driver.gfx_processors(topology))
    assert driver.info.processor == "gfx90a" and driver.info.summary == "Fake MI250X (gfx90a, HIP 60342)"
    pointer = driver.allocate(16)
    data = np.arange(4, dtype=np.int32)
    driver.upload(pointer, data.ctypes.data, 16)
    back = np.zeros(4, np.int32)
    driver.download(back.ctypes.data, pointer, 16)
    assert back.tolist() == [0, 1, 2, 3]
    with pytest.raises(OutOfMemoryError, match="HIP could not allocate"):
        driver.allocate(1 << 31)
    with pytest.raises(hip_driver.HipError, match="hipModuleLoadData failed: hipErrorInvalidImage \\(200\\)"):
        driver.load_module(b"not an ELF")
    driver.launch(driver.function(driver.load_module(b"\x7fELF..."), "k"), 3, 64, b"\x01" * 24)
    assert lib.launches == [(3, 64, b"\x01" * 24)]
    with pytest.raises(hip_driver.HipError, match="no HIP device 1: the runtime reports 1"):
        hip_driver.Driver(FakeHip(), ordinal=1, processors=["gfx90a"])
    with pytest.raises(hip_driver.HipError, match="gfx processor of HIP device 0 is unknown"):
        hip_driver.Driver(FakeHip(), processors=[])


@pytest.mark.skipif(amdgpu_link.find_linker() is None, reason="no ld.lld here (WK_LLD, ROCm or ziglang)")
def test_a_kernel_reaches_hip_as_a_checked_code_object(topology, monkeypatch):
    lib = install(monkeypatch, hip_driver, FakeHip())
    wk.init(arch=wk.amdgpu)
    try:
        program = program_module.get_program()
        assert program.arch is wk.amdgpu and program.backend.describe() == "amdgpu on Fake MI250X (gfx90a, HIP 60342)"
        x = wk.field(wk.f32, shape=1000)

        @wk.kernel
        def fill(scale: wk.f32):
            for i in x:
                x[i] = wk.sin(i * scale)

        fill(0.5)
        wk.sync()
        assert lib.modules and lib.modules[-1] == b"\x7fELF"
        grid, block, args = lib.launches[-1]
        # one thread per index, or per 4 indices where the loop's accesses are 16 bytes wide (passes/vectorize.py);
        # 256 threads per block
        wide = program.backend.wide_memory_access and os.environ.get("WK_VECTORIZE", "1") != "0"
        threads = -(-1000 // 4) if wide else 1000
        assert block == 256 and grid == -(-threads // 256)
        assert np.float32(0.5).tobytes() in args            # the scalar argument, in the argument block
    finally:
        wk.reset()
    monkeypatch.setattr(hip_driver, "_DRIVERS", {})
    monkeypatch.setattr(hip_driver, "gfx_processors", lambda: ["gfx803"])
    with pytest.raises(ArchUnavailableError, match="wk.amdgpu compiles for gfx90a, gfx1100; this GPU is gfx803"):
        wk.init(arch=wk.amdgpu)
    wk.reset()
