"""Wide memory access end to end on every arch (passes/vectorize.py run by launch.py for the backends
with `wide_memory_access`, lowered by backends/wgsl/wide_access.py and backends/llvm/wide_access.py for CUDA):
element-wise kernels over fields and ndarrays of every length around the vector width, the kernels the pass must
leave scalar, and the generated code showing the vector accesses. The CPU compiles these kernels scalar (LLVM
vectorises its loops itself); tests/backends/llvm/test_wide_access.py runs the wide IR on the CPU JIT.

Values are small integers and halves, so every f32 operation here is exact and results are compared exactly."""
from __future__ import annotations

import os

import numpy as np
import pytest

import wgkern as wk
from wgkern.passes.pipeline import WIDE_ACCESS_ENV
from wgkern.runtime import program as program_module

LENGTHS = [*range(10), 1000, 4099]


def _wide_loads(source: str) -> int:
    """Vector loads in a kernel's LLVM IR or WGSL."""
    wgsl = sum(1 for line in source.splitlines() if line.lstrip().startswith("let ") and line.endswith(">> 2u];"))
    return source.count("load <4 x ") + wgsl


def _wide() -> bool:
    """Whether the running backend compiles kernels with wide accesses (unless WK_VECTORIZE=0)."""
    return program_module.current().backend.wide_memory_access and os.environ.get(WIDE_ACCESS_ENV, "1") != "0"


def _wide_stores(source: str) -> int:
    """Vector stores in a kernel's LLVM IR or WGSL."""
    return source.count("store <4 x ") + source.count("] = vec4<")


@pytest.mark.parametrize("n", LENGTHS)
def test_saxpy_over_a_field_and_an_ndarray_every_length(arch, n):
    x = wk.field(wk.f32, shape=n)
    y = wk.ndarray(wk.f32, shape=n)

    @wk.kernel
    def saxpy(a: wk.f32, y: wk.types.ndarray()):
        for i in x:
            y[i] = a * x[i] + y[i]

    xs, ys = np.arange(n, dtype=np.float32) * np.float32(0.5), np.arange(n, dtype=np.float32) - 3
    x.from_numpy(xs)
    y.from_numpy(ys)
    saxpy(2.0, y)
    np.testing.assert_array_equal(y.to_numpy(), 2 * xs + ys)


def test_saxpy_compiles_to_vector_loads_and_stores(arch):
    x = wk.field(wk.f32, shape=64)
    y = wk.ndarray(wk.f32, shape=64)

    @wk.kernel
    def saxpy(a: wk.f32, y: wk.types.ndarray()):
        for i in x:
            y[i] = a * x[i] + y[i]

    saxpy(2.0, y)
    source = saxpy.source()
    if not _wide():
        assert _wide_loads(source) == 0 and _wide_stores(source) == 0
        return
    assert _wide_loads(source) == 2 and _wide_stores(source) == 1
    if "@compute" in source:
        assert "array<vec4<f32>>" in source
    else:
        assert "load <4 x float>" in source and "store <4 x float>" in source


def test_wk_vectorize_0_compiles_scalar_accesses(arch, monkeypatch):
    monkeypatch.setenv(WIDE_ACCESS_ENV, "0")
    x = wk.field(wk.f32, shape=64)

    @wk.kernel
    def double():
        for i in x:
            x[i] = 2 * x[i]

    double()
    assert _wide_loads(double.source()) == 0 and _wide_stores(double.source()) == 0


@pytest.mark.parametrize("n", [0, 3, 4, 7, 9, 1001])
def test_mixed_i32_and_f32_fields_and_ndarrays(arch, n):
    a = wk.field(wk.i32, shape=n)
    c = wk.field(wk.f32, shape=n)

    @wk.kernel
    def mix(b: wk.types.ndarray(dtype=wk.i32, ndim=1), d: wk.types.ndarray(dtype=wk.f32, ndim=1)):
        for i in range(n):
            total = a[i] * 3 + b[i]
            c[i] = wk.cast(total, wk.f32) + d[i]
            b[i] = total - i

    av = np.arange(n, dtype=np.int32) - 5
    bv = (np.arange(n, dtype=np.int32) * 7) % 11
    dv = np.arange(n, dtype=np.float32) * np.float32(0.25)
    a.from_numpy(av)
    b, d = wk.ndarray(wk.i32, shape=n), wk.ndarray(wk.f32, shape=n)
    b.from_numpy(bv)
    d.from_numpy(dv)
    mix(b, d)
    total = av * 3 + bv
    np.testing.assert_array_equal(c.to_numpy(), total.astype(np.float32) + dv)
    np.testing.assert_array_equal(b.to_numpy(), total - np.arange(n))
    if n and _wide():
        assert _wide_loads(mix.source()) == 3 and _wide_stores(mix.source()) == 2


@pytest.mark.parametrize("m", [*range(10), 13])
def test_a_range_past_the_end_of_an_ndarray_drops_the_accesses_outside(arch, m):
    """range(m) over a 6-element ndarray and an 8-element field: the indices past either end are dropped
    (stores) and read 0 (loads), as the scalar kernel does; the wide path never reads or writes there."""
    f = wk.field(wk.f32, shape=8)

    @wk.kernel
    def accumulate(m: wk.i32, y: wk.types.ndarray()):
        for i in range(m):
            f[i] = f[i] + y[i]

    f.from_numpy(np.full(8, 10, np.float32))
    y = wk.ndarray(wk.f32, shape=6)
    y.from_numpy(np.arange(1, 7, dtype=np.float32))
    accumulate(m, y)
    want = np.full(8, 10, np.float32)
    want[:min(m, 6)] += np.arange(1, 7, dtype=np.float32)[:min(m, 6)]
    np.testing.assert_array_equal(f.to_numpy(), want)


@pytest.mark.parametrize("n", [5, 8, 1003])
def test_strided_and_offset_reads_stay_scalar_and_compute_right(arch, n):
    x = wk.field(wk.f32, shape=2 * n + 1)
    y = wk.field(wk.f32, shape=n)

    @wk.kernel
    def gather():
        for i in y:
            y[i] = x[2 * i] + x[i + 1]

    xs = np.arange(2 * n + 1, dtype=np.float32)
    x.from_numpy(xs)
    gather()
    np.testing.assert_array_equal(y.to_numpy(), xs[0:2 * n:2] + xs[1:n + 1])
    assert _wide_loads(gather.source()) == 0 and _wide_stores(gather.source()) == _wide()    # y only


@pytest.mark.parametrize("n", [5, 8, 1003])
def test_kernels_the_pass_leaves_scalar_compute_right(arch, n):
    x = wk.field(wk.f32, shape=n)
    g = wk.field(wk.f32, shape=(n, 3))

    @wk.kernel
    def shifted():
        for i in range(1, n):                 # a range not starting at a multiple of 4
            x[i] = x[i] * 2 + 1

    @wk.kernel
    def rows():
        for i, j in g:                        # a 2-d field
            g[i, j] = g[i, j] + i * 3 + j

    xs = np.arange(n, dtype=np.float32)
    x.from_numpy(xs)
    shifted()
    rows()
    want = xs * 2 + 1
    want[0] = 0
    np.testing.assert_array_equal(x.to_numpy(), want)
    np.testing.assert_array_equal(g.to_numpy(), (np.arange(n)[:, None] * 3 + np.arange(3)).astype(np.float32))
    for kernel in (shifted, rows):
        assert _wide_loads(kernel.source()) == 0 and _wide_stores(kernel.source()) == 0


@pytest.mark.parametrize("n", [6, 1002])
def test_the_gradient_of_a_wide_kernel(arch, n):
    """The forward kernel reads x wide and sums atomically; its .grad starts from the scalar IR."""
    x = wk.field(wk.f32, shape=n, needs_grad=True)
    y = wk.field(wk.f32, shape=n, needs_grad=True)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def energy():
        for i in x:
            y[i] = x[i] * x[i]
            loss[None] += x[i] * 3

    xs = (np.arange(n, dtype=np.float32) % 16) * np.float32(0.5)
    x.from_numpy(xs)
    energy()
    assert (_wide_loads(energy.source()) > 0) == _wide() and _wide_stores(energy.source()) == _wide()
    loss[None] = 0
    with wk.ad.Tape(loss=loss):
        energy()
    np.testing.assert_array_equal(y.to_numpy(), xs * xs)
    assert loss[None] == float(3 * xs.astype(np.float64).sum())     # halves up to 7.5 times 3: exact sums
    np.testing.assert_array_equal(x.grad.to_numpy(), np.full(n, 3, np.float32))


def test_an_ndarray_starting_off_a_16_byte_boundary(arch):
    """A numpy view one element into its array (4-byte aligned only) as an ndarray argument."""
    base = np.arange(41, dtype=np.float32)

    @wk.kernel
    def increment(y: wk.types.ndarray()):
        for i in y:
            y[i] = y[i] + 1

    view = base[1:]
    increment(view)
    np.testing.assert_array_equal(view, np.arange(1, 41, dtype=np.float32) + 1)
