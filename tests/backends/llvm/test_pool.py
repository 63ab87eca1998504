"""The native worker pool and launch path: several threads really run one range, concurrent launches from
Python threads, shutdown/restart, launch overhead and compile cost stay small."""
from __future__ import annotations

import ctypes
import threading
import time

import numpy as np
import pytest

from wgkern.backends.base import LaunchArgs
from wgkern.ir import nodes as ir
from wgkern.ir.ops import AtomicOpKind as A
from wgkern.ir.ops import BinaryOpKind as B
from wgkern.lang import types as T

from ._kernels import const, elementwise, ndarray_args, ndarray_slot, range_task, run, shape_of

SPIN_LIMIT = 20_000_000


def rendezvous_kernel() -> ir.OffloadedKernel:
    """Every index arrives at a counter, then spins (bounded) until two arrivals are seen; met[i] = 1 if it saw
    them before the limit. Index 0 can only succeed promptly if another thread runs another chunk."""
    counter = ndarray_slot("counter", T.i32, 1, 0)
    met = ndarray_slot("met", T.i32, 1, 1)

    def body(b, i):
        zero = b.const(0, T.i32)
        b.atomic(A.ADD, b.global_ptr(counter, [zero]), b.const(1, T.i32))
        spins = b.alloca(T.i32)
        loop = b.while_()
        with b.at(loop.body):
            seen = b.atomic(A.ADD, b.global_ptr(counter, [zero]), zero)
            done = b.if_(b.binary(B.BIT_OR, b.binary(B.CMP_GE, seen, b.const(2, T.i32)),
                                  b.binary(B.CMP_GE, b.load(spins), b.const(SPIN_LIMIT, T.i32))))
            with b.at(done.then_block):
                b.insert(ir.Break())
            b.store(spins, b.add(b.load(spins), b.const(1, T.i32)))
        ok = b.cast(b.binary(B.CMP_LT, b.load(spins), b.const(SPIN_LIMIT, T.i32)), T.i32)
        b.global_store(b.global_ptr(met, [i]), ok)

    return ir.OffloadedKernel("rendezvous", ndarray_args([counter, met]), [counter, met],
                              [range_task(const(0), shape_of(met), body)])


def test_big_range_uses_more_than_one_thread(backend) -> None:
    if len(backend.pool.threads) == 0:
        pytest.skip("one CPU: the pool has no workers")
    assert backend.worker_threads() == len(backend.pool.threads)
    compiled = backend.compile(rendezvous_kernel())
    counter, met = run(backend, compiled, [np.zeros(1, np.int32), np.zeros(1 << 14, np.int32)])
    assert counter[0] == 1 << 14
    assert met[0] == 1


def test_small_range_runs_inline(backend) -> None:
    """Two indices are below two chunks: both run on the caller, so index 0 waits out its spin limit."""
    compiled = backend.compile(rendezvous_kernel())
    counter, met = run(backend, compiled, [np.zeros(1, np.int32), np.zeros(2, np.int32)])
    assert counter[0] == 2 and met.tolist() == [0, 1]


def test_concurrent_launches_from_python_threads(backend) -> None:
    compiled = backend.compile(elementwise([T.i64], T.i64, lambda b, x: b.mul(x, b.const(3, T.i64))))
    errors: list[str] = []

    def worker(seed: int) -> None:
        for _ in range(20):
            data = np.arange(seed, seed + (1 << 16), dtype=np.int64)
            got = run(backend, compiled, [data, np.zeros_like(data)])[1]
            if not np.array_equal(got, data * 3):
                errors.append(f"thread {seed}")

    threads = [threading.Thread(target=worker, args=(k * 1000,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_pool_stop_and_restart() -> None:
    """Workers stop when the last backend shuts down (launches then run inline) and come back with a new one."""
    from wgkern.backends.llvm.cpu import CpuBackend
    from wgkern.backends.llvm.worker_pool import worker_pool
    pool = worker_pool()
    users = pool.users
    backend = CpuBackend()
    compiled = backend.compile(elementwise([T.f32], T.f32, lambda b, x: b.add(x, x)))
    data = np.arange(1 << 16, dtype=np.float32)
    for _ in range(users):
        pool.release()
    backend.shutdown()
    backend.shutdown()
    assert backend.worker_threads() == 0
    np.testing.assert_array_equal(run(backend, compiled, [data, np.zeros_like(data)])[1], data * 2)
    restarted = CpuBackend()
    for _ in range(users):
        pool.acquire()
    assert restarted.worker_threads() == len(restarted.pool.threads)
    np.testing.assert_array_equal(run(restarted, compiled, [data, np.zeros_like(data)])[1], data * 2)
    restarted.shutdown()
    assert pool.users == users and pool.worker_count() == len(pool.threads)


def test_launch_overhead_is_microseconds(backend) -> None:
    compiled = backend.compile(elementwise([T.f32], T.f32, lambda b, x: b.add(x, x)))
    buffers = [backend.allocate(4), backend.allocate(4)]
    args = LaunchArgs([None, None], buffers, [(1,), (1,)])
    for _ in range(100):
        compiled.launch(args)
    started = time.perf_counter()
    for _ in range(2000):
        compiled.launch(args)
    per_launch = (time.perf_counter() - started) / 2000
    assert per_launch < 50e-6


def test_compile_cost_of_a_forty_statement_kernel(backend) -> None:
    def many(b, x, y):
        value = x
        for k in range(20):
            value = b.add(b.mul(value, y), b.const(k, T.f32))
            value = b.unary(ir.UnaryOpKind.SIN, value) if k % 5 == 0 else value
        return value

    kernel = elementwise([T.f32, T.f32], T.f32, many)
    started = time.perf_counter()
    compiled = backend.compile(kernel)
    run(backend, compiled, [np.ones(8, np.float32), np.ones(8, np.float32), np.zeros(8, np.float32)])
    assert time.perf_counter() - started < 0.5


def test_many_launches_with_parked_and_spinning_workers(backend) -> None:
    """Back-to-back launches of varying size, some after pauses long enough for workers to sleep on the futex:
    every launch must complete with every index done exactly once."""
    counter = ndarray_slot("counter", T.i64, 1, 0)
    hits = ndarray_slot("hits", T.i32, 1, 1)

    def body(b, i):
        b.atomic(A.ADD, b.global_ptr(counter, [b.const(0, T.i32)]), b.const(1, T.i64))
        b.atomic(A.ADD, b.global_ptr(hits, [i]), b.const(1, T.i32))

    kernel = ir.OffloadedKernel("hits", ndarray_args([counter, hits]), [counter, hits],
                                [range_task(const(0), lambda b: b.insert(ir.ArgLoad(arg_index=2, dtype=T.i32)),
                                            body)])
    kernel.args.append(ir.ArgSpec(name="n", kind="scalar", dtype=T.i32))
    compiled = backend.compile(kernel)
    size = 1 << 17
    buffers = [backend.allocate(8), backend.allocate(4 * size)]
    count = backend.host_view(buffers[0], np.int64, (1,))
    hit = backend.host_view(buffers[1], np.int32, (size,))
    rng = np.random.default_rng(7)
    expected_total = 0
    for launch in range(300):
        n = int(rng.integers(0, size))
        expected_total += n
        compiled.launch(LaunchArgs([None, None, n], buffers, [(1,), (size,)]))
        if launch % 50 == 0:
            time.sleep(0.01)
    assert count[0] == expected_total
    assert hit.sum() == expected_total


def test_caller_sleeps_while_a_worker_finishes_the_last_chunk(backend) -> None:
    """A worker's chunk outlasts the caller's: the caller sleeps on the futex until that worker finishes (a
    spinning or yielding caller takes CPU time the preempted worker needs on a busy machine), and is woken."""
    if len(backend.pool.threads) == 0:
        pytest.skip("one CPU: the pool has no workers")
    from wgkern.backends.llvm.jit import function_address
    chunk_fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int32)
    parallel_for = ctypes.CFUNCTYPE(None, chunk_fn, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                                    ctypes.c_int64)(function_address("wk_parallel_for"))
    ran: list[tuple[int, int]] = []
    worker_delay = 0.2

    def run_chunk(_args, begin, end, worker):
        ran.append((begin, end))
        if worker == 0 and len(ran) == 1:
            time.sleep(0.02)           # the caller's first chunk: long enough for a worker to wake and claim one
        elif worker != 0:
            time.sleep(worker_delay)    # a worker's chunk: the caller runs out of chunks and waits for it

    callback = chunk_fn(run_chunk)
    sleeps = backend.pool.caller_sleeps()
    cpu_started, wall_started = time.thread_time(), time.perf_counter()
    parallel_for(callback, None, 0, 64, 1)
    cpu, wall = time.thread_time() - cpu_started, time.perf_counter() - wall_started
    chunks = sorted(ran)      # every index run once: the chunks (their size follows the core count) tile [0, 64)
    assert chunks[0][0] == 0 and chunks[-1][1] == 64 and all(a[1] == b[0] for a, b in zip(chunks, chunks[1:]))
    assert wall >= worker_delay
    assert backend.pool.caller_sleeps() > sleeps
    # The caller's CPU time: its chunks (sleeps) and the spin before it sleeps (4096 hints, under 1 ms); a caller
    # that spun or yielded through the worker's 200 ms would spend most of them on the CPU.
    assert cpu < worker_delay / 4
