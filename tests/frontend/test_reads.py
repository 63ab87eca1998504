"""frontend/reads.py: fingerprints take a value's whole state or refuse it, names are found as Python finds them,
and compile-time expressions are recorded read by read or refused by name."""
from __future__ import annotations

import ast
import builtins
import dataclasses
import enum
import math

import numpy as np
import pytest

import wgkern as wk
from wgkern.frontend import reads


class Colour(enum.Enum):
    RED = 1
    BLUE = 2


@dataclasses.dataclass
class Settings:
    steps: int
    colour: Colour
    weights: tuple


class Holder:
    LIMIT = 3.5                       # a class attribute an instance's read falls back to

    def __init__(self, settings: Settings) -> None:
        self.settings = settings


def fp(value):
    return reads.fingerprint(value, reads.Containers())


def test_fingerprints_take_the_whole_state() -> None:
    base = Holder(Settings(4, Colour.RED, (1.0, 2)))
    assert fp(base) == fp(Holder(Settings(4, Colour.RED, (1.0, 2))))
    for changed in (Holder(Settings(5, Colour.RED, (1.0, 2))), Holder(Settings(4, Colour.BLUE, (1.0, 2))),
                    Holder(Settings(4, Colour.RED, (1.0, 2.0))), Holder(Settings(4, Colour.RED, (1.0,)))):
        assert fp(changed) != fp(base)
    before = fp(base)
    Holder.LIMIT = 4.5
    try:
        assert fp(base) != before
    finally:
        Holder.LIMIT = 3.5
    assert fp(np.arange(3)) != fp(np.arange(3, dtype=np.int32)) != fp(np.arange(1, 4))
    assert fp(-0.0) != fp(0.0) and fp(1) != fp(True) != fp(1.0)


def test_values_it_cannot_take_whole_are_refused() -> None:
    cycle: list = []
    cycle.append(cycle)
    with pytest.raises(reads.Unrecordable, match="holds itself"):
        fp(cycle)

    class Slotted:
        __slots__ = ("a",)

    with pytest.raises(reads.Unrecordable, match="no __dict__"):
        fp(Slotted())
    with pytest.raises(reads.Unrecordable, match="too large"):
        fp(list(range(reads._MAX_NODES + 1)))
    with pytest.raises(reads.Unrecordable, match="numpy array of objects"):
        fp(np.array([object()]))


def test_containers_are_numbered_in_the_order_met() -> None:
    wk.init(arch=wk.cpu)
    try:
        a = wk.field(wk.f32, shape=3, needs_grad=True)
        b = wk.field(wk.f32, shape=3)
        containers = reads.Containers()
        first = reads.fingerprint((a, b, a), containers)
        assert containers.found == [a, a.grad, b]
        assert first[1][0] == first[1][2] != first[1][1]
        assert fp((a, b)) != fp((a, a))                    # aliasing is part of the fingerprint
        assert fp(wk.field(wk.f32, shape=4)) != fp(b)
    finally:
        wk.reset()


SHADOWED = 7


def _uses(shadowed):
    return shadowed + SHADOWED + len(())


def test_names_are_found_as_python_finds_them() -> None:
    assert reads.python_name(_uses, "SHADOWED") == (True, 7)
    assert reads.python_name(_uses, "len") == (True, builtins.len)
    assert reads.python_name(_uses, "nowhere") == (False, None)
    captured = 3

    def inner():
        return captured

    assert reads.python_name(inner, "captured") == (True, 3)


def _expression_log(text: str, namespace: dict, local=()) -> reads.ReadLog:
    log = reads.ReadLog(_uses)
    log.expression(ast.parse(text, mode="eval"), _uses, set(local).__contains__, namespace)
    return log


def test_expressions_are_recorded_read_by_read() -> None:
    namespace = dict(vars(builtins)) | {"np": np, "math": math, "Colour": Colour, "cfg": object(), "wk": wk,
                                        "SHADOWED": SHADOWED}
    log = _expression_log("cfg.mode == Colour.RED and len(cfg.items) > math.pi + np.float32(1) + wk.f32.bits"
                          " + SHADOWED.bit_length()", namespace, local={"cfg"})
    assert log.refused is None
    here = reads.KERNEL             # the log's kernel function is _uses
    assert set(log.records) == {
        ("name", here, "Colour"), ("attr", ("class", __name__, "Colour"), "RED"), ("name", here, "len"),
        ("name", here, "math"), ("attr", ("module", "math"), "pi"), ("name", here, "np"),
        ("attr", ("module", "numpy"), "float32"), ("name", here, "wk"), ("attr", ("module", "wgkern"), "f32"),
        ("name", here, "SHADOWED")}


@pytest.mark.parametrize("text, refused", [
    ("print(3)", "calls print"),               # a C function (a Python function's reads are traced: call_trace)
    ("np.random.rand()", "calls np.random.rand"),
    ("cfg.method()", "calls cfg.method"),
    ("cfg.settings.bit_length()", "calls cfg.settings.bit_length"),   # only a name's own number is known
    ("[c for c in cfg]", "holds ListComp"),
    ("(lambda: 1)", "holds Lambda"),
])
def test_expressions_that_cannot_be_checked_are_refused(text, refused) -> None:
    namespace = dict(vars(builtins)) | {"np": np, "helper": _uses, "cfg": Holder(None)}
    log = _expression_log(text, namespace, local={"cfg"})
    assert log.refused is not None and refused in log.refused


def test_functions_made_inside_functions_are_refused() -> None:
    def local():
        pass

    log = reads.ReadLog(_uses)
    log.source(local)
    assert "cannot be found again" in log.refused


def test_wgkern_functions_are_keyed_by_what_they_close_over() -> None:
    # a tile kind's `zeros` is a func made for it, closing over its size: wgkern's code is in every key, so its
    # source and names need no record, and the closure is part of the fingerprint wherever the func is met
    from wgkern.lang.simt.tile import Tile16x16, Tile32x32, TileKind
    log = reads.ReadLog(_uses)
    log.source(Tile16x16.zeros.fn)
    log.name(Tile16x16.zeros.fn, "size")
    assert log.refused is None and not log.records
    assert fp(Tile16x16.zeros) != fp(Tile32x32.zeros)
    assert fp(Tile16x16.zeros) == fp(TileKind(16).zeros)
    assert fp(Tile16x16) != fp(Tile32x32)
    made = _made_here()
    log.source(made)
    assert "cannot be found again" in log.refused          # the program's own closures are still refused


def _made_here():
    size = 3

    def inner():
        return size
    return inner
