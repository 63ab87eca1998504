"""Fixtures of the LLVM CPU backend tests: one CpuBackend for the whole test run."""
from __future__ import annotations

from typing import Iterator

import pytest


@pytest.fixture(scope="session")
def backend() -> Iterator[object]:
    from wgkern.backends.llvm.cpu import CpuBackend
    yield CpuBackend()
