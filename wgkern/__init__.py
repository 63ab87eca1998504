"""wgkern: write GPU/CPU kernels as Python functions (Taichi/Quadrants-style), compiled to WGSL or LLVM.

This module exports exactly the public names of the user API (API.md). It imports neither wgpu nor llvmlite:
backends load at `wk.init`. Compilation lives in frontend/, passes/ and backends/; runtime state in runtime/."""
from __future__ import annotations

from wgkern.errors import (AdStackOverflowError, ArchUnavailableError, ArgumentError, AutodiffError, BoundsCheckError,
                           CompileError, DeviceCommandError, DeviceFeatureError, DeviceLostError, KernelAssertionError,
                           LoopLimitError, OutOfMemoryError, SizingError, SubgroupSizeError, WkError)
from wgkern.lang import ad
from wgkern.lang import exception as _exception  # `ti.lang.exception.TaichiCompilationError`
from wgkern.lang import impl as _impl  # noqa: F401 - `ti.lang.impl.current_cfg()` (lang/impl.py)
from wgkern.lang import _template_mapper as _template_mapper  # noqa: F401 - `qd.lang._template_mapper`
from wgkern.lang import misc as _misc  # noqa: F401 - `ti.lang.misc.loop_unique` (lang/misc.py)
from wgkern.lang import math
from wgkern.lang import simt
from wgkern.lang.simt import global_thread_idx
from wgkern.lang import ops as _ops  # noqa: F401 - `ti.lang.ops.sqrt(...)` (lang/ops.py)
from wgkern.lang.fields import field, ndarray
from wgkern.lang.kernel import data_oriented, func, kernel, pure, pyfunc, real_func
from wgkern.lang.math import (abs, acos, asin, atan, atan2, atomic_add, atomic_and, atomic_cas, atomic_exchange,
                              atomic_max, atomic_min, atomic_mul, atomic_or, atomic_sub, atomic_xor, bit_cast, block_dim, block_local, cache_read_only, cast, ceil, clamp, cos, cosh, exp, floor,
                              grouped, log, log2, loop_config, max, min, ndrange, one, polar_decompose, pow, randn,
                              random, raw_div, raw_mod, bit_shr, round, rsqrt, select, sign, sin, sinh, sqrt, static,
                              static_assert, static_print, stop_grad, svd, sym_eig, tan, tanh, zero)
from wgkern.lang.glsl import solve
from wgkern.lang.legacy import any_arr, ext_arr, layout, require_version, var
from wgkern.lang.fields import Field, MatrixField, MatrixNdarray, Ndarray, ScalarField, ScalarNdarray, VectorNdarray
from wgkern.lang.buffer_view import BufferView
from wgkern.lang import container_pickle as _container_pickle  # noqa: F401 - registers pickling of containers
from wgkern.lang.perf_dispatch import perf_dispatch
from wgkern.lang.stream import Event, Stream, create_event, create_stream
from wgkern.lang.math import (assume_in_range, eig, frexp, graph_do_while, make_spd, no_activate, stream_parallel,
                              volatile_load)
from wgkern.lang.tensor import Backend, MatrixTensor, Tensor, VectorTensor, tensor, wrap
from wgkern.lang.layout import Layout
from wgkern.lang.simt.tile import outer
from wgkern.lang.texture import Format, Texture
from wgkern.lang.types import Template
from wgkern.lang.matrix import Matrix, Vector
from wgkern.lang import expr as _expr  # noqa: F401 - `ti.lang.expr.Expr` in isinstance checks (lang/expr.py)
import wgkern.lang as _lang_package
_lang_package.Matrix, _lang_package.Vector = Matrix, Vector  # Taichi's `ti.lang.Matrix` / `ti.lang.Vector`
from wgkern.lang.structs import Struct, StructField, dataclass
from wgkern.lang.snode import i, ij, ijk, ijkl, j, k, l, root  # noqa: E741 - Taichi's axis names
from wgkern.lang.snode import AXIS_COMBINATIONS as _AXIS_COMBINATIONS
from wgkern.lang.snode import FieldsBuilder, SNode, SNodeTree, axes
from wgkern.lang.snode import BitpackedFields
from wgkern.lang.sparse import (activate, append, deactivate, deactivate_all_snodes, is_active, length,
                                rescale_index)
globals().update({_name: _axes for _name, _axes in _AXIS_COMBINATIONS.items() if _name not in globals()})
from wgkern.lang.types_namespace import types
from wgkern.lang.types import (f16, f32, f64, i8, i16, i32, i64, ref, sparse_matrix_builder, template, u1,
                               u8, u16, u32, u64)
from wgkern.runtime.arch import amdgpu, cc, cpu, cuda, dx11, dx12, gles, gpu, metal, opengl, vulkan, webgpu
from wgkern.runtime.extensions import extension, is_extension_enabled, is_extension_supported
from wgkern.runtime.materialization import reset, sync
from wgkern.runtime.program import init, stats
from wgkern import algorithms, profiler
from wgkern import launch as _launch  # noqa: F401 - installs the kernel call path (launch.py)
from wgkern.compat import provide  # `wgkern.provide("quadrants")`: run Quadrants / Taichi programs unchanged
import sys as _sys
# `import wgkern.math as tm` / `import wgkern.types` (Taichi programs import taichi.math that way)
_sys.modules[__name__ + ".math"] = math
_sys.modules[__name__ + ".types"] = types
types.__name__ = __name__ + ".types"    # named as its sys.modules key, as a module is (`from wgkern.types import x`)
# `ti.experimental.real_func` (Taichi 1.7's spelling of @ti.real_func)
experimental = type(_sys)(__name__ + ".experimental", "Taichi's ti.experimental names: real_func.")
experimental.real_func = real_func
_sys.modules[experimental.__name__] = experimental

# Taichi's other spellings: dtype names and CPU arch names
float16, float32, float64 = f16, f32, f64
int8, int16, int32, int64 = i8, i16, i32, i64
uint1, uint8, uint16, uint32, uint64 = u1, u8, u16, u32, u64
x64 = x86_64 = arm64 = cpu
# Taichi's older spellings, still used by ported programs (lang/legacy.py)
global_var = var
indices = axes
Tape = ad.Tape
clear_all_gradients = ad.clear_all_gradients
complex_kernel = ad.grad_replaced
complex_kernel_grad = ad.grad_for
# Taichi's and Quadrants' exception names, so a ported `except ti.TaichiCompilationError:` catches ours
globals().update(_exception.ALIASES)
# Taichi's log levels and threshold (wgkern/_logging.py); `wk._logging` holds the writers (Quadrants' qd._logging)
from wgkern import _logging
from wgkern._logging import CRITICAL, DEBUG, ERROR, INFO, TRACE, WARN, set_logging_level

__version__ = "0.1.0"

__all__ = [
    "init", "reset", "sync", "stats", "field", "ndarray", "kernel", "func", "pyfunc", "template", "types", "Vector",
    "Matrix", "math", "ad",
    "f16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "u1",
    "cpu", "cuda", "amdgpu", "vulkan", "metal", "dx12", "webgpu", "gpu",
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "exp", "log", "log2", "sqrt",
    "rsqrt", "abs", "floor", "ceil", "round", "pow", "min", "max", "clamp", "sign", "random",
    "atomic_add", "atomic_sub", "atomic_min", "atomic_max", "atomic_and", "atomic_or", "atomic_xor",
    "atomic_mul", "atomic_exchange", "atomic_cas",
    "cast", "bit_cast", "block_dim", "block_local", "cache_read_only", "select", "static", "ndrange", "grouped", "loop_config", "randn", "svd", "polar_decompose", "sym_eig",
    "root", "i", "j", "k", "l", "ij", "ijk", "ijkl", "axes", "GUI", "Struct", "dataclass", "data_oriented", "static_print",
    "static_assert", "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint1", "uint8",
    "uint16", "uint32", "uint64", "x64", "x86_64", "arm64", "profiler", "set_logging_level",
    "TRACE", "DEBUG", "INFO", "WARN", "ERROR", "CRITICAL",
    "WkError", "CompileError", "DeviceFeatureError", "AutodiffError", "ArgumentError", "AdStackOverflowError", "SizingError",
    "OutOfMemoryError", "ArchUnavailableError", "DeviceCommandError", "DeviceLostError", "BoundsCheckError", "KernelAssertionError", "LoopLimitError",
    "SubgroupSizeError",
    "raw_div", "raw_mod", "bit_shr", "stop_grad", "zero", "one", "solve", "Field", "ScalarField", "MatrixField", "Ndarray",
    "Template", "var", "global_var", "require_version", "indices", "ext_arr", "any_arr", "layout", "Tape", "clear_all_gradients", "complex_kernel",
    "complex_kernel_grad", "activate", "deactivate", "is_active", "append", "length", "rescale_index",
    "deactivate_all_snodes", "pure", "ScalarNdarray", "VectorNdarray", "MatrixNdarray", "assume_in_range", "frexp",
    "make_spd", "eig", "BufferView", "perf_dispatch", "Stream", "Event", "create_stream", "create_event",
    "no_activate", "stream_parallel", "volatile_load", "graph_do_while", "Backend", "Layout", "outer",
    "Tensor", "tensor", "StructField", "simt", "global_thread_idx", "VectorTensor", "MatrixTensor", "wrap",
    "SNode", "FieldsBuilder", "SNodeTree", "BitpackedFields", "algorithms", "real_func", "opengl", "gles", "dx11", "cc", "extension", "is_extension_supported",
    "is_extension_enabled", "experimental", "provide",
]


# Taichi features a ported program may reach for that wgkern does not have, and what to use instead.
_NOT_AVAILABLE = {
    "Mesh": "ti.Mesh (MeshTaichi) is not available",
    "aot": "ti.aot (ahead-of-time modules) is not available",
    "cfg": "ti.cfg (the running program's configuration) exists once wk.init(...) has run; options are passed "
           "to wk.init(...) (arch=, default_fp=, debug=, ...)",
    "get_runtime": "ti.get_runtime() (Taichi's internal runtime) is not available: fields are placed by "
                   "wk.root.dense(...).place(...) and @wk.layout functions run before the first kernel by themselves",
    "set_default_fp": "ti.set_default_fp is not available; use wk.init(default_fp=wk.f64)",
    "Var": "Taichi's old ti.Var is not available; use wk.field",
    "get_addr": "ti.get_addr (the memory address of a field element) is not available: fields live in device "
                "buffers with no addresses to hand out; index the field instead",
}


def __getattr__(name: str):
    if name in _GUI_NAMES:     # imported on first use: most programs never draw
        import importlib
        return getattr(importlib.import_module("wgkern.gui"), _GUI_NAMES[name])
    if name in _OLD_TOOL_NAMES:  # Taichi before 1.0 spelled ti.tools.PLYWriter etc. at the top level
        import importlib
        return getattr(importlib.import_module("wgkern.tools"), name)
    if name in _SUBMODULES:    # imported on first use, like the GUI names
        import importlib
        return importlib.import_module(f"wgkern.{name}")
    if name == "cfg":          # Taichi's and Quadrants' `ti.cfg.arch`: the running program's options, read-only
        from wgkern.runtime.program import current
        if current() is not None:
            return _impl.current_cfg()
    if name in _NOT_AVAILABLE:
        raise AttributeError(f"wgkern.{name}: {_NOT_AVAILABLE[name]}")
    raise AttributeError(f"module 'wgkern' has no attribute {name!r}")


_GUI_NAMES = {"GUI": "GUI", "rgb_to_hex": "rgb_to_hex", "hex_to_rgb": "hex_to_rgb", "imwrite": "imwrite"}
_OLD_TOOL_NAMES = ("PLYWriter", "VideoManager", "imread", "imresize", "imshow")
_SUBMODULES = ("tools", "ui", "_lib", "linalg", "graph")   # wk.tools (ti.tools), wk.ui (ti.ui, GGUI drawn off-screen), wk.linalg


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_GUI_NAMES) | set(_SUBMODULES))
