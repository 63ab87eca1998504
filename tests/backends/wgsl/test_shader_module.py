"""Shader modules without loop bounding: a data-dependent loop still runs to the right result, naga's
validation errors still raise, and out-of-range accesses still cannot escape their binding."""
from __future__ import annotations

import numpy as np
import pytest

from wgkern.backends.wgsl.shader_module import create_shader_module

_COLLATZ = """
@group(0) @binding(0) var<storage, read_write> data: array<u32>;
@group(0) @binding(1) var<storage, read_write> fence: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  if (g.x >= arrayLength(&data) || fence[0] == 12345u) { return; }
  var n = data[g.x];
  var steps = 0u;
  while (n != 1u) {
    n = select(3u * n + 1u, n / 2u, n % 2u == 0u);
    steps = steps + 1u;
  }
  data[g.x] = steps;
  data[g.x + 1000000u] = 7u;     // out of range: dropped or clamped, never written into `fence`
}
"""


def _collatz_steps(n: int) -> int:
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def test_data_dependent_loops_run_and_stay_in_bounds(backend) -> None:
    import wgpu
    device = backend.device
    values = np.arange(1, 257, dtype=np.uint32)
    usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC
    data = device.create_buffer_with_data(data=values, usage=usage)
    fence = device.create_buffer_with_data(data=np.zeros(64, np.uint32), usage=usage)
    module = create_shader_module(device, _COLLATZ)
    pipeline = device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
    group = device.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=[
        {"binding": 0, "resource": {"buffer": data}}, {"binding": 1, "resource": {"buffer": fence}}])
    encoder = device.create_command_encoder()
    compute_pass = encoder.begin_compute_pass()
    compute_pass.set_pipeline(pipeline)
    compute_pass.set_bind_group(0, group)
    compute_pass.dispatch_workgroups(4)
    compute_pass.end()
    device.queue.submit([encoder.finish()])
    got = np.frombuffer(device.queue.read_buffer(data), np.uint32)
    want = np.array([_collatz_steps(int(v)) for v in values], np.uint32)
    # the out-of-range store may be clamped onto the last element (naga's Restrict policy): all others exact
    np.testing.assert_array_equal(got[:-1], want[:-1])
    assert not np.frombuffer(device.queue.read_buffer(fence), np.uint32).any()


def test_invalid_wgsl_still_raises_a_validation_error(backend) -> None:
    import wgpu
    with pytest.raises(wgpu.GPUValidationError, match="u32"):
        create_shader_module(backend.device, "fn main() { let x: u32 = 1.5f; }")
