"""Taichi's `ti.extension` names and `ti.is_extension_supported(arch, ext)`, which programs and test suites
ask before using a feature: sparse SNodes, adstacks, assertions and quantized types (emulated at full width,
lang/quant.py) work on every arch, 64-bit types wherever the device has them (always on the CPU and CUDA);
block-local storage, meshes and external functions do not exist here."""
from __future__ import annotations

import enum
from typing import Any

from wgkern.runtime.arch import Arch, parse_arch


class extension(enum.Enum):  # noqa: N801 - Taichi's name
    sparse = "sparse"
    quant = "quant"
    quant_basic = "quant_basic"
    data64 = "data64"
    adstack = "adstack"
    bls = "bls"
    assertion = "assertion"
    extfunc = "extfunc"
    mesh = "mesh"


_EVERYWHERE = frozenset({extension.sparse, extension.adstack, extension.assertion, extension.quant,
                         extension.quant_basic})


def is_extension_supported(arch: Any, ext: extension) -> bool:
    """Whether `ext` works on `arch` (64-bit types on a GPU arch: as the running program's device reports them,
    False when another arch is running)."""
    arch = parse_arch(arch)
    if not isinstance(ext, extension):
        raise ValueError(f"is_extension_supported() takes a wk.extension member, got {ext!r}")
    if arch is None or arch in (Arch.amdgpu, Arch.opengl, Arch.gles, Arch.dx11, Arch.cc):
        return False
    if ext in _EVERYWHERE:
        return True
    if ext is extension.data64:
        if arch in (Arch.cpu, Arch.cuda):
            return True
        from wgkern import dtypes as T
        from wgkern.runtime.program import current
        program = current()
        return program is not None and program.arch is arch and all(
            program.backend.supports(t) for t in (T.f64, T.i64))
    return False


def is_extension_enabled(ext: extension) -> bool:
    """Quadrants' `qd.is_extension_enabled(ext)`: is_extension_supported on the arch of the running program
    (wk.init first)."""
    from wgkern.errors import NotInitializedError
    from wgkern.runtime.program import current
    program = current()
    if program is None:
        raise NotInitializedError("wk.is_extension_enabled() asks about the running program: call wk.init() first")
    return is_extension_supported(program.arch, ext)
