"""wk.static loops and kernel returns decided at compile time, through the whole pipeline on every arch."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk


def test_static_loop_break_and_continue(arch):
    out = wk.field(wk.i32, shape=(2, 6))

    @wk.kernel
    def fill():
        for i in wk.static(range(6)):
            if wk.static(i == 1):
                continue               # skips the rest of this unrolled iteration only
            out[0, i] = 1
            if wk.static(i == 3):
                break                  # no later iteration is unrolled
        wk.loop_config(serialize=True)
        for j in range(6):             # a run-time loop around: its own break/continue are run-time ones
            for k in wk.static(range(3)):
                if wk.static(k == 2):
                    break
                out[1, j] += 1
            if j == 4:
                break

    fill()
    assert out.to_numpy().tolist() == [[1, 0, 1, 1, 0, 0], [2, 2, 2, 2, 2, 0]]


def test_nested_static_loops_break_the_inner_one(arch):
    out = wk.field(wk.i32, shape=(3, 3))

    @wk.kernel
    def fill():
        for i in wk.static(range(3)):
            for j in wk.static(range(3)):
                if wk.static(j > i):
                    break
                out[i, j] = 1 + i * 3 + j

    fill()
    assert out.to_numpy().tolist() == [[1, 0, 0], [4, 5, 0], [7, 8, 9]]


def test_kernel_returns_under_static_conditions(arch):
    @wk.kernel
    def pick(a: wk.template()) -> wk.i32:
        if wk.static(a == 1):
            return 10
        elif wk.static(a == 2):
            return 20
        return 30

    @wk.kernel
    def partial_sum() -> wk.i32:
        total = 0
        for i in wk.static(range(10)):
            total += i * i
            if wk.static(i == 4):
                return total           # nothing after it is compiled
        return -1

    assert (pick(1), pick(2), pick(7)) == (10, 20, 30)
    assert partial_sum() == 0 + 1 + 4 + 9 + 16


def test_kernel_bare_return_and_return_none(arch):
    out = wk.field(wk.f32, shape=2)

    @wk.kernel
    def k(v: wk.f32):
        out[0] = v
        if wk.static(True):
            return None
        out[1] = v                     # never compiled

    k(2.5)
    assert out.to_numpy().tolist() == [2.5, 0.0]


def test_kernel_return_errors(arch):
    @wk.kernel
    def in_runtime_loop() -> wk.i32:
        for i in range(3):
            return i
        return 0

    @wk.kernel
    def never_returns() -> wk.i32:
        pass

    @wk.kernel
    def returns_nothing() -> wk.f32:
        return

    with pytest.raises(wk.CompileError, match="'return' inside a run-time if/for/while of a kernel"):
        in_runtime_loop()
    with pytest.raises(wk.CompileError, match="has a return type but no 'return' statement gives a value"):
        never_returns()
    with pytest.raises(wk.CompileError, match="is annotated to return .* but returns nothing"):
        returns_nothing()


def test_loop_over_a_conditional_iterable_picked_at_compile_time(arch):
    # `for i in A if wk.static(c) else B`: the chosen side is compiled as if written alone
    n = wk.field(wk.i32, shape=())
    out = wk.field(wk.i32, shape=(2, 8))

    def make(unrolled: bool):
        @wk.kernel
        def fill(row: wk.i32):
            for i in wk.static(range(3)) if wk.static(unrolled) else range(n[None]):
                out[row, i] += 1 + i
        return fill

    n[None] = 5
    make(True)(0)
    make(False)(1)
    assert out.to_numpy().tolist() == [[1, 2, 3, 0, 0, 0, 0, 0], [1, 2, 3, 4, 5, 0, 0, 0]]


def test_loop_over_a_conditional_iterable_needs_a_compile_time_condition(arch):
    out = wk.field(wk.i32, shape=4)

    @wk.kernel
    def fill(c: wk.i32):
        for i in range(4) if c > 0 else range(2):
            out[i] = 1

    with pytest.raises(wk.CompileError, match="needs a compile-time condition"):
        fill(1)


def test_assigning_a_loop_variable_rebinds_it_for_the_rest_of_the_iteration(arch):
    out = wk.field(wk.f32, shape=(3, 4))
    n = wk.field(wk.i32, shape=())

    @wk.kernel
    def fill():
        for i, j in wk.ndrange(2, 2):
            i = wk.cast(i, wk.f32)       # a new local (here of another type); the loop's counter is unchanged
            out[0, 2 * wk.cast(i, wk.i32) + j] = i * 0.5
        for k in range(n[None]):
            k += 1
            out[1, k - 1] = k
        for t in range(4):
            for u in range(2):
                u = u * 2
                out[2, t] += u

    n[None] = 4
    fill()
    assert out.to_numpy().tolist() == [[0, 0, 0.5, 0.5], [1, 2, 3, 4], [2, 2, 2, 2]]


def test_loop_under_an_if_on_a_python_constant_runs_serially(arch):
    # Taichi makes `if True:` a real branch, so the loop in it is not an outermost (parallel) loop: break works
    # and plain updates of an outer variable count every iteration (Quadrants' test_loops).
    @wk.kernel
    def count_to_break() -> wk.i32:
        a = 0
        if True:
            for i in range(1000):
                if i == 100:
                    break
                a += 1
        return a

    @wk.kernel
    def total() -> wk.f32:
        s = 0.0
        if True:
            for i in range(1000):
                s += 1.0
        return s

    assert count_to_break() == 100
    assert total() == 1000.0


def test_zero_d_numpy_arrays_are_numbers_in_kernels(arch):
    x = wk.field(wk.i32, shape=8)
    begin = np.array(3, np.int32)
    end = np.array(7, np.int32)

    @wk.kernel
    def mark():
        for i in range(begin, end):
            x[i] = i

    mark()
    assert x.to_numpy().tolist() == [0, 0, 0, 3, 4, 5, 6, 0]


def test_ndrange_with_float_bounds_is_a_compile_error(arch):
    # Taichi refuses wk.ndrange((1.1, 10.5)); truncating the bounds would silently change the trip count.
    x = wk.field(wk.i32, shape=())

    @wk.kernel
    def floats():
        for i in wk.ndrange((1.1, 10.5)):
            x[None] += 1

    with pytest.raises(wk.CompileError, match="integers"):
        floats()

    @wk.kernel
    def numpy_ints():
        for i in wk.ndrange((np.int64(0), np.int32(10))):
            x[None] += 1

    numpy_ints()
    assert x[None] == 10


def test_numpy_scalar_types_called_on_constants_in_kernels(arch):
    @wk.kernel
    def scaled() -> wk.f32:
        return np.float32(0.5) * np.int32(3) + np.float64(0.25)

    assert scaled() == 1.75


def test_sync_between_top_level_loops_is_accepted_and_the_loops_run_in_order(arch):
    n = 64
    a = wk.field(wk.f32, shape=n)
    b = wk.field(wk.f32, shape=n)

    @wk.kernel
    def two_phases(k: wk.f32):
        for i in a:
            a[i] = i * k
        wk.sync()                      # as Taichi programs write it between two loops
        for i in b:
            b[i] = a[(i + 1) % n] + a[(i + n - 1) % n]

    two_phases(2.0)
    ref = np.arange(n, dtype=np.float32) * 2
    np.testing.assert_allclose(b.to_numpy(), np.roll(ref, -1) + np.roll(ref, 1))


@pytest.mark.parametrize("where", ["loop", "func", "args"])
def test_sync_inside_a_loop_or_func_is_refused_naming_the_line(where):
    wk.init(arch=wk.cpu)
    a = wk.field(wk.f32, shape=4)

    @wk.func
    def helper(i):
        a[i] = 1.0
        wk.sync()

    @wk.kernel
    def in_loop():
        for i in a:
            a[i] = 1.0
            wk.sync()

    @wk.kernel
    def in_func():
        for i in a:
            helper(i)

    @wk.kernel
    def with_args():
        wk.sync(1)

    kernel = {"loop": in_loop, "func": in_func, "args": with_args}[where]
    message = "takes no arguments" if where == "args" else "threads cannot wait for each other"
    with pytest.raises(wk.CompileError, match=message) as info:
        kernel()
    assert "wk.sync(" in str(info.value)


def test_static_ndrange_checks_its_arguments(arch):
    # wk.static(wk.ndrange(...)) evaluates wk.ndrange in Python: its bounds are checked as in a kernel loop,
    # with Quadrants' phrase, and numpy integers are accepted.
    @wk.kernel
    def floats():
        for i in wk.static(wk.ndrange(0.1, 0.2)):
            pass

    with pytest.raises(wk.CompileError, match=r"ndrange should be an integer scalar or a tuple/list of "
                                              r"\(int, int\)"):
        floats()
    with pytest.raises(TypeError, match=r"ndrange should be a scalar or a tuple/list like \(begin, end\)"):
        list(wk.ndrange((1, 2, 3)))
    assert list(wk.ndrange((np.int64(1), np.int32(3)), 1)) == [(1, 0), (2, 0)]
    out = wk.field(wk.i32, shape=4)

    @wk.kernel
    def unrolled():
        for i, j in wk.static(wk.ndrange((np.int64(0), 2), 2)):
            out[i * 2 + j] = i * 10 + j

    unrolled()
    assert out.to_numpy().tolist() == [0, 1, 10, 11]


def test_ndrange_loop_variables_must_match_its_dimensions(arch):
    @wk.kernel
    def one_variable():
        for i in wk.ndrange(4, 4):
            pass

    with pytest.raises(wk.CompileError, match="Ndrange for loop with number of the loop variables not equal to the "
                                              "dimension of the ndrange is not supported"):
        one_variable()


def test_a_generator_read_by_a_kernel_is_an_error(arch):
    # The first compile would consume a generator (a second compile would see it empty): Quadrants' ValueError.
    sizes = (n for n in range(1, 4))
    tuple_sizes = tuple(n for n in range(1, 4))
    count = wk.field(wk.i32, shape=())

    @wk.kernel
    def from_generator():
        for I in wk.grouped(wk.ndrange(*sizes)):
            count[None] += 1

    @wk.kernel
    def from_tuple():
        for I in wk.grouped(wk.ndrange(*tuple_sizes)):
            count[None] += 1

    with pytest.raises(ValueError, match="'sizes' is a generator.*Cannot store generators in variables"):
        from_generator()
    with pytest.raises(wk.CompileError, match=r"test_loops.py:\d+"):
        from_generator()
    from_tuple()
    assert count[None] == 6


def test_loop_variable_must_be_a_new_name(arch):
    # A loop variable lives in its loop: reusing an outer name would leave the outer variable unchanged after the
    # loop (unlike Python), so range loops and loops over fields refuse it, as Quadrants does.
    x = wk.field(wk.i32, shape=3)

    @wk.kernel
    def reuses_local() -> wk.i32:
        i = 0
        for i in range(10):
            pass
        return i

    @wk.kernel
    def reuses_in_field_loop():
        i = 5
        for i in x:
            x[i] = 1

    @wk.kernel
    def nested_same_name():
        for i in range(2):
            for i in range(3):
                pass

    for kernel in (reuses_local, reuses_in_field_loop, nested_same_name):
        with pytest.raises(wk.CompileError, match="Variable 'i' is already declared in the outer scope and cannot "
                                                  "be used as loop variable"):
            kernel()

    @wk.kernel
    def siblings() -> wk.i32:
        total = 0
        for i in range(3):
            total += i
        for i in range(4):             # the first loop's i ended with its loop
            total += i
        return total

    assert siblings() == 3 + 6

    @wk.kernel
    def underscores() -> wk.i32:
        n = 0
        for _ in range(2):
            for _ in range(3):         # `_` is never read: it may be reused
                n += 1
        return n

    assert underscores() == 6


def test_static_loop_refuses_nested_static_and_grouped_containers(arch):
    x = wk.field(wk.i32, shape=(2, 2))

    @wk.kernel
    def nested():
        for i in wk.static(wk.static(range(1))):
            pass

    @wk.kernel
    def grouped_field():
        for I in wk.static(wk.grouped(x)):
            x[I] = 1

    @wk.kernel
    def grouped_ndrange():
        for I in wk.static(wk.grouped(wk.ndrange(*x.shape))):
            x[I] = I[0] * 2 + I[1]

    with pytest.raises(wk.CompileError, match="'qd.static' cannot be nested"):
        nested()
    with pytest.raises(wk.CompileError, match=r"Only 'qd.ndrange' is allowed in 'qd.static\(qd.grouped\(...\)\)'"):
        grouped_field()
    grouped_ndrange()
    assert x.to_numpy().tolist() == [[0, 1], [2, 3]]
