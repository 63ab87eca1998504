"""The launch sequence on the fake backend with hand-built IR (the frontend is replaced): caching per
specialisation, binding of fields/ndarrays/numpy/temps, generation bumps, numpy copy-back, return values."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import wgkern as wk
from wgkern.ir import nodes as ir
from wgkern.ir.builder import IRBuilder
from wgkern.ir.ops import AtomicOpKind
from wgkern import launch as launch_module

BUILDERS = {}


@pytest.fixture(autouse=True)
def hand_built_frontend(monkeypatch):
    monkeypatch.setattr(launch_module, "build_kernel_ir",
                        lambda kernel, spec: BUILDERS[kernel.name](spec))


def _field_slot(f, name):
    return ir.ContainerSlot(name=name, kind="field", dtype=f.dtype, ndim=len(f.full_shape), shape=f.full_shape,
                            host=f)


# --- kernel 1: y[i] = a * x[i] + y[i] over fields (closure), scalar a ------------------------------------
X = Y = None


@wk.kernel
def saxpy(a: wk.f32):
    pass


def build_saxpy(spec):
    xs, ys = _field_slot(X, "x"), _field_slot(Y, "y")
    b = IRBuilder()
    loop = b.range_for(b.const(0, wk.i32), b.const(X.shape[0], wk.i32))
    with b.at(loop.body):
        i = b.loop_index(loop)
        a = b.insert(ir.ArgLoad(arg_index=0, dtype=wk.f32))
        xv = b.global_load(b.global_ptr(xs, [i]))
        yp = b.global_ptr(ys, [i])
        b.global_store(yp, b.add(b.mul(a, xv), b.global_load(yp)))
    return ir.KernelIR("saxpy", spec.arg_specs, [xs, ys], b.block)


BUILDERS["saxpy"] = build_saxpy


def test_field_kernel_cache_and_generations(fake_program):
    global X, Y
    X = wk.field(wk.f32, shape=8, name="x")
    Y = wk.field(wk.f32, shape=8, name="y")
    X.from_numpy(np.arange(8, dtype=np.float32))
    Y.fill(1)
    gx, gy = X.generation, Y.generation
    saxpy(2.0)
    assert np.allclose(Y.to_numpy(), 2 * np.arange(8) + 1)
    assert X.generation == gx and Y.generation == gy + 1         # only written containers bump
    saxpy(1)
    assert np.allclose(Y.to_numpy(), 3 * np.arange(8) + 1)
    stats = wk.stats()
    assert stats["kernel_compiles"] == 1 and stats["cache_hits"] == 1 and stats["launches"] == 2
    assert fake_program.backend.compiles == 1
    assert Y.generation == gy + 2
    assert "x" in saxpy.ir() and "interpreted" in saxpy.source()
    launches = fake_program.backend.launches
    assert launches[1].launch_id == launches[0].launch_id + 1


# --- kernel 2: for i in range(arr.shape[0]): arr[i] += s; arr.grad[i] = 1 (ndarray argument) -------------
@wk.kernel
def bump(arr: wk.types.ndarray(dtype=wk.f32, ndim=1), s: wk.f32):
    pass


def build_bump(spec):
    arr = ir.ContainerSlot(name="arr", kind="ndarray", dtype=wk.f32, ndim=1, arg_index=0)
    slots = [arr]
    b = IRBuilder()
    shape = b.insert(ir.ShapeOf(container=arr, axis=0, dtype=wk.i32))
    loop = b.range_for(b.const(0, wk.i32), shape)
    with b.at(loop.body):
        i = b.loop_index(loop)
        s = b.insert(ir.ArgLoad(arg_index=1, dtype=wk.f32))
        b.atomic(AtomicOpKind.ADD, b.global_ptr(arr, [i]), s)
        if spec.key[0][1][4]:      # has_grad: also write the adjoint
            grad = ir.ContainerSlot(name="arr.grad", kind="ndarray", dtype=wk.f32, ndim=1, arg_index=0,
                                    is_grad=True)
            slots.append(grad)
            b.global_store(b.global_ptr(grad, [i]), b.const(1.0, wk.f32))
    return ir.KernelIR("bump", spec.arg_specs, slots, b.block)


BUILDERS["bump"] = build_bump


def test_ndarray_arguments(fake_program):
    a = wk.ndarray(wk.f32, shape=5, needs_grad=True)
    g0, gg0 = a.generation, a.grad.generation
    bump(a, 1.5)
    assert a.to_numpy().tolist() == [1.5] * 5 and a.grad.to_numpy().tolist() == [1.0] * 5
    assert a.generation == g0 + 1 and a.grad.generation == gg0 + 1
    c = wk.ndarray(wk.f32, shape=3, needs_grad=True)
    bump(c, 2.0)                         # another shape: same compiled variant, shapes come at launch
    assert c.to_numpy().tolist() == [2.0] * 3
    assert wk.stats()["kernel_compiles"] == 1
    plain = wk.ndarray(wk.f32, shape=3)
    bump(plain, 1.0)                     # no grad: another variant
    assert wk.stats()["kernel_compiles"] == 2


def test_numpy_arguments_copied_back(fake_program):
    data = np.arange(4, dtype=np.float32)
    bump(data, 1.0)
    assert data.tolist() == [1, 2, 3, 4]
    other = np.zeros(6, np.float32)
    bump(other, 0.5)
    bump(data, 1.0)
    assert other.tolist() == [0.5] * 6 and data.tolist() == [2, 3, 4, 5]
    base = np.zeros(8, np.float32)
    bump(base[::2], 1.0)                 # a strided view: copied in, and its elements written back
    assert base.tolist() == [1, 0, 1, 0, 1, 0, 1, 0]
    with pytest.raises(wk.ArgumentError, match="parameter 'arr'.*wk.f32, got wk.f64"):
        bump(np.zeros(3), 1.0)


def test_stale_ndarray_after_reinit(fake_program):
    from wgkern.runtime import program as program_module
    from wgkern.runtime.arch import Arch, Selection
    a = wk.ndarray(wk.f32, shape=2)
    backend = type(fake_program.backend)(fake_program.backend.host_views)
    program_module.start(Selection(Arch.cpu, lambda _options: backend, "fake again"))
    with pytest.raises(wk.ArgumentError, match="parameter 'arr'"):
        bump(a, 1.0)


# --- kernel 3: returns (n * 2, n + 1) through the 'returns' temp slot --------------------------------------
@wk.kernel
def two_values(n: wk.i32) -> wk.i32:
    pass


def build_two_values(spec):
    out = ir.ContainerSlot(name="ret", kind="temp", dtype=wk.i32, ndim=1, shape=(2,))
    b = IRBuilder()
    n = b.insert(ir.ArgLoad(arg_index=0, dtype=wk.i32))
    b.global_store(b.global_ptr(out, [b.const(0, wk.i32)]), b.mul(n, b.const(2, wk.i32)))
    b.global_store(b.global_ptr(out, [b.const(1, wk.i32)]), b.add(n, b.const(1, wk.i32)))
    return ir.KernelIR("two_values", spec.arg_specs, [out], b.block, returns=(out,))


BUILDERS["two_values"] = build_two_values


def test_return_values(fake_program):
    assert two_values(5) == (10, 6)
    assert two_values(-1) == (-2, 0)
    syncs = fake_program.backend.syncs
    two_values(1)
    assert fake_program.backend.syncs == syncs + 1      # a read-back syncs (raises pending device errors)


def test_ir_before_first_call_needs_arguments(fake_program):
    with pytest.raises(wk.WkError, match="call it once"):
        bump.ir()


# --- the garbage collector while a kernel compiles ----------------------------------------------------------
COLLECTOR_SEEN: list[bool] = []


@wk.kernel
def noted():
    pass


def build_noted(spec):
    COLLECTOR_SEEN.append(gc.isenabled())
    if spec.template_values.get(0) == "fail":
        raise wk.CompileError("this build fails")
    return ir.KernelIR("noted", spec.arg_specs, [], IRBuilder().block)


BUILDERS["noted"] = build_noted


@wk.kernel
def noted_failing(k: wk.template()):
    pass


BUILDERS["noted_failing"] = build_noted


def test_the_cyclic_collector_is_paused_while_a_kernel_compiles(fake_program):
    """launch.collector_paused: off during the build, on again after it, whether the build succeeded or failed;
    a collector the program turned off stays off."""
    assert gc.isenabled()
    COLLECTOR_SEEN.clear()
    noted()
    assert COLLECTOR_SEEN == [False] and gc.isenabled()
    with pytest.raises(wk.CompileError, match="this build fails"):
        noted_failing("fail")
    assert COLLECTOR_SEEN == [False, False] and gc.isenabled()
    gc.disable()
    try:
        noted_failing("other")
        assert COLLECTOR_SEEN == [False, False, False] and not gc.isenabled()
    finally:
        gc.enable()
