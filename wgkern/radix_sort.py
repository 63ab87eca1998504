"""Quadrants' composable device-wide radix sort: `wk.algorithms.sort(...)`, a @wk.func called at the top level of
the caller's kernel, and `wk.algorithms.sort_scratch_slots(n, log256_max_n)`, the size of the u32 scratch it
needs.

The sort is a stable LSB radix sort of 8-bit digits, `end_bit // 8` passes (an even count, so the result lands
back in `keys`), each pass a fixed sequence of top-level loops, so each runs as its own launch after the one
before it has finished:
1. histogram: one thread per block of BLOCK keys counts the block's digits into `scratch[digit * blocks + block]`;
2. exclusive scan of those counts (digit-major, so the result is every (digit, block)'s first output slot): the
   counts are summed in chunks of 256 into the next level of scratch, `log256_max_n - 1` levels up, the top level
   (at most 256 sums when n <= 256 ** log256_max_n) is scanned by one thread, and each level is then
   scanned chunk by chunk down from its sums;
3. scatter: one thread per block moves the block's keys (and values) in order to their slots, so equal digits
   keep their order.
Signed and float keys are ordered by their bit patterns mapped to unsigned order (the sign bit flipped; all bits
of negative floats flipped), computed when a digit is read, so the keys themselves are only ever moved. The count
is read on the device from a 0-d container `n` (n[()]), so one compiled kernel serves every count up to the
capacity of the buffers."""
from __future__ import annotations

from typing import Any

from wgkern.errors import WkError
from wgkern.lang import math as wm
from wgkern.lang.kernel import func
from wgkern.lang.types import f32, f64, i32, i64, template, u32, u64

BLOCK = 256          # keys per histogram/scatter thread
CHUNK = 256          # counts per scan thread
DIGITS = 256         # values of an 8-bit digit
_KEY_BITS = {u32: 32, i32: 32, f32: 32, u64: 64, i64: 64, f64: 64}


def _level_lengths(n: int, depth: int) -> list[int]:
    """Lengths of the scan levels in scratch for `n` keys: the counts (DIGITS per block), then their chunk sums
    `depth - 1` times."""
    lengths = [DIGITS * -(-n // BLOCK)]
    for _ in range(depth - 1):
        lengths.append(-(-lengths[-1] // CHUNK))
    return lengths


def _min_depth(n: int) -> int:
    depth = 1
    while DIGITS ** depth < n:
        depth += 1
    return depth


def sort_scratch_slots(n: int, log256_max_n: int | None = None) -> int:
    """u32 slots the scratch of `sort` needs for up to `n` keys at scan depth `log256_max_n` (the smallest depth
    whose 256 ** depth reaches n when not given)."""
    depth = _min_depth(int(n)) if log256_max_n is None else _checked_depth(log256_max_n)
    return max(1, sum(_level_lengths(max(int(n), 1), depth)))


def _checked_depth(log256_max_n: Any) -> int:
    if not isinstance(log256_max_n, int) or log256_max_n < 1:
        raise WkError(f"sort(log256_max_n={log256_max_n!r}): give the scan depth, an int >= 1 (256 ** depth "
                      "must reach the largest count sorted)")
    return log256_max_n


def _checked_passes(key_dtype: Any, end_bit: Any) -> int:
    """Digit passes for `end_bit` low bits of `key_dtype` keys."""
    if key_dtype not in _KEY_BITS:
        raise WkError(f"sort(key_dtype={key_dtype!r}): keys are u32, i32, f32, u64, i64 or f64")
    width = _KEY_BITS[key_dtype]
    if not isinstance(end_bit, int) or end_bit <= 0 or end_bit % 16 or end_bit > width:
        raise WkError(f"sort(end_bit={end_bit!r}): sort a positive multiple of 16 bits, at most the {width} bits "
                      f"of {key_dtype!r} keys")
    return end_bit // 8


@func
def _ordered_bits(key, key_dtype: template()):
    """The key's bit pattern, mapped so that unsigned order is the key order."""
    wide = wm.static(_KEY_BITS[key_dtype] == 64)
    unsigned = wm.static(u64 if wide else u32)
    sign = wm.static((1 << 63) if wide else (1 << 31))
    bits = wm.bit_cast(key, unsigned)
    if wm.static(key_dtype in (i32, i64)):
        bits = bits ^ unsigned(sign)
    elif wm.static(key_dtype in (f32, f64)):
        if bits & unsigned(sign):
            bits = ~bits
        else:
            bits = bits ^ unsigned(sign)
    return bits


@func
def _digit(key, key_dtype: template(), shift: template()) -> i32:
    return i32((_ordered_bits(key, key_dtype) >> shift) & 255)


@func
def _level_start(count: i32, level: template()) -> i32:
    """Where scan level `level` starts in scratch for `count` keys."""
    start = 0
    length = DIGITS * ((count + BLOCK - 1) // BLOCK)
    for _ in wm.static(range(level)):
        start += length
        length = (length + CHUNK - 1) // CHUNK
    return start


@func
def _level_length(count: i32, level: template()) -> i32:
    length = DIGITS * ((count + BLOCK - 1) // BLOCK)
    for _ in wm.static(range(level)):
        length = (length + CHUNK - 1) // CHUNK
    return length


@func
def _histogram(source: template(), scratch: template(), n: template(), key_dtype: template(), shift: template()):
    for block in range((n[()] + BLOCK - 1) // BLOCK):
        count = n[()]
        blocks = (count + BLOCK - 1) // BLOCK
        for digit in range(DIGITS):
            scratch[digit * blocks + block] = u32(0)
        for i in range(block * BLOCK, wm.min(block * BLOCK + BLOCK, count)):
            slot = _digit(source[i], key_dtype, shift) * blocks + block
            scratch[slot] += u32(1)


@func
def _sum_chunks(scratch: template(), n: template(), level: template()):
    """Level `level + 1` of scratch = the sums of level `level`'s chunks."""
    for chunk in range(_level_length(n[()], level + 1)):
        count = n[()]
        start = _level_start(count, level)
        length = _level_length(count, level)
        total = u32(0)
        for i in range(chunk * CHUNK, wm.min(chunk * CHUNK + CHUNK, length)):
            total += scratch[start + i]
        scratch[_level_start(count, level + 1) + chunk] = total


@func
def _scan_top(scratch: template(), n: template(), level: template()):
    """Exclusive scan of the top level by one thread."""
    wm.loop_config(serialize=True)
    for _ in range(1):
        count = n[()]
        start = _level_start(count, level)
        running = u32(0)
        for i in range(_level_length(count, level)):
            value = scratch[start + i]
            scratch[start + i] = running
            running += value


@func
def _scan_chunks(scratch: template(), n: template(), level: template()):
    """Exclusive scan of level `level`'s chunks, each starting from its scanned sum in level `level + 1`."""
    for chunk in range(_level_length(n[()], level + 1)):
        count = n[()]
        start = _level_start(count, level)
        length = _level_length(count, level)
        running = scratch[_level_start(count, level + 1) + chunk]
        for i in range(chunk * CHUNK, wm.min(chunk * CHUNK + CHUNK, length)):
            value = scratch[start + i]
            scratch[start + i] = running
            running += value


@func
def _scatter(source: template(), target: template(), source_values: template(), target_values: template(),
             scratch: template(), n: template(), key_dtype: template(), shift: template(), has_values: template()):
    for block in range((n[()] + BLOCK - 1) // BLOCK):
        count = n[()]
        blocks = (count + BLOCK - 1) // BLOCK
        for i in range(block * BLOCK, wm.min(block * BLOCK + BLOCK, count)):
            slot = _digit(source[i], key_dtype, shift) * blocks + block
            position = i32(scratch[slot])
            scratch[slot] += u32(1)
            target[position] = source[i]
            if wm.static(has_values):
                target_values[position] = source_values[i]


@func(requires_top_level=True)
def sort(keys: template(), tmp_keys: template(), values: template(), tmp_values: template(), scratch: template(),
         n: template(), key_dtype: template(), has_values: template(), end_bit: template(),
         log256_max_n: template()):
    """Sort the first n[()] of `keys` (and `values` with them when `has_values`) in place, ascending and stable,
    by their `end_bit` low bits (a multiple of 16; key_dtype's width sorts by the whole key), through `tmp_keys`
    / `tmp_values` of the same size and a u32 `scratch` of `sort_scratch_slots(capacity, log256_max_n)` slots.
    Call it at the top level of a kernel (inside a run-time loop or `if` it is a CompileError: its phases would
    not run one after another); n[()] must not exceed 256 ** log256_max_n nor the buffers' size."""
    passes = wm.static(_checked_passes(key_dtype, end_bit))
    depth = wm.static(_checked_depth(log256_max_n))
    for p in wm.static(range(passes)):
        _histogram(wm.static(keys if p % 2 == 0 else tmp_keys), scratch, n, key_dtype, wm.static(8 * p))
        for level in wm.static(range(depth - 1)):
            _sum_chunks(scratch, n, level)
        _scan_top(scratch, n, wm.static(depth - 1))
        for level in wm.static(range(depth - 2, -1, -1)):
            _scan_chunks(scratch, n, level)
        _scatter(wm.static(keys if p % 2 == 0 else tmp_keys), wm.static(tmp_keys if p % 2 == 0 else keys),
                 wm.static(values if p % 2 == 0 else tmp_values), wm.static(tmp_values if p % 2 == 0 else values),
                 scratch, n, key_dtype, wm.static(8 * p), has_values)
