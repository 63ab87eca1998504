"""Host JIT: one TargetMachine and one MCJIT engine per process, O3 through the new pass manager.

`compile_ir(text)` parses, verifies and optimises one module (SLP vectorisation on, host CPU features) and
adds it to the shared engine; symbols then resolve with `function_address`. llvmlite is imported here, so
nothing imports it before a CPU backend is created."""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import llvmlite.binding as llvm


@dataclass(slots=True)
class HostJit:
    target_machine: Any
    engine: Any
    lock: threading.Lock


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
            _JIT = HostJit(target_machine, engine, threading.Lock())
        return _JIT


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


def compile_ir(text: str, opt: bool = True) -> Any:
    """Parse + verify + optimise + JIT one module; returns the llvmlite ModuleRef (kept alive by the engine)."""
    jit = host_jit()
    # llvmlite's calls release the GIL and share LLVM's global context: one compile at a time.
    with jit.lock:
        module = llvm.parse_assembly(text)
        module.verify()
        module.triple = jit.target_machine.triple
        module.data_layout = str(jit.target_machine.target_data)
        if opt:
            optimize(module, jit.target_machine)
        jit.engine.add_module(module)
        jit.engine.finalize_object()
    return module


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
