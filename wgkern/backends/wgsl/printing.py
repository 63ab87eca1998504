"""`print(...)` in WGSL kernels: records appended to a device buffer, printed on the host when work is waited for.

A kernel with `ir.Print` statements binds one more storage buffer, `wk_print` (array<atomic<u32>>, the last
binding). Word 0 counts the words reserved so far, word 1 the words written, word 2 the first failed bounds
check or assert site under `wk.init(debug=True)` (which binds the buffer in every kernel; stored as ~site by a
compare-exchange from 0, so 0 is none and the first failure since the last wait stays), word 3 a loop-limit
site (lavapipe, shader_common.LOOP_LIMIT: kernels with loops bind the buffer there), word 4 a serial loop's chunk,
word 5 a register tile whose subgroup was too small (kernels that make tiles bind it); records follow the header
(HEADER_WORDS): the print's site number, then each value's u32 words (the adstack encoding: 64-bit values in two
words, bool as 0/1, f16 in the low half). A thread reserves its record with one atomicAdd and writes it only if it fits, so
a full buffer drops records instead of writing past its end; the records that fit are exactly the first
`written` words (reservations are ordered, so a record that fits follows only records that fit). `wk.sync()`
and every read-back (they wait for the device anyway) read the buffer, print the records through
ir/printing.py, report dropped ones, and reset
the count. Records of different threads come in no defined order, as in Taichi."""
from __future__ import annotations

from typing import Any

import numpy as np

from wgkern.backends.wgsl.adstack import encode, words_of
from wgkern.ir import nodes as ir
from wgkern.ir.visitor import walk
from wgkern.passes.analysis import has_loop
from wgkern.ir.printing import emit, format_print

PRINT_NAME = "wk_print"
PRINT_BUFFER_BYTES = 1 << 20
# reserved words, written words, the first failed check (debug=True), loop limit, chunk, tile subgroup; padded to a multiple
# of 4 words, as buffer sizes are rounded to 16 bytes: a buffer of n records' bytes after the header holds n
HEADER_WORDS = 8
BOUNDS_WORD = 2
LOOP_LIMIT_WORD = 3       # lavapipe: a site (1-based) of a task whose loops reached the driver's limit
CHUNK_WORD = 4            # lavapipe: the next chunk of a serial task's loop (serial_chunks.py); 0 between loops
SUBGROUP_WORD = 5         # a register tile's site and the subgroup size that was too small (record_subgroup_site)


def record_bounds_site(site: int) -> str:
    """WGSL that records failed check `site` (1-based, stored as ~site) in BOUNDS_WORD unless a failure is there
    already: the first failure since the last wait is the one raised (of the earliest launch, and within an
    invocation the first met in its code), as Taichi stops at the first. A loop, as compare-exchange-weak may
    fail spuriously."""
    word = f"&{PRINT_NAME}[{BOUNDS_WORD}]"
    return (f"loop {{ let first = atomicCompareExchangeWeak({word}, 0u, {0xFFFFFFFF - site}u); "
            "if (first.exchanged || first.old_value != 0u) { break; } }")


def recorded_bounds_site(word: int) -> int:
    """The site BOUNDS_WORD holds (0: no check failed)."""
    return 0xFFFFFFFF - word if word else 0


def record_subgroup_site(site: int) -> str:
    """WGSL that records, in SUBGROUP_WORD, register-tile check `site` (1-based) with the subgroup size that
    failed it, as site * 256 + size (a failing size is below the tile's N <= 32, so it fits the low byte), unless
    a failure is there already: the first since the last wait is the one raised. As the loop-limit probe's: a
    compare-exchange from 0, and a store where it failed spuriously."""
    word, first = f"&{PRINT_NAME}[{SUBGROUP_WORD}]", f"wk_first_tile{site}"
    value = f"({site}u << 8u) | wk_subgroup_size"
    return (f"let {first} = atomicCompareExchangeWeak({word}, 0u, {value}); "
            f"if (!{first}.exchanged && {first}.old_value == 0u) {{ atomicStore({word}, {value}); }}")


def recorded_subgroup_site(word: int) -> tuple[int, int]:
    """The (site, subgroup size) SUBGROUP_WORD holds (site 0: no tile found its subgroup too small)."""
    return word >> 8, word & 0xFF


def needs_print_buffer(tasks: list[ir.Task], debug: bool, loop_limit: bool = False) -> bool:
    """Whether shaders for `tasks` bind `wk_print`: they print, debug=True records failed bounds checks, a task
    makes register tiles (whose subgroup size is checked, ir.TILE_SUBGROUP_CHECK), or (`loop_limit`: the driver
    ends long loops, shader_common.LOOP_LIMIT) a task's loops are watched for the limit."""
    return (debug or any(isinstance(stmt, ir.Print) or (isinstance(stmt, ir.SimtOp) and
                                                        stmt.op == ir.TILE_SUBGROUP_CHECK)
                         for task in tasks for stmt in walk(task.body))
            or (loop_limit and any(has_loop(task.body) for task in tasks)))


class PrintLowering:
    """Mixin for WgslCodegen: `self.print_sites` (the backend's site table) and `self.print_binding` are set
    by the codegen, as are `emit`, `value`, `fresh`."""

    def visit_Print(self, stmt: ir.Print) -> None:
        dtypes = [v.dtype for v in stmt.values]
        site = len(self.print_sites)
        self.print_sites.append((tuple(stmt.pieces), dtypes, tuple(stmt.formats)))
        words = [str(site) + "u"]
        for value, dtype in zip(stmt.values, dtypes):
            words.extend(encode(self.value(value), dtype))
        start = self.fresh("p")
        if self.lane_mask is not None:      # a masked lane (codegen.py) prints nothing
            self.emit(f"if ({self.lane_mask}) {{")
        self.emit(f"let {start} = atomicAdd(&{PRINT_NAME}[0], {len(words)}u);   // print(): reserve a record")
        self.emit(f"if ({start} + {len(words) + HEADER_WORDS}u <= arrayLength(&{PRINT_NAME})) {{")
        for k, word in enumerate(words):
            self.emit(f"  atomicStore(&{PRINT_NAME}[{start} + {HEADER_WORDS + k}u], {word});")
        self.emit(f"  atomicAdd(&{PRINT_NAME}[1], {len(words)}u);")
        self.emit("}")
        if self.lane_mask is not None:
            self.emit("}")

    def print_declaration(self) -> str:
        return f"@group(0) @binding({self.print_binding}) var<storage, read_write> {PRINT_NAME}: array<atomic<u32>>;\n"


def _decode(words: np.ndarray, dtype: Any) -> Any:
    if dtype.bits == 64:
        bits = int(words[0]) | (int(words[1]) << 32)
        return np.array([bits], np.uint64).view(dtype.np_dtype)[0]
    word = np.uint32(words[0])
    if dtype.is_bool:
        return bool(word)
    if dtype.bits == 16 and dtype.is_float:
        return np.array([word & 0xFFFF], np.uint16).view(np.float16)[0]
    return np.array([word], np.uint32).view(np.int32 if dtype.is_signed else
                                            (np.float32 if dtype.is_float else np.uint32))[0]


def print_records(words: np.ndarray, reserved: int, written: int, capacity: int,
                  sites: list[tuple[tuple[str, ...], list[Any], tuple[str, ...]]]) -> None:
    """Print the records in the first `written` of `words` (the buffer past its header, `capacity` words);
    `reserved` words were asked for."""
    position = 0
    while position < written:
        pieces, dtypes, formats = sites[int(words[position])]
        position += 1
        values = []
        for dtype in dtypes:
            count = words_of(dtype)
            values.append(_decode(words[position:position + count], dtype))
            position += count
        emit(format_print(pieces, values, dtypes, formats), pieces)
    if reserved > written:
        emit(f"[wgkern] {reserved - written} words of print() output were dropped: the print buffer holds "
             f"{capacity} words between waits for the device (wk.sync(), read-backs)\n")
