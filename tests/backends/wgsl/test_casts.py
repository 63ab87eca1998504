"""Every dtype -> dtype value cast (saturating float->int, NaN -> 0, wrap/extend by the source's signedness,
!= 0 for u1) and every same-width bitcast, WGSL on lavapipe against the reference interpreter."""
from __future__ import annotations

import numpy as np
import pytest

from wgkern.ir import nodes as ir
from wgkern.lang import types as T

from ._kernels import interpret, kernel, range_task, run, slot
from .test_ops import edge_values

BITCAST_PAIRS = [(a, b) for a in T.ALL_SCALARS for b in T.ALL_SCALARS
                 if a != b and a.bits == b.bits and not a.is_bool and not b.is_bool]


def cast_inputs(dtype: T.DataType) -> np.ndarray:
    values = edge_values(dtype)
    if dtype.is_float:
        extra = [127.9, 128.0, -128.5, -129.0, 255.9, 256.0, 32767.5, 65535.9, 65536.0, 3e9, -3e9, 2.0 ** 31,
                 -2.0 ** 31, 2.0 ** 32, 2.0 ** 63, -2.0 ** 63, 2.0 ** 64, 1e20, -1e20, 16777217.0, 0.999]
        with np.errstate(all="ignore"):
            values = np.concatenate([values, np.array(extra).astype(dtype.np_dtype)])
    return values


def cast_kernel(src: T.DataType, n: int, targets: list[T.DataType], bitcast: bool) -> ir.OffloadedKernel:
    a = slot("a", src, (n,))
    outs = [slot(f"o_{dst.name}", dst, (n,)) for dst in targets]

    def body(b, i):
        x = b.global_load(b.global_ptr(a, [i]))
        for out, dst in zip(outs, targets):
            b.global_store(b.global_ptr(out, [i]), b.insert(ir.Cast(operand=x, dtype=dst, bitcast=bitcast)))

    task = range_task("cast", lambda b: b.const(0, T.i32), lambda b: b.const(n, T.i32), body)
    return kernel(f"cast_{src.name}", [a, *outs], [task])


def _compare(got: np.ndarray, want: np.ndarray, what: str) -> None:
    if want.dtype.kind == "f":
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=what)
        keep = ~np.isnan(want)
        np.testing.assert_array_equal(got[keep], want[keep], err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


@pytest.mark.parametrize("src", T.ALL_SCALARS, ids=lambda d: d.name)
def test_value_casts(backend, src: T.DataType) -> None:
    x = cast_inputs(src)
    targets = [dst for dst in T.ALL_SCALARS if dst != src]
    kernel_ir = cast_kernel(src, x.size, targets, bitcast=False)
    arrays = [x] + [np.zeros(x.size, dst.np_dtype) for dst in targets]
    with np.errstate(all="ignore"):
        want = interpret(kernel_ir, arrays)
    got = run(backend, kernel_ir, arrays)
    for k, dst in enumerate(targets, start=1):
        _compare(got[k], want[k], f"{src} -> {dst} from {x}")


@pytest.mark.parametrize("src,dst", BITCAST_PAIRS, ids=lambda d: d.name)
def test_bitcasts(backend, src: T.DataType, dst: T.DataType) -> None:
    x = edge_values(src)
    kernel_ir = cast_kernel(src, x.size, [dst], bitcast=True)
    arrays = [x, np.zeros(x.size, dst.np_dtype)]
    got = run(backend, kernel_ir, arrays)
    want = x.view(dst.np_dtype)
    if dst.is_float:   # compare bits: NaN payloads must survive too
        np.testing.assert_array_equal(got[1].view(src.np_dtype), x, err_msg=f"{src} -> {dst}")
    else:
        np.testing.assert_array_equal(got[1], want, err_msg=f"{src} -> {dst}")
