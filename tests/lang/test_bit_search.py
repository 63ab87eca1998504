"""wk.math.fns (lang/bit_search.py): the n-th set bit of a 32-bit mask from a base bit, upward or downward, against
Python's bit arithmetic on every arch and against Quadrants' qd.math.fns."""
from __future__ import annotations

import itertools

import numpy as np

import wgkern as wk
from tests.quadrants_compare import same_output_as_quadrants

NOT_FOUND = 0xFFFFFFFF
MASKS = [0, 0xFFFFFFFF, 1, 0x80000000, 0xF, 0xF0000000, 0xAAAAAAAA, 0x12345678, 0xE]
BASES = [0, 1, 2, 5, 15, 16, 31, 32, 40]
OFFSETS = [-33, -32, -5, -3, -1, 0, 1, 2, 4, 5, 32, 33]


def reference_fns(mask: int, base: int, offset: int) -> int:
    """The positions of the set bits, listed from `base` in the search direction, and the |offset|-th of them."""
    if offset == 0:
        return base if base < 32 and mask >> base & 1 else NOT_FOUND
    positions = range(base, 32) if offset > 0 else range(min(base, 31), -1, -1)
    set_bits = [p for p in positions if mask >> p & 1]
    return set_bits[abs(offset) - 1] if abs(offset) <= len(set_bits) else NOT_FOUND


def test_fns_against_bit_arithmetic(arch):
    cases = list(itertools.product(MASKS, BASES, OFFSETS))
    masks = wk.ndarray(wk.u32, len(cases))
    bases = wk.ndarray(wk.u32, len(cases))
    offsets = wk.ndarray(wk.i32, len(cases))
    out = wk.ndarray(wk.u32, len(cases))
    for array, column in ((masks, 0), (bases, 1), (offsets, 2)):
        array.from_numpy(np.array([c[column] for c in cases], array.dtype.np_dtype))

    @wk.kernel
    def search(m: wk.types.ndarray(), b: wk.types.ndarray(), o: wk.types.ndarray(), r: wk.types.ndarray()):
        for i in m:
            r[i] = wk.math.fns(m[i], b[i], o[i])

    search(masks, bases, offsets, out)
    assert out.to_numpy().tolist() == [reference_fns(*c) for c in cases]

    @wk.kernel
    def at_top_level(m: wk.u32, b: wk.u32, o: wk.i32) -> wk.u32:
        return wk.math.fns(m, b, o)         # called outside any loop: its unrolled search is serial code

    assert at_top_level(0xF, 5, -4) == 0 and at_top_level(0xE, 0, 0) == NOT_FOUND
    assert at_top_level(0xFFFFFFFF, 0, 32) == 31 and at_top_level(0xFFFFFFFF, 31, -33) == NOT_FOUND


FNS_PROGRAM = """
import {module} as qd
qd.init(arch=qd.cpu)

@qd.kernel
def fns(m: qd.u32, b: qd.u32, o: qd.i32) -> qd.u32:
    return qd.math.fns(m, b, o)

print([fns(m, b, o) for m in (0xAAAAAAAA, 0x12345678, 0x80000001) for b in (0, 3, 31, 40) for o in (-3, -1, 0, 1, 2, 33)])
"""


def test_fns_same_as_quadrants(tmp_path):
    ours = same_output_as_quadrants(tmp_path, FNS_PROGRAM)
    expected = [reference_fns(m, b, o) for m in (0xAAAAAAAA, 0x12345678, 0x80000001) for b in (0, 3, 31, 40)
                for o in (-3, -1, 0, 1, 2, 33)]
    assert ours == [str(expected)]
