"""wk.perf_dispatch (lang/perf_dispatch.py): Quadrants' dispatcher measuring its registered implementations per
geometry and then running the fastest."""
from __future__ import annotations

import time

import numpy as np
import pytest

import wgkern as wk


def make_dispatcher(calls: list[str], **options):
    @wk.perf_dispatch(get_geometry_hash=lambda a: hash(a.shape), **options)
    def step(a: wk.types.NDArray[wk.i32, 1]): ...

    @step.register
    def slow(a: wk.types.NDArray[wk.i32, 1]) -> None:
        calls.append("slow")
        time.sleep(0.05)          # far slower than the kernel, even on a loaded machine

    @step.register
    @wk.kernel
    def fast(a: wk.types.NDArray[wk.i32, 1]) -> None:
        for i in a:
            a[i] += 1

    @step.register(is_compatible=lambda a: a.shape[0] > 100)
    def only_big(a: wk.types.NDArray[wk.i32, 1]) -> None:
        calls.append("only_big")

    return step


def test_measures_round_robin_then_runs_the_fastest(arch):
    calls: list[str] = []
    step = make_dispatcher(calls, first_warmup=2, warmup=0, repeat_after_count=3, repeat_after_seconds=0)
    a = wk.ndarray(wk.i32, shape=4)
    for _ in range(6):          # 2 compatible implementations x (2 warm-up + 1 timed) calls, alternating
        step(a)
    assert calls == ["slow"] * 3 and a.to_numpy().tolist() == [3] * 4
    for _ in range(3):          # the fastest, three times, then a new measurement (no warm-up)
        step(a)
    assert calls == ["slow"] * 3 and a[0] == 6
    step(a)
    step(a)
    assert calls == ["slow"] * 4 and a[0] == 7
    big = wk.ndarray(wk.i32, shape=128)       # another geometry: measured on its own, three implementations
    for _ in range(3):
        step(big)
    assert calls == ["slow"] * 5 + ["only_big"] and big[0] == 1


def test_force_and_errors(arch, monkeypatch):
    calls: list[str] = []
    step = make_dispatcher(calls)
    monkeypatch.setenv("WK_PERF_DISPATCH_FORCE", "step:slow, other:x")
    a = wk.ndarray(wk.i32, shape=4)
    for _ in range(4):
        step(a)
    assert calls == ["slow"] * 4 and a[0] == 0
    monkeypatch.setenv("WK_PERF_DISPATCH_FORCE", "step")
    with pytest.raises(ValueError, match="Malformed"):
        step(a)
    monkeypatch.delenv("WK_PERF_DISPATCH_FORCE")

    with pytest.raises(wk.WkError, match="KERNEL_ANNOTATION_ORDER"):
        @wk.kernel
        @step.register
        def late(a: wk.types.NDArray[wk.i32, 1]) -> None: ...

    with pytest.raises(wk.WkError, match="PERFDISPATCH_ANNOTATION_SEQUENCE_MISMATCH"):
        @step.register
        @wk.kernel
        def renamed(b: wk.types.NDArray[wk.i32, 1]) -> None: ...

    @wk.perf_dispatch(get_geometry_hash=lambda x: 0)
    def nothing(x): ...

    @nothing.register(is_compatible=lambda x: x > 0)
    def positive(x):
        return np.sqrt(x)

    assert nothing(4) == 2.0
    with pytest.raises(wk.WkError, match="no registered implementation is compatible"):
        nothing(-1)
