"""The kernel-language functions also work on Python/numpy values outside kernels (lang/math.py, matrix.py)."""
from __future__ import annotations

import numpy as np
import pytest

from tests.frontend.helpers import wk
from wgkern.frontend import intrinsics
from wgkern.ir.ops import AtomicOpKind


def test_math_functions_on_python_numbers():
    assert wk.sin(0.0) == 0.0
    assert wk.sqrt(4.0) == 2.0
    assert wk.rsqrt(4.0) == 0.5
    assert wk.clamp(5, 0, 3) == 3
    assert wk.min(3, 1, 2) == 1 and wk.max(3, 1, 2) == 3
    assert wk.sign(-2.0) == -1.0
    assert wk.round(2.5) == 3.0 and wk.round(-0.5) == -1.0     # half away from zero, like the IR's ROUND
    assert wk.floor(2.7, wk.i32) == 2
    assert wk.atan2(1.0, 1.0) == pytest.approx(np.pi / 4)
    assert wk.select(True, 1, 2) == 1
    assert wk.cast(2.9, wk.i32) == 2
    assert wk.static(5) == 5


def test_ndrange_and_loop_config_in_python():
    assert list(wk.ndrange(2, (1, 3))) == [(0, 1), (0, 2), (1, 1), (1, 2)]
    assert list(wk.ndrange(3)) == [(0,), (1,), (2,)]      # tuples, as Taichi's
    assert wk.loop_config(serialize=True) is None
    with pytest.raises(TypeError, match="serialise"):
        wk.loop_config(serialise=True)


def test_random_in_python():
    value = wk.random()
    assert 0.0 <= value < 1.0


def test_atomics_outside_kernel_raise():
    with pytest.raises(wk.WkError, match="only be used inside"):
        wk.atomic_add(1, 2)


def test_vector_constructors_in_python():
    assert wk.math.vec3(1, 2, 3).tolist() == [1.0, 2.0, 3.0]
    assert wk.math.vec2(7).tolist() == [7.0, 7.0]
    assert wk.math.mat2([[1, 2], [3, 4]]).shape == (2, 2)
    assert wk.Vector([1, 2]).dtype == np.int32
    assert wk.Matrix([[1.0, 2.0], [3.0, 4.0]]).shape == (2, 2)


def test_intrinsic_tables_cover_every_atomic():
    assert set(intrinsics.ATOMICS.values()) == set(AtomicOpKind)
    assert set(intrinsics.ATOMIC_AS_BINARY) == set(AtomicOpKind) - {AtomicOpKind.EXCHANGE, AtomicOpKind.CAS}
