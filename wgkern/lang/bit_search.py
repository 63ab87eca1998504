"""`wk.math.fns(mask, base, offset)` (Quadrants' qd.math.fns, CUDA's `__fns`): the position of the |offset|-th set
bit of a 32-bit mask, counted from bit `base` (inclusive) upward for offset > 0 and downward for offset < 0;
offset == 0 asks whether bit `base` itself is set. 0xFFFFFFFF (as a u32) when there is no such bit. A
kernel-language function: the 32 bit positions are unrolled at compile time, so it runs the same on every arch
and adds no loop of its own to the caller (a call at a kernel's top level stays serial code)."""
from __future__ import annotations

from wgkern.lang import kernel_functions as _wm
from wgkern.lang.kernel import func
from wgkern.lang.types import i32 as _i32
from wgkern.lang.types import u32 as _u32

NOT_FOUND = 0xFFFFFFFF


@func
def fns(mask, base, offset):
    """The |offset|-th set bit of `mask` from bit `base`, upward (offset > 0) or downward (offset < 0); for
    offset == 0, `base` if that bit is set. A u32; 0xFFFFFFFF when there is none."""
    m = _wm.cast(mask, _u32)
    b = _wm.cast(base, _u32)
    k = _wm.cast(offset, _i32)
    found = _wm.cast(NOT_FOUND, _u32)
    if k == 0:
        if b < 32:
            if (m >> b) & 1 == 1:
                found = b
    else:
        upward = k > 0
        remaining = _wm.select(upward, k, -k)
        for i in _wm.static(range(32)):
            pos = _wm.select(upward, _wm.cast(i, _u32), _wm.cast(31 - i, _u32))
            inside = _wm.select(upward, pos >= b, pos <= b)
            if remaining > 0 and inside and (m >> pos) & 1 == 1:
                remaining -= 1
                if remaining == 0:
                    found = pos
    return found
