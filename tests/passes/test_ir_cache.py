"""passes/ir_cache.py: a build whose frontend IR was built before loads the forward pipeline's result from the
offline cache; what it loads equals what the passes give, points at this program's own fields and arguments, and
anything that changes the IR (a captured value, a field's shape) is another entry."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import wgkern as wk
from wgkern import disk_cache, launch
from wgkern.ir import nodes as ir
from wgkern.ir.clone import clone_kernel
from wgkern.ir.printer import format_kernel
from wgkern.passes import ir_cache, pipeline
from tests.conftest import FAST_MATH


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache folder of the test's own, and a count of the forward pipelines that ran."""
    monkeypatch.setenv("WK_CACHE_DIR", str(tmp_path))
    ran = []
    run_pipeline = pipeline.run_pipeline

    def counted(stages, kernel, *args, **kwargs):
        if stages is pipeline.FORWARD:
            ran.append(kernel.name)
        return run_pipeline(stages, kernel, *args, **kwargs)

    monkeypatch.setattr(pipeline, "run_pipeline", counted)
    yield tmp_path, ran
    wk.reset()


def run_forward(kernel: ir.KernelIR) -> ir.OffloadedKernel:
    return pipeline.run_pipeline(pipeline.FORWARD, kernel, dump_dir=None)


def _entries(folder) -> list:
    return sorted((folder / ir_cache.KIND).glob("*" + ir_cache._SUFFIX)) if (folder / ir_cache.KIND).exists() else []


def _restart(arch) -> None:
    """A new program on the same arch: nothing compiled is kept in memory."""
    wk.reset()
    wk.init(arch=arch, fast_math=FAST_MATH)


def _make_kernel(out):
    @wk.kernel
    def clamp_scale(a: wk.types.ndarray(), s: wk.f32, n: wk.i32):
        for i in range(16):
            total = 0.0
            for j in range(n):               # a loop whose LoopIndex refers to it
                total += a[i] * s
            if total > 3:
                out[i] = total + wk.f16(1.5)   # an f16 constant (a numpy scalar in the IR)
            else:
                wk.atomic_add(out[i], -total)
    return clamp_scale


def _build_once_on_the_cpu(offline_cache: bool = True):
    """A new CPU program that builds and runs _make_kernel's kernel once; returns the field it wrote."""
    wk.reset()
    wk.init(arch=wk.cpu, offline_cache=offline_cache)
    out = wk.field(wk.f32, shape=16)
    _make_kernel(out)(np.ones(16, np.float32), 1.0, 4)
    return out


def _expected(a: np.ndarray, s: float, n: int) -> np.ndarray:
    total = (a * np.float32(s)) * n
    return np.where(total > 3, total + 1.5, -total).astype(np.float32)


def test_a_rebuild_loads_the_passes_result(arch, cache) -> None:
    folder, ran = cache
    a = np.arange(16, dtype=np.float32) / 4
    out = wk.field(wk.f32, shape=16)
    kernel = _make_kernel(out)
    kernel(a, 2.0, 3)
    np.testing.assert_allclose(out.to_numpy(), _expected(a, 2.0, 3), rtol=1e-6)
    assert ran == ["clamp_scale"] and len(_entries(folder)) == 1
    built = launch.kernel_ir_text(kernel)

    _restart(arch)
    out = wk.field(wk.f32, shape=16)            # this program's field, which the loaded IR must write
    kernel = _make_kernel(out)
    kernel(a, 2.0, 4)
    np.testing.assert_allclose(out.to_numpy(), _expected(a, 2.0, 4), rtol=1e-6)
    assert ran == ["clamp_scale"], "the second build ran the forward passes"
    assert launch.kernel_ir_text(kernel) == built
    entry = kernel.last_compiled
    assert all(slot.host is out for slot in entry.offloaded.containers if slot.kind == "field")
    assert entry.offloaded.args is not None and entry.offloaded.args[0].name == "a"


def test_what_loads_equals_what_the_passes_give(cache, monkeypatch) -> None:
    """The loaded result prints (with source locations) as the passes' own result for this build's frontend IR."""
    _, ran = cache
    frontends = []
    build = launch.build_kernel_ir

    def kept(kernel, spec):
        built = build(kernel, spec)
        frontends.append(clone_kernel(built))      # the passes change the one they get
        return built

    monkeypatch.setattr(launch, "build_kernel_ir", kept)
    a = np.ones(16, np.float32)
    for _ in range(2):
        _restart(wk.cpu)
        out = wk.field(wk.f32, shape=16)
        kernel = _make_kernel(out)
        kernel(a, 1.0, 2)
    wk.reset()
    assert ran == ["clamp_scale"]                   # the second build loaded
    fresh = run_forward(frontends[1])
    assert format_kernel(kernel.last_compiled.offloaded, with_locs=True) == format_kernel(fresh, with_locs=True)


def test_a_changed_captured_value_or_shape_is_another_entry(arch, cache) -> None:
    folder, ran = cache
    results = []
    for scale, size in ((2.0, 8), (3.0, 8), (3.0, 12), (2.0, 8)):
        _restart(arch)
        out = wk.field(wk.f32, shape=size)

        @wk.kernel
        def scaled():
            for i in out:
                out[i] = i * scale              # a captured value: a constant of the IR

        scaled()
        results.append(out.to_numpy())
        np.testing.assert_array_equal(results[-1], np.arange(size, dtype=np.float32) * np.float32(scale))
    assert len(_entries(folder)) == 3 and len(ran) == 3     # the last build is the first one again


def test_an_ir_holding_another_kind_of_object_is_compiled_and_not_stored(cache) -> None:
    folder, ran = cache

    class Tagged(int):
        pass

    slot = ir.ContainerSlot(name="out", kind="ndarray", dtype=wk.i32, ndim=1, arg_index=0)
    body = ir.Block()
    value = body.append(ir.Const(value=Tagged(7), dtype=wk.i32))
    zero = body.append(ir.Const(value=0, dtype=wk.i32))
    ptr = body.append(ir.GlobalPtr(container=slot, indices=[zero], dtype=wk.i32))
    body.append(ir.GlobalStore(ptr=ptr, value=value))
    kernel = ir.KernelIR("tagged", [ir.ArgSpec(name="out", kind="ndarray", dtype=wk.i32, ndim=1)], [slot], body)
    with pytest.raises(ir_cache.NotSerialisable, match="Tagged"):
        ir_cache._Writer(__import__("io").BytesIO(), None).dump(kernel)
    offloaded = ir_cache.forward(kernel)
    assert isinstance(offloaded, ir.OffloadedKernel) and ran == ["tagged"]
    assert _entries(folder) == []


def test_a_pass_that_changes_a_frontend_slot_stores_nothing(cache, monkeypatch) -> None:
    folder, ran = cache

    class Renaming:
        NAME = "renaming"

        @staticmethod
        def run(kernel):
            kernel.containers[0].name = "renamed"
            return kernel

    monkeypatch.setattr(pipeline, "FORWARD", (Renaming, *pipeline.FORWARD))
    _build_once_on_the_cpu()
    assert ran == ["clamp_scale"] and _entries(folder) == []


def test_an_unreadable_entry_is_compiled_again_and_replaced(cache) -> None:
    folder, ran = cache
    _build_once_on_the_cpu()
    (entry,) = _entries(folder)
    key = entry.name[:-len(ir_cache._SUFFIX)]
    disk_cache.store(ir_cache.KIND, key, ir_cache._SUFFIX, pickle.dumps(print))   # names builtins.print
    out = _build_once_on_the_cpu()
    np.testing.assert_allclose(out.to_numpy(), _expected(np.ones(16, np.float32), 1.0, 4), rtol=1e-6)
    assert len(ran) == 2
    _build_once_on_the_cpu()
    assert len(ran) == 2                           # the entry written by the second build loads


def test_nothing_is_stored_without_the_offline_cache(cache) -> None:
    folder, ran = cache
    _build_once_on_the_cpu(offline_cache=False)
    assert ran == ["clamp_scale"] and _entries(folder) == []


def test_gradients_through_a_loaded_forward_result(arch, cache) -> None:
    folder, ran = cache
    n = 8
    grads = []
    for _ in range(2):
        _restart(arch)
        x = wk.field(wk.f32, shape=n, needs_grad=True)
        trips = wk.field(wk.i32, shape=n)
        loss = wk.field(wk.f32, shape=(), needs_grad=True)

        @wk.kernel
        def powers():
            for i in x:
                v = 1.0
                for _ in range(trips[i]):          # a trip count known at run time: adstacks
                    v = v * x[i]
                loss[None] += v

        x.from_numpy(np.linspace(0.5, 1.2, n).astype(np.float32))
        trips.from_numpy(np.arange(n, dtype=np.int32) % 4)
        with wk.ad.Tape(loss):
            powers()
        grads.append(x.grad.to_numpy())
    assert ran == ["powers"]                       # the reverse kernel of the second program started from a load
    xs, k = np.linspace(0.5, 1.2, n), np.arange(n) % 4
    np.testing.assert_allclose(grads[0], k * xs ** np.maximum(k - 1, 0), rtol=1e-5)
    np.testing.assert_array_equal(grads[0], grads[1])
