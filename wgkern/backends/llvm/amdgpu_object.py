"""LLVM IR -> AMDGPU ELF object for one gfx processor: llvmlite's `amdgcn-amd-amdhsa` target at O3.

The object is relocatable; amdgpu_link.py links it into the code object (a shared ELF) that HIP loads and
amdgpu_elf.py checks. Target machines are made once per processor and shared (llvmlite's LLVM is not
re-entrant: compiles hold the host JIT's lock, as the CUDA path does)."""
from __future__ import annotations

import threading
from typing import Any

from .amdgpu_target import PROCESSORS, TRIPLE
from .jit import host_jit

_lock = threading.Lock()
_machines: dict[str, Any] = {}


def target_machine(processor: str) -> Any:
    """The O3 target machine of a supported gfx processor (amdgpu_target.PROCESSORS)."""
    import llvmlite.binding as llvm
    if processor not in PROCESSORS:
        raise ValueError(f"unknown AMDGPU processor {processor!r}; supported: {', '.join(PROCESSORS)}")
    with _lock:
        machine = _machines.get(processor)
        if machine is None:
            host_jit()                       # llvmlite initialised
            llvm.initialize_all_targets()
            llvm.initialize_all_asmprinters()
            machine = llvm.Target.from_triple(TRIPLE).create_target_machine(cpu=processor, opt=3)
            _machines[processor] = machine
        return machine


def _optimised(ir_text: str, processor: str) -> tuple[Any, Any]:
    """(target machine, the module parsed, verified and optimised at O3); call with the host JIT's lock held."""
    import llvmlite.binding as llvm
    machine = target_machine(processor)
    module = llvm.parse_assembly(ir_text)
    module.triple = TRIPLE
    module.data_layout = str(machine.target_data)
    module.verify()
    options = llvm.create_pipeline_tuning_options(speed_level=3)
    builder = llvm.create_pass_builder(machine, options)
    builder.getModulePassManager().run(module, builder)
    return machine, module


def compile_object(ir_text: str, processor: str) -> tuple[bytes, str]:
    """(ELF relocatable object, the optimised module's IR) of one module of kernels for `processor`."""
    target_machine(processor)
    with host_jit().lock:            # llvmlite shares LLVM's global context: one compile at a time
        machine, module = _optimised(ir_text, processor)
        return machine.emit_object(module), str(module)


def compile_assembly(ir_text: str, processor: str) -> str:
    """The assembly the same compile makes of one module (for tests and diagnostics: which instructions a
    lowering became)."""
    target_machine(processor)
    with host_jit().lock:
        machine, module = _optimised(ir_text, processor)
        return machine.emit_assembly(module)
