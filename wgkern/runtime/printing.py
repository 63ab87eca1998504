"""Text of a kernel's `print(...)`: the one formatting every backend uses (ir.Print: literal pieces around the
printed values). Values print as Taichi's kernels print them (C printf): f32/f16 with "%f" (1.500000), f64 with
"%.12f", integers in decimal, u1 as 1/0; a format spec (`{x:.3f}`) is applied as Python applies it."""
from __future__ import annotations

import sys
from typing import Any, Sequence

import numpy as np


def format_value(value: Any, dtype: Any, spec: str = "") -> str:
    """`spec`: a Python format spec (f-string `{x:.3f}`), applied to the value as a Python bool/int/float."""
    if spec:
        scalar = dtype.np_dtype.type(value)
        return format(bool(scalar) if dtype.is_bool else scalar.item(), spec)
    if dtype.is_bool:
        return "1" if value else "0"
    if dtype.is_float:
        return f"{float(dtype.np_dtype.type(value)):.{12 if dtype.bits == 64 else 6}f}"
    return str(int(value))


def format_print(pieces: Sequence[str], values: Sequence[Any], dtypes: Sequence[Any],
                 formats: Sequence[str] = ()) -> str:
    out = [pieces[0]]
    specs = formats or [""] * len(values)
    for value, dtype, spec, piece in zip(values, dtypes, specs, pieces[1:]):
        out.append(format_value(value, dtype, spec))
        out.append(piece)
    return "".join(out)


def emit(text: str) -> None:
    """Write a kernel's printed text (`end` is already part of it) and flush, as print(..., flush=True)."""
    sys.stdout.write(text)
    sys.stdout.flush()


def decode_words(words: Sequence[int], dtypes: Sequence[Any]) -> list[Any]:
    """Values passed as 64-bit words (ints sign- or zero-extended, floats as float64 bits) -> Python values."""
    out = []
    for word, dtype in zip(words, dtypes):
        raw = np.array([word], np.int64)
        if dtype.is_float:
            out.append(raw.view(np.float64)[0])
        elif dtype.is_unsigned or dtype.is_bool:
            out.append(int(raw.view(np.uint64)[0]))
        else:
            out.append(int(raw[0]))
    return out
