"""Taichi programs import submodules of the package: `import taichi.math as tm`, `import taichi.types`."""
from __future__ import annotations

import importlib


def test_math_and_types_import_as_submodules():
    import wgkern as wk
    tm = importlib.import_module("wgkern.math")
    tt = importlib.import_module("wgkern.types")
    assert tm is wk.math and tt is wk.types
    assert tm.vec3(1, 2, 3).z == 3.0 and tt.vector(2, wk.f32).n == 2


def test_taichi_and_quadrants_exception_names_catch_ours():
    import wgkern as wk
    assert wk.TaichiCompilationError is wk.CompileError and wk.QuadrantsSyntaxError is wk.CompileError
    assert wk.TaichiRuntimeTypeError is wk.ArgumentError and wk.QuadrantsAssertionError is wk.KernelAssertionError
    assert issubclass(wk.AdStackOverflowError, wk.TaichiRuntimeError)
    # Taichi's module path for them too (Quadrants' tests catch `ti.lang.exception.QuadrantsCompilationError`)
    assert wk.lang.exception.QuadrantsCompilationError is wk.CompileError
    assert wk.lang.exception.TaichiRuntimeError is wk.WkError
    # a host-side index of the wrong length is an IndexError, which Quadrants calls QuadrantsIndexError
    assert wk.lang.exception.QuadrantsIndexError is IndexError and issubclass(wk.BoundsCheckError, IndexError)


def test_types_namespace_has_taichis_names():
    import wgkern as wk
    t = wk.types
    assert t.float32 is wk.f32 and t.int8 is wk.i8 and t.uint1 is wk.u1
    assert t.is_real(wk.f64) and not t.is_real(wk.i32)
    assert t.is_integral(wk.u8) and t.is_integral(wk.u1) and not t.is_integral(wk.f32)
    assert t.is_signed(wk.i16) and not t.is_signed(wk.u32)


def test_primitive_types_lists_cast_in_kernels(arch):
    """`wk.types.primitive_types` lists the scalar dtypes by family (Python's float/int/bool too), and each
    casts 123.4 in a kernel as its family does."""
    import wgkern as wk
    pt = wk.types.primitive_types
    assert pt.f32 is wk.f32 and float in pt.real_types and int in pt.integer_types
    assert pt.all_types == pt.real_types + pt.integer_types and pt.u8 in pt.integer_types
    out = wk.field(wk.f64, shape=())
    for dt in pt.all_types:
        if dt is wk.f16 or (dt in (wk.i64, wk.u64, wk.f64) and arch.name == "vulkan"):
            continue

        @wk.kernel
        def cast():
            out[None] = wk.cast(wk.cast(123.4, dt), wk.f64)

        cast()
        expected = 1.0 if dt in (bool, wk.u1) else 123 if dt in pt.integer_types else 123.4
        assert abs(out[None] - expected) < 1e-4, dt


def test_experimental_real_func_is_real_func():
    import wgkern as wk
    from wgkern.experimental import real_func
    assert wk.experimental.real_func is wk.real_func is real_func
