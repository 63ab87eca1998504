"""Taichi's `taichi.lang.misc` names that programs and test suites import from there: `loop_unique` (a hint,
lang/kernel_functions.py) and `get_host_arch_list()`."""
from __future__ import annotations

from wgkern.lang.math import loop_unique  # noqa: F401 - re-exported under Taichi's module path


def get_host_arch_list() -> list:
    """The arches that run on the host: the CPU."""
    from wgkern.runtime.arch import Arch
    return [Arch.cpu]
