"""LLVM lowering of wide accesses (backends/llvm/wide_access.py): the vectorised IR run on the CPU JIT against the
reference interpreter for lengths around the width (from host memory at any 4-byte offset, so the CPU states
4-byte alignment), and CUDA's PTX of the same IR with 16-byte vector loads and stores."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from wgkern.ir import nodes as ir
from wgkern.ir.interpreter import Interpreter
from wgkern.lang import types as T
from wgkern.passes import vectorize

from ._kernels import elementwise, run

LENGTHS = [*range(10), 33, 1000]


def _saxpy() -> ir.OffloadedKernel:
    """out[i] = 2 * in0[i] + in1[i] over f32 ndarrays."""
    return elementwise([T.f32, T.f32], T.f32, lambda b, x, y: b.add(b.mul(b.const(2.0, T.f32), x), y), "saxpy")


def _mixed() -> ir.OffloadedKernel:
    """out[i] = f32(in0[i] * 3 + in1[i]) from i32 ndarrays."""
    return elementwise([T.i32, T.i32], T.f32,
                       lambda b, a, c: b.cast(b.add(b.mul(a, b.const(3, T.i32)), c), T.f32), "mixed")


def _interpreted(kernel: ir.OffloadedKernel, arrays: list[np.ndarray]) -> list[np.ndarray]:
    arrays = [a.copy() for a in arrays]
    Interpreter(kernel, arrays, [None] * len(kernel.args)).run()
    return arrays


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("make", [_saxpy, _mixed])
def test_wide_kernels_on_the_cpu_jit_every_length(backend, make, n):
    scalar = make()
    wide = vectorize.run(scalar)
    assert wide is not scalar
    compiled = backend.compile(wide)
    dtypes = [slot.dtype.np_dtype for slot in scalar.containers]
    arrays = [(np.arange(n) * (k + 1) - 4).astype(dtype) for k, dtype in enumerate(dtypes)]
    for got, want in zip(run(backend, compiled, arrays), _interpreted(scalar, arrays)):
        np.testing.assert_array_equal(got, want)       # small integers: every operation exact


def test_the_cpu_states_element_alignment_and_reads_four_at_once(backend):
    source = backend.compile(vectorize.run(_saxpy())).source()
    assert source.count("load <4 x float>") == 2 and source.count("store <4 x float>") == 1
    assert "<4 x float>, ptr %" in source and "align 4" in source and "align 16" not in source


def test_cuda_ptx_loads_and_stores_sixteen_bytes():
    from .test_cuda import to_ptx
    wk.init(arch=wk.cpu)
    try:
        code = to_ptx(vectorize.run(_saxpy()))
    finally:
        wk.reset()
    assert code.count("ld.global.v4.") == 2 and code.count("st.global.v4.") == 1     # .f32 or .b32 by LLVM version
