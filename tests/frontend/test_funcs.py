"""@wk.func inlining: return values, early returns, by-value arguments, templates, recursion."""
from __future__ import annotations

import re

import pytest

from tests.frontend.helpers import FakeField, build, of_type, run, wk
from wgkern.ir import nodes as ir

out = FakeField(wk.f32, 16, "out")
iout = FakeField(wk.i32, 16, "iout")


@wk.func
def square(v):
    return v * v


@wk.func
def clamp_sign(v):
    if v > 0:
        return 1
    elif v < 0:
        return -1
    return 0


@wk.func
def first_multiple(n, m) -> wk.i32:
    for i in range(1, n):
        for j in range(1, n):
            if i * j == m:
                return i * 100 + j
    return -1


@wk.func
def bump(v):
    v += 1
    return v


@wk.func
def bump_in_place(v: wk.template()):
    v += 1


@wk.func
def with_default(a, b=10, *, c=100):
    return a + b + c


@wk.func
def recurse(n):
    return recurse(n - 1)


@wk.func
def ping(n):
    return pong(n)


@wk.func
def pong(n):
    return ping(n)


@wk.func
def write_field(f: wk.template(), i, v):
    f[i] = v


@wk.func
def length2(v):
    return v.dot(v)


@wk.func
def scale(v, s) -> wk.math.vec3:
    if s > 0:
        return v * s
    return v


def test_direct_return_is_inlined_without_flag():
    @wk.kernel
    def k(a: wk.f32):
        out[0] = square(a) + square(2.0)

    kir = build(k, 0)
    assert not of_type(kir, ir.If)
    assert run(kir, scalars=[3.0])["out"][0] == 13.0


def test_early_returns_use_flag_and_guards():
    @wk.kernel
    def k(a: wk.f32):
        iout[0] = clamp_sign(a)

    kir = build(k, 0)
    names = [a.name for a in of_type(kir, ir.Alloca)]
    assert "clamp_sign.returned" in names and "clamp_sign.result" in names
    for a, expected in ((2.0, 1), (-2.0, -1), (0.0, 0)):
        assert run(kir, scalars=[a])["iout"][0] == expected


def test_return_inside_nested_loops_breaks_out():
    @wk.kernel
    def k(m: wk.i32):
        iout[0] = first_multiple(10, m)
        iout[1] = first_multiple(3, 100)

    kir = build(k, 0)
    result = run(kir, scalars=[12])["iout"]
    assert result[0] == 2 * 100 + 6 and result[1] == -1


def test_func_call_inside_parallel_loop_resets_flag_each_iteration():
    @wk.kernel
    def k():
        for i in range(6):
            iout[i] = clamp_sign(i - 3)

    assert list(run(build(k))["iout"][:6]) == [-1, -1, -1, 0, 1, 1]


def test_arguments_are_passed_by_value():
    @wk.kernel
    def k():
        a = 1
        b = bump(a)
        iout[0] = a
        iout[1] = b

    assert list(run(build(k))["iout"][:2]) == [1, 2]


def test_template_argument_passes_local_by_reference():
    @wk.kernel
    def k():
        a = 1
        bump_in_place(a)
        iout[0] = a

    assert run(build(k))["iout"][0] == 2


def test_defaults_and_keywords():
    @wk.kernel
    def k(a: wk.i32):
        iout[0] = with_default(a)
        iout[1] = with_default(a, c=0, b=1)

    assert list(run(build(k, 0), scalars=[1])["iout"][:2]) == [111, 2]


@wk.func
def pair_of(a):
    return a + 1, a + 5


def test_starred_tuple_arguments_spread_over_parameters():
    # Quadrants' f(t, *pair) where pair is a func's tuple result (or a literal tuple)
    @wk.kernel
    def k(a: wk.i32):
        res = pair_of(a)
        iout[0] = with_default(*res)
        iout[1] = with_default(a, *(2, 3)[:1])
        iout[2] = with_default(*pair_of(a), c=0)

    assert list(run(build(k, 0), scalars=[3])["iout"][:3]) == [112, 105, 12]


def test_fields_pass_through_template_params():
    @wk.kernel
    def k():
        write_field(out, 3, 2.5)

    kir = build(k)
    assert [c.name for c in kir.containers] == ["out"]
    assert run(kir)["out"][3] == 2.5


def test_vector_arguments_and_returns():
    @wk.kernel
    def k(s: wk.f32):
        v = wk.math.vec3(1.0, 2.0, 2.0)
        out[0] = length2(v)
        w = scale(v, s)
        out[1] = w.z

    kir = build(k, 0)
    result = run(kir, scalars=[2.0])["out"]
    assert result[0] == 9.0 and result[1] == 4.0
    assert run(kir, scalars=[-1.0])["out"][1] == 2.0


def test_recursion_that_does_not_end_at_compile_time_is_a_compile_error():
    @wk.kernel
    def k():
        iout[0] = recurse(3)

    with pytest.raises(wk.CompileError, match="recursion deeper than 16 levels: 'recurse' calls itself"):
        build(k)


@wk.func
def sum_to(n: wk.template()) -> wk.i32:
    total = 0
    if wk.static(n > 0):
        total = n + sum_to(n - 1)
    return total


def test_compile_time_recursion_on_a_template_argument():
    """Taichi's meta-programming idiom: the recursion ends at compile time (each level is inlined)."""
    @wk.kernel
    def k():
        iout[0] = sum_to(10)

    assert run(build(k))["iout"][0] == 55


def test_mutual_recursion_is_a_compile_error():
    @wk.kernel
    def k():
        iout[0] = ping(3)

    with pytest.raises(wk.CompileError, match=r"ping -> pong -> ping"):
        build(k)


def test_wrong_arity_is_a_compile_error():
    @wk.kernel
    def k():
        iout[0] = square(1, 2)

    with pytest.raises(wk.CompileError, match="wrong arguments in the call to wk.func 'square'") as info:
        build(k)
    assert "iout[0] = square(1, 2)" in str(info.value)


def test_wrong_calls_name_each_problem_in_quadrants_words():
    @wk.func
    def three(a, b, c=0):
        return a + b + c

    @wk.kernel
    def too_many():
        iout[0] = three(1, 2, 3, 4)

    @wk.kernel
    def missing():
        iout[0] = three(1, c=3)

    @wk.kernel
    def twice():
        iout[0] = three(1, a=3, b=3)

    @wk.kernel
    def unknown():
        iout[0] = three(1, 2, d=3)

    for kernel, problem in ((too_many, "Too many arguments: expected at most 3 positional, got 4"),
                            (missing, "Missing argument 'b'"), (twice, "Multiple values for argument 'a'"),
                            (unknown, "Unexpected argument 'd'")):
        with pytest.raises(wk.CompileError, match=re.escape(f"in the call to wk.func 'three': {problem}")):
            build(kernel)


def test_error_inside_func_points_into_the_func():
    @wk.func
    def bad(v):
        return v.nope

    @wk.kernel
    def k(a: wk.f32):
        out[0] = bad(a)

    with pytest.raises(wk.CompileError) as info:
        build(k, 0)
    assert "return v.nope" in str(info.value) and "has no attribute 'nope'" in str(info.value)


def test_func_returning_static_value():
    @wk.func
    def pick():
        return out

    @wk.kernel
    def k():
        pick()[0] = 1.0

    assert run(build(k))["out"][0] == 1.0


def test_func_without_return_gives_none():
    @wk.func
    def store(i):
        iout[i] = 7

    @wk.kernel
    def k():
        store(2)

    assert run(build(k))["iout"][2] == 7


def test_param_annotation_casts():
    @wk.func
    def as_int(v: wk.i32):
        return v

    @wk.kernel
    def k(a: wk.f32):
        out[0] = as_int(a) / 2

    assert run(build(k, 0), scalars=[3.7])["out"][0] == 1.5


def test_vector_parameter_modified_in_place_is_a_copy():
    @wk.func
    def zero_x(v):
        v[0] = 0.0
        v.y = 5.0
        return v

    @wk.kernel
    def k():
        a = wk.math.vec3(1.0, 2.0, 3.0)
        b = zero_x(a)
        out[0] = a.x
        out[1] = b.x
        out[2] = b.y

    assert run(build(k))["out"][:3].tolist() == [1.0, 0.0, 5.0]


def test_static_if_branch_names_stay_visible():
    @wk.kernel
    def k(mode: wk.template()):
        if wk.static(mode == 2):
            n = 4
        else:
            n = 8
        iout[0] = n

    assert run(build(k, 2))["iout"][0] == 4


def test_func_loop_with_return_inlined_at_top_level_runs_serially():
    @wk.kernel
    def k(m: wk.i32):
        iout[0] = first_multiple(10, m)

    (outer, inner) = [lp for lp in of_type(build(k, 0), ir.RangeFor)]
    assert outer.serialize and not inner.serialize


def test_template_parameter_bound_to_a_field_element_writes_it():
    @wk.func
    def add_to(a: wk.template(), d):
        a += d

    @wk.func
    def overwrite(a: wk.template(), d):
        a = d

    @wk.kernel
    def k():
        for i in range(4):
            out[i] = 1.0
            add_to(out[i], i * 1.0)
            overwrite(iout[i], i + 10)
            add_to(iout[i], 1)

    result = run(build(k))
    assert result["out"][:4].tolist() == [1.0, 2.0, 3.0, 4.0]
    assert result["iout"][:4].tolist() == [11, 12, 13, 14]


def test_builtin_all_and_any_on_vectors():
    @wk.kernel
    def k():
        v = wk.Vector([1, 2])
        iout[0] = all(v > 0)
        iout[1] = any(v > 1)
        iout[2] = all(v > 1)
        iout[3] = any(v > 2)

    assert run(build(k))["iout"][:4].tolist() == [1, 1, 0, 0]


def test_pyfunc_is_inlined_in_kernels_and_plain_in_python():
    @wk.pyfunc
    def square(v):
        return v * v

    @wk.kernel
    def k():
        out[0] = square(1.5)

    assert run(build(k))["out"][0] == 2.25
    assert square(3.0) == 9.0


def test_return_annotation_casts_the_value(arch):
    @wk.func
    def truncate(a: wk.f32) -> wk.i32:
        return a                                   # one return, the last statement

    @wk.func
    def truncate_early(a: wk.f32) -> wk.i32:
        if a < 0:
            return 0.0 - a                         # early returns go through the result variable
        return a

    @wk.func
    def halves(v: wk.math.vec2) -> wk.types.vector(2, wk.i32):
        return v * 0.5

    @wk.func
    def constant() -> wk.i32:
        return 3.7                                 # a Python number stays compile-time, truncated

    @wk.kernel
    def k(a: wk.f32) -> wk.math.vec4:
        h = halves(wk.math.vec2(a, 5.0))
        return wk.math.vec4(truncate(a) + constant(), truncate_early(-a), h[0], h[1])

    assert k(2.75).tolist() == [5.0, 2.0, 1.0, 2.0]


def test_assert_condition_is_evaluated_without_debug(arch):
    counter = wk.field(wk.i32, shape=())

    @wk.func
    def bump(v: wk.i32) -> wk.i32:
        counter[None] += v
        return 0

    @wk.kernel
    def k():
        assert bump(5) == 1                        # not checked without debug=True, but bump() runs
        assert bump(2) == 0

    k()
    assert counter[None] == 7


def test_ref_parameters_change_the_callers_variable(arch):
    # Taichi's wk.ref(dtype): a func parameter passed by reference (Quadrants' test_function test_ref).
    @wk.real_func
    def set_seven(a: wk.ref(wk.f32)):
        a = 7

    @wk.func
    def double(a: wk.ref(wk.f32)):
        a += a

    @wk.kernel
    def run() -> wk.f32:
        a = 5.0
        set_seven(a)
        b = 5.0
        double(b)
        return a * 100 + b

    assert run() == 710.0
    assert wk.types.ref(wk.i32).dtype == wk.i32


def test_template_parameter_updates_the_callers_local_struct(arch):
    # a path tracer's bounce: the func updates the ray copied out of a struct field, through nested calls
    ray_t = wk.types.struct(origin=wk.math.vec3, weight=wk.math.vec3, done=wk.i8)
    rays = ray_t.field(shape=3)
    result = wk.field(wk.f32, shape=(3, 2))

    @wk.func
    def absorb(ray: wk.template(), albedo):
        ray.weight *= albedo
        ray.origin.y += 1.0

    @wk.func
    def bounce(ray: wk.template(), albedo):
        absorb(ray, albedo)
        if ray.weight.x < 0.2:
            ray.done = wk.i8(1)

    @wk.kernel
    def trace():
        for i in rays:
            ray = rays[i]
            for _ in range(4):
                bounce(ray, 0.5)
                if ray.done == 1:
                    break
            result[i, 0] = ray.weight.x + ray.origin.y
            result[i, 1] = ray.done

    rays.weight.fill(1.0)
    trace()
    assert result.to_numpy().tolist() == [[3.125, 1.0]] * 3
    assert rays.weight.to_numpy().tolist() == [[1.0] * 3] * 3     # the field keeps its values


def test_func_with_a_return_type_and_no_return_names_the_func(arch):
    # Taichi's test_return test_func_no_return: the error is about the func, not the kernel returning its value
    @wk.func
    def bar() -> wk.i32:
        pass

    @wk.kernel
    def foo() -> wk.i32:
        return bar()

    with pytest.raises(wk.CompileError, match="wk.func 'bar' has a return type but no 'return' statement "
                                              r"\(Function has a return type but does not have a return "):
        foo()


def test_a_vector_parameter_names_the_expected_length():
    @wk.func
    def norm3(v: wk.types.vector(3, wk.f32)) -> wk.f32:
        return v.norm()

    @wk.kernel
    def k():
        out[0] = norm3(wk.Vector([1.0, 2.0]))

    with pytest.raises(wk.CompileError, match=re.escape("parameter 'v' expects wk.types.vector(3, wk.f32), got ") +
                       ".*" + re.escape("('v' is expected to be a Matrix with n 3, but got 2)")):
        build(k)


def test_real_functions_declare_their_types(arch):
    # as in Taichi and Quadrants: every parameter is annotated, and so is a returned value
    with pytest.raises(wk.CompileError, match="parameter 'a' of real function 'add' must be type annotated"):
        @wk.real_func
        def add(a, b: wk.i32) -> wk.i32:
            return a + b

    with pytest.raises(wk.CompileError, match="real function 'add2' returns a value, so its return value must be "
                                              "annotated"):
        @wk.func(is_real_function=True)
        def add2(a: wk.i32, b: wk.i32):
            return a + b

    @wk.real_func
    def bump(a: wk.ref(wk.i32)):                 # returns nothing: no return annotation needed
        a += 1

    @wk.kernel
    def run() -> wk.i32:
        v = 1
        bump(v)
        return v

    assert run() == 2
