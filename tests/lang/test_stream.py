"""Quadrants' streams and events (lang/stream.py): accepted, launches stay in order on the one queue."""
from __future__ import annotations

import numpy as np

import wgkern as wk


def test_streams_and_events_keep_launch_order(arch):
    x = wk.field(wk.f32, shape=64)
    y = wk.ndarray(wk.f32, shape=64)

    @wk.kernel
    def fill(v: wk.f32):
        for i in x:
            x[i] = v

    @wk.kernel
    def copy(out: wk.types.ndarray(dtype=wk.f32, ndim=1)):
        for i in x:
            out[i] = x[i] + 1

    with wk.create_stream() as s1, wk.create_event() as e:
        s2 = wk.create_stream()
        assert isinstance(s1, wk.Stream) and isinstance(e, wk.Event) and s1.handle == 0
        fill(5.0, qd_stream=s1)
        e.record(s1)
        e.wait(qd_stream=s2)
        copy(y, qd_stream=s2)
        s2.synchronize()
        e.synchronize()
        s2.destroy()
    assert s1.handle == 0 and e.handle == 0
    np.testing.assert_array_equal(y.to_numpy(), np.full(64, 6.0, np.float32))
    fill(qd_stream=s1, v=2.0)
    assert x[3] == 2.0
