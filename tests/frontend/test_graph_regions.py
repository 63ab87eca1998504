"""Quadrants' fork/join regions (frontend/graph_regions.py, lang/graph_regions.py): `with wk.graph.parallel_context():`
holding `with wk.graph.parallel():` sections in a `@wk.kernel(graph=True)` kernel. Integer data throughout, so
every result is exact; the grammar errors are checked by message, in the spelling the kernel uses."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk

qd = wk       # a kernel spelling the constructs `qd.graph...`, as ported Quadrants code does


def _i32(values) -> wk.Ndarray:
    a = wk.ndarray(wk.i32, shape=np.shape(values))
    a.from_numpy(np.asarray(values, np.int32))
    return a


def test_sections_run_and_the_work_after_the_region_sees_them(arch):
    n = 1000

    @wk.kernel(graph=True)
    def k(x: wk.types.ndarray(wk.i32, ndim=1), y: wk.types.ndarray(wk.i32, ndim=1),
          z: wk.types.ndarray(wk.i32, ndim=1)):
        with wk.graph.parallel_context():
            with wk.graph.parallel():
                for i in range(x.shape[0]):
                    x[i] = x[i] + i
            with wk.graph.parallel():
                for i in range(y.shape[0]):
                    y[i] = y[i] * 3
                y[0] = -1          # a section may hold serial work after its loops
        for i in range(z.shape[0]):
            z[i] = x[i] + y[i]

    x, y, z = _i32(np.ones(n)), _i32(np.arange(n)), _i32(np.zeros(n))
    k(x, y, z)
    want_x, want_y = 1 + np.arange(n), 3 * np.arange(n)
    want_y[0] = -1
    np.testing.assert_array_equal(x.to_numpy(), want_x)
    np.testing.assert_array_equal(y.to_numpy(), want_y)
    np.testing.assert_array_equal(z.to_numpy(), want_x + want_y)


def test_back_to_back_regions_in_a_do_while_loop_see_each_others_writes(arch):
    n, iterations = 512, 4

    @wk.kernel(graph=True)
    def k(x: wk.types.ndarray(wk.i32, ndim=1), y: wk.types.ndarray(wk.i32, ndim=1),
          a: wk.types.ndarray(wk.i32, ndim=1), b: wk.types.ndarray(wk.i32, ndim=1),
          counter: wk.types.ndarray(wk.i32, ndim=0)):
        while wk.graph.do_while(counter):
            with wk.graph.parallel_context():
                with wk.graph.parallel():
                    for i in range(x.shape[0]):
                        x[i] = x[i] + 1
                with wk.graph.parallel():
                    for i in range(y.shape[0]):
                        y[i] = y[i] + 2
            with wk.graph.parallel_context():       # reads what the first region wrote in this iteration
                with wk.graph.parallel():
                    for i in range(x.shape[0]):
                        a[i] = x[i] * 10
                with wk.graph.parallel():
                    for i in range(y.shape[0]):
                        b[i] = y[i] * 10
            counter[()] = counter[()] - 1

    x, y, a, b = (_i32(np.zeros(n)) for _ in range(4))
    counter = _i32(np.array(iterations))
    k(x, y, a, b, counter)
    assert counter.to_numpy() == 0
    np.testing.assert_array_equal(a.to_numpy(), np.full(n, 10 * iterations))
    np.testing.assert_array_equal(b.to_numpy(), np.full(n, 20 * iterations))


def test_static_loops_and_branches_choose_the_sections(arch):
    rows, n = 3, 64

    @wk.kernel(graph=True)
    def k(x: wk.types.ndarray(wk.i32, ndim=2), y: wk.types.ndarray(wk.i32, ndim=1)):
        with wk.graph.parallel_context():
            """A docstring-like string and `pass` may stand in a region."""
            pass
            for r in wk.static(range(rows)):
                with wk.graph.parallel():
                    for i in range(x.shape[1]):
                        x[r, i] = x[r, i] + r + 1
            if wk.static(False):
                with wk.graph.parallel():
                    for i in range(y.shape[0]):
                        y[i] = 99
            for _ in wk.static(range(0)):             # no sections at all
                with wk.graph.parallel():
                    for i in range(y.shape[0]):
                        y[i] = 98

    x, y = _i32(np.zeros((rows, n))), _i32(np.full(n, 5))
    k(x, y)
    np.testing.assert_array_equal(x.to_numpy(), np.repeat(np.arange(1, rows + 1)[:, None], n, axis=1))
    np.testing.assert_array_equal(y.to_numpy(), np.full(n, 5))


def test_sections_calling_funcs_of_a_data_oriented_object(arch):
    n = 8

    @wk.data_oriented
    class Demo:
        def __init__(self):
            self.a = wk.field(wk.i32, shape=n)
            self.b = wk.field(wk.i32, shape=n)
            self.funcs = [self.fill_a, self.fill_b]

        @wk.func
        def fill_a(self):
            for i in range(n):
                self.a[i] += i

        @wk.func
        def fill_b(self):
            for i in range(n):
                self.b[i] += 10

        @wk.kernel(graph=True)
        def step(self):
            with wk.graph.parallel_context():
                for f in wk.static(range(len(self.funcs))):
                    with wk.graph.parallel():
                        self.funcs[f]()

    d = Demo()
    d.step()
    d.step()
    np.testing.assert_array_equal(d.a.to_numpy(), 2 * np.arange(n))
    np.testing.assert_array_equal(d.b.to_numpy(), np.full(n, 20))


def test_in_python_scope_they_are_context_managers_that_do_nothing():
    seen = []
    with wk.graph.parallel_context():
        with wk.graph.parallel():
            seen.append("a")
        with wk.graph.parallel():
            seen.append("b")
    assert seen == ["a", "b"]


def _compile_error(kernel, *args, match: str) -> str:
    with pytest.raises(wk.CompileError, match=match) as info:
        kernel(*args)
    return str(info.value)


def test_a_section_outside_a_region_and_a_region_outside_a_graph_kernel(arch):
    x = _i32(np.zeros(4))

    @wk.kernel(graph=True)
    def lone_section(x: wk.types.ndarray(wk.i32, ndim=1)):
        with qd.graph.parallel():
            x[0] = 1

    @wk.kernel
    def not_graph(x: wk.types.ndarray(wk.i32, ndim=1)):
        with qd.graph.parallel_context():
            with qd.graph.parallel():
                x[0] = 1

    @wk.func
    def region_in_func(x: wk.template()):
        with qd.graph.parallel_context():
            with qd.graph.parallel():
                x[0] = 1

    @wk.kernel(graph=True)
    def calls_func(x: wk.types.ndarray(wk.i32, ndim=1)):
        region_in_func(x)

    _compile_error(lone_section, x, match=r"qd\.graph\.parallel\(\) can only be used directly inside a "
                                          r"qd\.graph\.parallel_context\(\) region")
    message = _compile_error(not_graph, x, match=r"qd\.graph\.parallel_context\(\) requires "
                                                 r"@qd\.kernel\(graph=True\)")
    assert "not_graph" in message
    _compile_error(calls_func, x, match=r"only be used inside @qd\.kernel, not @qd\.func")


def test_a_region_holds_only_sections(arch):
    x = _i32(np.zeros((2, 4)))

    @wk.kernel(graph=True)
    def runtime_loop(x: wk.types.ndarray(wk.i32, ndim=2), m: wk.i32):
        with qd.graph.parallel_context():
            for b in range(m):
                with qd.graph.parallel():
                    x[b, 0] = 1

    @wk.kernel(graph=True)
    def runtime_if(x: wk.types.ndarray(wk.i32, ndim=2), m: wk.i32):
        with qd.graph.parallel_context():
            for b in qd.static(range(2)):
                if m:
                    with qd.graph.parallel():
                        x[b, 0] = 1

    @wk.kernel(graph=True)
    def loose_statement(x: wk.types.ndarray(wk.i32, ndim=2), m: wk.i32):
        with qd.graph.parallel_context():
            x[0, 0] = m
            with qd.graph.parallel():
                x[1, 0] = 1

    for kernel, what in ((runtime_loop, "For"), (runtime_if, "If"), (loose_statement, "Assign")):
        message = _compile_error(kernel, x, 2, match=r"may contain only 'with qd\.graph\.parallel\(\):'")
        assert f"this {what} statement" in message and "qd.static(...)" in message
    assert not x.to_numpy().any()


def test_a_section_is_straight_line_work(arch):
    x = _i32(np.zeros(4))
    counter = _i32(np.array(1))

    @wk.kernel(graph=True)
    def with_arguments(x: wk.types.ndarray(wk.i32, ndim=1)):
        with qd.graph.parallel_context():
            with qd.graph.parallel(name="bx"):
                x[0] = 1

    @wk.kernel(graph=True)
    def nested_section(x: wk.types.ndarray(wk.i32, ndim=1)):
        with qd.graph.parallel_context():
            with qd.graph.parallel():
                with qd.graph.parallel():
                    x[0] = 1

    @wk.kernel(graph=True)
    def nested_region(x: wk.types.ndarray(wk.i32, ndim=1)):
        with qd.graph.parallel_context():
            with qd.graph.parallel():
                if x[0] == 0:
                    with qd.graph.parallel_context():
                        x[0] = 1

    @wk.kernel(graph=True)
    def do_while_inside(x: wk.types.ndarray(wk.i32, ndim=1), counter: wk.types.ndarray(wk.i32, ndim=0)):
        with qd.graph.parallel_context():
            with qd.graph.parallel():
                for b in qd.static(range(2)):
                    while qd.graph.do_while(counter):
                        x[b] = 1

    @wk.kernel(graph=True)
    def checkpoint_inside(x: wk.types.ndarray(wk.i32, ndim=1), counter: wk.types.ndarray(wk.i32, ndim=0)):
        with qd.graph.parallel_context():
            with qd.graph.parallel():
                with qd.checkpoint(0, yield_on=counter):
                    x[0] = 1

    _compile_error(with_arguments, x, match=r"qd\.graph\.parallel\(\) takes no arguments")
    _compile_error(nested_section, x, match="sections cannot be nested")
    _compile_error(nested_region, x, match=r"qd\.graph\.parallel_context\(\) cannot appear inside a "
                                           r"qd\.graph\.parallel\(\) section")
    _compile_error(do_while_inside, x, counter, match=r"qd\.graph\.do_while\(\) cannot appear inside a "
                                                      r"qd\.graph\.parallel\(\) section")
    _compile_error(checkpoint_inside, x, counter, match=r"qd\.checkpoint\(\) cannot appear inside a "
                                                        r"qd\.graph\.parallel\(\) section")
    assert not x.to_numpy().any()


def test_errors_name_the_line(arch):
    @wk.kernel(graph=True)
    def k(x: wk.types.ndarray(wk.i32, ndim=1)):
        with wk.graph.parallel_context():
            x[0] = 1

    message = _compile_error(k, _i32(np.zeros(1)), match="wk.graph.parallel_context")
    line = k.fn.__code__.co_firstlineno + 3          # the assignment
    assert f"test_graph_regions.py:{line}:" in message and "\n    x[0] = 1\n" in message
