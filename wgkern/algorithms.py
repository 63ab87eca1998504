"""Taichi's `ti.algorithms`: `parallel_sort(keys, values=None)` and `PrefixSumExecutor(n).run(x)`, written as
wgkern kernels, so they run on the device that holds the data.

`parallel_sort` is Batcher's odd-even merge sort: log2(n) (log2(n) + 1) / 2 launches, each one thread per
element where the threads at a comparator's lower end compare-and-swap (ascending; `values` move with their
keys; not stable, as Taichi's). `PrefixSumExecutor.run` is an inclusive scan in place in three launches: each
block of `BLOCK` elements scanned by one thread, the block totals scanned by one thread, then every element
offset by the total of the blocks before it."""
from __future__ import annotations

from typing import Any

from wgkern.errors import WkError
from wgkern.lang import math as wm
from wgkern.lang.fields import Field, field
from wgkern.lang.kernel import kernel
from wgkern.lang.types import i32, template


@kernel
def _merge_stage(keys: template(), values: template(), n: i32, p: i32, k: i32):
    for a in range(n):
        first = k % p
        if a >= first and (a - first) % (2 * k) < k and a + k < n and a // (2 * p) == (a + k) // (2 * p):
            b = a + k
            key_a = keys[a]
            key_b = keys[b]
            if key_b < key_a:
                keys[a] = key_b
                keys[b] = key_a
                if wm.static(values is not None):
                    value_a = values[a]
                    values[a] = values[b]
                    values[b] = value_a


def _check_sortable(container: Any, what: str) -> None:
    if not isinstance(container, Field) or len(container.shape) != 1:
        raise WkError(f"parallel_sort(): {what} must be a 1-D field, got "
                      f"{getattr(container, 'shape', type(container).__name__)}")


def parallel_sort(keys: Any, values: Any = None) -> None:
    """Sort a 1-D field in place, ascending; `values` (a 1-D field of the same length) is permuted with it."""
    _check_sortable(keys, "keys")
    if keys.element_shape:
        raise WkError("parallel_sort(): keys must be scalars")
    n = keys.shape[0]
    if values is not None:
        _check_sortable(values, "values")
        if values.shape[0] != n:
            raise WkError(f"parallel_sort(): values has {values.shape[0]} elements, keys {n}")
    p = 1
    while p < n:
        k = p
        while k >= 1:
            _merge_stage(keys, values, n, p, k)
            k //= 2
        p *= 2


BLOCK = 256


@kernel
def _scan_blocks(data: template(), totals: template(), n: i32, block: i32):
    for b in range(totals.shape[0]):
        running = data[b * block] * 0
        for i in range(b * block, wm.min(b * block + block, n)):
            running += data[i]
            data[i] = running
        totals[b] = running


@kernel
def _scan_totals(totals: template()):
    wm.loop_config(serialize=True)
    for b in range(1, totals.shape[0]):
        totals[b] += totals[b - 1]


@kernel
def _add_offsets(data: template(), totals: template(), n: i32, block: i32):
    for i in range(block, n):
        data[i] += totals[i // block - 1]


class PrefixSumExecutor:
    """Taichi's inclusive in-place prefix sum: `PrefixSumExecutor(n).run(x)` makes x[i] = x[0] + ... + x[i] for
    a 1-D field of n numbers (any numeric dtype here; Taichi's takes i32)."""

    def __init__(self, length: int):
        self.sorting_length = int(length)
        self._totals: dict[Any, Field] = {}

    def run(self, input_arr: Any) -> None:
        if not isinstance(input_arr, Field) or len(input_arr.shape) != 1 or input_arr.element_shape:
            raise WkError("PrefixSumExecutor.run() takes a 1-D field of scalars")
        n = min(self.sorting_length, input_arr.shape[0])
        if n == 0:
            return
        blocks = -(-n // BLOCK)
        totals = self._totals.get(input_arr.dtype)
        if totals is None or totals.shape[0] != blocks or not totals.program.alive:
            totals = field(input_arr.dtype, shape=blocks, name="prefix_sum.totals")
            self._totals[input_arr.dtype] = totals
        _scan_blocks(input_arr, totals, n, BLOCK)
        if blocks > 1:
            _scan_totals(totals)
            _add_offsets(input_arr, totals, n, BLOCK)
