"""Dataclass and template-object arguments (lang/argument_holdings.py): their ndarrays passed as arguments,
their compile-time members, integer member ranges, and objects the kernel cache does not keep alive."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import wgkern as wk
from tests.lang.argument_kernels import spec_of


@dataclasses.dataclass(frozen=True)
class Inner:
    w: wk.types.NDArray[wk.i32, 1]
    scale: float


@dataclasses.dataclass(frozen=True)
class State:
    a: wk.types.NDArray[wk.f32, 2]
    inner: Inner
    f: object


@wk.kernel
def dataclass_arg(s: State, k: wk.i32):
    pass


def test_dataclass_argument_passes_its_ndarrays_as_arguments(fake_program):
    f = wk.field(wk.f32, shape=3)
    a = wk.ndarray(wk.f32, shape=(2, 2))
    spec = spec_of(dataclass_arg, State(a, Inner(np.zeros(4, np.int32), 2.0), f), 1)
    assert spec.arg_specs[0].kind == "template" and spec.arg_specs[0].components == (2, 3)
    assert [(s.name, s.kind, s.dtype, s.ndim) for s in spec.arg_specs[2:]] == [
        ("s.a", "ndarray", wk.f32, 2), ("s.inner.w", "ndarray", wk.i32, 1)]
    assert spec.values[2] is a and spec.values[3].shape == (4,)
    other_arrays = State(wk.ndarray(wk.f32, shape=(5, 1)), Inner(np.ones(2, np.int32), 2.0), f)
    assert spec_of(dataclass_arg, other_arrays, 1).key == spec.key      # new arrays: the same variant
    other_scale = State(a, Inner(np.zeros(4, np.int32), 3.0), f)
    assert spec_of(dataclass_arg, other_scale, 1).key != spec.key       # other members are compile-time
    with pytest.raises(wk.ArgumentError, match="parameter 's.a' expects dtype wk.f32"):
        spec_of(dataclass_arg, State(np.zeros((2, 2)), Inner(np.zeros(4, np.int32), 2.0), f), 1)
    with pytest.raises(wk.ArgumentError, match="parameter 's' expects a State value, got Inner"):
        spec_of(dataclass_arg, Inner(np.zeros(4, np.int32), 2.0), 1)


def test_template_objects_are_not_kept_alive_by_the_kernel_cache(arch):
    """A @data_oriented object (or any plain object) passed as a template is keyed by identity without a strong
    reference (Quadrants' test_oop_memory_leak: each instance stayed alive with the cache); objects made later,
    perhaps at a dead one's address, compile with their own compile-time members."""
    import gc
    import weakref

    out = wk.field(wk.i32, shape=())

    @wk.data_oriented
    class Scaled:
        def __init__(self, k):
            self.k = k
            self.payload = [0] * 1000

        @wk.kernel
        def run(self):
            out[None] = self.k * 10

    first = Scaled(1)
    first.run()
    assert out[None] == 10
    gone = weakref.ref(first)
    del first
    gc.collect()
    assert gone() is None
    for k in range(2, 12):
        Scaled(k).run()
        assert out[None] == k * 10
        gc.collect()


@dataclasses.dataclass(frozen=True)
class Counts:
    n: wk.u8
    scale: float


@dataclasses.dataclass(frozen=True)
class Holder:
    counts: Counts
    m: wk.i32 = 0


@wk.kernel
def int_dataclass_arg(h: Holder):
    pass


def test_integer_dataclass_members_are_checked(fake_program):
    spec_of(int_dataclass_arg, Holder(Counts(255, 1.5), -2**31))
    with pytest.raises(wk.ArgumentError, match=r"parameter 'h': member 'counts.n' is wk.u8 but holds 256, out of "
                                               r"its range \(wk.u8 holds 0..255\)"):
        spec_of(int_dataclass_arg, Holder(Counts(256, 1.5)))
    with pytest.raises(wk.ArgumentError, match=r"member 'm' is wk.i32 but holds 2147483648"):
        spec_of(int_dataclass_arg, Holder(Counts(1, 1.5), 2**31))
