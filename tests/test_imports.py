"""Taichi programs import submodules of the package: `import taichi.math as tm`, `import taichi.types`."""
from __future__ import annotations

import importlib


def test_math_and_types_import_as_submodules():
    import wgkern as wk
    tm = importlib.import_module("wgkern.math")
    tt = importlib.import_module("wgkern.types")
    assert tm is wk.math and tt is wk.types
    assert tm.vec3(1, 2, 3).z == 3.0 and tt.vector(2, wk.f32).n == 2
