"""A launch on the buffers of the kernel's previous launch reuses its bind group (WgslCompiledKernel's
last_binding); a launch on other buffers, or after one of them was freed, binds its own."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import wgkern as wk


@pytest.fixture
def vulkan():
    try:
        wk.init(arch=wk.vulkan, offline_cache=False)
    except wk.ArchUnavailableError as exc:
        pytest.skip(str(exc))
    yield
    wk.reset()


def test_the_same_buffers_reuse_the_bind_group_and_others_get_their_own(vulkan) -> None:
    @wk.kernel
    def add(a: wk.types.ndarray(dtype=wk.f32, ndim=1), v: wk.f32):
        for i in a:
            a[i] += v

    backend = wk.runtime.program.current().backend
    a, b = wk.ndarray(wk.f32, 16), wk.ndarray(wk.f32, 16)
    add(a, 1.0)
    groups = len(backend.bind_groups)
    add(a, 2.0)
    assert len(backend.bind_groups) == groups            # reused, not made again
    add(b, 10.0)
    add(a, 4.0)
    add(b, 20.0)
    np.testing.assert_array_equal(a.to_numpy(), np.full(16, 7.0, np.float32))
    np.testing.assert_array_equal(b.to_numpy(), np.full(16, 30.0, np.float32))
    del b
    gc.collect()
    c = wk.ndarray(wk.f32, 16)                            # may take the freed memory: a new buffer either way
    add(c, 5.0)
    add(a, 1.0)
    np.testing.assert_array_equal(c.to_numpy(), np.full(16, 5.0, np.float32))
    np.testing.assert_array_equal(a.to_numpy(), np.full(16, 8.0, np.float32))


def _count_bind_group_calls(backend, monkeypatch) -> list[int]:
    """The ring offsets of every set_bind_group the backend's launches make from now on."""
    offsets: list[int] = []
    commands = backend.commands
    original = commands.set_bind_group

    def counted(bind_group, offset):
        offsets.append(offset)
        original(bind_group, offset)
    monkeypatch.setattr(commands, "set_bind_group", counted)
    return offsets


def test_a_kernel_with_fixed_arguments_reuses_its_ring_slot_and_bind_group(vulkan, monkeypatch) -> None:
    z = wk.field(wk.f32, shape=4)

    @wk.kernel
    def increment():
        for i in z:
            z[i] += 1.0

    backend = wk.runtime.program.current().backend
    increment()
    wk.sync()
    offsets = _count_bind_group_calls(backend, monkeypatch)
    for _ in range(50):
        increment()
    assert backend.ring_used == increment.last_compiled.compiled.stride    # one slot for the 50 launches
    assert offsets == [0]                                                   # bound once in the pass
    np.testing.assert_array_equal(z.to_numpy(), np.full(4, 51.0, np.float32))
    for _ in range(3):                                                      # a new batch packs a slot again
        increment()
    assert offsets == [0, 0]
    np.testing.assert_array_equal(z.to_numpy(), np.full(4, 54.0, np.float32))


def test_interleaved_kernels_and_host_writes_rebind_in_order(vulkan, monkeypatch) -> None:
    z = wk.field(wk.f32, shape=4)

    @wk.kernel
    def increment():
        for i in z:
            z[i] += 1.0

    @wk.kernel
    def double():
        for i in z:
            z[i] *= 2.0

    backend = wk.runtime.program.current().backend
    increment()
    double()
    wk.sync()
    z.fill(0.0)
    offsets = _count_bind_group_calls(backend, monkeypatch)
    expected = 0.0
    for step in range(6):
        increment()
        double()
        expected = (expected + 1.0) * 2.0
        if step == 2:
            z.from_numpy(np.full(4, 5.0, np.float32))     # a host write between launches: in order
            expected = 5.0
    np.testing.assert_array_equal(z.to_numpy(), np.full(4, expected, np.float32))
    # each launch follows the other kernel's, so each binds; both kernels keep one slot each per batch
    assert len(offsets) == 12 and len(set(offsets)) == 2


def test_a_kernel_drawing_random_numbers_packs_each_launch(vulkan, monkeypatch) -> None:
    z = wk.field(wk.f32, shape=(8, 64))

    @wk.kernel
    def draw(row: wk.i32):
        for j in range(64):
            z[row, j] = wk.random()

    @wk.kernel
    def draw_all():
        for j in range(64):
            z[0, j] = wk.random()

    backend = wk.runtime.program.current().backend
    draw_all()
    wk.sync()
    stride = draw_all.last_compiled.compiled.stride
    offsets = _count_bind_group_calls(backend, monkeypatch)
    rows = []
    for _ in range(4):
        draw_all()                 # the launch id is an argument of every launch: a slot each
        rows.append(z.to_numpy()[0].copy())
    assert offsets == [0, 0, 0, 0]         # each read-back submits, so each launch starts a batch
    for _ in range(3):
        draw_all()
    assert backend.ring_used == 3 * stride and offsets[4:] == [0, stride, 2 * stride]
    assert len({row.tobytes() for row in rows}) == 4      # every launch drew new numbers
    for row in range(8):
        draw(row)
    values = z.to_numpy()
    assert len({values[row].tobytes() for row in range(8)}) == 8
