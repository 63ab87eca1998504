"""Adapter selection: the right backend type per kind, real GPUs before CPU adapters, never OpenGL, and an
ArchUnavailableError that names what was found."""
from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from wgkern.backends.wgsl import adapters
from wgkern.errors import ArchUnavailableError


@dataclass
class FakeAdapter:
    summary: str
    backend_type: str
    adapter_type: str
    info: dict = field(init=False)

    def __post_init__(self) -> None:
        self.info = {"backend_type": self.backend_type, "adapter_type": self.adapter_type}


LAVAPIPE = FakeAdapter("llvmpipe (LLVM 15) via Vulkan", "Vulkan", "CPU")
GL = FakeAdapter("llvmpipe via OpenGL", "OpenGL", "CPU")
NVIDIA = FakeAdapter("NVIDIA H100", "Vulkan", "DiscreteGPU")
INTEL = FakeAdapter("Intel Iris", "Vulkan", "IntegratedGPU")
METAL = FakeAdapter("Apple M2", "Metal", "IntegratedGPU")


@pytest.mark.parametrize("kind,found,want", [
    ("vulkan", [GL, LAVAPIPE], LAVAPIPE),
    ("vulkan", [LAVAPIPE, INTEL, NVIDIA], NVIDIA),
    ("webgpu", [GL, LAVAPIPE], LAVAPIPE),
    ("gpu", [LAVAPIPE, INTEL, GL], INTEL),
    ("metal", [METAL, LAVAPIPE], METAL),
])
def test_picks_the_best_matching_adapter(kind: str, found: list, want: FakeAdapter) -> None:
    assert adapters.find_adapter(kind, found) is want


@pytest.mark.parametrize("kind,found", [("vulkan", [GL]), ("webgpu", [GL]), ("gpu", [LAVAPIPE, GL]),
                                        ("dx12", [LAVAPIPE]), ("metal", [])])
def test_refuses_opengl_and_names_what_was_found(kind: str, found: list) -> None:
    with pytest.raises(ArchUnavailableError) as info:
        adapters.find_adapter(kind, found)
    message = str(info.value)
    for adapter in found:
        assert adapter.summary in message
    if not found:
        assert "no wgpu adapters" in message


def test_unknown_kind_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown WGSL adapter kind"):
        adapters.find_adapter("opengl", [GL])


def test_real_enumeration_has_a_vulkan_adapter_and_the_device_is_cached(backend) -> None:
    adapter = adapters.find_adapter("vulkan")
    assert adapter.info["backend_type"] == "Vulkan"
    assert adapters.device_for(adapter) is adapters.device_for(adapter)
    assert backend.device is adapters.device_for(backend.adapter, backend.webgpu_profile)
