"""The runtime with the real frontend, passes and backends on every available arch: caching, generations,
numpy arguments, return values, ndarray .grad slots, stale containers, kernel.ir()/source()."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from wgkern.runtime.program import get_program


def test_cache_and_generations(arch):
    x = wk.field(wk.f32, shape=64)
    y = wk.field(wk.f32, shape=64)

    @wk.kernel
    def saxpy(a: wk.f32):
        for i in x:
            y[i] = a * x[i] + y[i]

    x.from_numpy(np.arange(64, dtype=np.float32))
    gx, gy = x.generation, y.generation
    saxpy(2.0)
    saxpy(0.5)
    assert np.allclose(y.to_numpy(), 2.5 * np.arange(64))
    assert x.generation == gx and y.generation == gy + 2
    stats = wk.stats()
    assert stats["kernel_compiles"] == 1 and stats["cache_hits"] == 1 and stats["launches"] == 2
    assert "saxpy" in saxpy.ir()
    assert len(saxpy.source()) > 0
    assert len(saxpy.source(arch)) > 0


def test_template_fields_compile_per_field(arch):
    @wk.kernel
    def fill(f: wk.template(), v: wk.i32):
        for i in f:
            f[i] = v

    a = wk.field(wk.i32, shape=5)
    b = wk.field(wk.i32, shape=7)
    fill(a, 3)
    fill(b, 4)
    fill(a, 5)
    assert a.to_numpy().tolist() == [5] * 5 and b.to_numpy().tolist() == [4] * 7
    assert wk.stats()["kernel_compiles"] == 2


def test_ndarray_and_numpy_arguments(arch):
    @wk.kernel
    def axpy(dst: wk.types.ndarray(dtype=wk.f32, ndim=2), src: wk.types.ndarray(dtype=wk.f32, ndim=2), a: wk.f32):
        for i, j in dst:
            dst[i, j] += a * src[i, j]

    dst = wk.ndarray(wk.f32, shape=(3, 4))
    src = np.arange(12, dtype=np.float32).reshape(3, 4)
    g_dst = dst.generation
    axpy(dst, src, 2.0)
    assert np.allclose(dst.to_numpy(), 2 * src)
    assert dst.generation == g_dst + 1
    host = np.ones((2, 2), np.float32)
    axpy(host, np.ones((2, 2), np.float32), 3.0)
    assert host.tolist() == [[4, 4], [4, 4]]
    with pytest.raises(wk.ArgumentError, match="parameter 'src'"):
        axpy(dst, np.zeros((3, 4)), 1.0)


def test_ndarray_grad_slot_generation(arch):
    @wk.kernel
    def seed(a: wk.types.ndarray(dtype=wk.f32, ndim=1)):
        for i in a:
            a.grad[i] = 1.0

    a = wk.ndarray(wk.f32, shape=4, needs_grad=True)
    g, gg = a.generation, a.grad.generation
    seed(a)
    assert a.grad.to_numpy().tolist() == [1.0] * 4
    assert a.grad.generation == gg + 1 and a.generation == g


def test_return_value(arch):
    @wk.kernel
    def answer(n: wk.i32) -> wk.i32:
        return n * 6

    assert answer(7) == 42

    @wk.kernel
    def vec() -> wk.types.vector(3, wk.f32):
        return wk.math.vec3(1.0, 2.0, 3.0)

    assert np.allclose(vec(), [1, 2, 3])


SMALL_PAIR = wk.types.struct(a=wk.i16, b=wk.f32)


def test_integer_arguments_reach_the_kernel_exactly_or_raise(arch):
    """Each integer type's extremes arrive unchanged, scalars, struct members and vector components alike; one
    past them is an ArgumentError. (Taichi and Quadrants wrap it as a C cast does: Quadrants' test_arg_alignment
    passes 255 to an i8 and gets -1.)"""
    pair = SMALL_PAIR

    @wk.kernel
    def small(a: wk.i8, b: wk.u8, c: wk.i32, d: wk.u32, s: SMALL_PAIR,
              v: wk.types.vector(2, wk.u16)) -> wk.types.vector(7, wk.i64):
        return wk.Vector([a, b, c, d, s.a, v[0], v[1]], dt=wk.i64)

    got = small(-128, 255, -2**31, 2**32 - 1, pair(a=-2**15, b=1.5), [65535, 0])
    assert got.tolist() == [-128, 255, -2**31, 2**32 - 1, -2**15, 65535, 0]
    with pytest.raises(wk.ArgumentError, match=r"parameter 'a' is wk.i8 but got 255, out of its range"):
        small(255, 0, 0, 0, pair(), [0, 0])
    with pytest.raises(wk.ArgumentError, match=r"parameter 'c' is wk.i32 but got 1099511627776"):
        small(0, 0, 2**40, 0, pair(), [0, 0])
    with pytest.raises(wk.ArgumentError, match=r"parameter 's.a' is wk.i16 but got 65537"):
        small(0, 0, 0, 0, pair(a=65537), [0, 0])
    with pytest.raises(wk.ArgumentError, match=r"parameter 'v' has wk.u16 components but got 70000"):
        small(0, 0, 0, 0, pair(), [70000, 3])


def test_vector_field_kernel(arch):
    v = wk.Vector.field(3, wk.f32, shape=4)

    @wk.kernel
    def fill():
        for i in v:
            v[i] = wk.math.vec3(i, 2 * i, 3 * i)

    fill()
    assert np.allclose(v.to_numpy(), np.arange(4)[:, None] * np.array([1, 2, 3]))
    assert v[2].tolist() == [2, 4, 6]


def test_stale_field_after_reset(arch):
    f = wk.field(wk.f32, shape=3, name="stale")

    @wk.kernel
    def touch():
        for i in f:
            f[i] = 1.0

    touch()
    wk.reset()
    wk.init(arch=arch)
    with pytest.raises(wk.ArgumentError, match="stale"):
        touch()
    with pytest.raises(wk.ArgumentError, match="stale"):
        f.to_numpy()


def test_dlpack_and_host_access_after_launch(arch):
    f = wk.field(wk.f32, shape=8)

    @wk.kernel
    def ramp():
        for i in f:
            f[i] = i * 1.5

    ramp()
    assert f[3] == 4.5                       # a read after a launch sees its result
    if arch == wk.cpu:
        shared = np.from_dlpack(f)           # zero-copy host view
        assert shared[3] == 4.5 and f.dlpack_live
        shared[0] = 7.0
        assert f[0] == 7.0
        ramp()
        assert shared[0] == 0.0              # the kernel wrote the same memory
    else:
        with pytest.raises(BufferError):
            np.from_dlpack(f)
    f.from_numpy(np.ones(8, np.float32))     # a write after a launch is ordered after it
    ramp()
    f[1] = -1.0
    assert f.to_numpy()[:3].tolist() == [0.0, -1.0, 3.0]


def test_vector_arguments(arch):
    out = wk.Vector.field(3, wk.f32, shape=4)

    @wk.kernel
    def place(v: wk.types.vector(3, wk.f32), s: wk.f32):
        for i in out:
            out[i] = v * s + i

    place((1, 2, 3), 2.0)
    assert np.allclose(out.to_numpy(), np.array([2, 4, 6]) + np.arange(4)[:, None])

    @wk.kernel
    def double(a: wk.types.ndarray(dtype=wk.types.vector(3, wk.f32), ndim=1)):
        for i in a:
            a[i] = a[i] * 2.0

    host = np.ones((5, 3), np.float32)
    double(host)
    assert np.allclose(host, 2)
    device = wk.ndarray(wk.math.vec3, shape=2)
    device.fill(1.5)
    double(device)
    assert np.allclose(device.to_numpy(), 3)


def test_assert_messages_format_runtime_values(arch, capsys):
    """Taichi's test_assert: a message formatted with '%' (printf fields), an f-string or str.format() prints with
    the failing thread's values as the assertion is raised; the error is also a RuntimeError, as in Taichi."""
    wk.init(arch=arch, debug=True)
    x = wk.field(wk.i32, shape=4)

    @wk.kernel
    def check(limit: wk.i32):
        for i in x:
            assert x[i] < limit, "x[%d] = %d, %.1f%% over %s" % (i, x[i], (x[i] - limit) * 100.0 / limit, limit)

    @wk.kernel
    def check_f(k: wk.i32):
        assert k < 3, f"k too big: {k}"
        assert k < 4, "k = {}".format(k)

    @wk.kernel
    def check_g(k: wk.i32):
        if k > 2:
            assert False, "k = {}".format(k)      # a constant False fails where it runs (under a branch here)

    x[2] = 6
    with pytest.raises(RuntimeError, match="printed above") as info:
        check(4)
        wk.sync()
    assert isinstance(info.value, wk.KernelAssertionError)
    assert capsys.readouterr().out == "x[2] = 6, 50.0% over 4\n"
    # the error quotes the formatted message too (Quadrants' test_assert matches the values in the exception)
    assert "assertion failed: x[2] = 6, 50.0% over 4 (the message printed above)" in str(info.value)
    with pytest.raises(wk.KernelAssertionError, match="k too big: 3"):
        check_f(3)
        wk.sync()
    assert capsys.readouterr().out == "k too big: 3\n"
    with pytest.raises(wk.KernelAssertionError, match="k = 3"):
        check_g(3)
        wk.sync()
    assert capsys.readouterr().out == "k = 3\n"
    check(10)
    wk.sync()
    with pytest.raises(wk.CompileError, match="more fields than values"):
        @wk.kernel
        def bad(k: wk.i32):
            assert k < 3, "%d %d" % k
        bad(1)


def test_debug_mode_checks_asserts(arch):
    """wk.init(debug=True): a failing `assert` in a kernel raises KernelAssertionError (also an AssertionError)
    with its message and line, and the program keeps working; `.grad` replays do not check again. Without debug
    asserts are not compiled."""
    wk.init(arch=arch, debug=True)
    n = wk.field(wk.f32, shape=4, needs_grad=True)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def fill(a: wk.f32):
        assert a > 0, "a must be positive"
        for i in n:
            assert n[i] < 100.0
            n[i] = a

    @wk.kernel
    def energy():
        for i in n:
            assert n[i] < 10.0, "n is bounded"
            loss[None] += n[i] * n[i]

    with pytest.raises(wk.KernelAssertionError, match="kernel fill: assertion failed: a must be positive") as info:
        fill(-1.0)
        wk.sync()
    assert isinstance(info.value, AssertionError) and 'assert a > 0, "a must be positive"' in str(info.value)
    fill(3.0)
    assert n.to_numpy().tolist() == [3.0] * 4
    n[2] = 500.0
    with pytest.raises(wk.KernelAssertionError, match="assertion failed: n\\[i\\] < 100.0"):
        fill(3.0)
        wk.sync()
    n.fill(2.0)
    with wk.ad.Tape(loss=loss):
        energy()
    assert n.grad.to_numpy().tolist() == [4.0] * 4
    wk.init(arch=arch)
    m = wk.field(wk.f32, shape=2)

    @wk.kernel
    def unchecked(a: wk.f32):
        assert a > 0
        for i in m:
            m[i] = a

    unchecked(-1.0)
    assert m.to_numpy().tolist() == [-1.0, -1.0]


def test_debug_mode_raises_at_the_launch_that_failed(arch):
    """wk.init(debug=True) makes launches synchronous (Taichi's debug mode, Quadrants' test_assert): the failing
    launch call itself raises, naming the line; the launches after it run, and nothing stale is raised later.
    Without debug a GPU launch returns before the work is done (no submit per launch)."""
    wk.init(arch=arch, debug=True)
    x = wk.field(wk.f32, shape=8)

    @wk.kernel
    def check(limit: wk.f32):
        for i in x:
            assert x[i] < limit, "x too large"

    @wk.kernel
    def shift(k: wk.i32):
        for i in x:
            x[i + k] = 1.0

    x[3] = 5.0
    with pytest.raises(wk.KernelAssertionError, match="kernel check: assertion failed: x too large") as info:
        check(1.0)
    assert 'assert x[i] < limit, "x too large"' in str(info.value)
    with pytest.raises(wk.BoundsCheckError, match="index out of range for x") as info:
        shift(1)
    assert "x[i + k] = 1.0" in str(info.value)
    check(10.0)                          # the next launches work, and no earlier failure is raised again
    shift(0)
    wk.sync()
    assert x.to_numpy().tolist() == [1.0] * 8
    wk.init(arch=arch)
    y = wk.field(wk.f32, shape=8)

    @wk.kernel
    def fill(v: wk.f32):
        for i in y:
            y[i] = v

    fill(1.0)
    wk.sync()
    backend = get_program().backend
    counts = backend.stats if isinstance(getattr(backend, "stats", None), dict) else {}
    submits = counts.get("submits")
    for _ in range(3):
        fill(2.0)
    if submits is not None:              # the WGSL backend counts its queue submits: none per launch
        assert counts["submits"] == submits
    assert y.to_numpy().tolist() == [2.0] * 8


def test_a_constant_false_assert_fails_where_it_runs(arch):
    """`assert False, "..."` (or `assert 0`) in kernel code is a run-time failure where it runs, as in Taichi:
    under a branch that is not taken it does nothing (it was a compile error wherever it stood)."""
    wk.init(arch=arch, debug=True)
    out = wk.field(wk.i32, shape=4)

    @wk.kernel
    def classify(k: wk.i32):
        for i in out:
            if i + k >= 4:
                assert False, "past the end"
            out[i] = i + k

    @wk.kernel
    def always():
        assert 0

    classify(0)
    assert out.to_numpy().tolist() == [0, 1, 2, 3]
    with pytest.raises(wk.KernelAssertionError, match="kernel classify: assertion failed: past the end"):
        classify(2)
        wk.sync()
    with pytest.raises(AssertionError, match="assertion failed: 0"):
        always()
        wk.sync()
    classify(-1)
    assert out.to_numpy().tolist() == [-1, 0, 1, 2]


@pytest.mark.parametrize("dtype", [wk.i32, wk.i64])
def test_debug_mode_refuses_negative_integer_exponents(arch, dtype):
    """Quadrants' test_ipow_negative_exp: under debug=True, int ** negative int fails the launch (a
    KernelAssertionError, also a RuntimeError, naming the line); floats and non-negative exponents are fine, and
    without debug the result is the truncated one."""
    wk.init(arch=arch, debug=True)
    z = wk.field(dtype, shape=3)

    @wk.kernel
    def power(x: dtype, y: wk.template()):     # dtype named in the body too: a closure cell for the annotation
        z[0] = wk.cast(x, dtype) ** y

    @wk.kernel
    def powers(x: dtype, y: dtype):
        z[1] = x ** y
        z[2] = wk.cast(wk.cast(x, wk.f32) ** y, dtype)

    with pytest.raises(RuntimeError, match="negative exponent in an integer power") as info:
        power(10, -10)
        wk.sync()
    assert isinstance(info.value, wk.KernelAssertionError) and "z[0] = wk.cast(x, dtype) ** y" in str(info.value)
    with pytest.raises(wk.KernelAssertionError, match="negative exponent"):
        powers(2, -1)
        wk.sync()
    powers(3, 4)
    power(-2, 3)
    assert z.to_numpy().tolist() == [-8, 81, 81]
    wk.init(arch=arch)
    z = wk.field(dtype, shape=3)
    powers(1, -3)
    assert z.to_numpy().tolist()[1] == 1


def test_debug_mode_checks_every_global_access(arch):
    """wk.init(debug=True): an out-of-range index raises BoundsCheckError naming the container and the line
    (after the launch on the CPU, at the next sync or read-back on GPUs), nothing outside the container is
    touched, and the program keeps working."""
    wk.init(arch=arch, debug=True)
    f = wk.field(wk.f32, shape=4)
    neighbour = wk.field(wk.f32, shape=4)
    nd = wk.ndarray(wk.i32, shape=(3, 2))
    neighbour.fill(7.0)

    @wk.kernel
    def past_the_end(k: wk.i32):
        for i in f:
            f[i + k] = 1.0

    @wk.kernel
    def read_ndarray(a: wk.types.ndarray(), row: wk.i32):
        for j in range(2):
            f[j] = wk.cast(a[row, j], wk.f32)

    with pytest.raises(wk.BoundsCheckError, match="index out of range for f") as info:
        past_the_end(2)
        wk.sync()
    assert "f[i + k] = 1.0" in str(info.value)
    # Quadrants' test_debug catches a kernel's out-of-bound access as RuntimeError, others as AssertionError
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, AssertionError)
    assert neighbour.to_numpy().tolist() == [7.0] * 4
    past_the_end(0)                                 # in range: runs, and the program is still usable
    assert f.to_numpy().tolist() == [1.0] * 4
    with pytest.raises(wk.BoundsCheckError, match="index out of range for a"):
        read_ndarray(nd, 3)
        wk.sync()
    read_ndarray(nd, 2)
    wk.sync()
    with pytest.raises(AssertionError):             # Taichi's out-of-bound check raises an AssertionError
        read_ndarray(nd, -1)
        wk.sync()


def test_debug_mode_reports_the_first_launch_that_went_out_of_range(arch):
    """Two launches out of range before a sync: the error names the access of the earlier launch (as Taichi
    stops at the first), even when the later kernel was compiled after it."""
    wk.init(arch=arch, debug=True)
    grid = wk.field(wk.f32, shape=(6, 6))

    @wk.kernel
    def shift_down():
        for i, j in grid:
            grid[i, j] = grid[i, j + 1]

    @wk.kernel
    def shift_left():
        for i, j in grid:
            grid[i, j] = grid[i - 1, j]

    @wk.kernel
    def fill():
        for i, j in grid:
            grid[i, j] = 1.0

    fill()                                   # compiled first, in range
    with pytest.raises(wk.BoundsCheckError, match="kernel shift_left") as info:
        shift_left()                         # compiled before shift_down, launched first
        shift_down()
        wk.sync()
    assert "grid[i - 1, j]" in str(info.value)
    with pytest.raises(wk.BoundsCheckError, match="kernel shift_down"):
        shift_down()
        shift_left()
        wk.sync()


def test_kernel_prints_appear_at_program_end_without_a_sync(arch, tmp_path):
    """GPU archs print at the next sync; a program that ends without one still shows its output (and a
    pending error), as in Taichi."""
    import subprocess
    import sys
    script = tmp_path / "prints.py"
    script.write_text("import wgkern as wk\n"
                      f"wk.init(arch=wk.{arch.name})\n"
                      "@wk.kernel\n"
                      "def k():\n"
                      "    print('in-kernel')\n"
                      "k()\n"
                      "print('py-side')\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.split()) == ["in-kernel", "py-side"]
