"""`wk.init(arch=..., device=i)` and CUDA_VISIBLE_DEVICES (wgkern/runtime/devices.py, runtime/arch.py)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import wgkern as wk
from wgkern.__main__ import main
from wgkern.runtime import arch as arch_module
from wgkern.runtime import devices

ROOT = Path(__file__).resolve().parents[2]


def _device_count(arch) -> int:
    if arch == wk.cpu:
        return 1
    adapters, _ = arch_module.list_wgpu_adapters()
    return len(arch_module.wgpu_devices(arch, adapters))


def test_device_zero_runs_a_kernel_and_one_past_the_last_is_refused_by_name(arch):
    wk.reset()
    wk.init(arch=arch, device=np.int64(0))          # numpy integers are indices too
    x = wk.field(wk.f32, shape=8)

    @wk.kernel
    def fill():
        for i in x:
            x[i] = i * 2.0

    fill()
    assert np.array_equal(x.to_numpy(), np.arange(8) * 2.0)
    count = _device_count(arch)
    plural = "device" if count == 1 else "devices"
    with pytest.raises(ValueError, match=rf"wk.init\(arch={arch!r}, device={count}\): {arch!r} has {count} "
                                         rf"{plural} here \(indices from 0: 0: "):
        wk.init(arch=arch, device=count)


@pytest.mark.parametrize("bad", [-1, 1.0, "0", True])
def test_a_device_that_is_not_an_index_is_refused(bad):
    with pytest.raises(ValueError, match=r"wk.init\(device=.*\): expected a device index, an int >= 0"):
        wk.init(arch=wk.cpu, device=bad)


def test_cuda_index_past_the_driver_s_devices_is_refused(monkeypatch):
    from wgkern.backends.llvm import cuda_driver
    monkeypatch.setattr(cuda_driver, "list_devices", lambda: (["H200 (PCI 0000:19:00.0)"], ""))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    with pytest.raises(ValueError, match=r"wk.cuda has 1 device here \(indices from 0: 0: H200 \(PCI 0000:19:00.0\)\)"
                                         r" \(CUDA_VISIBLE_DEVICES='3' leaves these visible\)"):
        wk.init(arch=wk.cuda, device=1)


def test_info_lists_devices_with_their_indices(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "cpu device 0: LLVM CPU backend" in out
    adapters, _ = arch_module.list_wgpu_adapters()
    for i, adapter in enumerate(arch_module.wgpu_devices(wk.vulkan, adapters)):
        assert f"vulkan device {i}: {adapter.summary}" in out


# ---- CUDA_VISIBLE_DEVICES on wgpu adapters ---------------------------------------------------------------------

def _adapter(name: str, vendor: int = devices.NVIDIA_VENDOR_ID, kind: str = "DiscreteGPU", **ids):
    info = {"vendor_id": vendor, "adapter_type": kind, "backend_type": "Vulkan", "description": name, **ids}
    return arch_module.AdapterInfo(name, "Vulkan", kind, SimpleNamespace(info=info))


GPUS = [_adapter("gpu0"), _adapter("gpu1"), _adapter("gpu2")]
LAVAPIPE = _adapter("lavapipe", vendor=0x10005, kind="CPU")


def _names(pool):
    return [a.summary for a in pool]


def test_unset_cuda_visible_devices_leaves_every_adapter():
    assert _names(devices.apply_cuda_visible(GPUS + [LAVAPIPE], {})) == ["gpu0", "gpu1", "gpu2", "lavapipe"]


def test_cuda_visible_devices_hides_and_reorders_nvidia_adapters_only():
    pool = devices.apply_cuda_visible(GPUS + [LAVAPIPE], {"CUDA_VISIBLE_DEVICES": "2,0"})
    assert _names(pool) == ["lavapipe", "gpu2", "gpu0"]
    # as in CUDA, an index past the devices ends the list there, and so does an empty entry
    assert _names(devices.apply_cuda_visible(GPUS, {"CUDA_VISIBLE_DEVICES": "1,7,0"})) == ["gpu1"]
    assert _names(devices.apply_cuda_visible(GPUS, {"CUDA_VISIBLE_DEVICES": "1,,0"})) == ["gpu1"]
    assert devices.apply_cuda_visible(GPUS, {"CUDA_VISIBLE_DEVICES": ""}) == []


def test_wgpu_index_counts_the_visible_adapters_in_listed_order(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,2")
    pool = arch_module.wgpu_devices(wk.vulkan, GPUS + [LAVAPIPE])
    assert _names(pool) == ["gpu1", "gpu2", "lavapipe"]          # GPUs before CPU adapters
    assert arch_module._pick_adapter(wk.vulkan, GPUS + [LAVAPIPE], 1).summary == "gpu2"
    with pytest.raises(ValueError, match=r"wk.vulkan has 3 devices here .*CUDA_VISIBLE_DEVICES='1,2' hides"):
        arch_module._pick_adapter(wk.vulkan, GPUS + [LAVAPIPE], 3)


def test_entries_match_reported_pci_bus_ids_and_uuids():
    gpus = [_adapter("a", pci_bus_id="0000:19:00.0"), _adapter("b", uuid="GPU-8f2e")]
    assert _names(devices.apply_cuda_visible(gpus, {"CUDA_VISIBLE_DEVICES": "GPU-8F2E,0000:19:00.0"})) == ["b", "a"]
    # ids are reported and this one names none of them: CUDA stops the list there
    assert _names(devices.apply_cuda_visible(gpus, {"CUDA_VISIBLE_DEVICES": "1,GPU-0000,0"})) == ["b"]


def test_a_uuid_entry_without_reported_ids_is_an_error_naming_the_variable():
    with pytest.raises(ValueError, match=r"CUDA_VISIBLE_DEVICES='GPU-8f2e': the entry 'GPU-8f2e' is not an index, "
                                         r"and wgpu's adapters report no PCI bus id or UUID"):
        devices.apply_cuda_visible(GPUS, {"CUDA_VISIBLE_DEVICES": "GPU-8f2e"})


_TWO_PROCESS_CHILD = """
import sys, numpy as np, wgkern as wk
wk.init(arch=wk.vulkan, device=int(sys.argv[1]))
x = wk.field(wk.f32, shape=1 << 16)
@wk.kernel
def fill(v: wk.f32):
    for i in x:
        x[i] = v
for _ in range(50):
    fill(float(sys.argv[1]) + 1.0)
assert (x.to_numpy() == float(sys.argv[1]) + 1.0).all()
print(wk.runtime.program.get_program().description)
"""


@pytest.mark.skipif(_device_count(wk.vulkan) < 2 if "vulkan" in os.environ.get("WK_ARCH", "vulkan") else True,
                    reason="fewer than two Vulkan adapters here: the index errors above cover device choice")
def test_two_processes_on_two_adapters_run_concurrently():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    children = [subprocess.Popen([sys.executable, "-c", _TWO_PROCESS_CHILD, str(i)], env=env, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i in (0, 1)]
    outputs = [child.communicate(timeout=120) for child in children]
    assert all(child.returncode == 0 for child in children), outputs
    assert "(device 0)" in outputs[0][0] and "(device 1)" in outputs[1][0]
