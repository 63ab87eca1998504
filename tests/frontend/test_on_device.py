"""The frontend's IR through the whole pipeline on every available arch (small kernels, numpy references)."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk


@wk.func
def first_divisor(n) -> wk.i32:
    for d in range(2, n):
        if n % d == 0:
            return d
    return n


def test_funcs_loops_and_ints(arch):
    out = wk.field(wk.i32, shape=16)

    @wk.kernel
    def k(offset: wk.i32):
        for i in out:
            v = i + offset
            out[i] = first_divisor(v) * 100 + v // 3 - v % 4 + (v << 1) - (v >> 1)

    k(2)
    v = np.arange(16) + 2
    divisors = [next((d for d in range(2, n) if n % d == 0), n) for n in v]
    expected = np.array(divisors) * 100 + v // 3 - v % 4 + (v << 1) - (v >> 1)
    assert out.to_numpy().tolist() == expected.tolist()


def test_ndrange_vectors_and_reduction(arch):
    pos = wk.Vector.field(3, wk.f32, shape=(4, 5))

    @wk.kernel
    def fill(scale: wk.f32):
        for i, j in wk.ndrange(4, (0, 5)):
            pos[i, j] = wk.math.vec3(i, j, 1.0) * scale

    @wk.kernel
    def total() -> wk.f32:
        s = 0.0
        for i, j in pos:
            s += pos[i, j].dot(wk.math.vec3(1.0, 1.0, 1.0))
        return s

    fill(2.0)
    ii, jj = np.meshgrid(np.arange(4), np.arange(5), indexing="ij")
    expected = np.stack([ii, jj, np.ones_like(ii)], axis=-1) * 2.0
    assert np.allclose(pos.to_numpy(), expected)
    assert abs(total() - expected.sum()) < 1e-3


def test_while_static_and_select(arch):
    out = wk.field(wk.f32, shape=8)

    @wk.kernel
    def k(n: wk.i32):
        for i in out:
            steps = 0
            v = wk.cast(i, wk.f32)
            while v < n:
                v = v * 2.0 + 1.0
                steps += 1
            acc = 0.0
            for p in wk.static(range(1, 4)):
                acc += v ** p
            out[i] = wk.select(steps % 2 == 0, acc, -acc) if i > 0 else 0.0

    k(20)
    expected = []
    for i in range(8):
        v, steps = float(i), 0
        while v < 20:
            v, steps = v * 2 + 1, steps + 1
        acc = v + v ** 2 + v ** 3
        expected.append(0.0 if i == 0 else (acc if steps % 2 == 0 else -acc))
    assert np.allclose(out.to_numpy(), expected)


def test_ndarray_argument_and_atomics(arch):
    hist = wk.field(wk.i32, shape=4)

    @wk.kernel
    def k(a: wk.types.ndarray()):
        for i in a:
            hist[a[i] % 4] += 1
            wk.atomic_max(hist[3], 0)

    data = np.arange(10, dtype=np.int32)
    k(data)
    assert hist.to_numpy().tolist() == np.bincount(data % 4, minlength=4).tolist()


def test_grouped_loops_and_list_literals(arch):
    """Two Taichi idioms: `for I in wk.grouped(f)` and `v[i] = [a, b]`."""
    f = wk.field(wk.f32, shape=(6, 5))
    v = wk.Vector.field(2, wk.f32, shape=(6, 5))

    @wk.kernel
    def k():
        for I in wk.grouped(f):
            f[I] = I[0] * 10.0 + I[1]
            v[I] = [I.x, f[I] * 2]

    k()
    i, j = np.meshgrid(np.arange(6), np.arange(5), indexing="ij")
    np.testing.assert_array_equal(f.to_numpy(), i * 10.0 + j)
    np.testing.assert_array_equal(v.to_numpy(), np.stack([i, (i * 10.0 + j) * 2], axis=-1))


def test_grouped_over_a_zero_d_field_runs_once(arch):
    """As in Taichi: the index vector is empty and `x[I]` is `x[None]`; a plain `for i in x` stays an error."""
    x = wk.field(wk.f32, shape=())
    count = wk.field(wk.i32, shape=())

    @wk.kernel
    def k():
        for I in wk.grouped(x):
            x[I] += 2.0
            count[None] += 1

    k()
    k()
    assert x[None] == 4.0 and count[None] == 2


def test_randn_is_standard_normal_and_replayed_by_grad(arch):
    x = wk.field(wk.f32, shape=1 << 16, needs_grad=True)
    y = wk.field(wk.f32, shape=1 << 16, needs_grad=True)

    @wk.kernel
    def k():
        for i in x:
            y[i] = x[i] * wk.randn()

    x.fill(1.0)
    k()
    samples = y.to_numpy()
    assert np.isfinite(samples).all()
    assert abs(samples.mean()) < 0.02 and abs(samples.std() - 1.0) < 0.02
    y.grad.fill(1.0)
    k.grad()                      # d y / d x is the same draw: the grad kernel replays the random stream
    np.testing.assert_array_equal(x.grad.to_numpy(), samples)
    with np.testing.assert_raises(wk.WkError):
        wk.randn(wk.i32)


def test_round_is_half_away_from_zero_for_large_and_tied_values(arch):
    """Taichi's round (C's round()): ties away from zero. WGSL's round() is half to even and lavapipe's f64 one
    keeps 54321987.6: the WGSL backend rounds itself."""
    for dtype in (wk.f32, wk.f64):
        x = wk.field(dtype, shape=13)
        out = wk.field(dtype, shape=13)

        @wk.kernel
        def k():
            for i in x:
                out[i] = wk.round(x[i])

        values = np.array([2.5, 3.5, -2.5, -3.5, 54321987.6, 1e7 + 0.5, 2.0 ** 40 + 0.5, 8388607.5, 0.49999997,
                           -0.0, -0.25, 0.5, -0.5], dtype=dtype.np_dtype)
        x.from_numpy(values)
        k()
        want = np.where(np.abs(values - np.trunc(values)) >= 0.5, np.trunc(values) + np.sign(values), np.trunc(values))
        np.testing.assert_array_equal(out.to_numpy(), want, err_msg=str(dtype))
        assert np.signbit(out.to_numpy()[[9, 10]]).all()          # -0.0 and -0.25 round to -0.0


def test_sin_and_cos_stay_accurate_for_large_arguments(arch):
    """Arguments past |x| ~ 6000 need more of pi/2 than three f32 parts: f32 reduces them in f64 where the
    device has it (the CPU uses libm)."""
    backend = wk.runtime.program.current().backend
    wide = getattr(backend, "features", None) is None or "shader-f64" in backend.features
    xs = np.random.default_rng(3).uniform(1e3, 1e8 if wide else 6e3, 1 << 16)
    for dtype in (wk.f32, wk.f64) if wide else (wk.f32,):
        x = wk.field(dtype, shape=xs.size)
        s = wk.field(dtype, shape=xs.size)
        c = wk.field(dtype, shape=xs.size)

        @wk.kernel
        def k():
            for i in x:
                s[i] = wk.sin(x[i])
                c[i] = wk.cos(x[i])

        arg = xs.astype(dtype.np_dtype)
        x.from_numpy(arg)
        k()
        tolerance = 2e-7 if dtype == wk.f32 else 1e-15
        np.testing.assert_allclose(s.to_numpy(), np.sin(arg.astype(np.float64)), rtol=0, atol=tolerance)
        np.testing.assert_allclose(c.to_numpy(), np.cos(arg.astype(np.float64)), rtol=0, atol=tolerance)


def test_sin_and_cos_next_to_multiples_of_half_pi(arch):
    """The worst case of argument reduction: results near zero, where only a long enough pi/2 keeps the
    relative error small (a few ulps of f32 here)."""
    k = np.arange(1, 4000, dtype=np.float64)
    args = (k * np.pi / 2).astype(np.float32)
    x = wk.field(wk.f32, shape=args.size)
    s = wk.field(wk.f32, shape=args.size)
    c = wk.field(wk.f32, shape=args.size)

    @wk.kernel
    def trig():
        for i in x:
            s[i] = wk.sin(x[i])
            c[i] = wk.cos(x[i])

    x.from_numpy(args)
    trig()
    for got, want in ((s.to_numpy(), np.sin(args.astype(np.float64))), (c.to_numpy(), np.cos(args.astype(np.float64)))):
        ulps = np.abs(got - want) / np.spacing(np.abs(want).astype(np.float32))
        assert ulps.max() <= 4, f"{ulps.max():.1f} ulp at x = {args[np.argmax(ulps)]}"


def test_print_in_kernels(arch, capsys):
    """print() with text, scalars of several dtypes (formatted as Taichi's kernels print them: f32 "%f", f64
    "%.12f", u1 as 1/0), vectors, sep= and end=, shown by the next sync; `.grad` replays do not print again."""
    x = wk.field(wk.f32, shape=4, needs_grad=True)
    y = wk.field(wk.f32, shape=4, needs_grad=True)

    @wk.kernel
    def k(n: wk.i32):
        for i in x:
            y[i] = x[i] * 2.0
            if i == 1:
                print("n =", n, "y:", y[i], wk.math.vec2(0.5, i), sep=" ", end="!\n")
        print(wk.Matrix([[1, 2], [3, 4]]), n > 3, wk.cast(-5, wk.i64), wk.cast(2.5, wk.f64), wk.cast(7, wk.u8))

    x.fill(1.25)
    k(7)
    wk.sync()
    assert capsys.readouterr().out == ("n = 7 y: 2.500000 [0.500000, 1.000000]!\n"
                                       "[[1, 2], [3, 4]] 1 -5 2.500000000000 7\n")
    y.grad.fill(1.0)
    k.grad(7)
    wk.sync()
    assert capsys.readouterr().out == ""
    np.testing.assert_array_equal(x.grad.to_numpy(), np.full(4, 2.0))


def test_print_f_strings_with_format_specs(arch, capsys):
    """f-strings among print()'s arguments: literal text, runtime fields formatted by their spec (also each
    element of a vector), `{n=}`, and compile-time values formatted at compile time."""
    x = wk.field(wk.f32, shape=2)
    v = wk.Vector.field(2, wk.f32, shape=1)

    @wk.kernel
    def k(n: wk.i32):
        for i in x:
            if i == 1:
                print(f"i={i:3d} x={x[i] + 1.5:.3f} {n=}", "then", f"{v[0]:.1f}|{n > 3}|{wk.static(7):>3}")

    x.fill(0.25)
    v.fill(1.75)
    k(42)
    wk.sync()
    assert capsys.readouterr().out == "i=  1 x=1.750 n=42 then [1.8, 1.8]|1|  7\n"


def test_print_str_format_arguments(arch, capsys):
    """`"...".format(...)` among print()'s arguments prints as the matching f-string: automatic, numbered and
    named fields, specs, runtime and compile-time values."""
    x = wk.field(wk.f32, shape=1)

    @wk.kernel
    def k(n: wk.i32):
        for i in x:
            print("{} and {:.2f}".format(n, x[i] + 0.5), "{1}-{0}".format(n, 7), "{name:>4}|{v}".format(name=n, v=3))

    x.fill(0.25)
    k(42)
    wk.sync()
    assert capsys.readouterr().out == "42 and 0.75 7-42   42|3\n"

    @wk.kernel
    def missing(n: wk.i32):
        print("{} {}".format(n))

    with pytest.raises(wk.CompileError, match="refers to"):
        missing(1)


def test_print_lists_and_tuples_and_compile_time_floats_in_strings(arch, capsys):
    """Taichi's test_print: a list or tuple argument prints as a list with its runtime values formatted (a field's
    shape too); a compile-time float in an f-string or str.format() field is Python's text (1.23, not 1.230000)."""
    v = wk.Vector.field(3, wk.f32, shape=())
    m = wk.Matrix.field(2, 3, wk.f32, shape=(2, 3))
    c = 2.5

    @wk.kernel
    def k(s: wk.f32):
        print([s, m.shape], [1, s + 1], (1,), [v[None], (1,)], [], v.shape)
        print(f"{1.23} {c} {s} {c:.2f}", "{} {}".format(1.23, s), 1.23)

    k(0.5)
    wk.sync()
    assert capsys.readouterr().out == ("[0.500000, [2, 3]] [1, 1.500000] [1] [[0.000000, 0.000000, 0.000000], [1]] "
                                       "[] []\n1.23 2.5 0.500000 2.50 1.23 0.500000 1.230000\n")


def test_operator_module_functions_in_kernels(arch):
    """`operator.add(a, b)` (a program passing `ops=operator.sub` around) applies the operator it names, to
    scalars, vectors and matrices."""
    import operator
    m = wk.Matrix([[1, 2], [3, 4]])
    out = wk.Matrix.field(2, 2, wk.i32, shape=4)
    s = wk.field(wk.f32, shape=2)

    @wk.kernel
    def run(ops: wk.template(), k: wk.i32):
        out[0] = ops(m, out[3])
        out[1] = operator.matmul(m, m)
        out[2] = operator.mul(m, k)
        s[0] = operator.truediv(k, 4)
        s[1] = operator.pow(k, 2)

    out[3] = [[10, 20], [30, 40]]
    run(operator.sub, 3)
    assert out.to_numpy()[0].tolist() == [[-9, -18], [-27, -36]]
    assert out.to_numpy()[1].tolist() == [[7, 10], [15, 22]]
    assert out.to_numpy()[2].tolist() == [[3, 6], [9, 12]]
    assert s.to_numpy().tolist() == [0.75, 9.0]


def test_print_f_string_errors_name_the_spec(arch):
    x = wk.field(wk.i32, shape=2)

    @wk.kernel
    def bad_spec():
        for i in x:
            print(f"{i:.2s}")

    with pytest.raises(wk.CompileError, match="format spec '.2s' does not apply to a i32 value"):
        bad_spec()

    @wk.kernel
    def computed_spec(width: wk.i32):
        for i in x:
            print(f"{i:{width}}")

    with pytest.raises(wk.CompileError, match="format spec in a kernel must be literal text"):
        computed_spec(3)


def test_print_from_many_threads_reports_what_did_not_fit(arch, capsys, monkeypatch):
    """Every line arrives whole; on the WGSL backend a full print buffer drops records and says so."""
    from wgkern.backends.wgsl import printing
    monkeypatch.setattr(printing, "PRINT_BUFFER_BYTES", 4 * (printing.HEADER_WORDS + 3 * 100))  # 100 records
    if arch == wk.cuda:       # records of 64-bit words; the capacity is read when a kernel is compiled
        from wgkern.backends.llvm import cuda, cuda_codegen
        monkeypatch.setattr(cuda, "PRINT_BUFFER_WORDS", cuda_codegen.PRINT_HEADER_WORDS + 3 * 100)
    values = wk.field(wk.i32, shape=150)

    @wk.kernel
    def k():
        for i in values:
            print("v", i, i * 2)

    k()
    wk.sync()
    lines = capsys.readouterr().out.splitlines()
    printed = [line for line in lines if line.startswith("v ")]
    assert all(line == f"v {line.split()[1]} {2 * int(line.split()[1])}" for line in printed)
    if arch == wk.cpu:
        assert len(printed) == 150
    else:
        assert len(printed) == 100 and lines[-1].startswith("[wgkern] 150 words of print() output were dropped")


def test_bit_cast_reads_the_bits_as_another_dtype(arch):
    backend = wk.runtime.program.current().backend
    wide = getattr(backend, "features", None) is None or {"shader-f64", "shader-int64"} <= set(backend.features)
    words = wk.field(wk.i32, shape=3)
    floats = wk.field(wk.f32, shape=2)
    doubles = wk.field(wk.u64, shape=1)

    @wk.kernel
    def narrow():
        words[0] = wk.bit_cast(1.0, wk.i32)
        words[1] = wk.bit_cast(-2.5, wk.i32)
        words[2] = wk.cast(wk.bit_cast(wk.bit_cast(0.75, wk.u32), wk.f32) * 4.0, wk.i32)
        floats[0] = wk.bit_cast(0x40490FDB, wk.f32)
        floats[1] = wk.bit_cast(wk.bit_cast(floats[0], wk.i32) + 1, wk.f32)

    narrow()
    np.testing.assert_array_equal(words.to_numpy(), np.array([1.0, -2.5], np.float32).view(np.int32).tolist() + [3])
    np.testing.assert_array_equal(floats.to_numpy(), [np.float32(np.pi), np.nextafter(np.float32(np.pi), 4)])
    if wide:
        @wk.kernel
        def wide_cast():
            doubles[0] = wk.bit_cast(wk.cast(1.0, wk.f64), wk.u64)

        wide_cast()
        assert doubles[0] == np.float64(1.0).view(np.uint64)
    assert wk.bit_cast(1.0, wk.i32) == 0x3F800000 and wk.bit_cast(0x3F800000, wk.f32) == 1.0


def test_bit_cast_refuses_a_change_of_width(arch):
    words = wk.field(wk.i64, shape=1)

    @wk.kernel
    def widen():
        words[0] = wk.bit_cast(1.0, wk.i64)

    with pytest.raises(wk.CompileError, match="bit_cast from f32 to i64 changes the width"):
        widen()
    with pytest.raises(wk.WkError, match="changes the width"):
        wk.bit_cast(np.float32(1.0), wk.i64)


def test_memory_hints_are_checked_and_change_nothing(arch):
    x = wk.field(wk.f32, shape=8)
    y = wk.field(wk.f32, shape=8)

    @wk.kernel
    def hinted():
        wk.block_local(x)
        wk.cache_read_only(x, y)
        for i in x:
            y[i] = x[i] + 1

    x.fill(2.0)
    hinted()
    np.testing.assert_array_equal(y.to_numpy(), np.full(8, 3.0))

    @wk.kernel
    def not_a_field():
        wk.block_local(3)

    with pytest.raises(wk.CompileError, match="'block_local' takes fields"):
        not_a_field()
    with pytest.raises(wk.WkError, match="only be used inside a @wk.kernel"):
        wk.block_local(x)


def test_loop_unique_is_a_hint_that_returns_its_value(arch):
    # Taichi's / Quadrants' loop_unique (imported from wk.lang.misc, as from taichi.lang.misc; test_loop_unique)
    from wgkern.lang.misc import get_host_arch_list, loop_unique
    x = wk.field(wk.i32, shape=8)
    y = wk.field(wk.i32, shape=16)

    @wk.kernel
    def scatter():
        for i in x:
            a = loop_unique(x[i])
            y[a] += 1
            y[wk.lang.misc.loop_unique(x[i] + 8, covers=[y])] += 2

    x.from_numpy(np.array([3, 1, 4, 0, 5, 2, 7, 6], np.int32))
    scatter()
    assert y.to_numpy().tolist() == [1] * 8 + [2] * 8
    assert get_host_arch_list() == [wk.cpu]

    @wk.kernel
    def wrong():
        for i in x:
            y[loop_unique(x[i], [y], 3)] += 1

    with pytest.raises(wk.CompileError, match="loop_unique\\(val, covers=None\\)"):
        wrong()


def test_taichi_features_that_are_not_available_say_what_to_use():
    with pytest.raises(AttributeError, match="ti.aot .*not available"):
        wk.aot
    assert not hasattr(wk, "Mesh")


def test_a_kernel_reaching_for_a_missing_taichi_feature_gets_its_name_and_why(arch):
    x = wk.field(wk.i32, shape=4)

    @wk.kernel
    def addresses():
        for i in x:
            x[i] = wk.get_addr(x, i)

    with pytest.raises(wk.CompileError, match=r"ti.get_addr \(the memory address of a field element\) is not "
                                              r"available"):
        addresses()
    with pytest.raises(AttributeError, match="get_addr .*not available"):
        wk.get_addr

    with pytest.raises(wk.WkError, match="hash.* nodes are not available"):
        wk.root.hash(wk.i, 8)


def test_64_bit_shifts_by_constants_and_values(arch):
    a = wk.field(wk.i64, shape=4)
    u = wk.field(wk.u64, shape=4)
    s = wk.field(wk.i64, shape=4)

    @wk.kernel
    def k():
        for i in a:
            a[i] = ((wk.cast(i, wk.i64) + (1 << 20)) << 12) + (wk.cast(i, wk.i64) << s[i])
            u[i] = (wk.cast(-1, wk.u64) >> 1) >> s[i]

    s.from_numpy(np.arange(4))
    k()
    i = np.arange(4, dtype=np.int64)
    assert a.to_numpy().tolist() == (((i + (1 << 20)) << 12) + (i << i)).tolist()
    assert u.to_numpy().tolist() == [(2 ** 63 - 1) >> int(k) for k in range(4)]


def test_reductions_in_func_loops_and_into_arguments_are_atomic(arch):
    """A func's loop inlined at the kernel's top level runs in parallel, so `s += ...` into the func's own
    variable (or parameter), like a kernel argument's, is atomic (it raced on GPUs)."""
    f = wk.field(wk.f32, shape=4096)

    @wk.func
    def total() -> wk.f32:
        s = 0.0
        for i in range(4096):
            s += f[i]
        return s

    @wk.func
    def total_from(s, n) -> wk.f32:
        for i in range(n):
            s += f[i]
        return s

    @wk.kernel
    def sums(start: wk.f32) -> wk.f32:
        for i in range(4096):
            start += f[i]
        return total() + total_from(1.0, 100) + start

    f.from_numpy((np.arange(4096) % 7).astype(np.float32))
    want = (np.arange(4096) % 7).sum()
    assert sums(0.5) == want + 1.0 + (np.arange(100) % 7).sum() + want + 0.5


def test_min_max_ignore_a_nan_operand(arch):
    """As Taichi's (IEEE minNum/maxNum): flux limiters computing 0/0 in flat regions rely on it. The
    gradient goes to the operand that is the result."""
    r = wk.field(wk.f32, shape=6)
    atomic = wk.field(wk.f32, shape=2)
    x = wk.field(wk.f32, shape=2, needs_grad=True)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def k(nan: wk.f32):
        r[0] = max(0.0, nan)
        r[1] = min(nan, 2.0)
        r[2] = wk.max(nan, 0.5)
        r[3] = wk.min(2.5, nan)
        r[4] = wk.max(nan, nan)
        r[5] = wk.min(wk.max(nan, 1.0), 3.0)
        wk.atomic_min(atomic[0], nan)
        wk.atomic_max(atomic[1], nan)

    @wk.kernel
    def limited(nan: wk.f32):
        for i in x:
            loss[None] += wk.max(x[i] * 3.0, nan) + wk.min(nan, x[i] * x[i])

    atomic.from_numpy(np.array([1.0, -1.0], np.float32))
    k(float("nan"))
    got = r.to_numpy()
    assert got[[0, 1, 2, 3, 5]].tolist() == [0.0, 2.0, 0.5, 2.5, 1.0] and np.isnan(got[4])
    assert atomic.to_numpy().tolist() == [1.0, -1.0]
    x.from_numpy(np.array([1.0, 2.0], np.float32))
    with wk.ad.Tape(loss=loss):
        limited(float("nan"))
    assert x.grad.to_numpy().tolist() == [3.0 + 2.0, 3.0 + 4.0]


def test_comprehensions_walrus_vector_logic_lists_and_starred_ndrange(arch):
    """Python forms Taichi programs use in kernels: list comprehensions over compile-time ranges (unrolled),
    `:=`, `and`/`or` on vectors (element by element), a list of run-time numbers as a vector variable whose
    elements are reassigned under a run-time `if`, and `wk.ndrange(*shape)`."""
    p = wk.Vector.field(2, wk.f32, shape=1)
    q = wk.Vector.field(2, wk.i32, shape=1)
    x = wk.Vector.field(3, wk.f32, shape=2)
    a = wk.field(wk.f32, shape=2)
    b = wk.field(wk.i32, shape=2)
    shape = np.array([2, 3])
    g = wk.field(wk.i32, shape=(2, 3))

    @wk.kernel
    def k():
        c = p[0] < 0 and p[0] > -2 or p[0] > 1
        q[0] = c
        x[0] = wk.Vector([wk.cast(i, wk.f32) for i in range(3)])
        x[1] = wk.Matrix.cols([wk.Vector([i, i + 1.0, 0.0]) for i in range(3)])[1, :] + wk.Vector(
            [j * 1.0 for j in range(3) if j != 1] + [7.0])
        a[0] = (t := a[1] + 1.0)
        a[1] = t * 2
        for I in wk.grouped(wk.ndrange(*shape)):
            g[I] = I[0] * 10 + I[1]

    @wk.kernel
    def swap(c: wk.i32) -> wk.i32:
        v = [b[0], b[1]]
        if c < 0:
            tmp = v[0]
            v[0] = v[1]
            v[1] = tmp
        return v[0] * 10 + v[1]

    p[0] = [-1.0, 0.5]
    k()
    b.from_numpy(np.array([1, 2], np.int32))
    assert q[0].tolist() == [1, 0]
    assert x.to_numpy().tolist() == [[0, 1, 2], [1, 4, 10]]
    assert a.to_numpy().tolist() == [1.0, 2.0]
    assert g.to_numpy().tolist() == [[0, 1, 2], [10, 11, 12]]
    assert swap(1) == 12 and swap(-1) == 21


def test_conditional_expression_reading_memory_runs_only_the_taken_side(arch):
    """`p[t, i] if 0 <= i < n else 0.0` (Taichi builds it as a branch): the guarded read never happens out of
    range (debug=True would report it), for scalars and vectors."""
    wk.init(arch=arch, debug=True)
    p = wk.field(wk.f32, shape=(2, 8))
    out = wk.field(wk.f32, shape=8)
    v = wk.Vector.field(2, wk.f32, shape=8)

    @wk.func
    def neighbour(t, i):
        return p[t, i] if 0 <= i < 8 else 0.0

    @wk.kernel
    def k(t: wk.i32):
        for i in range(8):
            out[i] = neighbour(t, i - 1) + neighbour(t, i + 1)
            v[i] = wk.Vector([p[t, i], 1]) if i % 2 == 0 else wk.Vector([2.0, 3.0])

    p.fill(1.0)
    k(0)
    assert out.to_numpy().tolist() == [1, 2, 2, 2, 2, 2, 2, 1] and v.to_numpy()[:2].tolist() == [[1, 1], [2, 3]]


def test_python_scope_vector_assigned_to_a_local_is_a_variable(arch):
    """`pos = cam` with `cam` a Python-scope wk.Vector (or a matrix) makes a local variable, as in Taichi:
    updates under a run-time `if` are kept (they were lost: a compile-time binding was shadowed)."""
    cam = wk.Vector([1.0, 2.0, 3.0])
    m0 = wk.Matrix([[1.0, 2.0], [3.0, 4.0]])
    out = wk.field(wk.f32, shape=3)

    @wk.kernel
    def k():
        pos = cam
        m = m0
        if out[1] == 0:
            pos = pos + 10.0
            m[0, 0] += 1.0
        out[0] = pos[0]
        out[2] = m[0, 0]
        for d in wk.static(range(3)):
            out[1] += cam[d]

    k()
    assert out.to_numpy().tolist() == [11.0, 6.0, 2.0]


def test_fill_inside_kernels(arch):
    """`x.fill(value)` in kernel code (Taichi allows it) loops over fields and ndarray arguments."""
    x = wk.field(wk.f32, shape=4)
    v = wk.Vector.field(2, wk.f32, shape=(2, 3))

    @wk.kernel
    def k(a: wk.f32, arr: wk.types.ndarray()):
        x.fill(3)
        v.fill(a)
        arr.fill(7)
        for i in range(2):
            x[i] += 1

    arr = np.zeros(3, np.float32)
    k(2.5, arr)
    assert x.to_numpy().tolist() == [4, 4, 3, 3] and (v.to_numpy() == 2.5).all() and arr.tolist() == [7, 7, 7]


def test_swizzles_and_methods_of_python_scope_vectors_bit_shr_and_copies(arch):
    """`vf[i].xyz = ...` writes components of a field element; a Python-scope vector's methods and swizzles
    work in kernels (`v.norm()`, `v.yx`) and on the host (`v.xyz`, `v.xy = ...`); wk.bit_shr is a logical shift;
    copy.deepcopy copies a container, copy.copy is the container itself."""
    import copy
    vf = wk.Vector.field(4, wk.f32, shape=2)
    v = wk.math.vec3(1, 2, 2)
    shifted = wk.field(wk.i32, shape=2)

    @wk.kernel
    def k(a: wk.i32) -> wk.f32:
        for i in vf:
            vf[i].xyz = 5, 6, 7
            vf[i].wx += wk.Vector([1.0, 2.0])
            vf[i].zy = v.yx
        shifted[0] = wk.bit_shr(a, 1)
        shifted[1] = wk.bit_shr(wk.i64(-8), 60)
        return v.norm() + v.xz.sum()

    assert k(-7) == 6.0
    assert vf.to_numpy().tolist() == [[7, 1, 2, 1]] * 2
    assert shifted.to_numpy().tolist() == [2147483644, 15] and wk.bit_shr(-7, 1) == 2147483644
    host = wk.math.vec4(1, 2, 3, 4)
    host.xy = [9, 8]
    assert host.xyz.tolist() == [9, 8, 3] and host.wx.tolist() == [4, 9] and host.rgb.tolist() == [9, 8, 3]
    b = wk.ndarray(wk.f32, shape=4)
    b.fill(2)
    deep = copy.deepcopy(b)
    deep.fill(5)
    assert copy.copy(b) is b and b.to_numpy().tolist() == [2] * 4 and deep.to_numpy().tolist() == [5] * 4


def test_random_64_bit_integers_cover_their_whole_range(arch):
    # Taichi's test_random test_random_int: ti.random(ti.i64) is uniform over all of i64 (it gave 32-bit draws)
    n = 4096
    a = wk.field(wk.i64, shape=n)
    b = wk.field(wk.u64, shape=n)

    @wk.kernel
    def fill():
        for i in range(n):
            a[i] = wk.random(wk.i64)
            b[i] = wk.random(wk.u64)

    fill()
    x = (a.to_numpy().astype(np.float64) + 2.0 ** 63) / 2.0 ** 64
    y = b.to_numpy().astype(np.float64) / 2.0 ** 64
    for v in (x, y):
        assert abs(v.mean() - 0.5) < 0.03 and abs((v ** 2).mean() - 1 / 3) < 0.03 and v.max() > 0.99
    assert 0.45 < (a.to_numpy() < 0).mean() < 0.55


def test_static_grouped_ndrange_gives_index_vectors(arch):
    """taichi_elements' stencils: `for offset in wk.static(wk.grouped(wk.ndrange(3, 3)))` unrolls over
    compile-time integer vectors (`offset.cast(float)`, `base + offset`, `offset[d]`, `x[offset]`), as Taichi's."""
    x = wk.field(wk.f32, shape=(4, 4))
    w = wk.field(wk.f32, shape=(4, 4))

    @wk.kernel
    def k(base_i: wk.i32):
        base = wk.Vector([base_i, 0])
        for offset in wk.static(wk.grouped(wk.ndrange(3, 3))):
            x[base + offset] += offset.cast(float).sum() + 0.5
            w[offset] = [10.0, 20.0, 30.0][offset[0]] + offset[1]

    k(1)
    expected = np.zeros((4, 4), np.float32)
    expected[1:4, 0:3] = np.add.outer(np.arange(3), np.arange(3)) + 0.5
    np.testing.assert_array_equal(x.to_numpy(), expected)
    np.testing.assert_array_equal(w.to_numpy()[:3, :3], np.add.outer([10.0, 20.0, 30.0], np.arange(3)))
    # host side: vectors too, with cast, usable as an index
    for I in wk.grouped(wk.ndrange(2, 2)):
        assert I.cast(float).dtype == np.float32
        w[I] = I.sum()
    np.testing.assert_array_equal(w.to_numpy()[:2, :2], [[0, 1], [1, 2]])


def test_random_f64_fills_the_whole_mantissa(arch):
    # Quadrants' test_random_f64: wk.random(wk.f64) has 53 random bits (it had 24: every value times 2^24 was whole)
    n = 1 << 14
    x = wk.field(wk.f64, shape=n)

    @wk.kernel
    def fill():
        for i in x:
            x[i] = wk.random(wk.f64)

    fill()
    values = x.to_numpy()
    assert values.min() >= 0.0 and values.max() < 1.0
    assert abs(values.mean() - 0.5) < 0.02 and abs((values ** 2).mean() - 1 / 3) < 0.02
    below_2_32, _ = np.modf(values * 2.0 ** 32)
    assert (below_2_32 > 0).mean() > 0.99
    assert len(np.unique(values)) == n


def test_graph_do_while_repeats_its_body_until_the_condition_is_zero(arch):
    # Quadrants' test_graph_do_while: `while wk.graph_do_while(c): body` runs the body, then again while c[()]
    # is non-zero; c may be a parameter or an ndarray held by a @data_oriented object, and loops nest
    n = 16

    @wk.kernel(graph=True)
    def count_down(x: wk.types.ndarray(wk.i32, ndim=1), counter: wk.types.ndarray(wk.i32, ndim=0)):
        while wk.graph_do_while(counter):
            for i in range(x.shape[0]):
                x[i] = x[i] + 1
            for i in range(1):
                counter[()] = counter[()] - 1

    @wk.data_oriented
    class Stepper:
        def __init__(self):
            self.x = wk.ndarray(wk.i32, shape=(n,))
            self.outer = wk.ndarray(wk.i32, shape=())
            self.inner = wk.ndarray(wk.i32, shape=())

        @wk.kernel(graph=True)
        def step(self):
            while wk.graph_do_while(self.outer):
                for _ in range(1):
                    self.inner[()] = 4
                while wk.graph_do_while(self.inner):
                    for i in range(n):
                        self.x[i] = self.x[i] + 1
                    for _ in range(1):
                        self.inner[()] = self.inner[()] - 1
                for _ in range(1):
                    self.outer[()] = self.outer[()] - 1

    def check():
        x = wk.ndarray(wk.i32, shape=(n,))
        counter = wk.ndarray(wk.i32, shape=())
        for start in (5, 1):
            x.fill(0)
            counter[()] = start
            count_down(x, counter)
            assert counter[()] == 0 and x.to_numpy().tolist() == [start] * n
        s = Stepper()
        s.outer[()] = 3
        s.step()
        assert s.outer[()] == 0 and s.x.to_numpy().tolist() == [12] * n

    check()


def test_graph_do_while_errors_name_the_condition(arch):
    @wk.kernel(graph=True)
    def on_a_vector(c: wk.types.ndarray(wk.i32, ndim=1)):
        while wk.graph_do_while(c):
            c[0] = 0

    @wk.kernel(graph=True)
    def with_continue(c: wk.types.ndarray(wk.i32, ndim=0)):
        while wk.graph_do_while(c):
            if c[()] > 3:
                continue
            c[()] = 0

    @wk.kernel(graph=True)
    def unknown_name(c: wk.types.ndarray(wk.i32, ndim=0)):
        while wk.graph_do_while(nonexistent):  # noqa: F821 - the error under test
            c[()] = 0

    c1 = wk.ndarray(wk.i32, shape=(2,))
    c0 = wk.ndarray(wk.i32, shape=())
    with pytest.raises(wk.CompileError, match="0-d integer ndarray or field"):
        on_a_vector(c1)
    with pytest.raises(wk.CompileError, match="'continue' in a wk.graph_do_while loop"):
        with_continue(c0)
    with pytest.raises(wk.CompileError, match=r"name 'nonexistent' is not defined \(the condition of "
                                              r"wk\.graph_do_while\(\) does not resolve to an ndarray kernel "
                                              r"parameter\)"):
        unknown_name(c0)

    qd = wk          # as Quadrants spells it: a graph kernel's construct (without graph=True Quadrants refuses it)

    @wk.kernel
    def not_graph(c: wk.types.ndarray(wk.i32, ndim=0)):
        while qd.graph.do_while(c):
            c[()] = c[()] - 1

    c0.from_numpy(np.array(3, np.int32))
    with pytest.raises(wk.CompileError, match=r"qd\.graph\.do_while\(\) requires @qd\.kernel\(graph=True\): write "
                                              r"@qd\.kernel\(graph=True\) above 'not_graph'"):
        not_graph(c0)
    assert c0.to_numpy() == 3
    with pytest.raises(wk.WkError, match="inside a @wk.kernel"):
        wk.graph_do_while(c0)


def test_graph_do_while_body_loops_run_as_parallel_tasks_the_host_repeats(arch):
    """At a kernel's top level the loop is a host loop, as Quadrants runs it without CUDA graphs: its body's
    outermost loops are parallel tasks, repeated while the counter (here a 0-d field) is non-zero; a local set
    before the loop, one updated in every trip and read after it, and a bare statement in the body all keep
    their serial meaning."""
    n = 64
    x = wk.field(wk.f32, shape=n)
    counter = wk.field(wk.i32, shape=())
    trips = wk.field(wk.i32, shape=())
    total = wk.field(wk.f32, shape=())

    @wk.kernel(graph=True)
    def relax(start: wk.i32):
        counter[None] = start                # runs once, before the loop
        scale = 0.5
        done = 0
        while wk.graph_do_while(counter):
            for i in range(n):
                x[i] = x[i] * scale + 1.0
            done += 1
            counter[None] -= 1
        trips[None] = done
        for i in range(n):
            total[None] += x[i]

    relax(6)
    want = np.zeros(n, np.float32)
    for _ in range(6):
        want = want * 0.5 + 1.0
    np.testing.assert_allclose(x.to_numpy(), want, rtol=1e-6)
    assert counter[None] == 0 and trips[None] == 6
    assert total[None] == pytest.approx(want.sum(), rel=1e-5)
    text = relax.ir()
    assert "host loop: tasks" in text and text.count(" range {") >= 2     # the body's loop is a parallel task


def test_graph_do_while_kernels_are_not_differentiated(arch):
    """The trips of a graph_do_while loop depend on a counter the kernel changes, so .grad, Tape and FwdMode
    refuse the kernel (naming the loop's line) instead of differentiating one trip."""
    x = wk.field(wk.f32, shape=4, needs_grad=True)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)
    counter = wk.field(wk.i32, shape=())

    @wk.kernel(graph=True)
    def repeated():
        counter[None] = 3
        while wk.graph_do_while(counter):
            for i in range(4):
                loss[None] += x[i] * x[i]
            counter[None] -= 1

    repeated()
    with pytest.raises(wk.AutodiffError, match="graph_do_while loop, which has no derivative") as info:
        repeated.grad()
    assert "while wk.graph_do_while(counter):" in str(info.value)
    with pytest.raises(wk.AutodiffError, match="graph_do_while"):
        with wk.ad.Tape(loss=loss):
            repeated()


def test_dict_comprehensions_and_double_star_build_compile_time_tables(arch):
    """`{k: v for ...}` and `{**a, k: v}` in kernels (Quadrants' test_ast_refactor): compile-time keys, run-time or
    compile-time values, looked up with compile-time keys; a missing key is a compile error naming it."""
    data = wk.field(wk.i32, shape=8)
    data.from_numpy(np.arange(8, dtype=np.int32) * 3)

    @wk.kernel
    def squares(n: wk.template()) -> wk.i32:
        table = {i: i * i for i in range(n) if i % 3 if i % 2}
        reads = {i: data[i] for i in range(4)}
        merged = {0: 100, **reads, 5: -1}
        total = 0
        for i in wk.static(range(n)):
            if wk.static(i in table):
                total += table[i]
        return total + merged[0] + merged[3] + merged[5]

    @wk.kernel
    def missing(m: wk.template()) -> wk.i32:
        table = {i: i * i for i in range(5) if i % 2}
        return table[m]

    assert squares(10) == 1 + 25 + 49 + 0 + 9 - 1
    assert missing(3) == 9
    with pytest.raises(wk.CompileError, match="cannot index .* with 2"):
        missing(2)


def test_double_star_in_a_dict_display_takes_a_dict():
    @wk.kernel
    def k() -> wk.i32:
        a = 3
        b = {1: 2, **a}
        return b[1]

    with pytest.raises(wk.CompileError, match=r"'\*\*' in a dict display takes a dict, not "):
        k()
