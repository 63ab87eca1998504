"""Launch plans (launch_plan.py): a kernel called again with the same argument objects skips the
argument checks and binding, re-reading only what can change without the objects changing (scalar values,
template objects' attributes, `.grad` rebinding), and a plan never keeps its arguments alive."""
from __future__ import annotations

import dataclasses
import gc
import weakref

import numpy as np
import pytest

import wgkern as wk
from wgkern.errors import ArgumentError
from wgkern import launch as launch_module, launch_plan
from wgkern.lang import argument_holdings
from wgkern.runtime.program import get_program


@dataclasses.dataclass(frozen=True)
class Arrays:
    source: wk.types.NDArray[wk.f32, 1]
    target: wk.types.NDArray[wk.f32, 1]


@dataclasses.dataclass(frozen=True)
class State:
    arrays: Arrays
    count: wk.types.NDArray[wk.i32, 1]


class Config:
    """A template object compared by value (as Genesis's static configurations are)."""

    def __init__(self, scale: float):
        self.scale = scale

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash((Config, *vars(self).values()))


@wk.kernel
def axpy(state: State, config: wk.template(), a: wk.f32, bump: wk.i32):
    for i in state.arrays.source:
        state.arrays.target[i] = a * state.arrays.source[i] + wk.static(config.scale)
    state.count[0] += bump


def _state(n: int = 4) -> State:
    source = wk.ndarray(wk.f32, n)
    source.from_numpy(np.arange(n, dtype=np.float32))
    return State(Arrays(source, wk.ndarray(wk.f32, n)), wk.ndarray(wk.i32, 1))


@pytest.fixture
def full_checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the launches that go through the full argument check (arguments.specialise)."""
    counted: list[int] = []
    specialise = launch_module.specialise

    def counting(*args, **kwargs):
        counted.append(1)
        return specialise(*args, **kwargs)

    monkeypatch.setattr(launch_module, "specialise", counting)
    return counted


def test_repeated_launches_reuse_the_plan_and_read_new_scalars(arch, full_checks):
    state, config = _state(), Config(0.5)
    for step in range(5):
        axpy(state, config, float(step), 2)
        # a = step: target = step * [0, 1, 2, 3] + 0.5, exact in f32
        np.testing.assert_array_equal(state.arrays.target.to_numpy(), step * np.arange(4, dtype=np.float32) + 0.5)
    assert state.count.to_numpy()[0] == 10
    assert len(full_checks) == 1          # the first launch only
    assert wk.stats()["launches"] == 5


def test_a_scalar_is_checked_at_every_planned_launch(arch):
    state, config = _state(), Config(0.0)
    axpy(state, config, 1.0, 1)
    axpy(state, config, 1.0, 1)
    with pytest.raises(ArgumentError, match="parameter 'bump' is wk.i32 but got 4294967296, out of its range"):
        axpy(state, config, 1.0, 2**32)
    with pytest.raises(ArgumentError, match="parameter 'bump' is wk.i32 but got the float 1.5"):
        axpy(state, config, 1.0, 1.5)


def test_a_rebound_attribute_of_a_template_object_compiles_its_new_value(arch, full_checks):
    state, config = _state(), Config(1.0)
    axpy(state, config, 1.0, 0)
    axpy(state, config, 1.0, 0)
    config.scale = 3.0                    # a compile-time value: a new variant, not the planned one
    axpy(state, config, 1.0, 0)
    np.testing.assert_array_equal(state.arrays.target.to_numpy(), np.arange(4, dtype=np.float32) + 3.0)
    assert len(full_checks) == 2


@wk.data_oriented
class Holder:
    def __init__(self, values: wk.Ndarray):
        self.values = values

    @wk.kernel
    def double(self):
        for i in self.values:
            self.values[i] *= 2.0


def test_an_ndarray_attribute_reassigned_between_launches_is_the_one_launched_on(arch):
    first, second = wk.ndarray(wk.f32, 3), wk.ndarray(wk.f32, 3)
    first.fill(1.0)
    second.fill(5.0)
    holder = Holder(first)
    holder.double()
    holder.double()
    holder.values = second
    holder.double()
    np.testing.assert_array_equal(first.to_numpy(), [4.0, 4.0, 4.0])
    np.testing.assert_array_equal(second.to_numpy(), [10.0, 10.0, 10.0])


@wk.data_oriented
class Outer:
    """Holds its ndarray one object down, as Genesis's solvers reach their arrays through other solvers."""

    def __init__(self, inner: Holder):
        self.inner = inner
        self.label = "outer"

    @wk.kernel
    def double_inner(self):
        for i in self.inner.values:
            self.inner.values[i] *= 2.0


def test_an_ndarray_rebound_one_object_down_is_the_one_launched_on(arch, full_checks):
    first, second = wk.ndarray(wk.f32, 3), wk.ndarray(wk.f32, 3)
    first.fill(1.0)
    second.fill(5.0)
    outer = Outer(Holder(first))
    outer.double_inner()
    outer.double_inner()
    assert len(full_checks) == 1          # the second launch used the plan
    outer.inner.values = second           # the argument's own attributes are unchanged
    outer.double_inner()
    np.testing.assert_array_equal(first.to_numpy(), [4.0, 4.0, 4.0])
    np.testing.assert_array_equal(second.to_numpy(), [10.0, 10.0, 10.0])
    assert len(full_checks) == 2


def test_a_planned_launch_does_not_search_the_holdings_again(arch, monkeypatch):
    values = wk.ndarray(wk.f32, 3)
    values.fill(1.0)
    outer = Outer(Holder(values))
    outer.double_inner()
    outer.double_inner()                  # plan made after the first launch, used from the second
    searches: list[int] = []
    own_members = argument_holdings._own_members

    def counting(*args):
        searches.append(1)
        return own_members(*args)

    monkeypatch.setattr(argument_holdings, "_own_members", counting)
    for _ in range(3):
        outer.double_inner()
    assert searches == []                 # the plan compares flat (names, ids) snapshots instead
    np.testing.assert_array_equal(values.to_numpy(), [32.0, 32.0, 32.0])


def test_written_containers_count_planned_launches(arch):
    state, config = _state(), Config(0.0)
    before = state.arrays.target.generation, state.count.generation, state.arrays.source.generation
    for _ in range(3):
        axpy(state, config, 1.0, 1)
    assert (state.arrays.target.generation, state.count.generation, state.arrays.source.generation) == \
        (before[0] + 3, before[1] + 3, before[2])


def test_a_rebound_grad_invalidates_every_plan(arch):
    state, config = _state(), Config(0.0)
    axpy(state, config, 1.0, 1)
    axpy(state, config, 1.0, 1)
    program = get_program()
    (form,) = program.launch_plans[axpy].values()
    (plan,) = form.plans.values()
    call = (state, config, 1.0, 1)
    assert launch_plan._still_valid(plan, call)
    state.arrays.source.grad = wk.ndarray(wk.f32, 4)
    assert not launch_plan._still_valid(plan, call)
    axpy(state, config, 2.0, 1)           # the full path again, then a new plan
    np.testing.assert_array_equal(state.arrays.target.to_numpy(), 2.0 * np.arange(4, dtype=np.float32))


def test_a_plan_does_not_keep_its_arguments_alive(arch):
    config = Config(0.0)
    state = _state()
    axpy(state, config, 1.0, 1)
    axpy(state, config, 1.0, 1)
    (form,) = get_program().launch_plans[axpy].values()
    assert len(form.plans) == 1
    dead = weakref.ref(state)
    del state
    gc.collect()
    assert dead() is None
    assert len(form.plans) == 0           # dropped with it: its id may now name another object


def test_numpy_and_unannotated_number_arguments_get_no_plan(arch):
    @wk.kernel
    def scaled(out: wk.types.ndarray(), factor):
        for i in out:
            out[i] = factor * i

    array = np.zeros(3, np.float32)
    scaled(array, 2.0)
    scaled(array, 3.0)
    np.testing.assert_array_equal(array, [0.0, 3.0, 6.0])
    assert scaled not in get_program().launch_plans or \
        not any(form.plans for form in get_program().launch_plans[scaled].values())


def test_plans_end_with_the_program(arch):
    state, config = _state(), Config(0.0)
    axpy(state, config, 1.0, 1)
    axpy(state, config, 1.0, 1)
    program = get_program()
    assert program.launch_plans
    program.shutdown()
    assert not program.launch_plans


def test_keyword_calls_plan_by_parameter(arch, full_checks):
    state, config = _state(), Config(0.0)
    for a in (1.0, 2.0):
        axpy(state, config, bump=1, a=a)
    np.testing.assert_array_equal(state.arrays.target.to_numpy(), 2.0 * np.arange(4, dtype=np.float32))
    assert state.count.to_numpy()[0] == 2
    assert len(full_checks) == 1


def test_watched_objects_are_compared_only_after_an_attribute_assignment(arch, monkeypatch):
    """Outer and Holder are @wk.data_oriented, so their assignments are counted (lang/rebinds.py): while none
    happens a planned launch compares no attributes, and one assignment anywhere makes the next launch compare
    them (and find them the same here)."""
    values = wk.ndarray(wk.f32, 3)
    values.fill(1.0)
    outer = Outer(Holder(values))
    outer.double_inner()
    outer.double_inner()
    compared: list[int] = []
    same_attributes = launch_plan._same_attributes

    def counting(objects, searched, call):
        compared.append(len(objects) + len(searched))
        return same_attributes(objects, searched, call)

    monkeypatch.setattr(launch_plan, "_same_attributes", counting)
    outer.double_inner()
    assert compared == [0]                # the unwatched lists only, both empty
    Holder(wk.ndarray(wk.f32, 1)).values = values          # an assignment on another watched object
    outer.double_inner()
    outer.double_inner()
    assert compared == [0, 0, 2, 0]       # compared once (Outer itself and the Holder below it), then not
    np.testing.assert_array_equal(values.to_numpy(), [32.0, 32.0, 32.0])     # five launches


class Unwatched(Holder):
    """A subclass whose own __setattr__ bypasses the counted one: its objects are compared at every launch."""

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)


@dataclasses.dataclass
class Slots:
    values: wk.types.NDArray[wk.f32, 1]


@wk.data_oriented
class Mixed:
    """A watched object holding an unwatched one (a mutable dataclass) and a watched one with its own setter."""

    def __init__(self, slots: Slots, holder: Holder):
        self.slots = slots
        self.holder = holder

    @wk.kernel
    def add(self):
        for i in self.slots.values:
            self.slots.values[i] += 1.0
            self.holder.values[i] += 10.0


def test_objects_whose_assignments_are_not_counted_are_compared_at_every_launch(arch, full_checks):
    a, b, c, d = (wk.ndarray(wk.f32, 2) for _ in range(4))
    mixed = Mixed(Slots(a), Unwatched(c))
    mixed.add()
    mixed.add()
    assert len(full_checks) == 1
    mixed.slots.values = b                # a plain dataclass: not counted
    mixed.add()
    mixed.holder.values = d               # object.__setattr__ through the subclass's own setter: not counted
    mixed.add()
    np.testing.assert_array_equal(a.to_numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(b.to_numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(c.to_numpy(), [30.0, 30.0])
    np.testing.assert_array_equal(d.to_numpy(), [10.0, 10.0])
    assert len(full_checks) == 3
