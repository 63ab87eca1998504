"""Every unsupported construct is a CompileError naming file, line and column and showing the source line."""
from __future__ import annotations

import statistics

import pytest
from tests.frontend.error_checks import check, compile_error, line_of
from tests.frontend.helpers import FakeField, build, of_type, run, wk

from wgkern.ir import nodes as ir

x = FakeField(wk.f32, 8, "x")
grid = FakeField(wk.f32, (4, 4), "grid")
no_grad = FakeField(wk.f32, 8, "no_grad")
ix = FakeField(wk.i32, 8, "ix")


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


def test_ndrange_with_runtime_bounds_outside_for():
    @wk.kernel
    def k(n: wk.i32):
        r = wk.ndrange(n)  # err-ndrange

    check(compile_error(k, 3), "wk.ndrange() with run-time bounds can only be used as the iterable of a for loop",
          "r = wk.ndrange(n)  # err-ndrange")


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
    assert sin.loc.lineno == line_of("x[0] = wk.sin(a)  # loc-sin", __file__)
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




def test_operand_an_operator_cannot_take():
    """A whole field (not an element) or a string as an operand: Python's phrase, the operator and what it got."""
    @wk.kernel
    def times_field():
        v = wk.Vector([1.0, 1.0])
        x[0] = (v * x)[0]  # err-field-operand

    check(compile_error(times_field), "unsupported operand type for '*': expected a number or vector here, got",
          "x[0] = (v * x)[0]  # err-field-operand")

    @wk.kernel
    def plus_string():
        x[0] = x[1] + "one"  # err-str-operand

    check(compile_error(plus_string), "unsupported operand type for '+': expected a number or vector here, got",
          'x[0] = x[1] + "one"  # err-str-operand')

    @wk.kernel
    def matmul_string():
        v = wk.Vector([1.0, 1.0])
        x[0] = (v @ "m")[0]  # err-matmul-operand

    check(compile_error(matmul_string), "unsupported operand type for '@'", 'x[0] = (v @ "m")[0]  # err-matmul')
