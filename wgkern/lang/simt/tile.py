"""Quadrants' register tiles, `wk.simt.Tile16x16` and `wk.simt.Tile32x32`: an N x N matrix held by the N
invocations of a subgroup, invocation i holding row i in N registers (the struct member `r`, a vector indexed with
compile-time indices), so the subgroup's shuffles move values between rows.

In kernel code `Tile16x16.zeros(dtype=wk.f32)` / `.eye(dtype=...)` make a tile (the dtype defaults to the
program's default float), and a tile `t` has
- `t[:] = a[r0:r1, c0:c1]` / `a[r0:r1, c0:c1] = t` (also `a[b, r0:r1, c0:c1]`): invocation i loads / stores row
  r0 + i, columns c0 .. c1 - 1, of a 2-D (3-D) field, ndarray or shared array; rows and columns past the slice or
  past the array are left alone;
- `t -= wk.outer(u, v)`: t - u v^T, where u and v are one value per invocation (row i of u on invocation i), a
  column slice `a[r0:r1, c]` giving a[r0 + i, c] (0 past the slice or the array);
- `t.cholesky_(eps)`: the lower triangle becomes L with t = L L^T, each pivot sqrt(max(p, eps)) (`eps` may differ
  per invocation: pivot k uses invocation k's); the strict upper triangle is left as it was;
- `L.solve_triangular_(B)`: B becomes X with X L^T = B, for a lower-triangular L (`lower=True` only);
- `t.eye_()`, and `t.r[j]`, the invocation's own row, column j.

The subgroup must have N invocations or more (32 on NVIDIA; lavapipe has 8, or 16 when started with
LP_NATIVE_VECTOR_WIDTH=512), and every invocation of it must take part, as for the subgroup operations. Each
`zeros()` / `eye()` in kernel code is preceded by a check of that (ir.TILE_SUBGROUP_CHECK, frontend/tiles.py):
on WGSL at run time, a smaller subgroup raising wk.SubgroupSizeError at the next wait. Values
move by subgroup shuffles, which carry 32-bit values: tiles are f32. The CPU has no subgroups: a tile there is a
CompileError, as in Quadrants. The frontend's part (the slice syntax, `-=` of an outer product) is
frontend/tiles.py."""
# No `from __future__ import annotations`: the funcs' parameter annotations (T.template()) are read as objects,
# and the tile type's member annotation is set from closure values (_make_tile_type).

from typing import Any

from wgkern.lang import math as wm
from wgkern.lang import types as T
from wgkern.lang.kernel import func
from wgkern.lang.simt import subgroup

_TILE_TYPES: dict[tuple[int, Any], Any] = {}


def tile_type(n: int, dtype: Any) -> Any:
    """The struct type of an n x n tile of `dtype` (one per pair, made on first use)."""
    dtype = T.to_dtype(dtype)
    key = (n, dtype)
    if key not in _TILE_TYPES:
        _TILE_TYPES[key] = _make_tile_type(n, dtype)
    return _TILE_TYPES[key]


def is_tile_type(stype: Any) -> bool:
    return any(stype is t for t in _TILE_TYPES.values())


def _make_tile_type(n: int, dtype: T.DataType) -> Any:
    from wgkern.lang.structs import dataclass

    class Tile:
        @func
        def eye_(self):
            lane = subgroup.invocation_id()
            for j in wm.static(range(n)):
                self.r[j] = wm.cast(lane == j, dtype)

        @func
        def load_rows(self, source: T.template(), batch, row_start, row_stop, col_start, col_stop):
            rows, cols = wm.static(_row_col_axes(source, batch))
            row_stop = wm.min(row_stop, source.shape[rows])
            col_stop = wm.min(col_stop, source.shape[cols])
            row = row_start + subgroup.invocation_id()
            if row < row_stop:
                for j in wm.static(range(n)):
                    if col_start + j < col_stop:
                        if wm.static(batch is None):
                            self.r[j] = source[row, col_start + j]
                        else:
                            self.r[j] = source[batch, row, col_start + j]

        @func
        def store_rows(self, target: T.template(), batch, row_start, row_stop, col_start, col_stop):
            rows, cols = wm.static(_row_col_axes(target, batch))
            row_stop = wm.min(row_stop, target.shape[rows])
            col_stop = wm.min(col_stop, target.shape[cols])
            row = row_start + subgroup.invocation_id()
            if row < row_stop:
                for j in wm.static(range(n)):
                    if col_start + j < col_stop:
                        if wm.static(batch is None):
                            target[row, col_start + j] = self.r[j]
                        else:
                            target[batch, row, col_start + j] = self.r[j]

        @func
        def column_value(self, source: T.template(), batch, row_start, row_stop, col):
            rows, cols = wm.static(_row_col_axes(source, batch))
            row = row_start + subgroup.invocation_id()
            value = wm.cast(0, dtype)
            if row < wm.min(row_stop, source.shape[rows]):
                if wm.static(batch is None):
                    value = wm.cast(source[row, col], dtype)
                else:
                    value = wm.cast(source[batch, row, col], dtype)
            return value

        @func
        def subtract_outer(self, u, v):
            for j in wm.static(range(n)):          # column j needs v of row j, held by invocation j
                self.r[j] = self.r[j] - u * subgroup.shuffle(v, j)

        @func
        def cholesky_(self, eps):
            lane = subgroup.invocation_id()
            row_norm = wm.cast(0, dtype)           # sum of the squares of this row's finished columns
            for k in wm.static(range(n)):
                pivot = wm.cast(0, dtype)
                if lane == k:
                    pivot = wm.sqrt(wm.max(self.r[k] - row_norm, eps))
                    self.r[k] = pivot
                pivot = subgroup.shuffle(pivot, k)
                dot = wm.cast(0, dtype)            # row `lane` . row k over the columns before k
                for j in wm.static(range(k)):
                    dot += self.r[j] * subgroup.shuffle(self.r[j], k)
                if lane > k:
                    entry = (self.r[k] - dot) / pivot
                    self.r[k] = entry
                    row_norm += entry * entry

        @func
        def solve_against(self, factor: T.template()):
            for c in wm.static(range(n)):          # X[lane, c] = (B[lane, c] - X[lane, :c] . L[c, :c]) / L[c, c]
                dot = wm.cast(0, dtype)
                for j in wm.static(range(c)):
                    dot += self.r[j] * subgroup.shuffle(factor.r[j], c)
                self.r[c] = (self.r[c] - dot) / subgroup.shuffle(factor.r[c], c)

        @func
        def solve_triangular_(self, solution: T.template(), lower: T.template() = True):
            wm.static_assert(lower, "solve_triangular_ solves with a lower-triangular tile only (lower=True)")
            solution.solve_against(self)

    Tile.__annotations__ = {"r": T.vector(n, dtype)}      # the row: n registers (a closure value, so set here)
    Tile.__name__ = Tile.__qualname__ = f"Tile{n}x{n}"
    tile = dataclass(Tile)
    tile.name = f"Tile{n}x{n}[{dtype.name}]"
    tile.size = n
    return tile


def _row_col_axes(container: Any, batch: Any) -> tuple[int, int]:
    """The row and column axes of a tile slice of `container` (0, 1; or 1, 2 after a batch index)."""
    rank = len(getattr(container, "shape", ()))
    wanted = 2 if batch is None else 3
    if rank != wanted:
        raise TypeError(f"a tile slice {'a[r0:r1, c0:c1]' if batch is None else 'a[b, r0:r1, c0:c1]'} takes a "
                        f"{wanted}-d array, got one of {rank} axes")
    return (0, 1) if batch is None else (1, 2)


class TileKind:
    """`wk.simt.Tile16x16` / `Tile32x32`: makes tiles in kernel code (`.zeros(dtype=...)`, `.eye(dtype=...)`)."""

    def __init__(self, n: int) -> None:
        self.SIZE = n
        size = n

        @func
        def zeros(dtype: T.template() = None):
            return wm.static(_kernel_tile(size, dtype))()

        @func
        def eye(dtype: T.template() = None):
            tile = wm.static(_kernel_tile(size, dtype))()
            tile.eye_()
            return tile

        self.zeros, self.eye = zeros, eye

    def makes_tiles(self, callee: Any) -> bool:
        """Whether `callee` is this kind's `zeros` or `eye` (frontend/tiles.py checks the subgroup at each)."""
        return callee is self.zeros or callee is self.eye

    def __repr__(self) -> str:
        return f"wk.simt.Tile{self.SIZE}x{self.SIZE}"


def _kernel_tile(n: int, dtype: Any) -> Any:
    """The tile type a kernel asks for (`dtype` None: the default float); the CPU has no subgroups to hold one."""
    from wgkern.errors import CompileError
    from wgkern.runtime.arch import Arch
    from wgkern.runtime.program import get_program
    if get_program().arch is Arch.cpu:
        raise CompileError(f"wk.simt.Tile{n}x{n} lives in a subgroup's registers, which the cpu arch does not have; "
                           "run on wk.vulkan or wk.cuda (as in Quadrants, tiles need a GPU arch)")
    dtype = T.to_dtype(T.DEFAULT_FLOAT if dtype is None else dtype)
    if dtype != T.f32:
        raise CompileError(f"wk.simt.Tile{n}x{n} holds f32 values (its rows move by subgroup shuffles, which carry "
                           f"32-bit values), not {dtype.name}")
    return tile_type(n, dtype)


Tile16x16 = TileKind(16)
Tile32x32 = TileKind(32)
TILE_KINDS = (Tile16x16, Tile32x32)


def tile_size_made_by(callee: Any) -> int | None:
    """N when `callee` makes an N x N tile (`Tile16x16.zeros`, `Tile32x32.eye`, ...), else None."""
    for kind in TILE_KINDS:
        if kind.makes_tiles(callee):
            return kind.SIZE
    return None


class OuterProduct:
    """`wk.outer(u, v)` in kernel code: only the right side of `tile -= wk.outer(u, v)` (frontend/tiles.py)."""

    def __init__(self, u: Any, v: Any) -> None:
        self.u, self.v = u, v


def outer(u: Any, v: Any) -> OuterProduct:
    """Quadrants' `qd.outer(u, v)`: the rank-one update of `tile -= wk.outer(u, v)` (see wk.simt.Tile16x16)."""
    return OuterProduct(u, v)
