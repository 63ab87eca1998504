"""Parameter rules (lang/param_rules.py): annotations, string annotations, and binding a call's arguments to the
parameters, with every mistake named."""
from __future__ import annotations

import re

import numpy as np
import pytest

import wgkern as wk
from tests.lang.argument_kernels import spec_of, vector_arg


def test_unknown_keyword_argument_is_named(fake_program):
    with pytest.raises(wk.ArgumentError, match="kernel 'vector_arg\\(v, s\\)' has no parameter named 'b'"):
        spec_of(vector_arg, (1, 2, 3), b=1)


def test_wrong_calls_are_described_in_quadrants_words(fake_program):
    for args, kwargs, problem in (((1, 2, 3), {}, "Too many arguments: expected at most 2 positional, got 3"),
                                  ((), {"s": 1.0}, "Missing argument 'v'"),
                                  (((1, 2, 3),), {"v": 1, "s": 2}, "Multiple values for argument 'v'"),
                                  (((1, 2, 3),), {"s": 1, "b": 2}, "no parameter named 'b' (Unexpected "
                                                                   "argument 'b')")):
        with pytest.raises(wk.ArgumentError, match=re.escape(problem)) as caught:
            spec_of(vector_arg, *args, **kwargs)
        # a CompileError too (Quadrants raises QuadrantsSyntaxError), and still a TypeError
        assert isinstance(caught.value, wk.CompileError) and isinstance(caught.value, TypeError)


def test_string_annotations(fake_program):
    import textwrap
    namespace: dict = {}
    exec(textwrap.dedent('''
        from __future__ import annotations
        import wgkern as wk
        @wk.kernel
        def k(a: wk.f32, b: wk.types.ndarray(dtype=wk.i32, ndim=1), c: wk.template()):
            pass
    '''), namespace)
    spec = spec_of(namespace["k"], 1, np.zeros(2, np.int32), 3)
    assert [s.kind for s in spec.arg_specs] == ["scalar", "ndarray", "template"]
