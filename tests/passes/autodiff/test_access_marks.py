"""wk.ad.Tape(validation=True) under wk.init(debug=True): the forward launches of the tape mark the elements they
read and fail where one overwrites a marked element (passes/autodiff/access_marks.py)."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk


def _steps(overwrite_in_place: bool):
    """Two-step explicit integration of x with velocity v; `overwrite_in_place` keeps v in one slot per step
    (what Taichi's checker flags: the step's reverse replay would read the next step's velocity)."""
    n, steps = 8, 3
    x = wk.field(wk.f64, shape=(steps + 1, n), needs_grad=True)
    v = wk.field(wk.f64, shape=(steps + 1, n), needs_grad=True)
    loss = wk.field(wk.f64, shape=(), needs_grad=True)

    @wk.kernel
    def advance(f: wk.i32):
        for p in range(n):
            x[f + 1, p] = x[f, p] + 0.1 * v[f, p]

    @wk.kernel
    def accelerate(f: wk.i32):
        for p in range(n):
            if wk.static(overwrite_in_place):
                v[f, p] = v[f, p] * 0.5 - x[f + 1, p]
            else:
                v[f + 1, p] = v[f, p] * 0.5 - x[f + 1, p]

    @wk.kernel
    def total():
        for p in range(n):
            loss[None] += wk.sin(x[steps, p])

    def run():
        for f in range(steps):
            advance(f)
            accelerate(f)
        total()

    return x, v, loss, run


def test_an_overwrite_of_an_element_an_earlier_launch_read_is_reported_with_the_line(arch):
    wk.init(arch=arch, debug=True)
    x, v, loss, run = _steps(overwrite_in_place=True)
    x.from_numpy(np.linspace(0.0, 1.0, 32).reshape(4, 8))
    v.fill(1.0)
    with pytest.raises(wk.KernelAssertionError, match="global data access rule violated") as info:
        with wk.ad.Tape(loss=loss, validation=True):
            run()
    assert "v[f, p] = v[f, p] * 0.5 - x[f + 1, p]" in str(info.value)
    assert isinstance(info.value, AssertionError)


def test_a_program_that_keeps_each_step_apart_passes_and_its_gradient_is_unchanged(arch):
    wk.init(arch=arch, debug=True)
    x, v, loss, run = _steps(overwrite_in_place=False)
    x0 = np.linspace(0.0, 1.0, 32).reshape(4, 8)

    def gradient(validation: bool) -> tuple[float, np.ndarray]:
        x.from_numpy(x0)
        v.fill(1.0)
        with wk.ad.Tape(loss=loss, validation=validation):
            run()
        return loss[None], x.grad.to_numpy()[0].copy()

    value, checked = gradient(True)
    again, _ = gradient(True)                # the marks of the first tape are cleared on entry
    _, plain = gradient(False)
    np.testing.assert_array_equal(checked, plain)
    assert again == value

    def loss_of(x_start: np.ndarray) -> float:     # x3 = x0 (1 - 0.1 (0.1 + 0.5 + 0.25)) + ..., in numpy
        xs, vs = [x_start], [np.ones(8)]
        for _ in range(3):
            xs.append(xs[-1] + 0.1 * vs[-1])
            vs.append(vs[-1] * 0.5 - xs[-1])
        return float(np.sin(xs[-1]).sum())

    eps = 1e-6
    fd = [(loss_of(x0[0] + eps * e) - loss_of(x0[0] - eps * e)) / (2 * eps) for e in np.eye(8)]
    np.testing.assert_allclose(checked, fd, rtol=1e-7)
    assert value == pytest.approx(loss_of(x0[0]), rel=1e-12)


def test_a_store_before_the_read_in_one_launch_and_accumulation_are_allowed(arch):
    wk.init(arch=arch, debug=True)
    a = wk.field(wk.f32, shape=4, needs_grad=True)
    b = wk.field(wk.f32, shape=4, needs_grad=True)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def stage():
        for i in a:
            b[i] = a[i] * 2.0
            loss[None] += b[i] * b[i]       # reads b after this launch stored it: the replay sees the same value

    @wk.kernel
    def use():
        for i in b:
            loss[None] += b[i]

    a.from_numpy(np.arange(4, dtype=np.float32))
    with wk.ad.Tape(loss=loss, validation=True):
        stage()
        stage()                             # the second store does not change what the first launch replays
    np.testing.assert_allclose(a.grad.to_numpy(), 16.0 * np.arange(4))
    with pytest.raises(wk.KernelAssertionError, match="'b' is overwritten here"):
        with wk.ad.Tape(loss=loss, validation=True):
            stage()
            use()
            stage()                         # overwrites b after use() read it


def test_launches_whose_reads_are_not_replayed_are_not_marked(arch):
    # inside a grad_replaced function (custom gradient) and @no_grad kernels the reads are never replayed
    wk.init(arch=arch, debug=True)
    a = wk.field(wk.f32, shape=4, needs_grad=True)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def halve_in_place():
        for i in a:
            a[i] = a[i] * 0.5

    @wk.ad.no_grad
    @wk.kernel
    def peek():
        for i in a:
            loss[None] += a[i] * 0.0

    @wk.kernel
    def total():
        for i in a:
            loss[None] += a[i]

    @wk.ad.grad_replaced
    def custom():
        halve_in_place()

    @wk.ad.grad_for(custom)
    def custom_grad():
        a.grad.from_numpy(a.grad.to_numpy() * 0.5)

    a.fill(2.0)
    with wk.ad.Tape(loss=loss, validation=True):
        peek()
        custom()
        total()
    np.testing.assert_allclose(a.grad.to_numpy(), [0.5] * 4)
    assert loss[None] == pytest.approx(4.0)
