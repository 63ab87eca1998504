"""wk.math.ffs (lang/glsl.py) on every integer width, against Python's bit arithmetic and Quadrants' qd.math.ffs."""
from __future__ import annotations

import numpy as np

import wgkern as wk
from tests.quadrants_compare import same_output_as_quadrants


FFS_PROGRAM = """
import numpy as np
import {module} as qd
qd.init(arch=qd.cpu)
vals32 = [0, 1, 2, 3, 8, 12, -1, -2147483648, 0x40000000, 96]
vals64 = [0, 1, 1 << 32, 3 << 40, -(1 << 63), (1 << 62) + (1 << 35), -1]
a = qd.field(qd.i32, shape=len(vals32))
b = qd.field(qd.i64, shape=len(vals64))
ra = qd.field(qd.i32, shape=len(vals32))
rb = qd.field(qd.i32, shape=len(vals64))
a.from_numpy(np.array(vals32, np.int32))
b.from_numpy(np.array(vals64, np.int64))

@qd.kernel
def k():
    for i in a:
        ra[i] = qd.math.ffs(a[i])
    for i in b:
        rb[i] = qd.math.ffs(b[i])

k()
print(ra.to_numpy().tolist(), rb.to_numpy().tolist())
"""


def reference_ffs(value: int, bits: int) -> int:
    pattern = value & ((1 << bits) - 1)
    return (pattern & -pattern).bit_length()


def test_ffs_on_every_integer_width(arch):
    """Quadrants' qd.math.ffs: the 1-based lowest set bit of the bit pattern, 0 for 0, as an i32."""
    cases = {wk.i32: [0, 1, 2, 3, 8, 12, -1, -2**31, 2**30, 96], wk.u32: [0, 2**31, 0xFFFF0000, 7],
             wk.i64: [0, 1, 2**32, 3 << 40, -2**63, 2**62 + 2**35, -1], wk.u64: [2**63, 2**64 - 1, 2**40]}
    for dtype, values in cases.items():
        src = wk.field(dtype, shape=len(values))
        out = wk.field(wk.i32, shape=len(values))
        src.from_numpy(np.array(values, dtype.np_dtype) if dtype.kind == "u" else
                       np.array(values).astype(dtype.np_dtype))

        @wk.kernel
        def k():
            for i in src:
                out[i] = wk.math.ffs(src[i])

        k()
        assert out.to_numpy().tolist() == [reference_ffs(v, dtype.bits) for v in values], dtype


def test_ffs_same_as_quadrants(tmp_path):
    expected = "[0, 1, 2, 1, 4, 3, 1, 32, 31, 6] [0, 1, 33, 41, 64, 36, 1]"
    assert same_output_as_quadrants(tmp_path, FFS_PROGRAM) == [expected]
