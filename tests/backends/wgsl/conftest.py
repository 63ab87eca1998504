"""Fixtures of the WGSL backend tests: one WgslBackend on the Vulkan adapter (lavapipe in CI) for the whole test run.

The wgpu device itself comes from adapters.py's process-wide cache, so even several backends cost one device."""
from __future__ import annotations

from typing import Iterator

import pytest


@pytest.fixture(scope="session")
def backend() -> Iterator[object]:
    from wgkern.backends.wgsl import adapters
    from wgkern.errors import ArchUnavailableError
    try:
        adapter = adapters.find_adapter("vulkan")
    except (ArchUnavailableError, ImportError) as exc:
        pytest.skip(f"no Vulkan wgpu adapter: {exc}")
    from wgkern.backends.wgsl.runtime import WgslBackend
    wgsl_backend = WgslBackend(adapter)
    yield wgsl_backend
    wgsl_backend.shutdown()
