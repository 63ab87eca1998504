"""Fixtures of the WGSL backend tests: one WgslBackend on the Vulkan adapter (lavapipe in CI) for the whole test run,
and `baseline`, a program on that adapter under wk.init(webgpu_profile="baseline").

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
    import os
    from wgkern.backends.wgsl.runtime import WgslBackend
    # WK_WEBGPU_PROFILE (tests/conftest.py) restricts this backend's device as it does wk.init's
    wgsl_backend = WgslBackend(adapter, webgpu_profile=os.environ.get("WK_WEBGPU_PROFILE") or None)
    yield wgsl_backend
    wgsl_backend.shutdown()


@pytest.fixture
def baseline() -> Iterator[object]:
    import wgkern as wk
    from wgkern.backends.wgsl import adapters
    try:
        adapters.find_adapter("vulkan")
    except (wk.ArchUnavailableError, ImportError) as exc:
        pytest.skip(f"no Vulkan wgpu adapter: {exc}")
    wk.init(arch=wk.vulkan, webgpu_profile="baseline")
    yield wk
    wk.reset()
