"""frontend/source.py keeps each code object's parse for every later build: kernels built after a function is
redefined, after its `__code__` is replaced, from another closure of the same code, or after a global it names
changes, follow the change (frames.py keeps per tree only what the tree alone says)."""
from __future__ import annotations

import numpy as np

import wgkern as wk
from wgkern.frontend import source

_SCALE = 2


def test_kernels_of_one_code_object_follow_each_closure(arch) -> None:
    def make_funcs(k):
        @wk.func
        def scaled(x: wk.i32) -> wk.i32:
            return x * k
        return scaled, lambda y: y + k          # a lambda, inlined as a func, from one code object too

    def make_kernel(funcs):
        scaled, shifted = funcs

        @wk.kernel
        def apply(v: wk.i32) -> wk.i32:
            return scaled(v) + shifted(v)
        return apply

    three, five = make_funcs(3), make_funcs(5)
    assert three[0].fn.__code__ is five[0].fn.__code__ and three[1].__code__ is five[1].__code__
    assert make_kernel(three)(7) == 21 + 10
    assert make_kernel(five)(7) == 35 + 12


def test_a_func_whose_code_is_replaced_is_read_again(arch) -> None:
    @wk.func
    def step(x: wk.i32) -> wk.i32:
        return x + 1

    def times_ten(x: wk.i32) -> wk.i32:
        return x * 10

    @wk.kernel
    def before(v: wk.i32) -> wk.i32:
        return step(v)

    assert before(4) == 5
    step.fn.__code__ = times_ten.__code__           # what IPython's autoreload does to a function it reloads

    @wk.kernel
    def after(v: wk.i32) -> wk.i32:
        return step(v)

    assert after(4) == 40


def test_a_redefined_func_is_the_one_later_kernels_call(arch) -> None:
    @wk.func
    def pick(x: wk.i32) -> wk.i32:
        return x + 100

    @wk.kernel
    def first(v: wk.i32) -> wk.i32:
        return pick(v)

    assert first(1) == 101

    @wk.func
    def pick(x: wk.i32) -> wk.i32:       # noqa: F811 - redefined on purpose
        return x - 100

    @wk.kernel
    def second(v: wk.i32) -> wk.i32:
        return pick(v)

    assert second(1) == -99
    assert first(1) == 101               # the kernel built before keeps what it was built from


def _keep_first(a, b):
    return a


_OP = _keep_first


def _summing_kernel(values):
    """A new kernel object (from one code object) at each call; `_OP` is looked up as a global."""
    @wk.kernel
    def total() -> wk.i64:
        s = wk.i64(0)
        for i in values:
            _OP(s, values[i])
        return s
    return total


def test_a_global_callee_changed_between_builds_is_looked_up_again(arch) -> None:
    """Whether `op(s, ...)` in a parallel loop is a reduction of `s` depends on what the global `op` is when the
    kernel is built: a first build with a plain function must not make a later one with an atomic lose updates."""
    global _OP
    n = 1 << 12
    values = wk.field(wk.i64, shape=n)
    data = np.arange(n, dtype=np.int64) % 97
    values.from_numpy(data)
    try:
        plain = _summing_kernel(values)
        assert plain() == 0
        assert "atomic_add " not in plain.ir()
        _OP = wk.atomic_add
        summing = _summing_kernel(values)
        assert summing() == data.sum()
        assert "atomic_add " in summing.ir()
    finally:
        _OP = _keep_first


def test_a_code_object_is_parsed_once() -> None:
    def doubled(x):
        return x * 2

    first = source.parse_function(doubled)
    second = source.parse_function(doubled)
    assert first.tree is second.tree
    where = first.loc(first.tree.body[0])
    assert where.lineno == doubled.__code__.co_firstlineno + 1
    assert where.source_line.strip() == "return x * 2"


def test_equal_code_in_two_files_keeps_each_files_source(tmp_path) -> None:
    """Code objects compare equal across files (their file is not compared): each function still gets its own
    file's name and lines."""
    import importlib.util
    functions = []
    for name in ("wk_same_code_a", "wk_same_code_b"):
        path = tmp_path / f"{name}.py"
        path.write_text("def twice(x):\n    return x * 2\n")
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        functions.append(module.twice)
    first, second = functions
    assert first.__code__ == second.__code__ and first.__code__ is not second.__code__
    assert source.parse_function(first).filename.endswith("wk_same_code_a.py")
    assert source.parse_function(second).filename.endswith("wk_same_code_b.py")
    assert source.source_lines(second)[0].endswith("wk_same_code_b.py")
