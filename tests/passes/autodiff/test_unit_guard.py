"""passes/autodiff/unit_guard.py on the reference interpreter: which tasks are guarded, and that an overflowed
unit commits nothing, marks itself, and is the only unit a re-run runs."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern.lang.math as wm
from wgkern.errors import AdStackOverflowError
from wgkern.ir import nodes as ir
from wgkern.ir.interpreter import Interpreter
from wgkern.lang import types as T
from wgkern.passes.autodiff.unit_guard import HEADER_WORDS, UNIT_STATE_KIND

from .helpers import FakeField, compile_forward, compile_reverse, launch

STEP = 0.1


def _while_program(trips: list[int]):
    x = FakeField(T.f64, len(trips), True, "x")
    n = FakeField(T.i32, len(trips), False, "n")
    y = FakeField(T.f64, len(trips), True, "y")
    x.data[:] = np.linspace(0.2, 0.9, len(trips))
    n.data[:] = trips

    def walk():
        for i in x:
            v = x[i]
            j = 0
            while j < n[i]:
                v = v + STEP * wm.sin(v)
                j += 1
            y[i] = v
    return x, n, y, walk


def _expected(x0: float, trips: int) -> float:
    v, d = x0, 1.0
    for _ in range(trips):
        d *= 1.0 + STEP * np.cos(v)
        v = v + STEP * np.sin(v)
    return d


def _arrays(kernel: ir.OffloadedKernel, state: np.ndarray) -> list[np.ndarray]:
    return [state if slot.kind == UNIT_STATE_KIND else slot.host.data for slot in kernel.containers]


def test_only_tasks_with_unsized_stacks_are_guarded():
    x, n, y, walk = _while_program([1, 2])
    grad = compile_reverse(walk)
    states = [s for s in grad.containers if s.kind == UNIT_STATE_KIND]
    assert len(states) == 1

    sized_x = FakeField(T.f64, 2, True, "sx")
    sized_n = FakeField(T.i32, 2, False, "sn")

    def sized():
        for i in sized_x:
            v = sized_x[i]
            for _ in range(sized_n[i]):         # the sizer bounds this one: nothing to grow, no guard
                v = v + STEP * wm.sin(v)
            sized_x[i] = v
    assert not [s for s in compile_reverse(sized).containers if s.kind == UNIT_STATE_KIND]


def test_an_overflowed_unit_commits_nothing_and_a_rerun_runs_only_it():
    trips = [2, 9, 1, 12]
    x, n, y, walk = _while_program(trips)
    launch(compile_forward(walk))
    grad = compile_reverse(walk)
    y.grad.data[:] = 1.0
    state = np.zeros(HEADER_WORDS + len(trips), np.int32)
    state[1] = 1
    small = 5                                        # units 1 and 3 need more than 5 slots

    with pytest.raises(AdStackOverflowError):
        Interpreter(grad, _arrays(grad, state), [], stack_capacity=lambda s: small).run()
    expected = [_expected(a, t) for a, t in zip(x.data, trips)]
    np.testing.assert_allclose(x.grad.data[[0, 2]], [expected[0], expected[2]], rtol=1e-12)
    assert list(x.grad.data[[1, 3]]) == [0.0, 0.0]          # no partial adjoint from an overflowed unit
    assert list(state[HEADER_WORDS:]) == [0, 1, 0, 1]          # and each marked itself with the mark word

    assert list(y.grad.data) == [0.0, 1.0, 0.0, 1.0]           # their seeds are still there to be consumed
    state[:HEADER_WORDS] = (1, 2)                              # re-run the units marked 1, with room
    Interpreter(grad, _arrays(grad, state), [], stack_capacity=lambda s: 64).run()
    np.testing.assert_allclose(x.grad.data, expected, rtol=1e-12)    # units 0 and 2 were not counted twice
    assert list(state[HEADER_WORDS:]) == [0, 0, 0, 0]          # done: the states are clean again
