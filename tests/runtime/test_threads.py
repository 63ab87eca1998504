"""Kernels launched from several Python threads at once (Quadrants' test_concurrent_kernels): launches of one
kernel with numpy arguments, scalars and return values, and host reads of ndarrays, interleaved across
threads, each give the result that thread would get alone."""
from __future__ import annotations

import threading

import numpy as np

import wgkern as wk

THREADS = 6
ROUNDS = 10


def test_threads_launch_one_kernel_and_read_back_without_mixing_their_data(arch):
    total = wk.field(wk.i32, shape=())

    @wk.kernel
    def step(x: wk.types.ndarray(dtype=wk.i32, ndim=1), k: wk.i32) -> wk.i32:
        for i in x:
            x[i] = x[i] * 2 + k
            wk.atomic_add(total[None], 1)
        return k * 10

    @wk.kernel
    def other(x: wk.types.ndarray(dtype=wk.i32, ndim=1)):
        for i in x:
            x[i] += 1

    devices = [wk.ndarray(wk.i32, (256,)) for _ in range(THREADS)]
    hosts = [np.ones(256, np.int32) for _ in range(THREADS)]
    for d in devices:
        d.fill(1)
    counters = [wk.ndarray(wk.i32, (64,)) for _ in range(THREADS)]
    barrier = threading.Barrier(THREADS)
    failures: list[str] = []

    def work(k: int) -> None:
        try:
            barrier.wait(timeout=30)
            for r in range(ROUNDS):
                if step(devices[k], k) != k * 10 or step(hosts[k], k) != k * 10:
                    failures.append(f"thread {k}: a return value of another thread")
                other(counters[k])
                if counters[k].to_numpy().tolist() != [r + 1] * 64:
                    failures.append(f"thread {k}: its ndarray read back wrong in round {r}")
        except Exception as exc:  # noqa: BLE001 - reported below with the thread
            failures.append(f"thread {k}: {exc!r}")

    workers = [threading.Thread(target=work, args=(k,)) for k in range(THREADS)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=300)
    assert not failures, failures[:3]
    for k in range(THREADS):
        expected = 1
        for _ in range(ROUNDS):
            expected = expected * 2 + k
        assert devices[k].to_numpy().tolist() == [expected] * 256
        assert hosts[k].tolist() == [expected] * 256
    assert total[None] == THREADS * ROUNDS * 2 * 256
