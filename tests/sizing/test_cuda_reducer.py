"""backends/llvm/gpu_sizing_reducer.py: the GPU reducer's kernels (CUDA's and AMDGPU's), run on the host
(tests/sizing/helpers.HostReducerDevice JIT-compiles their target-independent LLVM bodies), against the numpy
reducer: which jobs go to the bytecode
kernel and which to the slice kernel, 8- and 16-bit reads at their own width, gathered single reads, and the
flags that send a job back to the host."""
from __future__ import annotations

import numpy as np
import pytest

from wgkern.errors import SizingError
from wgkern.ir import nodes as ir
from wgkern.lang import types as T
from wgkern.sizing import evaluate_sizes
from wgkern.sizing import expr as E

from .helpers import HostReducerDevice, host_context, llvm_reducer_context


def _slot(name: str, dtype, ndim: int = 1) -> ir.ContainerSlot:
    return ir.ContainerSlot(name=name, kind="ndarray", dtype=dtype, ndim=ndim, arg_index=0)


def _both(slots, arrays, exprs):
    """(results on the host reducer, results on the CUDA reducer's host build, the entries it ran)."""
    kernel = ir.OffloadedKernel("k", [], list(slots), [])
    expected = evaluate_sizes(list(exprs), host_context(kernel, arrays))
    device = HostReducerDevice()
    got = evaluate_sizes(list(exprs), llvm_reducer_context(kernel, arrays, device=device))
    return expected, got, device.runs


@pytest.mark.parametrize("dtype", [T.i8, T.u8, T.i16, T.u16, T.i32], ids=lambda d: d.name)
def test_narrow_and_word_reads_in_a_dependent_inner_range(dtype) -> None:
    rng = np.random.default_rng(3)
    low = -40 if dtype.is_signed else 0
    data = rng.integers(low, 60, (6, 7)).astype(dtype.np_dtype)
    counts = rng.integers(0, 7, 6).astype(np.int32)
    m, n = _slot("m", dtype, 2), _slot("n", T.i32)
    i, j = E.BoundVar("i"), E.BoundVar("j")
    inner = E.MaxOverRange(j, E.Const(0), E.NdarrayRead(n, (i,), T.i32),
                           E.Sub(E.NdarrayRead(m, (i, j), dtype), j))
    expr = E.MaxOverRange(i, E.Const(0), E.Const(6), E.Add(E.Const(1), inner))
    expected, got, runs = _both([m, n], [data, counts], [expr])
    assert got == expected
    assert "job" in runs


def test_an_8_bit_slice_runs_as_bytecode_and_a_32_bit_one_on_the_slice_kernel() -> None:
    small, word = _slot("small", T.i8), _slot("word", T.i32)
    a = np.array([3, -7, 100, 5], np.int8)
    b = np.array([-5, 40, 2], np.int32)
    i = E.BoundVar("i")
    exprs = [E.MaxOverRange(i, E.Const(0), E.Const(4), E.NdarrayRead(small, (i,), T.i8)),
             E.MaxOverRange(i, E.Const(0), E.Const(3), E.NdarrayRead(word, (i,), T.i32))]
    expected, got, runs = _both([small, word], [a, b], exprs)
    assert got == expected == [100, 40]
    assert sorted(set(runs)) == ["job", "slice"]


def test_a_single_read_is_gathered_on_the_device() -> None:
    n = _slot("n", T.i16)
    a = np.array([9, -3, 12], np.int16)
    expected, got, runs = _both([n], [a], [E.NdarrayRead(n, (E.Const(1),), T.i16), E.NdarrayRead(n, (E.Const(2),), T.i16)])
    assert got == expected == [-3, 12] and runs == ["job", "job"]


def test_flags_send_the_job_back_to_the_host() -> None:
    u, w = _slot("u", T.u32), _slot("w", T.i32)
    big = np.array([5, 0xFFFF_FFF0, 7], np.uint32)          # above i32: flagged, recomputed exactly
    huge = np.array([2_000_000_000, 3], np.int32)            # the product overflows i32: flagged
    i = E.BoundVar("i")
    exprs = [E.MaxOverRange(i, E.Const(0), E.Const(3), E.Add(E.NdarrayRead(u, (i,), T.u32), E.Const(1))),
             E.MaxOverRange(i, E.Const(0), E.Const(2), E.Mul(E.NdarrayRead(w, (i,), T.i32),
                                                              E.NdarrayRead(w, (i,), T.i32)))]
    expected, got, runs = _both([u, w], [big, huge], exprs)
    assert got == expected == [0xFFFF_FFF1, 4_000_000_000_000_000_000] and "job" in runs


def test_an_out_of_bounds_read_raises_as_on_the_host() -> None:
    n = _slot("n", T.i32)
    i = E.BoundVar("i")
    expr = E.MaxOverRange(i, E.Const(0), E.Const(5), E.Mul(E.NdarrayRead(n, (i,), T.i32), E.Const(2)))
    kernel = ir.OffloadedKernel("k", [], [n], [])
    with pytest.raises(SizingError):
        evaluate_sizes([expr], llvm_reducer_context(kernel, [np.arange(3, dtype=np.int32)]))
