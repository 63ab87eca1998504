"""print() in kernels on every available arch: values, f-strings and str.format with format specs, lists and
tuples, errors naming the spec, and what did not fit when many threads print."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk


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
