"""backends/wgsl/transfers.py: a host write into a container that recorded launches use lands after them and
before the launches recorded after it, whether its bytes ride in the argument ring or in a buffer of their own."""
from __future__ import annotations

import numpy as np

import wgkern as wk
from wgkern.backends.wgsl import transfers
from wgkern.backends.wgsl.buffers import RING_BYTES, RING_UPLOAD_BYTES
from wgkern.runtime import program


def _scaler(n: int):
    z = wk.field(wk.f32, shape=n)

    @wk.kernel
    def scale(a: wk.f32):
        for i in z:
            z[i] = a * z[i] + 1.0
    return z, scale


def test_small_writes_ride_in_the_ring_in_order(wgsl):
    backend = program.current().backend
    z, scale = _scaler(8)
    z.fill(0.0)
    wk.sync()
    expected = np.zeros(8, np.float32)
    scale(2.0)                                   # pending: z's buffer is used by a recorded launch
    expected = 2 * expected + 1
    used = backend.ring_used
    z[3] = 10.0                                  # after the launch above, before the one below
    expected[3] = 10.0
    assert backend.ring_used == used + backend.offset_alignment and not backend.keepalive
    z.from_numpy(np.arange(8, dtype=np.float32))         # 32 bytes: the ring too
    expected = np.arange(8, dtype=np.float32)
    scale(3.0)                                   # its argument slot stays aligned after the written bytes
    expected = 3 * expected + 1
    z[0] = -1.0
    expected[0] = -1.0
    np.testing.assert_array_equal(z.to_numpy(), expected)      # small integers and halves: exact in f32


def test_large_writes_and_a_full_ring_use_a_buffer_of_their_own(wgsl):
    backend = program.current().backend
    n = RING_UPLOAD_BYTES // 4 + 1               # one element past what rides in the ring
    z, scale = _scaler(n)
    z.fill(1.0)
    scale(2.0)
    z.from_numpy(np.full(n, 4.0, np.float32))
    assert len(backend.keepalive) == 1           # the staged buffer, kept until the submit
    scale(0.5)
    np.testing.assert_array_equal(z.to_numpy(), np.full(n, 3.0, np.float32))
    # a ring with no room left: the write is staged, and still lands in order
    small, bump = _scaler(4)
    small.fill(0.0)
    bump(1.0)
    backend.ring_used = RING_BYTES - 8          # as if launches had filled it (the submit writes it all)
    small[1] = 7.0
    assert backend.ring_used == RING_BYTES - 8 and len(backend.keepalive) == 1
    wk.sync()
    np.testing.assert_array_equal(small.to_numpy(), [1.0, 7.0, 1.0, 1.0])


def test_the_threshold_is_the_ring_upload_size(wgsl):
    """Writes of RING_UPLOAD_BYTES ride in the ring (the constant the module reads at each write)."""
    backend = program.current().backend
    z, scale = _scaler(RING_UPLOAD_BYTES // 4)
    z.fill(0.0)
    scale(1.0)
    z.from_numpy(np.full(RING_UPLOAD_BYTES // 4, 2.0, np.float32))
    assert not backend.keepalive and transfers.RING_UPLOAD_BYTES == RING_UPLOAD_BYTES
    scale(2.0)
    np.testing.assert_array_equal(z.to_numpy(), np.full(RING_UPLOAD_BYTES // 4, 5.0, np.float32))
