"""Text of a kernel's `print(...)`: the one formatting every backend uses (ir.Print: literal pieces around the
printed values). Values print as Taichi's kernels print them (C printf): f32/f16 with "%f" (1.500000), f64 with
"%.12f", integers in decimal, u1 as 1/0; a format spec (`{x:.3f}`) is applied as Python applies it, with
printf's conversions and defaults (`{x:.1}` of a float is "%.1f", `{n:.3d}` pads to 3 digits)."""
from __future__ import annotations

import re
import sys
from typing import Any, Sequence

import numpy as np


# A format spec as Taichi reads it: Python's mini-language, where printf's conversions (i, u, lld, ...) are
# accepted and a missing conversion means printf's default for the value (f for floats, d for integers).
_SPEC = re.compile(r"(?P<head>(?:.?[<>=^])?[-+ ]?z?#?0?\d*[,_]?)(?:\.(?P<precision>\d+))?"
                   r"(?P<length>hh|h|ll|l|j|z|t|L)?(?P<conversion>[a-zA-Z%]?)")


def _taichi_format(number: Any, is_float: bool, spec: str) -> str:
    match = _SPEC.fullmatch(spec)
    if match is None:
        return format(number, spec)
    head, precision, conversion = match["head"], match["precision"], match["conversion"]
    if is_float:
        conversion = conversion or "f"
        return format(number, head + (f".{precision}" if precision is not None else "") + conversion)
    if conversion in ("", "i", "u"):
        conversion = "d"
    if precision is None or conversion != "d":
        return format(number, head + (f".{precision}" if precision is not None else "") + conversion)
    # printf's precision of an integer is its least number of digits: %.3d of -5 is -005
    sign = "-" if number < 0 else ("+" if "+" in head else (" " if " " in head else ""))
    digits = sign + str(abs(number)).zfill(int(precision))
    width = re.sub(r"^(?:.?[<>=^])?[-+ ]?z?#?0?", "", head).rstrip(",_")
    align = re.match(r"^.?[<>=^]", head)
    return format(digits, (align.group(0) if align else ">") + width) if width else digits


def format_constant(value: Any, spec: str) -> str:
    """A compile-time argument of a kernel's print() with a format spec: numbers as format_value formats them."""
    if isinstance(value, (bool, int, float, np.number)):
        number = value.item() if isinstance(value, np.number) else value
        return _taichi_format(number, isinstance(number, float), spec)
    return format(value, spec)


def format_value(value: Any, dtype: Any, spec: str = "") -> str:
    """`spec`: a format spec (f-string `{x:.3f}`) as Taichi applies it (see _SPEC), to the value as a Python
    bool/int/float."""
    if spec:
        scalar = dtype.np_dtype.type(value)
        number = bool(scalar) if dtype.is_bool else scalar.item()
        return _taichi_format(number, dtype.is_float, spec)
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


# The text each print site (keyed by its literal pieces) produced last: a failed assert whose message carries
# run-time values quotes it (assertion_message). Bounded by the number of print statements compiled.
_LAST_TEXT: dict[tuple[str, ...], str] = {}


def emit(text: str, pieces: Sequence[str] | None = None) -> None:
    """Write a kernel's printed text (`end` is already part of it) and flush, as print(..., flush=True);
    `pieces` (the print's literal pieces) remembers it as that site's last text."""
    if pieces is not None:
        _LAST_TEXT[tuple(pieces)] = text
    sys.stdout.write(text)
    sys.stdout.flush()


def assertion_message(kernel_name: str, site: Any) -> str:
    """The message of a failed kernel assert (an ir.AssertFail): its text, or for a message formatted with
    run-time values the text its print produced last (some failing thread's values, as in Taichi)."""
    printed = _LAST_TEXT.get(tuple(site.printed_pieces)) if site.printed_pieces else None
    if printed is None:
        return f"kernel {kernel_name}: assertion failed: {site.message}"
    return f"kernel {kernel_name}: assertion failed: {printed.rstrip(chr(10))} (the message printed above)"


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
