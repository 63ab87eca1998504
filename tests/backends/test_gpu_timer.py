"""`backend.gpu_timer()` on the GPU backends (WGSL: timestamp queries around passes; CUDA: events recorded at
the block's first launch and at its end) counts device time, not the host's time before the first launch."""
from __future__ import annotations

import time

import numpy as np
import pytest

import wgkern as wk
from wgkern.runtime import program

HOST_PAUSE = 0.2       # seconds of host time inside the block; the kernels take microseconds


def _timer_backend():
    backend = program.current().backend
    if not getattr(backend, "supports_gpu_timer", False):
        pytest.skip(f"{backend.describe()} has no device timer")
    return backend


def test_host_time_before_the_first_launch_is_not_counted(gpu):
    backend = _timer_backend()
    z = wk.field(wk.f32, shape=64)

    @wk.kernel
    def bump():
        for i in z:
            z[i] += 1.0
    bump()
    wk.sync()
    with backend.gpu_timer() as elapsed:
        time.sleep(HOST_PAUSE)
        bump()
        bump()
    assert 0.0 < elapsed.seconds < HOST_PAUSE / 2
    np.testing.assert_array_equal(z.to_numpy(), np.full(64, 3.0, np.float32))


def test_a_block_without_launches_times_nothing(gpu):
    backend = _timer_backend()
    with backend.gpu_timer() as elapsed:
        time.sleep(HOST_PAUSE / 4)
    assert 0.0 <= elapsed.seconds < HOST_PAUSE / 8
