"""ir/nodes.py: every statement class's own operand reader gives what the generic definition (Stmt.operands, the
OPERANDS fields then the OPERAND_LISTS items, None left out) gives, for classes defined anywhere (the autodiff
and simt statements too) and for classes defined later."""
from __future__ import annotations

import dataclasses
from typing import ClassVar

import pytest

import wgkern.passes.autodiff    # noqa: F401 - defines statement classes of its own
import wgkern.passes.offload     # noqa: F401
from wgkern import dtypes as T
from wgkern.ir import nodes as ir


def _statement_classes() -> list[type]:
    found, pending = [], [ir.Stmt]
    while pending:
        for cls in pending.pop().__subclasses__():
            if cls not in found:
                found.append(cls)
                pending.append(cls)
    return found


def _instance(cls: type, fill: dict[str, object]) -> ir.Stmt:
    """An instance of `cls` without running its __init__ (whatever its other fields need), the operand fields
    set from `fill`."""
    stmt = object.__new__(cls)
    for name, value in fill.items():
        object.__setattr__(stmt, name, value)
    return stmt


@pytest.mark.parametrize("cls", _statement_classes(), ids=lambda cls: f"{cls.__module__}.{cls.__qualname__}")
def test_each_class_reads_its_operands_as_the_generic_definition_does(cls):
    if not cls.OPERANDS and not cls.OPERAND_LISTS:
        assert _instance(cls, {}).operands() == []
        return
    values = [ir.Const(value=k, dtype=T.i32) for k in range(8)]
    full = {name: values[k] for k, name in enumerate(cls.OPERANDS)}
    full.update({name: values[4:6 + k] for k, name in enumerate(cls.OPERAND_LISTS)})
    some_none = {**full, cls.OPERANDS[0]: None} if cls.OPERANDS else {**full, cls.OPERAND_LISTS[0]: [None, values[7]]}
    for fill in (full, some_none):
        stmt = _instance(cls, fill)
        got = stmt.operands()
        assert got == ir.Stmt.operands(stmt)
        assert all(a is b for a, b in zip(got, ir.Stmt.operands(stmt)))
        assert got is not stmt.operands()        # a new list each time: callers may change it


def test_a_class_defined_later_gets_its_own_reader():
    @dataclasses.dataclass(eq=False, slots=True, kw_only=True)
    class Pair(ir.Stmt):
        OPERANDS: ClassVar[tuple[str, ...]] = ("first", "second")
        OPERAND_LISTS: ClassVar[tuple[str, ...]] = ("rest",)
        first: ir.Stmt
        second: ir.Stmt | None
        rest: list[ir.Stmt]

    a, b, c = (ir.Const(value=k, dtype=T.f32) for k in range(3))
    assert Pair(first=a, second=None, rest=[b, c]).operands() == [a, b, c]
    assert Pair(first=a, second=b, rest=[]).operands() == [a, b]
