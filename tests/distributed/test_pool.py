"""wgkern.distributed.DevicePool on a local Ray instance with two CPU actors: a sweep with `map`, the gradient
all-reduce, programs by module path and by function, errors that reach the driver as themselves, and the offline
cache shared by the actors."""
from __future__ import annotations

import os
import random
from types import SimpleNamespace

import numpy as np
import pytest

import wgkern as wk
from tests.distributed import programs
from wgkern.distributed import DevicePool, load_program, lookup
from wgkern.distributed import pool as pool_module
from wgkern import disk_cache

# Every gradient here is exact in f32: x = 0 and the targets i/16 are exact, and 2 * weight * (x - i/16) for
# weights of a few units is a small multiple of 1/16, as is every sum of them below; so results compare equal.
WEIGHTS = [1.0, 3.0, 2.0, 0.5, 4.0]


@pytest.fixture(scope="module")
def cpu_pool(ray_cluster):
    """Two CPU actors with programs.build loaded, shared by this module's tests (each pool takes seconds)."""
    with DevicePool(programs.build, arch=wk.cpu, actors=2) as pool:
        yield pool


def test_gradients_sum_across_actors_and_either_side_applies_them(cpu_pool):
    pool = cpu_pool
    if True:
        pool.map(programs.gradient_at, [1.0, 3.0])          # the first two calls go to actors 0 and 1
        own = pool.gradients(["x"])
        np.testing.assert_array_equal(own[0]["x"], programs.expected_gradient(1.0))
        np.testing.assert_array_equal(own[1]["x"], programs.expected_gradient(3.0))
        mean = pool.allreduce_gradients(["x"], average=True, write_back=False)
        np.testing.assert_array_equal(mean["x"], programs.expected_gradient(2.0))
        total = pool.allreduce_gradients(["x"])
        np.testing.assert_array_equal(total["x"], programs.expected_gradient(4.0))
        # applied on each actor: every actor's x.grad holds the sum, and the same step gives the same x
        pool.run_all(lambda p: p.step(0.25))
        for x in pool.run_all(lambda p: p.x):
            np.testing.assert_array_equal(x, -0.25 * programs.expected_gradient(4.0))
        # applied on the driver: new values sent to every actor
        pool.assign({"x": np.arange(programs.N, dtype=np.float32)})
        for x in pool.run_all(lambda p: p.x):
            np.testing.assert_array_equal(x, np.arange(programs.N))
        with pytest.raises(KeyError, match="the DevicePool program has no 'nothing'"):
            pool.gradients(["nothing"])
        with pytest.raises(ValueError, match="'energy' of the DevicePool program has no gradient"):
            pool.gradients(["energy"])


def _bad_kernel(program):
    @wk.kernel
    def bad():
        for i in program.x:
            program.x[i] = undefined_name        # noqa: F821 - the error under test

    bad()


def test_an_error_in_an_actor_reaches_the_driver_as_the_same_exception(cpu_pool):
    with pytest.raises(wk.ArgumentError, match=r"kernel 'energy\(weight\)' called with 2 positional and 0 keyword arguments: "
                                            r"Too many arguments"):
        cpu_pool.map(lambda p, w: p.energy(w, 2), [1.0])
    with pytest.raises(wk.CompileError, match=r"test_pool.py:\d+:\d+: .*undefined_name"):
        cpu_pool.run_all(_bad_kernel)
    assert cpu_pool.map(programs.gradient_at, [2.0])[0][1] == programs.expected_gradient(2.0)[1]   # still usable


def _compile_new_kernel(program, scale: float):
    """Declare and run a kernel no earlier run has put in the shared cache (`scale` is part of its code)."""
    y = wk.field(wk.f32, shape=64)

    @wk.kernel
    def fill():
        for i in y:
            y[i] = wk.sin(i * scale)

    fill()
    return y


def _entries() -> set[str]:
    folder = disk_cache.cache_directory("cpu")       # the actors' folder too (tests/distributed/conftest.py)
    return set(os.listdir(folder)) if folder.is_dir() else set()


def test_actors_on_one_host_compile_each_kernel_once(cpu_pool):
    scale = random.uniform(1.0, 2.0)
    before = [d["disk_cache"] for d in cpu_pool.describe()]
    entries = _entries()
    values = cpu_pool.run_all(_compile_new_kernel, scale)       # both actors at once
    new_entries = len(_entries() - entries)
    after = [d["disk_cache"] for d in cpu_pool.describe()]
    # the f32 product i * scale (< 126) is off by at most half an ulp (3.8e-6) and sin's own error is a few
    # ulps of 1 (1.2e-7 each): 1e-5 bounds both
    np.testing.assert_allclose(values[0], np.sin(np.arange(64) * np.float64(np.float32(scale))), atol=1e-5)
    stores = [a["stores"] - b["stores"] for a, b in zip(after, before)]
    hits = [a["hits"] - b["hits"] for a, b in zip(after, before)]
    assert stores[0] + hits[0] == stores[1] + hits[1]          # the same modules on both actors
    # every compile made a new entry: no module was compiled by both actors
    assert new_entries >= 1 and sum(stores) == new_entries


def test_a_pool_larger_than_the_cluster_is_refused(ray_cluster, monkeypatch):
    monkeypatch.setattr(pool_module, "FREED_WAIT_S", 0.5)
    with pytest.raises(ValueError, match=r"DevicePool: 3 actors need 3 CPUs and the Ray cluster has [0-2] free"):
        DevicePool(programs.build, arch="cpu", actors=3)


def test_programs_and_names():
    with pytest.raises(TypeError, match="a DevicePool program is a module path .* not int"):
        load_program(3)
    with pytest.raises(TypeError, match="the DevicePool program .*<lambda> returned None"):
        load_program(lambda: None)
    assert load_program("tests.distributed.programs") is programs
    program = {"model": SimpleNamespace(weights=5)}
    assert lookup(program, "model.weights") == 5
    with pytest.raises(KeyError, match="no 'model.bias' \\(no 'bias' in SimpleNamespace\\)"):
        lookup(program, "model.bias")


def test_a_kernel_error_under_debug_reaches_the_driver_by_class_and_message(ray_cluster, request):
    request.getfixturevalue("cpu_pool").shutdown()       # room for this pool: the rest of the module needs none
    with DevicePool("tests.distributed.programs:build", arch="cpu", actors=1,
                    init_options={"debug": True}) as pool:
        with pytest.raises(wk.BoundsCheckError,
                           match=r"programs.py:\d+:\d+: kernel index_error: index out of range for x of shape \(16,\)"):
            pool.run_all(lambda p: p.index_error(3))
