"""A stand-in for a GPU driver library (libcuda's driver API, libamdhip64's HIP runtime) where that GPU is
absent: `FakeLibrary` answers every call a driver module binds with success, a subclass answers the calls its test
looks at, and `install` makes the driver module (cuda_driver, hip_driver) load it. What such a test checks is the
binding's glue, not that anything runs on a GPU."""
from __future__ import annotations

import ctypes
import functools
from types import ModuleType
from typing import Iterable

import pytest


class FakeLibrary:
    """Every name in `calls` is a function returning 0 (success) unless the subclass defines it."""

    def __init__(self, calls: Iterable[str]):
        for name in calls:                      # partials take the argtypes/restype the driver sets
            setattr(self, name, functools.partial(getattr(self, name, self._ok)))

    @staticmethod
    def _ok(*args):
        return 0

    @staticmethod
    def _out(reference, value):
        """Store `value` where a byref(...) argument points."""
        reference._obj.value = value

    @staticmethod
    def _text(raw, text: str):
        """Write `text`, NUL-terminated, into a char buffer argument."""
        data = text.encode() + b"\0"
        ctypes.memmove(raw, data, len(data))


def install(monkeypatch: pytest.MonkeyPatch, driver_module: ModuleType, lib: FakeLibrary) -> FakeLibrary:
    """Make `driver_module.driver()` bind `lib`, with no binding left from before (undone after the test)."""
    monkeypatch.setattr(driver_module, "load_library", lambda: (lib, ""))
    monkeypatch.setattr(driver_module, "_DRIVERS", {})
    return lib
