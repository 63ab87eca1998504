"""Every unsupported construct is a CompileError naming file, line and column and showing the source line."""
from __future__ import annotations

import statistics

import numpy as np
import pytest

from tests.frontend.helpers import FakeField, build, of_type, run, wk
from wgkern.ir import nodes as ir

x = FakeField(wk.f32, 8, "x")
grid = FakeField(wk.f32, (4, 4), "grid")
no_grad = FakeField(wk.f32, 8, "no_grad")
ix = FakeField(wk.i32, 8, "ix")


def line_of(text: str) -> int:
    with open(__file__) as handle:
        for number, line in enumerate(handle, 1):
            if text in line and "line_of(" not in line:
                return number
    raise AssertionError(text)


def compile_error(kernel, *args) -> wk.CompileError:
    with pytest.raises(wk.CompileError) as info:
        build(kernel, *args)
    return info.value


def check(err: wk.CompileError, message: str, source: str) -> None:
    text = str(err)
    assert message in text, text
    assert source in text, text
    assert err.filename == __file__
    assert err.lineno == line_of(source)
    assert f"{__file__}:{err.lineno}:" in text
    assert err.loc.source_line.strip().startswith(source.strip()[:20])


def test_class_definition():
    @wk.kernel
    def k():
        class Inner:  # err-class
            pass

    check(compile_error(k), "class definitions are not supported inside kernels", "class Inner:  # err-class")


def test_try_except():
    @wk.kernel
    def k():
        try:  # err-try
            x[0] = 1.0
        except Exception:
            pass

    check(compile_error(k), "try/except is not supported", "try:  # err-try")


def test_with_statement():
    @wk.kernel
    def k():
        with open("f"):  # err-with
            pass

    check(compile_error(k), "'with' is not supported", 'with open("f"):  # err-with')


def test_lambda_outside_static():
    @wk.kernel
    def k():
        f = lambda v: v  # err-lambda  # noqa: E731

    check(compile_error(k), "lambda is not supported inside kernels", "f = lambda v: v  # err-lambda")


def test_comprehension_over_a_runtime_range():
    @wk.kernel
    def k(n: wk.i32):
        t = [i for i in range(n)]  # err-comp

    check(compile_error(k, 0), "range() with run-time bounds can only be a for loop's iterable",
          "t = [i for i in range(n)]  # err-comp")


def test_comprehension_inside_static_is_fine():
    @wk.kernel
    def k():
        for v in wk.static([i * i for i in range(3)]):
            x[v] = 1.0

    assert len(of_type(build(k), ir.GlobalStore)) == 3


def test_print_keywords():
    @wk.kernel
    def k():
        print(x[0], file=None)  # err-print

    check(compile_error(k), "print() inside kernels takes sep= and end= strings, not file=None",
          "print(x[0], file=None)  # err-print")


def test_calling_a_library_python_function():
    # the user's own undecorated functions are inlined (tests/frontend/test_plain_python_calls.py); a library's
    # are not: their bodies are not kernel code
    @wk.kernel
    def k():
        x[0] = statistics.fmean(x[1])  # err-call

    check(compile_error(k), "cannot call 'fmean' inside a kernel", "x[0] = statistics.fmean(x[1])  # err-call")


def test_assigning_loop_variable_in_a_nested_block():
    # in the loop's own body `i = ...` rebinds the name (tests/frontend/test_loops.py); inside a nested block
    # the rebinding would end with that block, unlike Python, so it is refused
    @wk.kernel
    def k():
        for i in range(3):
            if x[i] > 0:
                i = 2  # err-loopvar

    check(compile_error(k), "cannot assign to the loop variable 'i'", "i = 2  # err-loopvar")


def test_undefined_name():
    @wk.kernel
    def k():
        x[0] = undefined_thing  # err-undef  # noqa: F821

    check(compile_error(k), "name 'undefined_thing' is not defined", "x[0] = undefined_thing  # err-undef")


def test_wrong_index_count():
    @wk.kernel
    def k():
        grid[1] = 0.0  # err-index

    check(compile_error(k), "'grid' has 2 dimension(s) and must be indexed with 2 index(es), got 1",
          "grid[1] = 0.0  # err-index")


def test_float_index():
    @wk.kernel
    def k(a: wk.f32):
        x[a] = 0.0  # err-findex

    check(compile_error(k, 0), "indices must be integers, got f32", "x[a] = 0.0  # err-findex")


def test_return_in_middle_of_kernel():
    @wk.kernel
    def k(a: wk.i32):
        if a > 0:
            return  # err-return
        x[0] = 1.0

    check(compile_error(k, 0), "'return' inside a run-time if/for/while of a kernel is not supported",
          "return  # err-return")


def test_kernel_return_without_annotation():
    @wk.kernel
    def k():
        return 1.0  # err-noann

    check(compile_error(k), "returns a value but has no return type annotation", "return 1.0  # err-noann")


def test_break_in_static_loop_under_runtime_if():
    @wk.kernel
    def k(a: wk.i32):
        for i in wk.static(range(3)):
            if a > i:
                break  # err-sbreak

    check(compile_error(k, 0), "'break' of a wk.static loop under a run-time 'if' is not supported",
          "break  # err-sbreak")
    check(compile_error(k, 0), "You are trying to `break` a static `for` loop", "break  # err-sbreak")


def test_break_in_outermost_loop_names_quadrants_phrase():
    @wk.kernel
    def k():
        for i in range(4):
            break  # err-pbreak

    check(compile_error(k), "Cannot break in the outermost loop: 'break' is not allowed in a kernel's outermost "
          "(parallel) loop", "break  # err-pbreak")


def test_runtime_range_step():
    @wk.kernel
    def k(s: wk.i32):
        for i in range(0, 10, s):  # err-step
            pass

    check(compile_error(k, 0), "the step of range() in a kernel must be a non-zero compile-time integer",
          "for i in range(0, 10, s):  # err-step")


def test_bit_op_on_float():
    @wk.kernel
    def k(a: wk.f32):
        x[0] = a & 1  # err-bitop

    check(compile_error(k, 0), "operator '&' needs integer operands, got f32 and i32 (it takes integral inputs only)",
          "x[0] = a & 1  # err-bitop")


def test_logical_not_of_a_float():
    # Quadrants refuses `not` of a float (a scalar or a vector's components); bools and integers are fine
    @wk.kernel
    def k(a: wk.f32):
        x[0] = not a  # err-not

    check(compile_error(k, 0), "`not` needs an integer or bool operand, got a f32 value: it takes integral inputs only",
          "x[0] = not a  # err-not")

    @wk.kernel
    def v(a: wk.f32):
        m = not wk.Vector([a, a])  # err-notvec
        x[0] = m[0]

    check(compile_error(v, 0), "it takes integral inputs only", "m = not wk.Vector([a, a])  # err-notvec")


def test_ffs_of_a_float():
    @wk.kernel
    def k(a: wk.f32):
        x[0] = wk.math.ffs(a)  # err-ffs

    err = compile_error(k, 0.0)
    assert "it takes integral inputs only" in str(err) and "in wk.func 'ffs' called at" in str(err), str(err)


def test_atomic_or_on_float_field():
    @wk.kernel
    def k():
        x[0] |= 1  # err-aor

    check(compile_error(k), "atomic or needs an integer destination, 'x' is f32", "x[0] |= 1  # err-aor")


def test_missing_grad():
    @wk.kernel
    def k():
        no_grad.grad[0] = 1.0  # err-grad

    check(compile_error(k), "'no_grad' has no .grad (create it with needs_grad=True)",
          "no_grad.grad[0] = 1.0  # err-grad")


def test_for_else():
    @wk.kernel
    def k():
        for i in range(3):  # err-forelse
            pass
        else:
            pass

    check(compile_error(k), "for/else is not supported", "for i in range(3):  # err-forelse")


def test_calling_kernel_from_kernel():
    @wk.kernel
    def inner():
        pass

    @wk.kernel
    def k():
        inner()  # err-kcall

    check(compile_error(k), "cannot call the kernel 'inner' from kernel code", "inner()  # err-kcall")


def test_nested_def():
    @wk.kernel
    def k():
        def g():  # err-def
            pass

    check(compile_error(k), "nested function definitions are not supported", "def g():  # err-def")
    check(compile_error(k), "Function definition is not allowed in 'wk.kernel'", "def g():  # err-def")

    qd = wk            # the message spells the decorator as the program does

    @qd.func
    def f():
        def h():  # err-def-func
            pass

    @qd.kernel
    def calls():
        f()

    check(compile_error(calls), "Function definition is not allowed in 'qd.func': nested function definitions are "
          "not supported inside kernels (Unsupported node \"FunctionDef\"); define 'h' outside as a func",
          "def h():  # err-def-func")


def test_unsupported_nodes_are_named():
    @wk.kernel
    def k():
        raise ValueError()  # err-raise

    check(compile_error(k), "'raise' is not supported inside kernels (Unsupported node \"Raise\")",
          "raise ValueError()  # err-raise")


def test_a_dtype_cast_takes_one_expression():
    @wk.kernel
    def k():
        ix[0] = wk.i32(1, 2)  # err-cast2

    check(compile_error(k), "i32() takes exactly one argument: A primitive type can only decorate a single "
          "expression.", "ix[0] = wk.i32(1, 2)  # err-cast2")


def test_ndrange_outside_for():
    @wk.kernel
    def k():
        r = wk.ndrange(3)  # err-ndrange

    check(compile_error(k), "wk.ndrange() can only be used as the iterable of a for loop",
          "r = wk.ndrange(3)  # err-ndrange")


def test_static_of_runtime_value():
    @wk.kernel
    def k(n: wk.i32):
        for i in wk.static(range(n)):  # err-static
            pass

    check(compile_error(k, 0), "wk.static() needs compile-time values, but 'n' is a runtime value",
          "for i in wk.static(range(n)):  # err-static")


def test_vector_into_scalar_variable():
    @wk.kernel
    def k():
        a = 1.0
        a = wk.math.vec2(1.0)  # err-vec2scalar

    check(compile_error(k), "cannot assign a 2 vector of f32 to the scalar variable 'a'",
          "a = wk.math.vec2(1.0)  # err-vec2scalar")


def test_vector_if_condition():
    @wk.kernel
    def k():
        if wk.math.vec2(1.0) > 0:  # err-vecif
            pass

    check(compile_error(k), "an 'if' condition must be a scalar", "if wk.math.vec2(1.0) > 0:  # err-vecif")


def test_while_else_and_global():
    @wk.kernel
    def k():
        global statistics  # err-global

    check(compile_error(k), "'global statistics' inside a kernel: only fields may be named there",
          "global statistics  # err-global")

    @wk.kernel
    def names_a_field():
        global x          # Taichi 0.x declared the fields a kernel updates so: nothing to do
        x[0] = 1.0

    assert len(of_type(build(names_a_field), ir.GlobalStore)) == 1


def test_yield():
    @wk.kernel
    def k():
        yield 1  # err-yield

    check(compile_error(k), "'yield' is not supported", "yield 1  # err-yield")


def test_internal_python_failure_is_located():
    @wk.kernel
    def k():
        x[0] = wk.static(1 / 0)  # err-zerodiv

    check(compile_error(k), "wk.static() evaluation failed: ZeroDivisionError",
          "x[0] = wk.static(1 / 0)  # err-zerodiv")


def test_column_points_at_the_node():
    @wk.kernel
    def k():
        x[0] = 1.0 + missing_name  # err-col  # noqa: F821

    err = compile_error(k)
    line = err.loc.source_line
    assert err.loc.col == line.index("missing_name")
    assert "^" in str(err)


def test_ir_statements_carry_source_locations():
    @wk.kernel
    def k(a: wk.f32):
        x[0] = wk.sin(a)  # loc-sin

    kir = build(k, 0)
    (sin,) = of_type(kir, ir.UnaryOp)
    assert sin.loc.filename == __file__
    assert sin.loc.lineno == line_of("x[0] = wk.sin(a)  # loc-sin")
    assert kir.loc.filename == __file__ and kir.loc.lineno == sin.loc.lineno - 1


def test_ndarray_field_captured_by_closure():
    arr = FakeField(wk.f32, 4, "arr")
    arr.is_field = False

    @wk.kernel
    def k():
        arr[0] = 1.0  # err-ndcapture

    check(compile_error(k), "ndarray 'arr' must be passed to the kernel as an argument",
          "arr[0] = 1.0  # err-ndcapture")


def test_assign_to_kernel_argument_is_a_variable():
    @wk.kernel
    def k(a: wk.i32):
        a += 1
        ix[0] = a

    kir = build(k, 0)
    assert [al.name for al in of_type(kir, ir.Alloca)] == ["a"]


def test_func_returns_of_different_kinds():
    @wk.func
    def mixed(a):
        if a > 0:
            return wk.Vector([1.0, 2.0])
        return 1.0  # err-mixed-return

    @wk.kernel
    def k(a: wk.i32):
        v = mixed(a)
        x[0] = v[0]

    check(compile_error(k, 0), "returns a f32 value here but a 2 vector of f32 at an earlier 'return'",
          "return 1.0  # err-mixed-return")


def test_static_cannot_read_field_values():
    flag = FakeField(wk.i32, (), "flag")

    @wk.kernel
    def k():
        if wk.static(flag[None] > 0):  # err-static-field
            x[0] = 1.0

    check(compile_error(k), "wk.static() cannot read container 'flag': its values are run-time data",
          "if wk.static(flag[None] > 0):  # err-static-field")


def test_static_sees_an_ndarray_argument_s_axis_count_only():
    @wk.kernel
    def k(a: wk.types.ndarray(dtype=wk.f32, ndim=2)):
        for d in wk.static(range(len(a.shape))):
            x[d] = a.shape[d]
        for i in wk.static(range(a.shape[0])):  # err-static-extent
            x[i] = 1.0

    check(compile_error(k, (wk.f32, 2, ())), "the length of axis 0 of ndarray 'a' is known only at run time",
          "for i in wk.static(range(a.shape[0])):  # err-static-extent")


def test_starred_assignment_target():
    @wk.kernel
    def k():
        a, *rest = (1, 2, 3)  # err-starred
        x[0] = a

    check(compile_error(k), "starred assignment targets (a, *b = ...) are not supported",
          "a, *rest = (1, 2, 3)  # err-starred")


def test_vector_transpose_names_the_replacements():
    @wk.kernel
    def k():
        d = wk.Vector([1.0, 2.0])
        m = d @ d.transpose()  # err-vectranspose

    check(compile_error(k), "write `a @ b.transpose()` as a.outer_product(b)",
          "m = d @ d.transpose()  # err-vectranspose")
    check(compile_error(k), "(`transpose()` cannot apply to a vector. If you want something like "
          "`a @ b.transpose()`, write `a.outer_product(b)` instead.)", "m = d @ d.transpose()  # err-vectranspose")


def test_identity_comparison_outside_static():
    # Taichi and Quadrants refuse `is` in kernel code: it would compare Python objects, not values
    @wk.kernel
    def k():
        a = x is grid  # err-is
        x[0] = a

    @wk.kernel
    def k_not():
        x[0] = x is not grid  # err-is-not

    @wk.kernel
    def k_static():
        x[0] = wk.static(x is not grid)

    check(compile_error(k), 'Operator "is" is not supported in kernel code', "a = x is grid  # err-is")
    check(compile_error(k_not), 'write wk.static(a is not b) for a compile-time test',
          "x[0] = x is not grid  # err-is-not")
    assert of_type(build(k_static), ir.GlobalStore)


def test_negative_vector_indices():
    # Taichi and Quadrants refuse them (a field's offset indices are another matter: see test_offset)
    @wk.kernel
    def k(i: wk.i32):
        v = wk.Vector([i, i + 1, i + 2])
        ix[0] = v[:-1].sum()  # err-negslice

    @wk.kernel
    def k_index(i: wk.i32):
        m = wk.Matrix([[i, 1], [2, 3]])
        ix[0] = m[1, -1]  # err-negindex

    @wk.kernel
    def k_reversed(i: wk.i32):
        v = wk.Vector([i, i + 1, i + 2])
        ix[0] = v[::-1][0]

    check(compile_error(k, wk.i32), "Negative indices are not supported in Quadrants kernels, nor in Taichi's or "
          "wgkern's: slice(None, -1, None) in an index of a 3 vector/matrix", "ix[0] = v[:-1].sum()  # err-negslice")
    check(compile_error(k_index, wk.i32), "-1 in an index of a 2x2 vector/matrix; count from 0 (0..1)",
          "ix[0] = m[1, -1]  # err-negindex")
    assert run(build(k_reversed, wk.i32), {"ix": np.zeros(8, np.int32)}, [5])["ix"][0] == 7


def test_too_many_element_indices_name_the_expected_count():
    vx = FakeField(wk.types.vector(3, wk.f32), 4, "vx")

    @wk.kernel
    def local():
        v = wk.Vector([1.0, 2.0, 3.0])
        x[0] = v[0, 0]  # err-vec2

    @wk.kernel
    def element():
        x[0] = vx[1][0, 0]  # err-elem2

    check(compile_error(local), "a vector of 3 elements takes 1 index, got 2 (Expected 1 indices, got 2)",
          "x[0] = v[0, 0]  # err-vec2")
    check(compile_error(element), "elements of 'vx' have shape (3,); got 2 indices (Expected 1 indices, got 2)",
          "x[0] = vx[1][0, 0]  # err-elem2")


def test_errors_carry_quadrants_phrases():
    # ported pytest.raises(match=...) tests look for these phrases; wgkern's own wording comes first
    @wk.kernel
    def ndrange_triple():
        for i in wk.ndrange((1, 2, 3)):  # err-nd3
            x[0] = i

    @wk.kernel
    def ndrange_float():
        for i in wk.ndrange((1.5, 4)):  # err-ndf
            x[0] = i

    @wk.kernel
    def return_in_loop() -> wk.i32:
        for i in range(4):
            return i  # err-ret

    @wk.kernel
    def no_return() -> wk.i32:  # err-noret
        x[0] = 1.0

    @wk.kernel
    def bit_not_float(a: wk.f32):
        x[0] = ~a  # err-bnot

    @wk.kernel
    def static_runtime(a: wk.f32):
        if wk.static(a > 0.5):  # err-srt
            x[0] = 1.0

    @wk.kernel
    def slice_runtime(i: wk.i32):
        v = wk.Vector([1.0, 2.0, 3.0])
        x[0] = v[i:].sum()  # err-vslice

    @wk.kernel
    def atomic_on_list():
        wk.atomic_min([1.0, 2.0], 0.5)  # err-atl

    check(compile_error(ndrange_triple), "Every argument of ndrange should be a scalar or a tuple/list like "
          "(begin, end)", "for i in wk.ndrange((1, 2, 3)):  # err-nd3")
    check(compile_error(ndrange_float), "Every argument of ndrange should be an integer scalar or a tuple/list of "
          "(int, int)", "for i in wk.ndrange((1.5, 4)):  # err-ndf")
    check(compile_error(return_in_loop), "Return inside non-static if/for is not supported", "return i  # err-ret")
    check(compile_error(no_return), "Kernel has a return type but does not have a return statement",
          "def no_return() -> wk.i32:  # err-noret")
    check(compile_error(bit_not_float, wk.f32), "takes integral inputs only", "x[0] = ~a  # err-bnot")
    check(compile_error(static_runtime, wk.f32), "must be compile-time constants", "if wk.static(a > 0.5):")
    check(compile_error(slice_runtime, wk.i32), "Quadrants does not support variables in slice now",
          "x[0] = v[i:].sum()  # err-vslice")
    check(compile_error(atomic_on_list), "cannot use a non-writable target as the first operand of atomic_min",
          "wk.atomic_min([1.0, 2.0], 0.5)  # err-atl")
