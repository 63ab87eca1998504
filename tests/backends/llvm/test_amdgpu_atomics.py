"""Atomics on the AMDGPU compile path (atomics.py with amdgpu_target's scope and metadata): every atomic op on every
element type becomes the processor's one instruction where its ISA has one, for gfx90a (wave64) and gfx1100
(wave32), and a compare-and-swap loop only where it has none; CUDA's PTX atomics, float subtraction an atomic add
there too; float subtraction made as the addition of the negated value computes what subtraction does. Nothing
runs on AMD hardware here."""
from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from wgkern.backends.llvm import ptx
from wgkern.backends.llvm.amdgpu_codegen import emit_amdgpu_module
from wgkern.backends.llvm.amdgpu_object import compile_assembly
from wgkern.backends.llvm.amdgpu_target import COMPILE_CHECK_PROCESSORS, amdgpu_target
from wgkern.backends.llvm.cpu import CpuBackend
from wgkern.backends.llvm.cuda_codegen import emit_cuda_module
from wgkern.backends.llvm.layout import build_layout
from wgkern.backends.llvm.target import CPU_TARGET, CUDA_TARGET
from wgkern.ir import nodes as ir
from wgkern.ir.ops import AtomicOpKind as A
from wgkern.lang import types as T

from ._kernels import ndarray_args, ndarray_slot, range_task, run, shape_of
from .test_amdgpu import build_all, needs_linker
from .test_atomics_random import atomic_kernel

DTYPES = [T.i8, T.i16, T.u16, T.i32, T.u32, T.i64, T.u64, T.f16, T.f32, T.f64]
BITWISE = (A.AND, A.OR, A.XOR)
OPS = [A.ADD, A.SUB, A.MIN, A.MAX, A.AND, A.OR, A.XOR, A.MUL, A.EXCHANGE]


def ops_of(dtype: T.DataType) -> list[A]:
    return [op for op in OPS if not (dtype.is_float and op in BITWISE)]


def gfx90a_instruction(op: A, dtype: T.DataType) -> str | None:
    """The global atomic of the MI200 (CDNA2) ISA for `op` on `dtype` (global_atomic_<name>), None where it has
    none: integer add, sub, signed and unsigned min and max, and, or, xor, swap at 32 and 64 bits (`_x2`); f32 add;
    f64 add, min and max. 8- and 16-bit and, or and xor are the word's, on the element's bits under a mask."""
    wide = "_x2" if dtype.bits == 64 else ""
    if op is A.EXCHANGE:
        return "swap" + wide if dtype.bits >= 32 else None
    if op in BITWISE:
        return op.value + wide
    if op is A.MUL or dtype.bits < 32:
        return None
    if dtype.is_float:      # subtraction is the addition of the negated value
        if op in (A.ADD, A.SUB):
            return f"add_f{dtype.bits}"
        return f"{op.value}_f64" if dtype.bits == 64 else None
    if op in (A.MIN, A.MAX):
        return ("u" if dtype.is_unsigned else "s") + op.value + wide
    return op.value + wide


def gfx1100_instruction(op: A, dtype: T.DataType) -> str | None:
    """The global atomic of the RDNA3 ISA for `op` on `dtype`, None where it has none: integer add and sub
    (`_u32`, `_u64`), min and max (`_i32`, `_u32`, ...), and, or, xor and swap (`_b32`, `_b64`); f32 add, min and
    max; no f64 atomics but swap."""
    bits = 64 if dtype.bits == 64 else 32
    if op is A.EXCHANGE:
        return f"swap_b{bits}" if dtype.bits >= 32 else None
    if op in BITWISE:
        return f"{op.value}_b{bits}"
    if op is A.MUL or dtype.bits < 32:
        return None
    if dtype.is_float:
        if dtype.bits == 64:
            return None
        return "add_f32" if op in (A.ADD, A.SUB) else f"{op.value}_f32"
    if op in (A.MIN, A.MAX):
        return f"{op.value}_{'u' if dtype.is_unsigned else 'i'}{bits}"
    return f"{op.value}_u{bits}"


INSTRUCTION = {"gfx90a": gfx90a_instruction, "gfx1100": gfx1100_instruction}
LOOP = {"gfx90a": lambda bits: "cmpswap_x2" if bits == 64 else "cmpswap",
        "gfx1100": lambda bits: f"cmpswap_b{64 if bits == 64 else 32}"}


def amdgpu_text(kernel: ir.OffloadedKernel, processor: str, fast_math: bool = True) -> str:
    """The kernel's LLVM IR for `processor`, under fast_math as wk.init's default has it unless told."""
    return emit_amdgpu_module(kernel, build_layout(kernel, None, None), amdgpu_target(processor), "t", (0, 0),
                              fast_math=fast_math)[0]


def global_atomics(kernel: ir.OffloadedKernel, processor: str, fast_math: bool = True) -> list[str]:
    """The global atomic instructions of the kernel's optimised assembly, without their `global_atomic_`."""
    code = compile_assembly(amdgpu_text(kernel, processor, fast_math), processor)
    return re.findall(r"^\s+global_atomic_(\w+)", code, re.M)


@pytest.mark.parametrize("processor", COMPILE_CHECK_PROCESSORS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_each_atomic_is_the_processors_instruction_where_it_has_one(processor, dtype):
    """acc[0] op= 1 with the old value kept: one atomic instruction, the ISA's, and no compare-and-swap where
    the processor has the operation; the one compare-and-swap of a loop where it has not."""
    for op in ops_of(dtype):
        expected = INSTRUCTION[processor](op, dtype)
        found = global_atomics(atomic_kernel(op, dtype), processor)
        assert found == [expected or LOOP[processor](dtype.bits)], (op, dtype, found)


@pytest.mark.parametrize("processor", COMPILE_CHECK_PROCESSORS)
def test_atomics_are_device_scoped_on_coarse_grained_memory(processor):
    """The IR says what makes the instructions legal: device (agent) scope on every atomic, the memory facts on
    every atomicrmw, and leave to flush f32 subnormals only on gfx90a's f32 add (its instruction flushes them)."""
    add = amdgpu_text(atomic_kernel(A.ADD, T.f32), processor)
    line = re.search(r"atomicrmw fadd .*", add).group(0)
    assert 'syncscope("agent") monotonic' in line
    assert "!amdgpu.no.fine.grained.memory !0, !amdgpu.no.remote.memory !0" in line
    assert ("!amdgpu.ignore.denormal.mode !0" in line) == (processor == "gfx90a")
    assert "ignore.denormal" not in amdgpu_text(atomic_kernel(A.ADD, T.f64), processor)
    loop = amdgpu_text(atomic_kernel(A.MUL, T.f32), processor)
    assert re.search(r'load atomic i32, ptr %\w+ syncscope\("agent"\) monotonic', loop)
    assert re.search(r'cmpxchg ptr .* syncscope\("agent"\) monotonic monotonic', loop)
    sub = amdgpu_text(atomic_kernel(A.SUB, T.f64), processor)
    assert "fsub" not in sub and re.search(r"= fneg double .*\n.*atomicrmw fadd ptr", sub)


@pytest.mark.parametrize("processor", COMPILE_CHECK_PROCESSORS)
def test_f32_add_keeps_subnormals_without_fast_math(processor):
    """gfx90a's f32 atomic add flushes subnormals: without fast_math (which lets f32 subnormals flush) it stays a
    compare-and-swap loop there, exact; gfx1100's instruction keeps them, so it is used either way."""
    for op in (A.ADD, A.SUB):
        exact = amdgpu_text(atomic_kernel(op, T.f32), processor, fast_math=False)
        assert "ignore.denormal" not in exact
        found = global_atomics(atomic_kernel(op, T.f32), processor, fast_math=False)
        assert found == (["cmpswap"] if processor == "gfx90a" else ["add_f32"]), (op, found)


@needs_linker
def test_kernels_of_every_atomic_become_checked_code_objects():
    for dtype in (T.i16, T.u32, T.i64, T.f32, T.f64):
        for op in ops_of(dtype):
            build_all(atomic_kernel(op, dtype))


# CUDA's PTX atomic for each (op, dtype): a CAS loop (`atom.relaxed.sys.global.cas`) for 8/16-bit values but f16 add
# and sub, float min, max and mul; integer and float sub are an add of the negation
def ptx_atomic(op: A, dtype: T.DataType) -> str:
    bits = 64 if dtype.bits == 64 else 32
    if op in BITWISE:
        return f"atom.global.{op.value}.b{bits}"
    if op in (A.ADD, A.SUB) and dtype.is_float:
        return "atom.global.add.noftz.f16" if dtype.bits == 16 else f"atom.global.add.f{bits}"
    if dtype.bits < 32 or op is A.MUL or (dtype.is_float and op in (A.MIN, A.MAX)):
        return f"atom.relaxed.sys.global.cas.b{bits}"
    if op is A.EXCHANGE:
        return f"atom.global.exch.b{bits}"
    if op in (A.ADD, A.SUB):
        return f"atom.global.add.u{bits}"
    return f"atom.global.{op.value}.{'u' if dtype.is_unsigned else 's'}{bits}"


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_cuda_atomics(dtype):
    """The same kernels for CUDA: system scope, no AMDGPU metadata, float sub as the add of the negation (PTX has
    no float subtract; LLVM's fsub would be a CAS loop, which threads contending for one element serialise)."""
    for op in ops_of(dtype):
        kernel = atomic_kernel(op, dtype)
        text = emit_cuda_module(kernel, build_layout(kernel, None, None), CUDA_TARGET, "t", (0, 0))[0]
        assert "syncscope" not in text and "!amdgpu" not in text and "atomicrmw fsub" not in text
        assert ("fneg" in text) == (dtype.is_float and op is A.SUB), (op, dtype)
        code = ptx.compile_ptx(text, "sm_80")
        assert set(re.findall(r"\batom\.[\w.]+", code)) == {ptx_atomic(op, dtype)}, (op, dtype)


def subtract_kernel(dtype: T.DataType) -> ir.OffloadedKernel:
    """old[i] = atomic_sub(acc[i], value[i]): one thread per element, so each result is one subtraction."""
    acc, value, old = (ndarray_slot(name, dtype, 1, k) for k, name in enumerate(("acc", "value", "old")))

    def body(b, i):
        previous = b.atomic(A.SUB, b.global_ptr(acc, [i]), b.global_load(b.global_ptr(value, [i])))
        b.global_store(b.global_ptr(old, [i]), previous)

    return ir.OffloadedKernel("subtract", ndarray_args([acc, value, old]), [acc, value, old],
                              [range_task(lambda b: b.const(0, T.i32), shape_of(acc), body)])


@pytest.mark.parametrize("dtype", [T.f16, T.f32, T.f64], ids=str)
def test_subtraction_as_addition_of_the_negation_is_bit_exact(dtype):
    """The lowering AMDGPU and CUDA take (fadd of fneg), run on the CPU: x - v and x + (-v) are one IEEE
    operation, so every result is bit-equal to numpy's subtraction (signed zeros, infinities, subnormals,
    rounding), NaN wherever numpy's is NaN (the NaN's sign may differ)."""
    special = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, np.finfo(dtype.np_dtype).smallest_subnormal,
               -np.finfo(dtype.np_dtype).smallest_subnormal, np.finfo(dtype.np_dtype).tiny,
               np.finfo(dtype.np_dtype).max, 1 + np.finfo(dtype.np_dtype).eps, 1.0 / 3]
    x, v = (np.array(pairs, dtype=dtype.np_dtype) for pairs in zip(*[(a, b) for a in special for b in special]))
    rng = np.random.default_rng(7)
    x = np.concatenate([x, rng.standard_normal(500).astype(dtype.np_dtype)])
    v = np.concatenate([v, rng.standard_normal(500).astype(dtype.np_dtype)])
    # two threads: with one, atomics are plain read-modify-writes (atomics.py), and this lowering is not taken
    backend = CpuBackend(threads=2, target=dataclasses.replace(CPU_TARGET, atomic_fsub_as_fadd=True))
    try:
        compiled = backend.compile(subtract_kernel(dtype))
        acc, _, old = run(backend, compiled, [x, v, np.zeros_like(x)])
    finally:
        backend.shutdown()
    assert "atomicrmw fsub" not in compiled.ir_text and "atomicrmw fadd" in compiled.ir_text
    with np.errstate(all="ignore"):
        expected = x - v
    np.testing.assert_array_equal(old.view(f"u{dtype.nbytes}"), x.view(f"u{dtype.nbytes}"))
    nan = np.isnan(expected)
    assert np.array_equal(np.isnan(acc), nan)
    np.testing.assert_array_equal(acc[~nan].view(f"u{dtype.nbytes}"), expected[~nan].view(f"u{dtype.nbytes}"))
