"""LLVM IR -> PTX for the CUDA backend: the NVPTX target machine, libdevice, and the O3 pipeline.

Math functions (exp, pow, atan2, f64 sin, ...) come from NVIDIA's libdevice bitcode (`__nv_expf`, `__nv_sin`...):
the NVPTX backend lowers only a few intrinsics itself, and an intrinsic it cannot lower aborts the process, so
codegen never emits one for this target (target.CUDA_TARGET maps every math function to libdevice, except f32 sin
and cos, which the module defines: trig_f32.py, whose large-argument reduction is optimised once per process and
linked into each module after the module's own optimisation). libdevice is linked only into modules that call
it. It ships with every CUDA toolkit and in NVIDIA's PyPI wheels; `find_libdevice()` says where it looks.
`cached_ptx` keeps compiled modules on disk between runs (Taichi's offline cache); the driver caches its own JIT
of the PTX, so a second run of a program compiles little."""
from __future__ import annotations

import glob
import os
import re
import shutil
import sys
import threading
from pathlib import Path
from typing import Any

from wgkern.errors import CompileError
from wgkern import disk_cache

from . import libdevice, trig_f32
from .jit import host_jit
from .target import FLUSH_F32_SUBNORMALS

TRIPLE = "nvptx64-nvidia-cuda"
LIBDEVICE = "libdevice.10.bc"
# The newest architecture this LLVM surely knows; newer GPUs run its PTX through the driver's JIT.
_NEWEST_KNOWN = (9, 0)

_lock = threading.Lock()
_machines: dict[str, Any] = {}
_libdevice: bytes | None = None
_reductions: dict[tuple[str, bool], str] = {}    # (arch, flushing) -> optimised IR


def libdevice_candidates() -> list[Path]:
    """Where libdevice is looked for, in order: $WK_LIBDEVICE (the file), $CUDA_HOME / $CUDA_PATH, the
    toolkit of the `nvcc` on PATH, /usr/local/cuda*, and NVIDIA's PyPI wheels (nvidia-cuda-nvcc-cu12,
    nvidia-nvvm) in this Python's site-packages."""
    found: list[Path] = []
    explicit = os.environ.get("WK_LIBDEVICE")
    if explicit:
        found.append(Path(explicit))
    roots = [os.environ.get(name) for name in ("CUDA_HOME", "CUDA_PATH")]
    nvcc = shutil.which("nvcc")
    if nvcc:
        roots.append(str(Path(nvcc).resolve().parent.parent))
    roots += ["/usr/local/cuda", *sorted(glob.glob("/usr/local/cuda-*"), reverse=True), "/opt/cuda"]
    found += [Path(root) / "nvvm" / "libdevice" / LIBDEVICE for root in roots if root]
    for site in sys.path:
        nvidia = Path(site) / "nvidia"
        if nvidia.is_dir():
            found += sorted(nvidia.glob(f"*/nvvm/libdevice/{LIBDEVICE}")) + sorted(
                nvidia.glob(f"*/*/nvvm/libdevice/{LIBDEVICE}"))
    return found


def find_libdevice() -> Path | None:
    return next((path for path in libdevice_candidates() if path.is_file()), None)


def libdevice_bitcode() -> bytes:
    """libdevice's bytes (read once per process), or a CompileError saying how to get it."""
    global _libdevice  # noqa: PLW0603 - read once, shared by every CUDA compile
    if _libdevice is None:
        path = find_libdevice()
        if path is None:
            raise CompileError("this kernel calls a math function (sin, exp, pow, ...), which the CUDA backend "
                               f"takes from NVIDIA's libdevice ({LIBDEVICE}), and none was found. Install a CUDA "
                               "toolkit, or `pip install nvidia-cuda-nvcc-cu12`, or point WK_LIBDEVICE at the file")
        _libdevice = path.read_bytes()
    return _libdevice


def architecture(compute_capability: tuple[int, int]) -> str:
    """The `sm_XY` PTX is generated for (capped at the newest this LLVM knows; the driver JITs it forward)."""
    major, minor = min(tuple(compute_capability), _NEWEST_KNOWN)
    return f"sm_{major}{minor}"


def target_machine(arch: str) -> Any:
    import llvmlite.binding as llvm
    with _lock:
        machine = _machines.get(arch)
        if machine is None:
            host_jit()                       # llvmlite initialised
            llvm.initialize_all_targets()
            llvm.initialize_all_asmprinters()
            machine = llvm.Target.from_triple(TRIPLE).create_target_machine(cpu=arch, opt=3)
            _machines[arch] = machine
        return machine


def data_layout(arch: str) -> str:
    return str(target_machine(arch).target_data)


def cache_key(ir_text: str, arch: str) -> str:
    """The offline cache's key of a module's PTX: its text, the arch, the compiler's version and, where it calls
    libdevice, the libdevice in use (read first)."""
    import llvmlite
    library = str(len(libdevice_bitcode())) if "@__nv_" in ir_text else ""
    return disk_cache.cache_key(ir_text, arch, llvmlite.__version__, library)


def stored_ptx(key: str) -> str | None:
    """The PTX stored under `key` (cache_key), or None."""
    stored = disk_cache.load("cuda", key, ".ptx")
    return None if stored is None else stored.decode()


def cached_ptx(ir_text: str, arch: str, use_cache: bool, key: str | None = None) -> str:
    """PTX of a module: from the disk cache (disk_cache.py, `cuda/`) when an identical module was
    compiled for `arch` before (any process), else compiled and stored (wk.init(offline_cache=False) skips the
    cache both ways). `key`: the module's cache_key, where the caller has it already."""
    if not use_cache:
        return compile_ptx(ir_text, arch)
    key = key or cache_key(ir_text, arch)
    with disk_cache.building("cuda", key):       # processes sharing the cache compile each module once
        stored = stored_ptx(key)
        if stored is not None:
            return stored
        code = compile_ptx(ir_text, arch, True)
        disk_cache.store("cuda", key, ".ptx", code.encode())
    return code


def compile_ptx(ir_text: str, arch: str, use_cache: bool = False, whole_library: bool = False,
                shared_reduction: bool = True) -> str:
    """The PTX of one module of kernels for `arch` (e.g. 'sm_90'). The libdevice functions it calls are appended
    as text (libdevice.py; its index from the offline cache with `use_cache`); `whole_library` links all of
    libdevice's bitcode instead (the reference the tests compare).
    The f32 sin and cos reduction (trig_f32.py), the same in every module that calls them, is optimised once
    per process and linked in after the module's own optimisation (`_shared_reduction`); with
    `shared_reduction=False` it is optimised with the module (the reference the tests compare)."""
    import llvmlite.binding as llvm
    machine = target_machine(arch)
    math = "@__nv_" in ir_text
    if math and not whole_library:
        ir_text = libdevice.with_libdevice(ir_text, use_cache)
    reduction = trig_f32.reduce_definition()
    shared = shared_reduction and reduction in ir_text
    if shared:
        ir_text = ir_text.replace(reduction, trig_f32.reduce_declaration(), 1)
    flush = FLUSH_F32_SUBNORMALS in ir_text
    ir_text = one_denormal_mode(ir_text)
    with host_jit().lock:            # llvmlite shares LLVM's global context: one compile at a time
        module = llvm.parse_assembly(ir_text)
        module.triple = TRIPLE
        module.data_layout = str(machine.target_data)
        if math and whole_library:
            library = llvm.parse_bitcode(libdevice_bitcode())
            for function in library.functions:     # discardable: O3 drops what the kernels do not call
                if not function.is_declaration:
                    function.linkage = llvm.Linkage.linkonce_odr
            library.triple = module.triple
            library.data_layout = module.data_layout
            module.link_in(library)
        module.verify()
        _optimise(module, machine)
        if shared:
            module = _with_reduction(module, machine, arch, flush)
        return machine.emit_assembly(module)


def _optimise(module: Any, machine: Any) -> None:
    import llvmlite.binding as llvm
    options = llvm.create_pipeline_tuning_options(speed_level=3)
    builder = llvm.create_pass_builder(machine, options)
    builder.getModulePassManager().run(module, builder)


def _with_reduction(module: Any, machine: Any, arch: str, flush: bool) -> Any:
    """`module` with the optimised reduction defined (internal, as the module's own definition was) where its
    calls survived optimisation. The module is linked into the reduction's, so that the reduction and its table
    come first, where the module's own definition stood, and the PTX is the same as the module's own would be."""
    import llvmlite.binding as llvm
    try:
        module.get_function(trig_f32.REDUCE)
    except NameError:                       # every call was optimised away
        return module
    combined = llvm.parse_assembly(_shared_reduction(machine, arch, flush))
    combined.link_in(module)
    combined.get_function(trig_f32.REDUCE).linkage = llvm.Linkage.internal
    return combined


def _shared_reduction(machine: Any, arch: str, flush: bool) -> str:
    """The optimised IR of trig_f32's reduction for `arch` (`flush`: flushing f32 subnormals, as the module's
    functions do), made once per process. Its large-integer arithmetic is what the O3 pipeline spends most on
    in a small kernel (known-bits analysis of its 64-bit products, again at every instcombine), and its
    optimised form is the same in every module: it is never inlined, and its callers see its attributes. Called
    under host_jit().lock, which guards `_reductions`."""
    import llvmlite.binding as llvm
    key = (arch, flush)
    text = _reductions.get(key)
    if text is None:
        source = trig_f32.reduce_module()
        if flush:
            source = _DEFINE_HEADER.sub(lambda m: f"{m.group(1)} {FLUSH_F32_SUBNORMALS} {{", source)
        module = llvm.parse_assembly(source)
        module.triple = TRIPLE
        module.data_layout = str(machine.target_data)
        module.verify()
        _optimise(module, machine)
        text = _reductions[key] = str(module)
    return text


_DEFINE_HEADER = re.compile(r"^(define [^\n]*?) ?\{$", re.M)


# libdevice's functions pick their flushing code paths by __nvvm_reflect("__CUDA_FTZ"), which reads this flag
_REFLECT_FTZ = '!llvm.module.flags = !{!999999}\n!999999 = !{i32 4, !"nvvm-reflect-ftz", i32 1}\n'


def one_denormal_mode(ir_text: str) -> str:
    """Where the module's kernels flush f32 subnormals (fast_math), every function defined in it does too: LLVM
    inlines a function only into callers of the same denormal mode, so the helpers and libdevice's functions
    would otherwise stay calls, and libdevice's take their flushing paths."""
    if FLUSH_F32_SUBNORMALS not in ir_text:
        return ir_text
    return _DEFINE_HEADER.sub(lambda m: m.group(0) if FLUSH_F32_SUBNORMALS in m.group(1)
                              else f"{m.group(1)} {FLUSH_F32_SUBNORMALS} {{", ir_text) + _REFLECT_FTZ
