"""Counting attribute assignments on @wk.data_oriented objects (wgkern/lang/rebinds.py)."""
from __future__ import annotations

import wgkern as wk
from wgkern.lang.rebinds import Rebinds, is_watched


@wk.data_oriented
class Base:
    def __init__(self):
        self.a = 1


class Derived(Base):
    pass


class OwnSetter(Base):
    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)


class Plain:
    pass


def test_assignments_and_deletions_are_counted_on_the_class_and_its_subclasses():
    before = Rebinds.count
    base, derived = Base(), Derived()          # one assignment each in __init__
    base.a = 2
    derived.b = 3
    del derived.b
    setattr(base, "c", 4)
    assert Rebinds.count - before == 6
    assert (base.a, base.c, vars(derived)) == (2, 4, {"a": 1})


def test_a_class_is_watched_only_while_its_setters_are_the_counted_ones():
    assert is_watched(Base) and is_watched(Derived)
    assert not is_watched(OwnSetter) and not is_watched(Plain)
    before = Rebinds.count
    OwnSetter().a = 5
    assert Rebinds.count == before


def test_decorating_a_class_twice_counts_once():
    Twice = wk.data_oriented(wk.data_oriented(type("Twice", (), {})))
    before = Rebinds.count
    Twice().x = 1
    assert Rebinds.count - before == 1


def test_a_decorated_subclass_of_a_watched_class_counts_once():
    Sub = wk.data_oriented(type("Sub", (Base,), {}))
    before = Rebinds.count
    Sub().x = 1                                # __init__'s assignment and this one
    assert Rebinds.count - before == 2
