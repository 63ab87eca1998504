"""wk.ad and kernel.grad() through the runtime: Tape replay, custom gradients, grad_check, the loop-bound
generation guard, and the clear error for reverse kernels that need adstacks the backend cannot run yet."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from tests.error_bounds import f32_bound


def _setup():
    x = wk.field(wk.f32, shape=16, needs_grad=True, name="x")
    y = wk.field(wk.f32, shape=(), needs_grad=True, name="y")

    @wk.kernel
    def compute():
        for i in x:
            y[None] += wk.sin(x[i]) * x[i]

    x.from_numpy(np.linspace(0, 1, 16, dtype=np.float32))
    return x, y, compute


def _expected(v):
    return np.cos(v) * v + np.sin(v)


def test_kernel_grad(arch):
    x, y, compute = _setup()
    compute()
    y.grad[None] = 1.0
    compute.grad()
    assert np.allclose(x.grad.to_numpy(), _expected(np.linspace(0, 1, 16)), atol=1e-5)


def test_tape_replays_in_reverse(arch):
    x, y, compute = _setup()
    z = wk.field(wk.f32, shape=16, needs_grad=True, name="z")

    @wk.kernel
    def double():
        for i in x:
            z[i] = 2.0 * x[i]

    @wk.kernel
    def total():
        for i in z:
            y[None] += z[i] * z[i]

    x.grad.fill(5.0)                     # cleared by the tape
    with wk.ad.Tape(loss=y):
        double()
        total()
    v = np.linspace(0, 1, 16)
    assert np.allclose(x.grad.to_numpy(), 8 * v, atol=1e-5)     # d/dx sum (2x)^2
    assert y.grad[None] == 1.0
    loss = y[None]
    with wk.ad.Tape(loss=y):             # the tape sets the loss to 0 on entry (as Taichi's): no doubling
        double()
        total()
    # the 16 atomic adds of positive terms may land in another order: each sum is within 16 operations' bound
    assert y[None] == pytest.approx(loss, abs=2 * f32_bound(16, loss))
    assert np.allclose(x.grad.to_numpy(), 8 * v, atol=1e-5)


def test_grad_replaced(arch):
    x, y, compute = _setup()
    calls = []

    @wk.ad.grad_replaced
    def forward():
        compute()

    @wk.ad.grad_for(forward)
    def backward():
        calls.append("backward")
        x.grad.fill(42.0)

    with wk.ad.Tape(loss=y):
        forward()
    assert calls == ["backward"] and x.grad[0] == 42.0


def test_grad_check(arch):
    x, y, compute = _setup()
    assert wk.ad.grad_check(compute, [x], y) < 1e-2

    @wk.kernel
    def wrong():
        for i in x:
            y[None] += x[i] * x[i]

    # a custom gradient that lies is caught
    @wk.ad.grad_replaced
    def lying():
        wrong()

    @wk.ad.grad_for(lying)
    def lying_grad():
        x.grad.fill(0.0)

    with pytest.raises(AssertionError, match="finite differences"):
        wk.ad.grad_check(lying, [x], y)


def test_loop_bound_changed_since_forward(arch):
    x = wk.field(wk.f32, shape=8, needs_grad=True)
    n = wk.field(wk.i32, shape=8, name="trips")
    y = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def linear():
        for i in x:
            for _ in range(n[i]):
                y[None] += x[i] * 2.0

    n.fill(3)
    linear()
    y.grad[None] = 1.0
    linear.grad()
    assert x.grad.to_numpy().tolist() == [6.0] * 8
    n.fill(4)
    with pytest.raises(wk.WkError, match="trips"):
        linear.grad()
    linear()
    linear.grad()                        # fine again after a new forward launch


def test_adstack_kernels_raise_clearly_on_a_backend_without_adstacks(arch, monkeypatch):
    """Every backend here runs adstacks; one that did not (a backend being ported) must refuse such a .grad()
    with an error naming the adstack, not run it without one."""
    x = wk.field(wk.f32, shape=4, needs_grad=True)
    y = wk.field(wk.f32, shape=(), needs_grad=True)
    n = wk.field(wk.i32, shape=4)

    @wk.kernel
    def carried():
        for i in x:
            v = x[i]
            for _ in range(n[i]):
                v = wk.sin(v) + 0.1
            y[None] += v

    n.fill(2)
    carried()
    from wgkern.runtime.program import current
    monkeypatch.setattr(type(current().backend), "supports_adstack", False)
    with pytest.raises(wk.WkError, match="adstack"):
        carried.grad()


def test_tape_errors(arch):
    f = wk.field(wk.f32, shape=())
    with pytest.raises(wk.WkError, match="needs_grad"):
        wk.ad.Tape(loss=f)
    with pytest.raises(wk.WkError, match="'v' has shape \\(4,\\); the loss must be a 0-d field"):
        wk.ad.Tape(loss=wk.field(wk.f32, shape=4, needs_grad=True, name="v"))
    y = wk.field(wk.f32, shape=(), needs_grad=True)
    with wk.ad.Tape(loss=y):
        with pytest.raises(wk.WkError, match="nested"):
            with wk.ad.Tape(loss=y):
                pass
    with pytest.raises(wk.WkError, match="param=...\\): 'f' has no .dual; create it with needs_dual=True"):
        wk.ad.FwdMode(loss=wk.field(wk.f32, shape=(), needs_dual=True), param=f)


def test_tape_validation_without_debug_warns(arch):
    # Taichi's Tape(validation=True) checks the global data access rule only under debug=True, and says so.
    y = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def set_one():
        y[None] = 1.0

    with pytest.warns(UserWarning, match="Debug mode is disabled"):
        with wk.ad.Tape(loss=y, validation=True):
            set_one()


def test_tape_validation_reports_a_read_then_accumulate(arch):
    wk.init(arch=arch, debug=True)
    x = wk.field(wk.f32, shape=4, needs_grad=True)
    b = wk.field(wk.f32, shape=(), needs_grad=True)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def broke_rule():
        loss[None] = x[1] * b[None]
        b[None] += 100

    # the tape's forward launch fails the run-time check (passes/autodiff/access_marks.py), the AssertionError
    # Taichi's and Quadrants' check raises (ti.TaichiAssertionError) ...
    with pytest.raises(wk.KernelAssertionError, match="global data access rule"):
        with wk.ad.Tape(loss=loss, validation=True):
            broke_rule()
    # ... and compiling the reverse kernel finds it statically, an AutodiffError naming the line that is also one
    with pytest.raises(wk.AutodiffError, match="global data access rule") as info:
        broke_rule.grad()
    assert isinstance(info.value, wk.KernelAssertionError) and "b[None] += 100" in str(info.value)


def test_clear_all_gradients(arch):
    x = wk.field(wk.f32, shape=3, needs_grad=True)
    x.grad.fill(2.0)
    wk.ad.clear_all_gradients()
    assert x.grad.to_numpy().tolist() == [0.0] * 3


def test_numpy_loop_bound_changed_since_forward(arch):
    # a numpy argument is copied in afresh on every call: its contents, not a generation, are compared
    x = wk.field(wk.f32, shape=4, needs_grad=True)
    y = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def grow(trips: wk.types.ndarray(dtype=wk.i32, ndim=1)):
        for i in x:
            trips[i] = 10                  # the forward leaves 10 in the caller's array
        for i in x:
            v = x[i]
            for _ in range(trips[i]):
                v = wk.sin(v) * 0.5 + 0.1
            y[None] += v

    trips = np.zeros(4, np.int32)
    x.fill(0.3)
    grow(trips)
    y.grad[None] = 1.0
    grow.grad(trips)                        # the array still holds what the forward left: fine
    trips[:] = 0                            # the caller resets it: the replay would run other loops
    with pytest.raises(wk.WkError, match="numpy argument 'trips' decides a loop's trip count"):
        grow.grad(trips)
    grow(trips)
    grow.grad(trips)


def test_tape_grad_check(arch):
    if not wk.is_extension_supported(arch, wk.extension.data64):
        pytest.skip("grad_check needs an f64 loss")
    x = wk.field(wk.f64, shape=4, needs_grad=True)
    scale = wk.field(wk.f64, shape=(), needs_grad=True)
    y = wk.field(wk.f64, shape=(), needs_grad=True)
    x.from_numpy(np.array([0.3, -1.2, 2.0, 0.7]))
    scale[None] = 1.5

    @wk.kernel
    def compute():
        for i in x:
            y[None] += scale[None] * wk.sin(x[i]) * x[i]

    with wk.ad.Tape(loss=y, grad_check=[x, scale]):
        compute()
    # the check restores the fields and replays the forward launches: the state is the Tape's own
    values = x.to_numpy()
    assert np.allclose(values, [0.3, -1.2, 2.0, 0.7])
    assert y[None] == pytest.approx(1.5 * np.sum(np.sin(values) * values))
    assert np.allclose(x.grad.to_numpy(), 1.5 * (np.cos(values) * values + np.sin(values)))

    @wk.ad.grad_replaced
    def lying():
        compute()

    @wk.ad.grad_for(lying)
    def lying_grad():
        x.grad.fill(1.0)

    with pytest.raises(AssertionError, match="grad_check.*'"):
        with wk.ad.Tape(loss=y, grad_check=[x]):
            lying()


def test_tape_grad_check_needs_f64_loss(arch):
    y = wk.field(wk.f32, shape=(), needs_grad=True)
    with pytest.raises(wk.WkError, match="f64"):
        wk.ad.Tape(loss=y, grad_check=[y])


def test_tape_with_a_one_element_ndarray_loss(arch):
    # an ndarray loss holds one element (shape () or (1,)); a field loss stays 0-d
    x = wk.ndarray(wk.f32, shape=(3,), needs_grad=True)
    loss = wk.ndarray(wk.f32, shape=(1,), needs_grad=True)

    @wk.kernel
    def total(x: wk.types.ndarray(), loss: wk.types.ndarray()):
        for i in x:
            loss[0] += wk.sin(x[i]) * x[i]

    values = np.array([0.3, 0.7, 1.1])
    x.from_numpy(values.astype(np.float32))
    loss[0] = 5.0                        # zeroed on entry, as a field loss is
    with wk.ad.Tape(loss=loss):
        total(x, loss)
    assert loss[0] == pytest.approx(float(np.sum(np.sin(values) * values)), rel=1e-5)
    np.testing.assert_allclose(x.grad.to_numpy(), np.sin(values) + values * np.cos(values), rtol=1e-5)
    with pytest.raises(wk.WkError, match="exactly one element"):
        wk.ad.Tape(loss=wk.ndarray(wk.f32, shape=(2,), needs_grad=True))


def test_reading_a_gradient_the_reverse_kernel_accumulates_into_is_refused(arch):
    # The replayed read of x.grad[(i + 1) % n] would see what iteration i + 1 already added: order-dependent.
    n = 4
    x = wk.field(wk.f32, shape=n, needs_grad=True)
    y = wk.field(wk.f32, shape=(), needs_grad=True)
    a = wk.ndarray(wk.f32, shape=n, needs_grad=True)
    b = wk.ndarray(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def shifted():
        for i in x:
            y[None] += x[i] * x.grad[(i + 1) % n]

    @wk.kernel
    def weighted(a: wk.types.ndarray(), b: wk.types.ndarray()):
        for i in a:
            b[None] += a[i] * a.grad[i]

    y.grad[None] = 1.0
    with pytest.raises(wk.AutodiffError, match="read of the gradient 'x.grad'") as info:
        shifted.grad()
    assert "x.grad[(i + 1) % n]" in str(info.value)
    b.grad[None] = 1.0
    with pytest.raises(wk.AutodiffError, match="read of the gradient 'a.grad'"):
        weighted.grad(a, b)


def test_a_gradient_nothing_accumulates_into_is_read_as_a_constant(arch):
    n = 4
    x = wk.field(wk.f32, shape=n, needs_grad=True)
    w = wk.field(wk.f32, shape=n, needs_grad=True)
    y = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def scaled():
        for i in x:
            y[None] += x[i] * w.grad[i]

    x.fill(2.0)
    w.grad.from_numpy(np.array([1.0, 2.0, 3.0, 4.0], np.float32))
    scaled()
    assert y[None] == pytest.approx(20.0)
    y.grad[None] = 1.0
    scaled.grad()
    np.testing.assert_array_equal(x.grad.to_numpy(), [1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(w.grad.to_numpy(), [1.0, 2.0, 3.0, 4.0])




def test_tape_lists_its_calls_as_taichi_does(arch):
    x = wk.field(wk.f32, shape=4, needs_grad=True)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def scaled(k: wk.f32):
        for i in x:
            loss[None] += k * x[i]

    @wk.ad.grad_replaced
    def twice():
        scaled(2.0)

    @wk.ad.grad_for(twice)
    def twice_grad():
        scaled.grad(2.0)

    with wk.ad.Tape(loss=loss) as tape:
        scaled(1.0)
        twice()
        assert tape.calls == [(scaled, (1.0,)), (twice, ())]
    np.testing.assert_allclose(x.grad.to_numpy(), [3.0] * 4)


def test_a_tape_clears_adjoints_only_and_keeps_the_duals_of_forward_mode(arch):
    x = wk.field(wk.f32, shape=(), needs_grad=True, needs_dual=True)
    y = wk.field(wk.f32, shape=(), needs_grad=True, needs_dual=True)

    @wk.kernel
    def square():
        y[None] += x[None] ** 2

    x[None] = 1.5
    with wk.ad.FwdMode(loss=y, param=x):
        square()
    assert y.dual[None] == pytest.approx(3.0)
    with wk.ad.Tape(loss=y):
        square()
    assert x.grad[None] == pytest.approx(3.0)
    assert y.dual[None] == pytest.approx(3.0)            # Taichi's Tape clears SNodeGradType.ADJOINT only
    wk.ad.clear_all_gradients()
    assert x.grad[None] == 0.0 and y.dual[None] == pytest.approx(3.0)

    class GradType:                                      # Taichi's / Quadrants' SNodeGradType.DUAL
        name = "DUAL"
    wk.ad.clear_all_gradients(GradType())
    assert y.dual[None] == 0.0
    with pytest.raises(wk.WkError, match="'adjoint' or 'dual'"):
        wk.ad.clear_all_gradients("primal")


def test_a_tape_clears_adjoints_on_entry_and_keeps_what_its_block_seeds(arch):
    """Taichi's Tape clears the adjoints on entry, not on exit, so an adjoint the block seeds outside the recorded
    kernels reaches the replay: difftaichi's water_renderer writes its image's `.grad` from a network's gradient
    inside the Tape (a no_grad function) and the renderer's kernels carry it to the height field. With
    image = 3 h^2 and image.grad seeded with g, h.grad = 6 g h exactly (small integers, exact in f32)."""
    h = wk.field(wk.f32, shape=4, needs_grad=True)
    image = wk.field(wk.f32, shape=4, needs_grad=True)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def render():
        for i in h:
            image[i] = 3 * h[i] ** 2

    @wk.kernel
    def seed(g: wk.types.ndarray()):
        for i in image:
            image.grad[i] = g[i]

    @wk.ad.no_grad
    def network():
        seed(np.array([1, 2, 3, 4], dtype=np.float32))

    h.from_numpy(np.array([1, 2, 3, 4], dtype=np.float32))
    h.grad.fill(100.0)                      # stale adjoints of an earlier step: cleared on entry
    with wk.ad.Tape(loss=loss):
        render()
        network()
    want = 6 * np.array([1, 2, 3, 4]) * np.array([1, 2, 3, 4])
    np.testing.assert_array_equal(h.grad.to_numpy(), want)
    with wk.ad.Tape(loss=loss, clear_gradients=False):     # kept and accumulated into
        render()
        network()
    np.testing.assert_array_equal(h.grad.to_numpy(), 2 * want)


def test_grad_replaced_functions_have_grad_and_no_grad_takes_python_functions(arch):
    x = wk.field(wk.f32, shape=8, needs_grad=True)
    total = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def scaled(k: wk.f32):
        for i in x:
            total[None] += x[i] * k

    @wk.ad.grad_replaced
    def twice(k):
        scaled(k)
        scaled(k)

    @wk.ad.grad_for(twice)
    def twice_grad(k):
        scaled.grad(k)                   # deliberately half the true gradient: the custom one must be what runs

    total.grad[None] = 1.0
    twice(4.0)
    twice.grad(4.0)                      # Taichi's fn.grad(...) on a grad_replaced function
    np.testing.assert_array_equal(x.grad.to_numpy(), [4.0] * 8)

    @wk.ad.no_grad
    def not_differentiated(k):
        scaled(k)

    with wk.ad.Tape(loss=total):
        not_differentiated(4.0)
        scaled(5.0)
    np.testing.assert_array_equal(x.grad.to_numpy(), [5.0] * 8)
    x.grad.fill(0.0)
    not_differentiated.grad(4.0)
    np.testing.assert_array_equal(x.grad.to_numpy(), [0.0] * 8)

    def plain(k):
        scaled(k)
    for primal in (plain, scaled):       # Taichi raises RuntimeError for both
        with pytest.raises(RuntimeError, match="decorate it with @wk.ad.grad_replaced first"):
            wk.ad.grad_for(primal)

    @wk.ad.grad_replaced
    def unregistered():
        scaled(1.0)
    with pytest.raises(RuntimeError, match="no @wk.ad.grad_for function was registered"):
        unregistered.grad()


def test_stop_grad_of_a_field_or_ndarray_stops_its_reads_for_the_rest_of_the_block(arch):
    # Taichi's ti.stop_grad(x) on a field (Quadrants' test_stop_grad): reads of x after it, in that loop body, carry
    # no gradient; the next loop's reads do (it was a compile error: stop_grad took only values)
    n = 16
    x = wk.field(wk.f32, shape=n, needs_grad=True)
    v = wk.Vector.field(2, wk.f32, shape=n, needs_grad=True)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def energy(a: wk.types.ndarray(dtype=wk.f32, ndim=1, needs_grad=True)):
        for i in range(n):
            loss[None] += x[i] ** 2          # before the stop: counted
            wk.stop_grad(x)
            wk.stop_grad(v)
            wk.stop_grad(a)
            loss[None] += x[i] ** 2 + v[i].dot(v[i]) + a[i] ** 2
        for i in range(n):
            loss[None] += 3 * a[i]

    x.from_numpy(np.arange(n, dtype=np.float32))
    v.fill(1.0)
    a = wk.ndarray(wk.f32, shape=n, needs_grad=True)
    a.fill(2.0)
    with wk.ad.Tape(loss):
        energy(a)
    np.testing.assert_allclose(x.grad.to_numpy(), 2 * np.arange(n))
    assert not v.grad.to_numpy().any()
    np.testing.assert_allclose(a.grad.to_numpy(), np.full(n, 3.0))
