"""Host JIT: one TargetMachine and one MCJIT engine per process, O3 through the new pass manager.

`compile_ir(text)` parses, verifies and optimises one module (SLP vectorisation on, host CPU features) and
adds it to the shared engine; symbols then resolve with `function_address`. Modules are known by their text:
one already in the engine is not added again (so a module's symbols must be named after its content, see
cpu.py), and with `use_cache` the object code MCJIT produces is kept in the offline cache
(disk_cache.py, `cpu/`), from where a later process loads it without parsing or optimising. llvmlite
is imported here, so nothing imports it before a CPU backend is created."""
from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from typing import Any

import llvmlite.binding as llvm

from wgkern import disk_cache

# Part of every cache key: bump when optimize() or the engine's settings change what a module compiles to.
OBJECT_FORMAT = "mcjit-o3-slp-1"


@dataclass(slots=True)
class HostJit:
    target_machine: Any
    engine: Any
    lock: threading.Lock
    machine_id: str = ""                      # the target, CPU and its features (part of every cache key)
    modules: dict[str, Any] = field(default_factory=dict)   # key -> the module in the engine (kept alive)
    storing: set[str] = field(default_factory=set)          # keys whose object code goes to the disk cache
    loaded: dict[str, bytes] = field(default_factory=dict)  # keys whose object code comes from the disk cache
    disk_hits: int = 0
    disk_stores: int = 0


_JIT: HostJit | None = None
_JIT_LOCK = threading.Lock()


def host_jit() -> HostJit:
    """The process's JIT, created on first use (target registration, host CPU name and features)."""
    global _JIT  # noqa: PLW0603 - a process-wide native resource, created once
    with _JIT_LOCK:
        if _JIT is None:
            try:
                llvm.initialize()          # needed before llvmlite 0.45; raises RuntimeError from 0.50 on
            except RuntimeError:
                pass
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            _load_runtime_helpers()
            target_machine = llvm.Target.from_default_triple().create_target_machine(
                cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=3)
            seed = llvm.parse_assembly("")
            seed.triple = target_machine.triple
            seed.data_layout = str(target_machine.target_data)
            engine = llvm.create_mcjit_compiler(seed, target_machine)
            machine_id = "|".join((target_machine.triple, llvm.get_host_cpu_name(),
                                   llvm.get_host_cpu_features().flatten()))
            _JIT = HostJit(target_machine, engine, threading.Lock(), machine_id)
            engine.set_object_cache(_object_compiled, _object_for)
        return _JIT


def _object_compiled(module: Any, data: bytes) -> None:
    """MCJIT's object cache: `module` was just compiled to `data` (called under the JIT lock)."""
    jit = _JIT
    if jit is not None and module.name in jit.storing:
        jit.storing.discard(module.name)
        disk_cache.store("cpu", module.name, ".o", bytes(data))
        jit.disk_stores += 1


def _object_for(module: Any) -> bytes | None:
    """MCJIT's object cache: object code for `module` loaded from disk, or None to compile it."""
    jit = _JIT
    return jit.loaded.pop(module.name, None) if jit is not None else None


def _load_runtime_helpers() -> None:
    """Make the compiler runtime's helpers (e.g. `__truncdfhf2` for f64 -> f16, which x86 has no instruction
    for) resolvable by the JIT. They live in libgcc_s, which a process only has in its global symbol scope if
    something else happened to load it: without this, such a call jumped to address 0."""
    import ctypes.util
    name = ctypes.util.find_library("gcc_s")
    if name:
        try:
            llvm.load_library_permanently(name)
        except RuntimeError:
            pass       # not loadable here: kernels that need its helpers fail to link with LLVM's message


def optimize(module: Any, target_machine: Any) -> None:
    """The O3 pipeline with loop and SLP vectorisation."""
    options = llvm.create_pipeline_tuning_options(speed_level=3)
    options.slp_vectorization = True
    options.loop_vectorization = True
    builder = llvm.create_pass_builder(target_machine, options)
    builder.getModulePassManager().run(module, builder)


def module_key(text: str, opt: bool = True) -> str:
    """The cache key of a module: its text, this machine's target and the compiler's versions."""
    import llvmlite
    return disk_cache.cache_key(text, host_jit().machine_id, llvmlite.__version__, OBJECT_FORMAT, str(opt))


def compile_ir(text: str, opt: bool = True, use_cache: bool = False) -> Any:
    """Parse + verify + optimise + JIT one module, unless the engine has it already (same text): returns the
    llvmlite ModuleRef (kept alive by the engine). With `use_cache`, object code from the offline cache
    replaces the compile, and a compile's object code is stored there; the ModuleRef is then an empty module
    standing for the loaded object (`optimized_text` recompiles the text to show it)."""
    jit = host_jit()
    key = module_key(text, opt)
    # llvmlite's calls release the GIL and share LLVM's global context: one compile at a time. Other processes
    # sharing the offline cache wait for one that compiles the same module, then load its object code.
    with jit.lock, (disk_cache.building("cpu", key) if use_cache else contextlib.nullcontext()):
        known = jit.modules.get(key) or _load_stored(jit, key, use_cache)
        if known is not None:
            return known
        module = llvm.parse_assembly(text)
        module.verify()
        if opt:
            optimize(module, jit.target_machine)
        if use_cache:
            jit.storing.add(key)
        return _add(jit, module, key)


def load_compiled(key: str) -> Any | None:
    """The module whose `module_key` is `key`: in the engine already, else its object code from the offline
    cache JIT-loaded; None where neither has it (the caller generates and compiles it)."""
    jit = host_jit()
    with jit.lock:
        return jit.modules.get(key) or _load_stored(jit, key, True)


def _load_stored(jit: HostJit, key: str, use_cache: bool) -> Any | None:
    stored = disk_cache.load("cpu", key, ".o") if use_cache else None
    if stored is None:
        return None
    jit.loaded[key] = stored
    jit.disk_hits += 1
    return _add(jit, llvm.parse_assembly(""), key)


def _add(jit: HostJit, module: Any, key: str) -> Any:
    """Add `module` (named `key`) to the engine (under the JIT lock); MCJIT's object cache gives it the object
    code loaded for `key`, or stores what it compiles where `key` is marked for storing."""
    module.name = key
    module.triple = jit.target_machine.triple
    module.data_layout = str(jit.target_machine.target_data)
    try:
        jit.engine.add_module(module)
        jit.engine.finalize_object()
    finally:
        jit.loaded.pop(key, None)
        jit.storing.discard(key)
    jit.modules[key] = module
    return module


def optimized_text(text: str) -> str:
    """The module `text` after the O3 pipeline (not added to the engine): what `compile_ir` compiles."""
    jit = host_jit()
    with jit.lock:
        module = llvm.parse_assembly(text)
        module.triple = jit.target_machine.triple
        module.data_layout = str(jit.target_machine.target_data)
        optimize(module, jit.target_machine)
        return str(module)


def function_address(name: str) -> int:
    jit = host_jit()
    with jit.lock:
        address = jit.engine.get_function_address(name)
    if not address:
        raise RuntimeError(f"JIT symbol {name} not found")
    return address


def add_symbol(name: str, address: int) -> None:
    """Make a native address resolvable by name from later JIT modules (e.g. wk_parallel_for)."""
    llvm.add_symbol(name, address)
