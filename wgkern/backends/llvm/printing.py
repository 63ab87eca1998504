"""Host side of `print(...)` in kernels on the LLVM CPU backend.

Each `ir.Print` becomes a call `wk_print(site, words)`: `site` numbers the statement in a process-wide table
(its literal pieces and the dtypes of its values), `words` points at the values widened to 64 bits (ints
sign- or zero-extended, floats as float64 bits). `wk_print` is a ctypes callback registered with the JIT; it
takes the GIL, formats with ir/printing.py and writes to stdout, so a line is never torn between worker
threads (their order across threads is not defined, as in Taichi)."""
from __future__ import annotations

import ctypes
import threading
from typing import Any

from wgkern.ir.printing import decode_words, emit, format_print

from .jit import add_symbol

_SITES: list[tuple[tuple[str, ...], list[Any], tuple[str, ...]]] = []
_LOCK = threading.Lock()
_CALLBACK_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_int32, ctypes.POINTER(ctypes.c_int64))
_callback: Any = None


def _print(site: int, words: Any) -> None:
    pieces, dtypes, formats = _SITES[site]
    emit(format_print(pieces, decode_words([words[k] for k in range(len(dtypes))], dtypes), dtypes, formats),
         pieces)


def register_site(pieces: tuple[str, ...], dtypes: list[Any], formats: tuple[str, ...] = ()) -> int:
    """The site number of one print statement (and the `wk_print` symbol, registered on first use)."""
    global _callback  # noqa: PLW0603 - one native callback per process, alive as long as the JIT
    with _LOCK:
        if _callback is None:
            _callback = _CALLBACK_TYPE(_print)
            add_symbol("wk_print", ctypes.cast(_callback, ctypes.c_void_p).value)
        _SITES.append((tuple(pieces), list(dtypes), tuple(formats)))
        return len(_SITES) - 1


def site(number: int) -> tuple[tuple[str, ...], list[Any], tuple[str, ...]]:
    """(literal pieces, dtypes, format specs) of a registered print site (the CUDA backend decodes records)."""
    return _SITES[number]
