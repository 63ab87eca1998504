"""Reuse of checked dataclass arguments (lang/argument_cache.py): the same value is checked once, and any
change the walk can see (a member rebound, a container's .grad, a compile-time member, a new program) is
checked again, so launches always see the arrays the value holds now."""
from __future__ import annotations

import dataclasses
import enum

import numpy as np
import pytest

import wgkern as wk
from wgkern.lang import arguments


class Mode(enum.Enum):
    ADD = 1
    MUL = 2


@dataclasses.dataclass
class Inner:
    values: wk.types.NDArray[wk.f32, 1]
    mode: Mode


@dataclasses.dataclass
class State:
    out: wk.types.NDArray[wk.f32, 1]
    inner: Inner
    factor: float
    extra: list


@wk.kernel
def combine(state: State):
    for i in state.out:
        if wk.static(state.inner.mode == Mode.ADD):
            state.out[i] = state.inner.values[i] + state.factor + wk.static(len(state.extra))
        else:
            state.out[i] = state.inner.values[i] * state.factor + wk.static(len(state.extra))


@pytest.fixture
def checks(monkeypatch):
    """Counts the full checks of a dataclass argument."""
    counted = []
    original = arguments._dataclass_part

    def counting(*args, **kwargs):
        counted.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(arguments, "_dataclass_part", counting)
    return counted


def filled(value: float, n: int = 4):
    array = wk.ndarray(wk.f32, n)
    array.fill(value)
    return array


def test_a_value_is_checked_once(arch, checks):
    state = State(wk.ndarray(wk.f32, 4), Inner(filled(1.0), Mode.ADD), 2.0, [])
    for _ in range(3):
        combine(state)
    assert len(checks) == 1
    np.testing.assert_array_equal(state.out.to_numpy(), np.full(4, 3.0, np.float32))


def test_every_change_is_seen(arch, checks):
    state = State(wk.ndarray(wk.f32, 4), Inner(filled(1.0), Mode.ADD), 2.0, [])
    combine(state)
    state.inner.values = filled(5.0)                 # a nested member rebound
    combine(state)
    np.testing.assert_array_equal(state.out.to_numpy(), np.full(4, 7.0, np.float32))
    state.inner.mode = Mode.MUL                      # a compile-time member
    combine(state)
    np.testing.assert_array_equal(state.out.to_numpy(), np.full(4, 10.0, np.float32))
    state.extra.append(0)                            # a mutable member changed in place: compared by its key
    combine(state)
    np.testing.assert_array_equal(state.out.to_numpy(), np.full(4, 11.0, np.float32))
    state.out = wk.ndarray(wk.f32, 4)
    combine(state)
    np.testing.assert_array_equal(state.out.to_numpy(), np.full(4, 11.0, np.float32))
    assert len(checks) == 5
    combine(state)
    assert len(checks) == 5


def test_a_gradient_added_later_is_seen(arch, checks):
    state = State(wk.ndarray(wk.f32, 4), Inner(filled(1.0), Mode.ADD), 2.0, [])
    combine(state)
    state.out.grad = wk.ndarray(wk.f32, 4)
    combine(state)
    assert len(checks) == 2


def test_numpy_members_are_checked_at_every_launch(arch, checks):
    state = State(np.zeros(4, np.float32), Inner(filled(1.0), Mode.ADD), 1.0, [])
    combine(state)
    combine(state)
    assert len(checks) == 2
    np.testing.assert_array_equal(state.out, np.full(4, 2.0, np.float32))


def test_a_new_program_checks_again(arch, checks):
    state = State(wk.ndarray(wk.f32, 4), Inner(filled(1.0), Mode.ADD), 2.0, [])
    combine(state)
    wk.init(arch=arch)
    with pytest.raises(wk.ArgumentError, match=r"created before the last wk\.reset\(\)/wk\.init\(\)"):
        combine(state)


@dataclasses.dataclass(frozen=True)
class FrozenInner:
    values: wk.types.NDArray[wk.f32, 1]
    mode: Mode


@dataclasses.dataclass(frozen=True)
class FrozenState:
    out: wk.types.NDArray[wk.f32, 1]
    inner: FrozenInner
    factor: float
    extra: list


@wk.kernel
def combine_frozen(state: FrozenState):
    for i in state.out:
        state.out[i] = state.inner.values[i] * state.factor + wk.static(len(state.extra))


def test_frozen_values_recheck_gradients_and_keyed_members(arch, checks):
    state = FrozenState(wk.ndarray(wk.f32, 4), FrozenInner(filled(2.0), Mode.MUL), 3.0, [])
    for _ in range(3):
        combine_frozen(state)
    assert len(checks) == 1
    np.testing.assert_array_equal(state.out.to_numpy(), np.full(4, 6.0, np.float32))
    state.extra.append(1)                  # a mutable member of a frozen value, changed in place
    combine_frozen(state)
    np.testing.assert_array_equal(state.out.to_numpy(), np.full(4, 7.0, np.float32))
    state.inner.values.grad = wk.ndarray(wk.f32, 4)
    combine_frozen(state)
    assert len(checks) == 3
    combine_frozen(state)
    assert len(checks) == 3
