"""WGSL lowering of wide accesses (backends/wgsl/wide_access.py): the vec4 declaration of a binding, scalar
accesses of its components beside the vector ones, packed arenas shared with containers that are not wide, and
a binding that must stay atomic; results against the reference interpreter for lengths around the width."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from wgkern.ir import nodes as ir
from wgkern.ir.ops import AtomicOpKind
from wgkern.lang import types as T
from wgkern.backends.wgsl.runtime import WgslCompiledKernel
from wgkern.passes import vectorize
from wgkern.runtime import program as program_module

from .test_split import WINDOW, lower_binding_limit
from ._kernels import interpret, kernel, range_task, run, scalar_arg, slot

COUNT = 34            # f32 containers: with the accumulator, more than lavapipe's 32 bindings, so packed
DIRECT_COUNT = 4      # few enough for one binding each


def _scaled_sums(n: int, count: int) -> ir.OffloadedKernel:
    """f_k[i] = f_k[i] * s + k for k < count - 1, f_last[i] = 1 (all wide), and acc[0] += f_0[i] atomically."""
    fs = [slot(f"f{k}", T.f32, (n,)) for k in range(count)]
    acc = slot("acc", T.f32, (1,))

    def body(b, i):
        s = b.insert(ir.ArgLoad(arg_index=0, dtype=T.f32))
        for k, f in enumerate(fs[:-1]):
            p = b.global_ptr(f, [i])
            b.global_store(p, b.add(b.mul(b.global_load(p), s), b.const(float(k), T.f32)))
        b.atomic(AtomicOpKind.ADD, b.global_ptr(acc, [b.const(0, T.i32)]), b.global_load(b.global_ptr(fs[0], [i])))
        b.global_store(b.global_ptr(fs[-1], [i]), b.const(1.0, T.f32))

    bounds = (lambda b: b.const(0, T.i32), lambda b: b.const(n, T.i32))
    return kernel("scaled", [*fs, acc], [range_task("t", *bounds, body)], [scalar_arg("s", T.f32)])


def _arrays(k: ir.OffloadedKernel) -> list[np.ndarray]:
    return [np.arange(c.shape[0], dtype=np.float32) + j for j, c in enumerate(k.containers)]


@pytest.mark.parametrize("n", [1, 3, 4, 5, 8, 10, 37])
@pytest.mark.parametrize("packed", [False, True])
def test_wide_tasks_direct_and_packed_match_the_interpreter(backend, monkeypatch, n, packed):
    if packed:
        monkeypatch.setattr(backend, "limits", {**dict(backend.limits), "max-storage-buffers-per-shader-stage": 32})
    count = COUNT if packed else DIRECT_COUNT
    scalar = _scaled_sums(n, count)
    wide = vectorize.run(scalar)
    assert [s.name for s in vectorize.wide_containers(scalar.tasks[0])] == [f"f{k}" for k in range(count)]
    compiled = backend.compile(wide)
    assert compiled.plan.packed == packed
    source = compiled.source()
    if packed:
        assert "wk_arena1: array<vec4<f32>>" in source and "array<atomic<" in source
    else:
        assert "c0_f0: array<vec4<f32>>" in source
    assert source.count("] = vec4<f32>(") == count
    got = run(backend, wide, _arrays(scalar), [np.float32(2.0)])
    want = interpret(scalar, _arrays(scalar), [np.float32(2.0)])
    for g, w in zip(got, want):       # integers times 2 plus integers: exact; the sum of up to 37 integers too
        np.testing.assert_array_equal(g, w)


def test_an_atomic_binding_takes_wide_accesses_one_element_at_a_time(backend, monkeypatch):
    """Packed, a container touched atomically in one task is atomic in every task: a task reading it wide reads
    its elements one by one (atomicLoad), with the other f32 containers' arena still vec4."""
    monkeypatch.setattr(backend, "limits", {**dict(backend.limits), "max-storage-buffers-per-shader-stage": 32})
    n = 10
    fs = [slot(f"f{k}", T.f32, (n,)) for k in range(COUNT)]

    def read_wide(b, i):
        for f in fs[1:]:
            p = b.global_ptr(f, [i])
            b.global_store(p, b.add(b.global_load(p), b.global_load(b.global_ptr(fs[0], [i]))))

    def bump(b, i):
        b.atomic(AtomicOpKind.ADD, b.global_ptr(fs[0], [i]), b.const(1.0, T.f32))

    bounds = (lambda b: b.const(0, T.i32), lambda b: b.const(n, T.i32))
    scalar = kernel("mixed", fs, [range_task("bump", *bounds, bump), range_task("read", *bounds, read_wide)])
    wide = vectorize.run(scalar)
    source = backend.compile(wide).source()
    assert "atomicLoad(&wk_arena" in source and "array<vec4<f32>>" in source
    arrays = [np.arange(n, dtype=np.float32) * (j + 1) for j in range(COUNT)]
    for g, w in zip(run(backend, wide, arrays), interpret(scalar, arrays)):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("n", [300, 513, 770])
def test_a_container_bound_as_windows_takes_wide_accesses_one_element_at_a_time(n):
    """A binding limit of 1 KiB (256 f32): x and y bound as windows (split.py) are read and written one element
    at a time through the windows, z (within one binding) with vec4 accesses."""
    try:
        wk.init(arch=wk.vulkan)
    except wk.ArchUnavailableError as exc:
        pytest.skip(str(exc))
    monkeypatch = pytest.MonkeyPatch()
    try:
        lower_binding_limit(program_module.current().backend, monkeypatch, WINDOW)
        x, y = wk.field(wk.f32, shape=n), wk.ndarray(wk.f32, shape=n)
        z = wk.field(wk.f32, shape=200)

        @wk.kernel
        def saxpy(a: wk.f32, y: wk.types.ndarray()):
            for i in x:
                y[i] = a * x[i] + y[i]
                z[i] = y[i] - 1

        xs, ys = np.arange(n, dtype=np.float32), np.arange(n, dtype=np.float32) % 7
        x.from_numpy(xs)
        y.from_numpy(ys)
        saxpy(2.0, y)
        np.testing.assert_array_equal(y.to_numpy(), 2 * xs + ys)
        np.testing.assert_array_equal(z.to_numpy(), (2 * xs + ys)[:200] - 1)
        backend = program_module.current().backend
        split_source = WgslCompiledKernel(backend, vectorize.run(_scaled_sums(300, 2)), (2, 1, 1)).source()
        assert "switch (window" in split_source and "c1_f1: array<vec4<f32>>" in split_source
    finally:
        monkeypatch.undo()
        wk.reset()
