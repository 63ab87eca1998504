"""Benchmark of the LLVM CPU backend (not collected by pytest): python -m tests.backends.llvm.bench_cpu [threads]

Prints compile ms of saxpy and of a ~40-statement kernel (cold, first launch included), per-launch overhead of
a 1-element task, and saxpy GB/s on 2^22 f32 with the given number of threads (caller included)."""
from __future__ import annotations

import sys
import time

import numpy as np

from wgkern.backends.base import LaunchArgs
from wgkern.backends.llvm.cpu import CpuBackend
from wgkern.ir.ops import UnaryOpKind
from wgkern.lang import types as T

from ._kernels import elementwise


def main() -> None:
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else None
    started = time.perf_counter()
    backend = CpuBackend(threads)
    print(f"backend start (pool JIT + threads): {(time.perf_counter() - started) * 1e3:.1f} ms, "
          f"{backend.describe()}")

    def many(b, x, y):
        value = x
        for k in range(20):
            value = b.add(b.mul(value, y), b.const(k, T.f32))
            value = b.unary(UnaryOpKind.SIN, value) if k % 5 == 0 else value
        return value

    for name, kernel in [("saxpy", elementwise([T.f32, T.f32], T.f32, lambda b, x, y: b.add(
            b.mul(b.const(2.0, T.f32), x), y))), ("40-stmt", elementwise([T.f32, T.f32], T.f32, many))]:
        bufs = [backend.allocate(32) for _ in range(3)]
        started = time.perf_counter()
        compiled = backend.compile(kernel)
        compiled.launch(LaunchArgs([None] * 3, bufs, [(8,)] * 3))
        total = time.perf_counter() - started
        print(f"{name}: cold compile + first launch {total * 1e3:.1f} ms (codegen {compiled.times.codegen * 1e3:.1f}"
              f" ms, LLVM parse+O3+JIT {compiled.times.llvm * 1e3:.1f} ms)")

    saxpy = backend.compile(elementwise([T.f32, T.f32], T.f32, lambda b, x, y: b.add(
        b.mul(b.const(2.0, T.f32), x), y)))
    one = LaunchArgs([None] * 3, [backend.allocate(4) for _ in range(3)], [(1,)] * 3)
    for _ in range(1000):
        saxpy.launch(one)
    repeats = 200_000
    started = time.perf_counter()
    for _ in range(repeats):
        saxpy.launch(one)
    print(f"1-element launch: {(time.perf_counter() - started) / repeats * 1e6:.2f} us")

    n = 1 << 22
    bufs = [backend.allocate(4 * n) for _ in range(3)]
    for buf in bufs[:2]:
        backend.host_view(buf, np.float32, (n,))[:] = 1.0
    big = LaunchArgs([None] * 3, bufs, [(n,)] * 3)
    for _ in range(5):
        saxpy.launch(big)
    repeats = 50
    started = time.perf_counter()
    for _ in range(repeats):
        saxpy.launch(big)
    seconds = (time.perf_counter() - started) / repeats
    print(f"saxpy 2^22 f32: {seconds * 1e3:.3f} ms/launch, {3 * 4 * n / seconds / 1e9:.1f} GB/s")
    backend.shutdown()


if __name__ == "__main__":
    main()
