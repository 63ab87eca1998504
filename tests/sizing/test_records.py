"""Records (sizing/records.py): immutable, compared and hashed by their COMPARED fields and their type."""
from __future__ import annotations

import pytest

from wgkern.sizing import expr as E
from wgkern.sizing.reducers import Job


def test_equality_and_hash_follow_the_compared_fields_and_the_type():
    a, b = E.Add(E.Const(1), E.Const(2)), E.Add(E.Const(1), E.Const(2))
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert E.Add(E.Const(1), E.Const(2)) != E.Mul(E.Const(1), E.Const(2))
    var = E.BoundVar("i")
    first = E.MaxOverRange(var, E.Const(0), E.Const(4), var, where="line 3")
    assert first == E.MaxOverRange(var, E.Const(0), E.Const(4), var) and first.where == "line 3"
    assert E.FieldLoad("slot", (var,), "i32") == E.FieldLoad("slot", (var,))
    assert Job(first, (), var).mode == "max" and Job(first, (), var) == Job(first, (), var, "max")


def test_records_are_immutable_and_check_their_arguments():
    with pytest.raises(AttributeError, match="immutable"):
        E.Const(3).value = 4
    with pytest.raises(TypeError, match="needs the argument 'rhs'"):
        E.Add(E.Const(1))
    with pytest.raises(TypeError, match="unexpected or repeated"):
        E.Const(1, value=2)
    with pytest.raises(TypeError, match="takes 1 arguments"):
        E.Const(1, 2)
