"""backends/llvm/libdevice.py: the libdevice functions a CUDA module calls, appended as text instead of linking
all of libdevice's bitcode. Every math function the CUDA target calls, in f32 and f64, links this way and
becomes PTX (checked by ptxas where a toolkit is installed); the module carries only what it reaches; the index
survives the offline cache. (Results on a GPU: the suite under WK_ARCH=cuda.)"""
from __future__ import annotations

import re

import llvmlite.binding as llvm
import pytest

import wgkern as wk
from wgkern.backends.llvm import jit, libdevice, ptx
from wgkern.backends.llvm.cuda_codegen import emit_cuda_module
from wgkern.backends.llvm.layout import build_layout
from wgkern.backends.llvm.target import CUDA_TARGET

from .test_cuda import HAS_LIBDEVICE, offloaded_kernels, to_ptx

pytestmark = pytest.mark.skipif(not HAS_LIBDEVICE, reason="no libdevice here (a CUDA toolkit or "
                                                          "nvidia-cuda-nvcc-cu12)")


@pytest.fixture
def math_kernel():
    wk.init(arch=wk.cpu, offline_cache=False)
    x = wk.field(wk.f32, shape=8)
    y = wk.field(wk.f64, shape=8)

    @wk.kernel
    def every_math_function():
        for i in x:
            a = x[i]
            x[i] = (wk.sin(a) + wk.cos(a) + wk.tan(a) + wk.asin(a) + wk.acos(a) + wk.atan(a) + wk.atan2(a, 2.0)
                    + wk.sinh(a) + wk.cosh(a) + wk.tanh(a) + wk.exp(a) + wk.log(a) + wk.log2(a) + a ** 1.7)
            b = y[i]
            y[i] = (wk.sin(b) + wk.cos(b) + wk.tan(b) + wk.asin(b) + wk.acos(b) + wk.atan(b) + wk.atan2(b, 2.0)
                    + wk.sinh(b) + wk.cosh(b) + wk.tanh(b) + wk.exp(b) + wk.log(b) + wk.log2(b) + b ** 1.7)

    every_math_function()
    yield offloaded_kernels("every_math_function")[0]
    wk.reset()


def _module_text(kernel) -> str:
    return emit_cuda_module(kernel, build_layout(kernel), CUDA_TARGET, "t", (0, 0))[0]


def test_every_math_function_links_as_text_and_assembles(math_kernel) -> None:
    text = _module_text(math_kernel)
    called = set(re.findall(r"@(__nv_\w+)", text))
    assert {"__nv_tanf", "__nv_sin", "__nv_powf", "__nv_pow", "__nv_atan2f", "__nv_log2"} <= called
    assert not called & {"__nv_sinf", "__nv_cosf"}                    # the module's own (trig_f32.py)
    linked = libdevice.with_libdevice(text)
    defined = set(re.findall(r"^define internal [^@]*@(__nv_\w+)\(", linked, re.M))
    assert called <= defined
    assert not re.search(r"^declare [^@]*@__nv_", linked, re.M)        # the module's declarations are gone
    with jit.host_jit().lock:
        llvm.parse_assembly(linked).verify()
    assert len(defined) < 100                                          # not the library's 500-odd functions
    code = to_ptx(math_kernel)
    assert ".entry" in code and "__nv_tanf" not in code                # inlined, as with the whole library


def test_the_text_and_the_whole_library_give_the_same_kernel_entry_points(math_kernel) -> None:
    text = _module_text(math_kernel)
    by_text = ptx.compile_ptx(text, "sm_80")
    by_library = ptx.compile_ptx(text, "sm_80", whole_library=True)
    entries = lambda code: re.findall(r"\.entry (\w+)", code)           # noqa: E731
    assert entries(by_text) == entries(by_library) and entries(by_text)


def test_the_index_comes_back_from_the_offline_cache(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("WK_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(libdevice, "_index", None)
    built = libdevice._library_index(True)
    assert list((tmp_path / "cuda").glob("*.json"))
    monkeypatch.setattr(libdevice, "_index", None)
    monkeypatch.setattr(libdevice, "_build_index", lambda bitcode: pytest.fail("rebuilt despite the cache"))
    loaded = libdevice._library_index(True)
    assert loaded.keys() == built.keys()
    assert loaded["__nv_sinf"].text == built["__nv_sinf"].text
    assert loaded["__nv_sinf"].references == built["__nv_sinf"].references
