"""Errors a device records during launches (backends/base.raise_pending and each backend's waits): each is raised
once, by the first wait after the launch that caused it, naming that launch's kernel; every other flag the same
wait finds is cleared with it (and named in a note), so a later unrelated wait raises nothing."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from wgkern.backends.base import raise_pending
from wgkern.runtime.program import get_program


def test_raise_pending_raises_the_first_error_with_the_others_as_notes():
    raise_pending([None, None])                          # nothing found: nothing raised
    first, second = wk.LoopLimitError("loop cut short"), wk.AdStackOverflowError("stack full")
    with pytest.raises(wk.LoopLimitError, match="loop cut short") as info:
        raise_pending([None, first, second])
    assert info.value.__notes__ == ["also found by this wait (and cleared): AdStackOverflowError: stack full"]


def test_a_tape_over_a_long_while_loop_reports_its_error_once(arch):
    """A Tape over a `while` of 10^6 trips per thread: on lavapipe the forward kernel's loop runs into the
    driver's loop budget, and the LoopLimitError names `walk` (not its gradient kernel), raised once; elsewhere
    the gradient kernel's adstack grows to the 10^6 trips (runtime/adstack_regrow.py) and the Tape succeeds.
    Either way the next launch, read-back and sync of an unrelated kernel succeed."""
    x = wk.field(wk.f32, shape=4, needs_grad=True)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)
    y = wk.field(wk.f32, shape=4)

    @wk.kernel
    def walk(n: wk.i32):
        for i in x:
            v = x[i]
            k = 0
            while k < n:
                v = wk.sin(v) + 0.5       # the gradient needs every v: one adstack push per trip
                k += 1
            loss[None] += v

    @wk.kernel
    def ramp():
        for i in y:
            y[i] = i * 2.0

    x.fill(0.5)
    if "llvmpipe" in get_program().description.lower():
        with pytest.raises(wk.LoopLimitError, match="kernel walk: lavapipe ended its loop"):
            with wk.ad.Tape(loss=loss):
                walk(10 ** 6)
            wk.sync()
    else:
        with wk.ad.Tape(loss=loss):
            walk(10 ** 6)
        assert np.isfinite(x.grad.to_numpy()).all() and wk.stats()["adstack_reruns"] > 0
    ramp()
    assert y.to_numpy().tolist() == [0.0, 2.0, 4.0, 6.0]
    wk.sync()
    ramp()
    assert y[3] == 6.0

