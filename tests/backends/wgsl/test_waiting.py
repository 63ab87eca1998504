"""backends/wgsl/waiting.py: the spinning wait returns only once the submitted work is done, blocks after its
spin window, and is the wait of GPU adapters only."""
from __future__ import annotations

import numpy as np
import pytest

from wgkern.backends.wgsl import waiting

BUSY_SHADER = """
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    var v = f32(g.x);
    for (var j = 0u; j < 4000u; j = j + 1u) { v = sin(v) + 0.5; }
    out[g.x] = v;
}"""
THREADS = 1 << 14
GPU_COPIES = 64         # a GPU adapter runs 64 times the threads: a few ms on an H200, so the checks cannot race


def _threads(backend) -> int:
    return THREADS if backend.adapter.info.get("adapter_type") == "CPU" else THREADS * GPU_COPIES


def _submit_busy_work(backend) -> tuple[object, object]:
    """Submit a dispatch that keeps lavapipe busy for tens of milliseconds (a GPU for a few); (its output
    buffer, pipeline)."""
    import wgpu
    device = backend.device
    module = device.create_shader_module(code=BUSY_SHADER)
    pipeline = device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
    out = device.create_buffer(size=4 * _threads(backend), usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
    group = device.create_bind_group(layout=pipeline.get_bind_group_layout(0),
                                     entries=[{"binding": 0, "resource": {"buffer": out}}])
    encoder = device.create_command_encoder()
    compute = encoder.begin_compute_pass()
    compute.set_pipeline(pipeline)
    compute.set_bind_group(0, group)
    compute.dispatch_workgroups(_threads(backend) // 64)
    compute.end()
    device.queue.submit([encoder.finish()])
    return out, pipeline


def _expected() -> np.ndarray:
    v = np.arange(THREADS, dtype=np.float32)
    for _ in range(4000):
        v = (np.sin(v) + np.float32(0.5)).astype(np.float32)
    return v


def _queue_is_idle(backend) -> bool:
    """Whether one non-blocking poll finds every submission done (a spinning wait with no window)."""
    probe = waiting.SpinningWait(backend.device, spin_seconds=0.0)
    probe._block = lambda: None          # report instead of blocking
    probe()
    return probe.done and probe.spins == 1


def test_spinning_wait_returns_once_the_work_is_done(backend):
    wait = waiting.SpinningWait(backend.device, spin_seconds=60.0)
    out, _ = _submit_busy_work(backend)
    assert not _queue_is_idle(backend)           # the work is still running: the check can fail
    wait()
    assert wait.done and not wait.blocked and wait.spins >= 1
    assert _queue_is_idle(backend)
    got = np.frombuffer(backend.device.queue.read_buffer(out), np.float32)[:THREADS]   # the first THREADS threads checked
    # 4000 dependent f32 sin steps: the driver's sin differs from numpy's by a few ulps per step and the map
    # v -> sin(v) + 0.5 contracts (|cos| < 1 near its fixed point ~1.4), so errors do not grow: 1e-4 absolute
    np.testing.assert_allclose(got, _expected(), atol=1e-4)


def test_spinning_wait_blocks_after_its_window(backend):
    wait = waiting.SpinningWait(backend.device, spin_seconds=0.0)
    _submit_busy_work(backend)
    wait()
    assert wait.blocked and wait.done
    assert _queue_is_idle(backend)


def test_a_wait_with_nothing_submitted_returns_after_one_poll(backend):
    backend.sync()
    wait = waiting.SpinningWait(backend.device, spin_seconds=60.0)
    wait()
    assert wait.done and wait.spins == 1 and not wait.blocked


def test_gpu_adapters_spin_cpu_adapters_block(backend):
    assert isinstance(waiting.wait_for(backend.device, cpu_adapter=False), waiting.SpinningWait)
    blocking = waiting.wait_for(backend.device, cpu_adapter=True)
    assert blocking == backend.device._poll_wait
    cpu = backend.adapter.info.get("adapter_type") == "CPU"
    assert isinstance(backend.wait_idle, waiting.SpinningWait) is (not cpu)


@pytest.mark.parametrize("cpu_adapter", [False, True])
def test_a_device_without_a_blocking_poll_gets_no_wait(cpu_adapter):
    class Bare:       # a wgpu-py without the private poll: the backend waits by reading back instead
        pass
    assert waiting.wait_for(Bare(), cpu_adapter) is None


def test_map_for_reading_maps_once_the_copy_is_done(backend):
    """The direct map: the bytes a copy submitted just before wrote, read and unmapped through wgpu-py's
    read_mapped and unmap as after its own map, and through the wait's own read_mapped and unmap, alternately
    over the same buffer (each leaves it as the other expects)."""
    import wgpu
    device = backend.device
    wait = waiting.SpinningWait(device, spin_seconds=60.0)
    out, _ = _submit_busy_work(backend)
    staging = device.create_buffer(size=4 * THREADS, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
    for native in (False, True, False, True):
        encoder = device.create_command_encoder()
        encoder.copy_buffer_to_buffer(out, 0, staging, 0, 4 * THREADS)
        device.queue.submit([encoder.finish()])
        wait.map_for_reading(staging, 0, 4 * THREADS)
        assert staging.map_state == "mapped"
        if native:
            got = wait.read_mapped(staging, 4 * THREADS).view(np.float32).copy()
            wait.unmap(staging)
        else:
            got = np.frombuffer(staging.read_mapped(0, 4 * THREADS), np.float32)
            staging.unmap()
        assert staging.map_state == "unmapped"
        np.testing.assert_allclose(got, _expected(), atol=1e-4)      # the bound of the first test


def test_read_backs_through_the_spinning_wait(arch, monkeypatch):
    """A backend whose waits spin (as on a GPU adapter) reads fields back right: after kernels, past the kept
    staging buffer's size, and after a reverse launch whose overflow flag rides along with the read."""
    import wgkern as wk
    from wgkern.runtime import program as program_module
    backend = program_module.current().backend
    if backend.name != "wgsl":
        pytest.skip("the spinning wait belongs to the WGSL backend")
    monkeypatch.setattr(backend, "wait_idle", waiting.SpinningWait(backend.device))
    n = 1 << 21                     # 8 MB: past the kept staging buffer, read through a temporary one
    x = wk.field(wk.f32, shape=n, needs_grad=True)
    trips = wk.field(wk.i32, shape=n)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def fill():
        for i in x:
            x[i] = wk.f32(i % 1000) * 1e-3
            trips[i] = i % 5

    @wk.kernel
    def chain():
        for i in x:
            v = x[i]
            for _ in range(trips[i]):
                v = v * v + 0.5
            loss[None] += v

    fill()
    want = (np.arange(n) % 1000).astype(np.float32) * np.float32(1e-3)
    np.testing.assert_array_equal(x.to_numpy(), want)
    np.testing.assert_array_equal(trips.to_numpy()[:7], [0, 1, 2, 3, 4, 0, 1])
    chain()
    loss.grad[None] = 1.0
    chain.grad()
    # d/dv of v -> v * v + 0.5 is 2 v: the chain rule over the trips, in f64 from the f32 inputs
    v = want.astype(np.float64)[:1000]
    grad = np.ones(1000)
    for k in range(1000):
        value = v[k]
        for _ in range(k % 5):
            grad[k] *= 2 * value
            value = value * value + 0.5
    # each trip's f32 product rounds once (2^-24 relative), at most 4 trips: 1e-6 relative with room
    np.testing.assert_allclose(x.grad.to_numpy()[:1000], grad, rtol=1e-6, atol=1e-7)
    assert backend.wait_idle.map_status is not None
