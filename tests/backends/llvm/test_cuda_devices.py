"""cuda_driver's device ordinals without an NVIDIA GPU: a fake libcuda with two devices stands in, so what is
checked is the binding's glue (one binding per ordinal, the listing `python -m wgkern info` prints, the
out-of-range error), not that anything runs on a GPU."""
from __future__ import annotations

import pytest

from tests.backends.llvm.fake_driver import FakeLibrary, install
from wgkern.backends.llvm import cuda_driver

BUS_IDS = ["0000:19:00.0", "0000:3b:00.0"]


class FakeCuda(FakeLibrary):
    """The calls cuda_driver binds, answering for two devices; every other call succeeds doing nothing."""

    def __init__(self, devices: int = 2):
        self.devices = devices
        self.retained: list[int] = []
        super().__init__(set(cuda_driver._SIGNATURES) | {"cuDeviceGetPCIBusId"})    # list_devices binds the last

    def cuDeviceGetCount(self, count):
        self._out(count, self.devices)
        return 0

    def cuDeviceGet(self, device, ordinal):
        self._out(device, 100 + ordinal)        # a device handle that is not its ordinal
        return 0

    def cuDeviceGetName(self, raw, size, device):
        self._text(raw, f"Fake H200 #{device - 100}")
        return 0

    def cuDeviceGetPCIBusId(self, raw, size, device):
        self._text(raw, BUS_IDS[device - 100])
        return 0

    def cuDevicePrimaryCtxRetain(self, context, device):
        self.retained.append(device)
        return 0

    def cuDeviceGetAttribute(self, value, which, device):
        self._out(value, 9 if which == cuda_driver.ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR else 0)
        return 0

    def cuDriverGetVersion(self, version):
        self._out(version, 12080)
        return 0


@pytest.fixture
def fake(monkeypatch):
    return install(monkeypatch, cuda_driver, FakeCuda())


def test_each_ordinal_gets_its_own_binding_on_its_own_device(fake):
    first, second = cuda_driver.driver(0), cuda_driver.driver(1)
    assert first is not second and cuda_driver.driver(1) is second
    assert (first.device, second.device) == (100, 101) and fake.retained == [100, 101]
    assert second.info.ordinal == 1 and second.info.name == "Fake H200 #1"
    assert cuda_driver.probe(1)[0].summary == "Fake H200 #1 (sm_90, CUDA driver 12.8)"


def test_an_ordinal_past_the_devices_is_named_with_the_count(fake):
    info, reason = cuda_driver.probe(2)
    assert info is None and reason == "no CUDA device 2: the driver reports 2"


def test_the_listing_names_each_device_and_its_pci_bus_without_a_context(fake):
    names, reason = cuda_driver.list_devices()
    assert reason == "" and fake.retained == []
    assert names == ["Fake H200 #0 (PCI 0000:19:00.0)", "Fake H200 #1 (PCI 0000:3b:00.0)"]
