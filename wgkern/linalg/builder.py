"""`wk.linalg.SparseMatrixBuilder`: device buffers that kernels append (row, col, value) triplets to.

A builder owns four wk.ndarrays: rows, cols, values (max_num_triplets each) and a one-element counter. A kernel
parameter annotated `wk.types.sparse_matrix_builder()` receives them as ndarray arguments
(lang/arguments.py); `K[i, j] += v` bumps the counter atomically and stores the triplet only below capacity
(frontend/sparse_matrix.py), so an overflow never writes out of bounds and `build()` reports it."""
from __future__ import annotations

from typing import Any

import numpy as np

from wgkern.errors import ArgumentError, LinalgError
from wgkern.lang.fields import Ndarray
from wgkern.lang.types import DataType, f32, i32, to_dtype
from wgkern.linalg.matrix import SparseMatrix, format_number

class SparseMatrixBuilder:
    """Taichi's `ti.linalg.SparseMatrixBuilder(num_rows, num_cols, max_num_triplets, dtype, storage_format)`.

    Pass it to a kernel parameter annotated `wk.types.sparse_matrix_builder()`; `build()` sums duplicate
    entries into a SparseMatrix and empties the builder (as Taichi's does)."""

    def __init__(self, num_rows: int | None = None, num_cols: int | None = None, max_num_triplets: int = 0,
                 dtype: Any = f32, storage_format: str = "col_major"):
        self.num_rows = num_rows
        self.num_cols = num_cols if num_cols else num_rows
        self.max_num_triplets = int(max_num_triplets)
        self.dtype: DataType = to_dtype(dtype)
        self.storage_format = storage_format
        if self.max_num_triplets < 0:
            raise ValueError(f"max_num_triplets must be >= 0, got {max_num_triplets}")
        if not self.dtype.is_float:
            raise LinalgError(f"sparse matrices hold floats (wk.f32 or wk.f64), got {self.dtype!r}")
        capacity = max(self.max_num_triplets, 1)      # zero-sized device buffers are not allowed everywhere
        self._rows = Ndarray(i32, (capacity,), name="sparse builder rows")
        self._cols = Ndarray(i32, (capacity,), name="sparse builder cols")
        self._values = Ndarray(self.dtype, (capacity,), name="sparse builder values")
        self._count = Ndarray(i32, (1,), name="sparse builder count")

    def kernel_buffers(self, where: str) -> list[Ndarray]:
        """The ndarrays a kernel receives for a sparse_matrix_builder() parameter, in the order
        lang/param_rules.py's SPARSE_BUILDER_BUFFERS names them."""
        if self.num_rows is None:
            raise ArgumentError(f"{where}: the SparseMatrixBuilder was made without num_rows")
        return [self._rows, self._cols, self._values, self._count]

    @property
    def num_triplets(self) -> int:
        """How many triplets kernels have appended since the last build() (more than max_num_triplets after an
        overflow)."""
        return int(self._count.to_numpy()[0])

    def _triplets(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        count = min(self.num_triplets, self.max_num_triplets)
        return (self._rows.to_numpy()[:count], self._cols.to_numpy()[:count], self._values.to_numpy()[:count])

    def print_triplets(self) -> None:
        """Print the triplets appended so far, as Taichi does (`n=.., m=.., num_triplets=.. (max=..)`, then
        one `[row, col] = value` line each)."""
        appended = self.num_triplets
        print(f"n={self.num_rows}, m={self.num_cols}, num_triplets={appended} (max={self.max_num_triplets})")
        rows, cols, values = self._triplets()
        for row, col, value in zip(rows.tolist(), cols.tolist(), values):
            print(f"[{row}, {col}] = {format_number(value)}")
        if appended > self.max_num_triplets:
            print(f"({appended - self.max_num_triplets} triplets did not fit and were dropped)")

    def build(self, dtype: Any = None, _format: str = "CSR") -> SparseMatrix:
        """The SparseMatrix of the appended triplets (duplicates summed); the builder is emptied."""
        appended = self.num_triplets
        rows, cols, values = self._triplets()
        self._count.from_numpy(np.zeros(1, np.int32))
        if appended > self.max_num_triplets:
            raise LinalgError(f"kernels appended {appended} triplets to a SparseMatrixBuilder made with "
                              f"max_num_triplets={self.max_num_triplets}; the {appended - self.max_num_triplets} "
                              "that did not fit were dropped; make the builder with a larger max_num_triplets")
        if rows.size and (rows.min() < 0 or rows.max() >= self.num_rows
                          or cols.min() < 0 or cols.max() >= self.num_cols):
            raise LinalgError(f"a triplet's index is outside the {self.num_rows} x {self.num_cols} matrix "
                              f"(rows {rows.min()}..{rows.max()}, cols {cols.min()}..{cols.max()})")
        return SparseMatrix._from_triplets(self.num_rows, self.num_cols, rows, cols, values, self.dtype)
