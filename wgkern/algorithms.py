"""Taichi's `ti.algorithms`: `parallel_sort(keys, values=None)` and `PrefixSumExecutor(n).run(x)`, written as
wgkern kernels, so they run on the device that holds the data.

`parallel_sort` is Batcher's odd-even merge sort: log2(n) (log2(n) + 1) / 2 launches, each one thread per
element where the threads at a comparator's lower end compare-and-swap (ascending; `values` move with their
keys; not stable, as Taichi's). `PrefixSumExecutor.run` is an inclusive scan in place in three launches: each
block of `BLOCK` elements scanned by one thread, the block totals scanned by one thread, then every element
offset by the total of the blocks before it.

Quadrants' device-wide primitives `device_reduce_{add,min,max}` and `device_exclusive_scan_{add,min,max}`
(i32, u32, f32; a field or an ndarray in, a separate `out`) use the same three-step block scheme with the
operator as a compile-time argument; the identity is stored in a one-element field, so numpy converts it.
`device_select` (stream compaction) scans the flags and scatters each selected element to its rank.
`device_radix_sort` is a stable LSB radix sort of one bit per pass: the keys are mapped to u32 codes that order
as the keys do, each pass scans the flags of the elements whose bit is 0 and moves every element to its rank
among its kind; the keys (and values) are gathered in the final order at the end.

Quadrants' composable radix sort, `sort(...)` (a func called at the top level of a kernel) and
`sort_scratch_slots(n, log256_max_n)`, lives in radix_sort.py."""
from __future__ import annotations

from typing import Any

from wgkern.errors import WkError
from wgkern.lang import math as wm
from wgkern.lang.fields import Field, field
from wgkern.lang.kernel import func, kernel
from wgkern.lang.types import f32, i32, template, u32
from wgkern.radix_sort import sort, sort_scratch_slots  # noqa: F401 - Quadrants' qd.algorithms.sort


@kernel
def _merge_stage(keys: template(), values: template(), n: i32, p: i32, k: i32, key_base: i32, value_base: i32):
    for a in range(n):
        first = k % p
        if a >= first and (a - first) % (2 * k) < k and a + k < n and a // (2 * p) == (a + k) // (2 * p):
            b = a + k
            key_a = keys[key_base + a]
            key_b = keys[key_base + b]
            if key_b < key_a:
                keys[key_base + a] = key_b
                keys[key_base + b] = key_a
                if wm.static(values is not None):
                    value_a = values[value_base + a]
                    values[value_base + a] = values[value_base + b]
                    values[value_base + b] = value_a


def _first_index(container: Any) -> int:
    """The index of a 1-D field's first element: its offset (a field declared with offset=...), else 0."""
    offset = getattr(container, "offset", None) or (0,)
    return int(offset[0])


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
    key_base = _first_index(keys)
    value_base = _first_index(values) if values is not None else 0
    p = 1
    while p < n:
        k = p
        while k >= 1:
            _merge_stage(keys, values, n, p, k, key_base, value_base)
            k //= 2
        p *= 2


BLOCK = 256


@kernel
def _scan_blocks(data: template(), totals: template(), n: i32, block: i32, base: i32):
    for b in range(totals.shape[0]):
        running = data[base + b * block] * 0
        for i in range(b * block, wm.min(b * block + block, n)):
            running += data[base + i]
            data[base + i] = running
        totals[b] = running


@kernel
def _scan_totals(totals: template()):
    wm.loop_config(serialize=True)
    for b in range(1, totals.shape[0]):
        totals[b] += totals[b - 1]


@kernel
def _add_offsets(data: template(), totals: template(), n: i32, block: i32, base: i32):
    for i in range(block, n):
        data[base + i] += totals[i // block - 1]


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
        base = _first_index(input_arr)
        _scan_blocks(input_arr, totals, n, BLOCK, base)
        if blocks > 1:
            _scan_totals(totals)
            _add_offsets(input_arr, totals, n, BLOCK, base)


# ---- Quadrants' device-wide reduce and exclusive scan -------------------------------------------------------

_DEVICE_DTYPES = (i32, u32, f32)


@func
def _combine(a, b, op: template()):
    result = a
    if wm.static(op == "add"):
        result = a + b
    elif wm.static(op == "min"):
        result = wm.min(a, b)
    else:
        result = wm.max(a, b)
    return result


@kernel
def _reduce_blocks(data, totals: template(), identity: template(), n: i32, block: i32, op: template()):
    for b in range(totals.shape[0]):
        running = identity[0]
        for i in range(b * block, wm.min(b * block + block, n)):
            running = _combine(running, data[i], op)
        totals[b] = running


@kernel
def _reduce_totals(totals: template(), identity: template(), out, op: template()):
    for _ in range(1):
        running = identity[0]
        for b in range(totals.shape[0]):
            running = _combine(running, totals[b], op)
        out[0] = running


@kernel
def _exclusive_scan_blocks(data, out, totals: template(), identity: template(), n: i32, block: i32,
                           op: template()):
    for b in range(totals.shape[0]):
        running = identity[0]
        for i in range(b * block, wm.min(b * block + block, n)):
            value = data[i]
            out[i] = running
            running = _combine(running, value, op)
        totals[b] = running


@kernel
def _exclusive_scan_totals(totals: template(), identity: template(), op: template()):
    for _ in range(1):
        running = identity[0]
        for b in range(totals.shape[0]):
            total = totals[b]
            totals[b] = running
            running = _combine(running, total, op)


@kernel
def _apply_block_prefixes(out, totals: template(), n: i32, block: i32, op: template()):
    for i in range(n):
        out[i] = _combine(totals[i // block], out[i], op)


def _check_device_arguments(name: str, data: Any, out: Any, same_shape: bool) -> int:
    from wgkern.lang.fields import Container
    if not isinstance(data, Container) or not isinstance(out, Container):
        raise TypeError(f"wk.algorithms.{name}() takes a field or an ndarray and out= another")
    for container in (data, out):
        if _first_index(container):
            raise NotImplementedError(f"wk.algorithms.{name}() indexes from 0; {container.kind_name} "
                                      f"'{container.name}' starts at {_first_index(container)} (offset=...)")
    if len(data.shape) != 1 or data.element_shape:
        raise TypeError(f"wk.algorithms.{name}(): the input must be 1-D of scalars, not shape {data.shape}")
    if data.dtype != out.dtype:
        raise TypeError(f"wk.algorithms.{name}(): input is {data.dtype!r} but out is {out.dtype!r}")
    if data.dtype not in _DEVICE_DTYPES:
        raise NotImplementedError(f"wk.algorithms.{name}() supports i32, u32 and f32, not {data.dtype!r}")
    if same_shape and tuple(out.shape) != tuple(data.shape):
        raise TypeError(f"wk.algorithms.{name}(): out has shape {out.shape}, the input {data.shape}")
    if not same_shape and out.size < 1:
        raise TypeError(f"wk.algorithms.{name}(): out must hold at least one element")
    return data.shape[0]


def _identity_field(dtype: Any, identity: Any) -> Field:
    holder = field(dtype, shape=1, name="device_algorithm.identity")
    holder[0] = identity
    return holder


def _device_reduce(name: str, op: str, data: Any, identity: Any, out: Any) -> Any:
    n = _check_device_arguments(name, data, out, same_shape=False)
    blocks = max(-(-n // BLOCK), 1)
    totals = field(data.dtype, shape=blocks, name="device_reduce.totals")
    held = _identity_field(data.dtype, identity)
    _reduce_blocks(data, totals, held, n, BLOCK, op)
    _reduce_totals(totals, held, out, op)
    return out


def _device_exclusive_scan(name: str, op: str, data: Any, identity: Any, out: Any) -> Any:
    if out is data:
        raise ValueError(f"wk.algorithms.{name}(): out must not be the input (no in-place scan)")
    n = _check_device_arguments(name, data, out, same_shape=True)
    blocks = max(-(-n // BLOCK), 1)
    totals = field(data.dtype, shape=blocks, name="device_scan.totals")
    held = _identity_field(data.dtype, identity)
    _exclusive_scan_blocks(data, out, totals, held, n, BLOCK, op)
    if blocks > 1:
        _exclusive_scan_totals(totals, held, op)
        _apply_block_prefixes(out, totals, n, BLOCK, op)
    return out


def device_reduce_add(input: Any, *, out: Any) -> Any:  # noqa: A002 - Quadrants' parameter name
    """out[0] = the sum of the 1-D input."""
    return _device_reduce("device_reduce_add", "add", input, 0, out)


def device_reduce_min(input: Any, identity: Any, *, out: Any) -> Any:  # noqa: A002
    """out[0] = min(identity, min of the input)."""
    return _device_reduce("device_reduce_min", "min", input, identity, out)


def device_reduce_max(input: Any, identity: Any, *, out: Any) -> Any:  # noqa: A002
    """out[0] = max(identity, max of the input)."""
    return _device_reduce("device_reduce_max", "max", input, identity, out)


def device_exclusive_scan_add(input: Any, *, out: Any) -> Any:  # noqa: A002
    """out[i] = input[0] + ... + input[i - 1]; out[0] = 0."""
    return _device_exclusive_scan("device_exclusive_scan_add", "add", input, 0, out)


def device_exclusive_scan_min(input: Any, identity: Any, *, out: Any) -> Any:  # noqa: A002
    """out[i] = min(identity, input[0], ..., input[i - 1])."""
    return _device_exclusive_scan("device_exclusive_scan_min", "min", input, identity, out)


def device_exclusive_scan_max(input: Any, identity: Any, *, out: Any) -> Any:  # noqa: A002
    """out[i] = max(identity, input[0], ..., input[i - 1])."""
    return _device_exclusive_scan("device_exclusive_scan_max", "max", input, identity, out)


@kernel
def _selection_flags(flags, selected: template(), n: i32):
    for i in range(n):
        selected[i] = 1 if flags[i] != 0 else 0


@kernel
def _scatter_selected(data, selected: template(), ranks: template(), out, num_out, n: i32):
    for i in range(n):
        if selected[i] != 0:
            out[ranks[i]] = data[i]
        if i == n - 1:
            num_out[0] = ranks[i] + selected[i]


def device_select(input: Any, flags: Any, *, out: Any, num_out: Any) -> Any:  # noqa: A002
    """Stream compaction: the elements of `input` whose flag is non-zero, in input order, packed at the start
    of `out`; `num_out[0]` = how many."""
    n = _check_device_arguments("device_select", input, out, same_shape=False)
    if tuple(flags.shape) != tuple(input.shape):
        raise TypeError(f"wk.algorithms.device_select(): flags have shape {flags.shape}, the input {input.shape}")
    if flags.dtype.is_float or flags.element_shape:
        raise TypeError(f"wk.algorithms.device_select(): flags must be integers, not {flags.dtype!r}")
    if out.size < n:
        raise ValueError(f"wk.algorithms.device_select(): out holds {out.size} elements; it needs {n} (all selected)")
    selected = field(i32, shape=n, name="device_select.selected")
    ranks = field(i32, shape=n, name="device_select.ranks")
    _selection_flags(flags, selected, n)
    device_exclusive_scan_add(selected, out=ranks)
    _scatter_selected(input, selected, ranks, out, num_out, n)
    return out


_RADIX_KINDS = {u32: "u32", i32: "i32", f32: "f32"}


@kernel
def _radix_encode(keys, codes: template(), order: template(), n: i32, kind: template()):
    for i in range(n):
        code = wm.bit_cast(keys[i], u32)
        if wm.static(kind == "i32"):
            code = code ^ u32(0x80000000)          # two's complement: flip the sign bit
        if wm.static(kind == "f32"):
            # IEEE floats: negative ones flip every bit (larger magnitude sorts first), the others the sign bit
            code = code ^ (u32(0xFFFFFFFF) if (code >> u32(31)) != u32(0) else u32(0x80000000))
        codes[i] = code
        order[i] = i


@kernel
def _radix_zero_flags(codes: template(), zeros: template(), bit: i32, n: i32):
    for i in range(n):
        zeros[i] = 1 - wm.cast((codes[i] >> wm.cast(bit, u32)) & u32(1), i32)


@kernel
def _radix_scatter(codes: template(), order: template(), zeros: template(), ranks: template(),
                   codes_out: template(), order_out: template(), n: i32):
    for i in range(n):
        zero_count = ranks[n - 1] + zeros[n - 1]
        target = ranks[i]
        if zeros[i] == 0:
            target = zero_count + i - ranks[i]
        codes_out[target] = codes[i]
        order_out[target] = order[i]


@kernel
def _gather(source, order: template(), target, n: i32):
    for i in range(n):
        target[i] = source[order[i]]


@kernel
def _copy_back(source, target, n: i32):
    for i in range(n):
        target[i] = source[i]


def _check_radix_pair(name: str, data: Any, tmp: Any, what: str) -> None:
    from wgkern.lang.fields import Container
    if not isinstance(data, Container) or not isinstance(tmp, Container):
        raise TypeError(f"wk.algorithms.device_radix_sort(): {name} and tmp_{name} must be fields or ndarrays")
    if tmp is data:
        raise ValueError(f"wk.algorithms.device_radix_sort(): tmp_{name} must not be {name} itself")
    for container in (data, tmp):
        if _first_index(container):
            raise NotImplementedError(f"wk.algorithms.device_radix_sort() indexes from 0; {container.kind_name} "
                                      f"'{container.name}' starts at {_first_index(container)} (offset=...)")
    if len(data.shape) != 1 or data.element_shape:
        raise TypeError(f"wk.algorithms.device_radix_sort(): {what} must be 1-D of scalars, not shape {data.shape}")
    if tmp.dtype != data.dtype:
        raise TypeError(f"wk.algorithms.device_radix_sort(): {name} are {data.dtype!r} but tmp_{name} "
                        f"{tmp.dtype!r}")
    if tuple(tmp.shape) != tuple(data.shape):
        raise TypeError(f"wk.algorithms.device_radix_sort(): {name} have shape {data.shape}, tmp_{name} "
                        f"{tmp.shape}")


def device_radix_sort(keys: Any, *, tmp_keys: Any, values: Any = None, tmp_values: Any = None,
                      begin_bit: int = 0, end_bit: int = 32) -> None:
    """Sort the 1-D `keys` (u32, i32 or f32) ascending in place, stably; `values` (with `tmp_values`) move
    with their keys. `tmp_keys` / `tmp_values` are scratch of the same shape and dtype. Only bits
    [begin_bit, end_bit) of the keys' order-preserving codes are compared; as in Quadrants, they must span
    an even number of 8-bit digits."""
    _check_radix_pair("keys", keys, tmp_keys, "the keys")
    if keys.dtype not in _RADIX_KINDS:
        raise NotImplementedError(f"wk.algorithms.device_radix_sort() sorts u32, i32 and f32 keys, not "
                                  f"{keys.dtype!r}")
    if values is not None:
        if tmp_values is None:
            raise ValueError("wk.algorithms.device_radix_sort(): values need tmp_values")
        _check_radix_pair("values", values, tmp_values, "the values")
        if tuple(values.shape) != tuple(keys.shape):
            raise TypeError(f"wk.algorithms.device_radix_sort(): values have shape {values.shape}, the keys "
                            f"{keys.shape}")
    if not 0 <= begin_bit < end_bit <= 32 or (-(-(end_bit - begin_bit) // 8)) % 2:
        raise ValueError(f"wk.algorithms.device_radix_sort(): bits [{begin_bit}, {end_bit}) must span an even "
                         "number of 8-bit digits within 32 bits")
    n = keys.shape[0]
    if n <= 1:
        return
    codes = [field(u32, shape=n, name="device_radix_sort.codes") for _ in range(2)]
    order = [field(i32, shape=n, name="device_radix_sort.order") for _ in range(2)]
    zeros = field(i32, shape=n, name="device_radix_sort.zeros")
    ranks = field(i32, shape=n, name="device_radix_sort.ranks")
    _radix_encode(keys, codes[0], order[0], n, _RADIX_KINDS[keys.dtype])
    current = 0
    for bit in range(begin_bit, end_bit):
        _radix_zero_flags(codes[current], zeros, bit, n)
        device_exclusive_scan_add(zeros, out=ranks)
        _radix_scatter(codes[current], order[current], zeros, ranks, codes[1 - current], order[1 - current], n)
        current = 1 - current
    for data, tmp in ((keys, tmp_keys), (values, tmp_values)):
        if data is not None:
            _gather(data, order[current], tmp, n)
            _copy_back(tmp, data, n)
