"""Materialisation through Quadrants' runtime object (`PyQuadrants`, runtime/materialization.py): it runs
before the launch, host access or sync that follows new containers, a replaced `PyQuadrants.materialize` is
what runs there (Genesis defers field fills that way), and `wk.reset()` runs `PyQuadrants.clear`."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from wgkern.lang import impl
from wgkern.runtime.materialization import PyQuadrants, get_runtime


@pytest.fixture
def deferred_fills():
    """PyQuadrants.materialize replaced as Genesis does: run the original, then the fills queued since."""
    pending: list[tuple[object, float]] = []
    calls: list[str] = []
    original_materialize, original_clear = PyQuadrants.materialize, PyQuadrants.clear

    def materialize_then_fill(self):
        original_materialize(self)
        calls.append("materialize")
        queued = list(pending)
        pending.clear()
        for container, value in queued:
            container.fill(value)
        if queued:
            self.prog.synchronize()

    def clear_then_drop(self):
        original_clear(self)
        calls.append("clear")
        pending.clear()

    PyQuadrants.materialize = materialize_then_fill
    PyQuadrants.clear = clear_then_drop
    try:
        yield pending, calls
    finally:
        PyQuadrants.materialize, PyQuadrants.clear = original_materialize, original_clear


@wk.kernel
def read_scalar(source: wk.template()) -> wk.f32:
    return source[None]


def test_quadrants_names():
    assert impl.PyQuadrants is PyQuadrants
    assert impl.get_runtime() is get_runtime()
    assert isinstance(get_runtime(), PyQuadrants)


def test_a_deferred_fill_lands_before_the_next_launch(arch, deferred_fills):
    pending, calls = deferred_fills
    value = wk.field(wk.f32, shape=())
    pending.append((value, 2.5))
    assert read_scalar(value) == 2.5
    assert not pending and calls.count("materialize") >= 1
    assert get_runtime().materialized


def test_a_deferred_fill_lands_before_host_access(arch, deferred_fills):
    pending, _ = deferred_fills
    values = wk.field(wk.f32, shape=4)
    pending.append((values, -1.0))
    np.testing.assert_array_equal(values.to_numpy(), np.full(4, -1.0, np.float32))


def test_sync_materialises(arch, deferred_fills):
    pending, calls = deferred_fills
    values = wk.ndarray(wk.i32, shape=3)
    pending.append((values, 7))
    wk.sync()
    assert not pending and "materialize" in calls
    np.testing.assert_array_equal(values.to_numpy(), [7, 7, 7])


def test_no_materialisation_without_new_containers(arch, deferred_fills):
    _, calls = deferred_fills
    value = wk.field(wk.f32, shape=())
    read_scalar(value)
    before = calls.count("materialize")
    for _ in range(3):
        read_scalar(value)
        value.to_numpy()
    assert calls.count("materialize") == before


def test_reset_runs_clear(arch, deferred_fills):
    pending, calls = deferred_fills
    pending.append((None, 0.0))
    wk.reset()
    assert calls[-1] == "clear" and not pending
    assert not get_runtime().materialized
    wk.init(arch=arch)          # the fixture resets again afterwards


def test_layouts_run_at_materialisation(arch):
    placed = wk.field(wk.f32)

    @wk.layout
    def place():
        wk.root.dense(wk.i, 5).place(placed)

    get_runtime().materialize()
    assert placed.shape == (5,)


def test_runtime_defaults_follow_init(arch):
    wk.init(arch=arch, default_fp=wk.f64)
    assert get_runtime().default_fp == wk.f64
    assert get_runtime().default_ip == wk.i32
    assert get_runtime().arch == arch
