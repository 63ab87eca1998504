"""Containers larger than one storage binding of the WGSL device (lavapipe: 128 MiB; backends/wgsl/split.py binds
them as windows) run kernels on every arch: saxpy, atomics into the big array, a reverse kernel whose
gradients have closed forms, fill / from_numpy / to_numpy, and element access.

Every value checked is exact in f32 (small integers, multiplications by powers of two), so the checks are
equalities. The 1 GiB cases carry the `bigmem` marker (`-m "not bigmem"` leaves them out)."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from wgkern.runtime import program as program_module

MB = 1000 * 1000


def require_buffer(nbytes: int) -> None:
    """Skip where the device cannot hold one buffer of `nbytes` (WGSL devices under webgpu_profile='baseline'
    offer 256 MiB)."""
    limit = getattr(program_module.current().backend, "max_buffer", None)
    if limit is not None and nbytes > limit:
        pytest.skip(f"needs a buffer of {nbytes} bytes; this device's max_buffer_size is {limit}")


def repeated(period: list[float], n: int) -> np.ndarray:
    """`period` repeated to n f32 values (index arithmetic over 10^8 int64 values is slow)."""
    rows = np.broadcast_to(np.asarray(period, np.float32), (-(-n // len(period)), len(period)))
    return rows.reshape(-1)[:n]


def pattern(n: int) -> np.ndarray:
    """i % 1000."""
    return repeated(list(range(1000)), n)


def powers(n: int) -> np.ndarray:
    """2^(i % 3)."""
    return repeated([1.0, 2.0, 4.0], n)


def assert_equal(got: np.ndarray, expected: np.ndarray | float) -> None:
    """Exact equality, naming the first element that differs (cheaper than numpy.testing on 10^8 elements)."""
    same = got == expected
    if not same.all():
        k = int(np.argmin(same))
        want = expected if np.isscalar(expected) else expected[k]
        raise AssertionError(f"{np.count_nonzero(~same)} of {got.size} elements differ; first at [{k}]: "
                             f"{got[k]} != {want}")


def check_saxpy_atomics_and_reverse(x, y, n: int, saxpy, scatter, doubling) -> None:
    values = pattern(n)
    x.from_numpy(values)
    y.fill(1.0)
    saxpy(2.0)
    got = y.to_numpy()
    assert_equal(got, 2 * values + 1)
    del got
    y.fill(0.0)
    scatter()        # y[n - 1 - i // 2] += 1: the upper half gets 2 (colliding atomics), past every window edge
    got = y.to_numpy()
    assert not got[:n - n // 2 - 1].any()
    assert_equal(got[n - n // 2:], 2.0)
    del got
    doubling()
    factors = powers(n)
    assert_equal(y.to_numpy(), values * factors)
    y.grad.fill(1.0)
    x.grad.fill(0.0)
    doubling.grad()
    assert_equal(x.grad.to_numpy(), factors)


def test_a_160mb_ndarray_runs_saxpy_atomics_and_a_reverse_kernel(arch):
    n = 160 * MB // 4
    require_buffer(4 * n)
    x = wk.ndarray(wk.f32, shape=n, needs_grad=True)
    y = wk.ndarray(wk.f32, shape=n, needs_grad=True)

    @wk.kernel
    def saxpy(a: wk.f32, x: wk.types.ndarray(), y: wk.types.ndarray()):
        for i in x:
            y[i] = a * x[i] + y[i]

    @wk.kernel
    def scatter(x: wk.types.ndarray(), y: wk.types.ndarray()):
        for i in x:
            y[n - 1 - i // 2] += 1.0

    @wk.kernel
    def doubling(x: wk.types.ndarray(), y: wk.types.ndarray()):
        for i in x:      # y = x * 2^(i % 3) through a loop of run-time trip count: an adstack in the reverse
            v = x[i]
            for _ in range(i % 3):
                v = v * 2.0
            y[i] = v

    class Bound:
        """The kernels with this test's arrays bound (the field test calls its kernels without arguments)."""
        def __init__(self, k):
            self.k = k

        def __call__(self, *scalars):
            self.k(*scalars, x, y)

        def grad(self):
            self.k.grad(x, y)

    check_saxpy_atomics_and_reverse(x, y, n, Bound(saxpy), Bound(scatter), Bound(doubling))


def test_a_600mb_field_runs_saxpy_atomics_and_a_reverse_kernel(arch):
    """One 600 MB field (and its gradient): saxpy in place, atomics into it, and a reverse kernel through a
    loop of run-time trip count: loss = sum x[i] * 2^(i % 3), so d loss / d x[i] = 2^(i % 3)."""
    n = 600 * MB // 4
    require_buffer(4 * n)
    x = wk.field(wk.f32, shape=n, needs_grad=True)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def saxpy(a: wk.f32):
        for i in x:
            x[i] = a * x[i] + 1.0

    @wk.kernel
    def scatter():
        for i in x:
            x[n - 1 - i // 2] += 1.0

    @wk.kernel
    def doubled_sum():
        for i in x:
            v = x[i]
            for _ in range(i % 3):
                v = v * 2.0
            loss[None] += v

    values = pattern(n)
    x.from_numpy(values)
    saxpy(2.0)
    scatter()
    got = x.to_numpy()
    expected = 2 * values + 1
    expected[n - n // 2:] += 2.0
    assert_equal(got, expected)
    del got, expected
    with wk.ad.Tape(loss=loss):
        doubled_sum()
    assert_equal(x.grad.to_numpy(), powers(n))


@pytest.mark.bigmem
def test_a_1gib_ndarray_runs_saxpy(arch):
    """fill, saxpy, and a check on the device (a host copy of 1 GiB would take longer than the kernels)."""
    n = (1 << 30) // 4
    require_buffer(4 * n)
    x = wk.ndarray(wk.f32, shape=n)
    wrong = wk.field(wk.i32, shape=())

    @wk.kernel
    def saxpy(a: wk.f32, x: wk.types.ndarray()):
        for i in x:
            x[i] = a * x[i] + 1.0

    @wk.kernel
    def count_wrong(x: wk.types.ndarray()):
        for i in x:
            if x[i] != 7.0:
                wrong[None] += 1

    x.fill(3.0)
    saxpy(2.0, x)
    count_wrong(x)
    assert wrong[None] == 0
    assert x[0] == 7.0 and x[n - 1] == 7.0


@pytest.mark.bigmem
def test_an_ndarray_past_1gib_starts_zeroed_and_reads_back_elements(arch):
    """One i32 past 1 GiB: Quadrants' test_ndarray_exceeds_default_device_memory_gb reads these elements."""
    n = (1 << 30) // 4 + 1
    require_buffer(4 * n)
    a = wk.ndarray(wk.i32, shape=(n,))
    assert a[0] == 0 and a[n // 2] == 0 and a[n - 1] == 0
    a[n - 1] = 7
    assert a[n - 1] == 7 and a[n - 2] == 0
