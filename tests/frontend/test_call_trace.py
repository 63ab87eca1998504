"""frontend/call_trace.py: what the program's own Python functions read when a compile-time expression calls
them is recorded (their source, the names their code loads, attribute chains through modules and classes,
nested code included); code that changes outside state, calls impure C functions, runs what cannot be found by
name or holds a program class as a value leaves the log refused; the hook is removed afterwards."""
from __future__ import annotations

import builtins
import cProfile
import enum
import math
import sys

import numpy as np
import pytest

from wgkern.frontend import call_trace, reads

LIMIT = 6
COUNT = 0


class Mode(enum.Enum):
    FAST = 1
    SLOW = 2


class Box:
    def __init__(self, size):
        self.size = size

    @property
    def doubled(self):
        return self.size * 2


def doublings(first, last):
    caps = []
    cap = first
    while cap < last:
        caps.append(cap)
        cap *= 2
    caps.append(last)
    return tuple(caps)


def limited(first):
    return doublings(first, LIMIT)


def squares(n):
    return [k * k + round(math.pi) for k in range(n) if is_fast(Mode.FAST)]


def is_fast(mode):
    return mode == Mode.FAST


def counts():
    global COUNT
    COUNT += 1
    return COUNT


def shouts(n):
    print(n)
    return n


class _Loud(type):
    def __getattr__(cls, name):
        raise RuntimeError(f"no {name} here")


class Loud(metaclass=_Loud):
    pass


def never_reads_loud(flag):
    return Loud.anything if flag else 5


def total(values):
    return values.sum()


def reads_a_property(box):
    return box.doubled


def holds_a_class():
    return Box


def draws(n):
    return np.random.rand(n)


def imports(n):
    import os
    return os.sep * n


made_by_lambda = lambda n: n + 1       # noqa: E731 - a lambda cannot be found again by its name


def _trace(text: str, **names):
    log = reads.ReadLog(_trace)
    namespace = dict(vars(builtins)) | globals() | names
    code = compile(text, "<test>", "eval")
    with call_trace.traced(log, code):
        value = eval(code, namespace)       # noqa: S307 - the test's own expression
    assert sys.getprofile() is None
    return log, value


def _ref(function) -> tuple:
    return ("function", __name__, function.__qualname__)


def test_a_called_function_is_recorded_by_its_source_and_names() -> None:
    log, value = _trace("limited(1)")
    assert value == (1, 2, 4, 6) and log.refused is None
    assert set(log.records) == {
        ("source", _ref(limited)), ("name", _ref(limited), "doublings"), ("name", _ref(limited), "LIMIT"),
        ("source", _ref(doublings)), ("name", _ref(doublings), "tuple")}


def test_nested_code_and_attribute_chains_are_recorded() -> None:
    log, value = _trace("squares(3)")
    assert value == [3, 4, 7] and log.refused is None
    assert {("name", _ref(squares), "range"), ("name", _ref(squares), "round"), ("name", _ref(squares), "math"),
            ("attr", ("module", "math"), "pi"), ("name", _ref(squares), "is_fast"), ("source", _ref(is_fast)),
            ("name", _ref(is_fast), "Mode"), ("attr", ("class", __name__, "Mode"), "FAST")} <= set(log.records)


def test_replaying_the_records_sees_a_changed_global() -> None:
    global LIMIT  # noqa: PLW0603 - the test changes what the traced function reads
    log, _ = _trace("limited(1)")
    before = reads.replay(list(log.records), _trace, reads.Containers())
    LIMIT = 7
    try:
        assert reads.replay(list(log.records), _trace, reads.Containers()) != before
    finally:
        LIMIT = 6
    assert reads.replay(list(log.records), _trace, reads.Containers()) == before


@pytest.mark.parametrize("text, refused", [
    ("counts()", "changes state outside itself (STORE_GLOBAL COUNT)"),
    ("imports(2)", "changes state outside itself (IMPORT_NAME os)"),
    ("shouts(2)", "names 'print', compiled code"),
    ("total(values)", "calls 'ndarray.sum'"),                  # a C method of an object other than plain data
    ("draws(2)", "names 'RandomState.rand', compiled code"),
    ("reads_a_property(box)", "runs tests.frontend.test_call_trace.Box.doubled, which cannot be found again"),
    ("holds_a_class()", "holds 'Box' as a value"),
    ("made_by_lambda(2)", "runs tests.frontend.test_call_trace.<lambda>, which cannot be found again"),
])
def test_calls_whose_reads_cannot_be_checked_are_refused(text, refused) -> None:
    log, _ = _trace(text, box=Box(3), values=np.arange(3.0))
    assert log.refused is not None and refused in log.refused, log.refused


def test_a_profiler_in_use_is_left_alone() -> None:
    """Before Python 3.12 cProfile holds the profiling hook itself: the call is refused rather than the profiler
    displaced. From 3.12 it runs on sys.monitoring, beside the hook, and the call is recorded."""
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        occupied = sys.getprofile() is not None
        log = reads.ReadLog(_trace)
        code = compile("limited(1)", "<test>", "eval")
        namespace = globals()
        with call_trace.traced(log, code):
            assert eval(code, namespace) == (1, 2, 4, 6)       # noqa: S307
        assert (sys.getprofile() is not None) == occupied
    finally:
        profiler.disable()
    if occupied:
        assert "profiler" in log.refused
    else:
        assert log.refused is None and ("source", _ref(doublings)) in log.records


def test_a_failure_of_the_hook_refuses_and_leaves_the_call_alone() -> None:
    log, value = _trace("never_reads_loud(False)")      # scanning the unused branch's attribute chain raises
    assert value == 5 and "could not be watched (RuntimeError: no anything here)" in log.refused


def test_the_hook_is_removed_when_the_call_raises() -> None:
    log = reads.ReadLog(_trace)
    code = compile("doublings(1, None)", "<test>", "eval")
    namespace = globals()
    with pytest.raises(TypeError), call_trace.traced(log, code):
        eval(code, namespace)                                   # noqa: S307
    assert sys.getprofile() is None
