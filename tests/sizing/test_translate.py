"""The translator on forward IR: what a loop's trip count translates to, checked against the trip counts the
loops really make (locals whose stores cross a loop's back edge, accumulations, branches)."""
from __future__ import annotations

import pytest

import wgkern.lang.math as wm
from wgkern.frontend import build_kernel
from wgkern.ir import nodes as ir
from wgkern.lang import types as T
from wgkern.lang.kernel import Kernel
from wgkern.passes.pipeline import FORWARD, run_pipeline
from wgkern.sizing import E
from wgkern.sizing.build import _walk_loops
from wgkern.sizing.evaluator import evaluate
from wgkern.sizing.local_values import local_values
from wgkern.sizing.translate import Translator

from ..passes.autodiff.helpers import FakeField
from .helpers import host_context


def innermost_bound(fn, arrays_of) -> tuple[int, ir.OffloadedKernel]:
    """max over the parallel index of the closed trip count of the kernel's innermost serial loop."""
    kernel = run_pipeline(FORWARD, build_kernel(Kernel(fn), [], {}))
    (task,) = kernel.tasks
    parallel = E.BoundVar("i")
    env = {task.loop: parallel}
    loops = list(_walk_loops(task.body))
    for number, loop in enumerate(loops):
        env[loop] = E.BoundVar(f"j{number}")
    translate = Translator(env, local_values(task.body), parallel)
    inner = loops[-1]
    trips = translate.close(E.trip_count(translate(inner.begin), translate(inner.end)), {parallel})
    expr = E.MaxOverRange(parallel, translate(task.loop.begin), translate(task.loop.end), trips)
    context = host_context(kernel, [arrays_of(slot) for slot in kernel.containers])
    return evaluate(expr, context), kernel


def test_a_store_from_the_previous_iteration_is_closed_over_the_loop():
    x, n = FakeField(T.f32, 2, True, "x"), FakeField(T.i32, 2, False, "n")
    n.data[:] = [5, 3]

    def kernel():
        for i in x:
            v = x[i]
            m = n[i]
            for j in range(n[i]):
                for _ in range(j - m):          # m is j - 1 here (n[i] in the first iteration): 1 trip
                    v = wm.abs(v)
                m = j
            x[i] = v
    bound, forward = innermost_bound(kernel, lambda slot: slot.host.data)
    loads = [r for r in local_values(forward.tasks[0].body).loads.values() if len(r.loops) == 1]
    assert any(crossed for r in loads for _, crossed in r.values)     # the store crossed the back edge
    assert bound >= 1 and bound == 4       # j - (lowest m any iteration stored: 0) over j < 5


def test_locals_set_in_branches_are_bounded_exactly():
    x, n = FakeField(T.f32, 3, True, "x"), FakeField(T.i32, 3, False, "n")
    n.data[:] = [4, -2, 7]

    def kernel():
        for i in x:
            v = x[i]
            m = n[i]
            if v > 0.5:
                m = m + 3
            for _ in range(m):
                v = wm.abs(v)
            x[i] = v
    bound, _ = innermost_bound(kernel, lambda slot: slot.host.data)
    assert bound == 7 + 3


@pytest.mark.parametrize("step", [1, 2, -1])
def test_accumulations_count_every_increment(step):
    x, n = FakeField(T.f32, 2, True, "x"), FakeField(T.i32, 2, False, "n")
    n.data[:] = [6, 2]

    def kernel():
        for i in x:
            v = x[i]
            m = 4
            for _ in range(n[i]):
                m += step
                if v > 2.0:
                    m += 1
                for _ in range(m):
                    v = wm.abs(v)
            x[i] = v
    bound, _ = innermost_bound(kernel, lambda slot: slot.host.data)
    # m starts at 4 and each of the max(n) = 6 outer trips may add max(step, 0) and 1 (a decrement only
    # lowers the range's start); the largest m is also the most the loop really makes with the branch taken
    assert bound == 4 + 6 * (max(step, 0) + 1)
