"""The kernels and the call helper the argument specialisation tests share (tests/lang/test_arguments.py,
test_param_rules.py, test_argument_checks.py, test_argument_holdings.py)."""
from __future__ import annotations

import wgkern as wk
from wgkern.lang.arguments import specialise


def spec_of(kernel, *args, **kwargs):
    from wgkern.runtime.program import get_program
    return specialise(kernel, args, kwargs, get_program())


@wk.kernel
def scalars(a: wk.f32, n: wk.i32, flag: wk.u1, x: float, k: int):
    pass


@wk.kernel
def arrays(a: wk.types.ndarray(dtype=wk.f32, ndim=2), b: wk.types.ndarray(), v: wk.types.ndarray(
        dtype=wk.types.vector(3, wk.f32), ndim=1)):
    pass


@wk.kernel
def templates(f: wk.template(), c: wk.template(), t: wk.template()):
    pass


@wk.kernel
def unannotated(a, b, c):
    pass


@wk.kernel
def vector_arg(v: wk.types.vector(3, wk.f32), s: wk.f32 = 2.0):
    pass
