"""`wk.linalg.SparseMatrix`: a host-side sparse matrix in CSR form (numpy arrays), with Taichi's operators.

Every operation goes through triplets: results are assembled by `_from_triplets`, which sums duplicates in
f64 and rounds once to the matrix dtype, so the outcome does not depend on scipy being installed (the
solvers in solver.py use scipy when it is). Taichi's matrices live in Eigen on the host too."""
from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from wgkern.errors import LinalgError
from wgkern.lang.fields import Field, Ndarray
from wgkern.lang.types import DataType, f32, f64, to_dtype


class SparseMatrix:
    """Taichi's `ti.linalg.SparseMatrix(n, m, dtype=f32)`: usually made by `SparseMatrixBuilder.build()`.

    `A + B`, `A - B`, `A * s`, `s * A`, `A * B` (element-wise), `A @ B`, `A @ x` (x a numpy vector, a
    wk.ndarray or a scalar field; an ndarray gives an ndarray, the others numpy), `A.transpose()`, `A[i, j]`
    (read and write), `A.shape`, `str(A)` (Taichi's dense layout), `A.to_numpy()` (dense)."""

    def __init__(self, n: int | None = None, m: int | None = None, sm: SparseMatrix | None = None,
                 dtype: Any = f32, storage_format: str = "col_major"):
        self.storage_format = storage_format
        if sm is not None:
            self.n, self.m, self.dtype = sm.n, sm.m, sm.dtype
            self._indptr, self._indices, self._data = sm._indptr.copy(), sm._indices.copy(), sm._data.copy()
        else:
            if n is None:
                raise LinalgError("SparseMatrix(n, m) needs the number of rows n")
            self.n = int(n)
            self.m = int(m) if m else self.n
            self.dtype = to_dtype(dtype)
            self._indptr = np.zeros(self.n + 1, np.int64)
            self._indices = np.zeros(0, np.int64)
            self._data = np.zeros(0, self.dtype.np_dtype)
        self._rows: np.ndarray | None = None     # row of each stored entry, made on first need

    # ---- construction ---------------------------------------------------------------------------------------
    @classmethod
    def _from_triplets(cls, n: int, m: int, rows: np.ndarray, cols: np.ndarray, values: np.ndarray,
                       dtype: DataType) -> SparseMatrix:
        """The n x m matrix holding the sum of `values` at each (row, col): duplicates summed in f64."""
        out = cls(n, m, dtype=dtype)
        rows = np.asarray(rows, np.int64)
        cols = np.asarray(cols, np.int64)
        if rows.size:
            keys, inverse = np.unique(rows * out.m + cols, return_inverse=True)
            sums = np.bincount(inverse.reshape(-1), weights=np.asarray(values, np.float64), minlength=keys.size)
            key_rows = keys // out.m
            out._indices = keys - key_rows * out.m
            out._data = sums.astype(out.dtype.np_dtype)
            np.cumsum(np.bincount(key_rows, minlength=out.n), out=out._indptr[1:])
        return out

    def _triplets(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._rows is None:
            self._rows = np.repeat(np.arange(self.n, dtype=np.int64), np.diff(self._indptr))
        return self._rows, self._indices, self._data

    def build_from_ndarray(self, ndarray: Any) -> None:
        """Replace the contents with the triplets (row, col, value) held in `ndarray` (a wk.ndarray of
        scalars or of vectors, or a numpy array; its element count must be a multiple of 3), summing
        duplicates."""
        if isinstance(ndarray, Ndarray):
            flat = ndarray.to_numpy().reshape(-1)
        elif isinstance(ndarray, np.ndarray):
            flat = ndarray.reshape(-1)
        else:
            raise LinalgError("SparseMatrix.build_from_ndarray takes a wk.ndarray (of scalars, vectors or "
                              f"matrices), got {type(ndarray).__name__}")
        if flat.size % 3:
            raise LinalgError(f"build_from_ndarray: the ndarray holds {flat.size} numbers, not a multiple of 3 "
                              "(one (row, col, value) triplet per 3)")
        triplets = flat.reshape(-1, 3)
        rows = triplets[:, 0].astype(np.int64)
        cols = triplets[:, 1].astype(np.int64)
        built = self._from_triplets(self.n, self.m, rows, cols, triplets[:, 2], self.dtype)
        self._indptr, self._indices, self._data, self._rows = built._indptr, built._indices, built._data, None

    # ---- properties -----------------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        return (self.n, self.m)

    @property
    def nnz(self) -> int:
        """Number of stored entries."""
        return int(self._data.size)

    def num_rows(self) -> int:
        return self.n

    def num_cols(self) -> int:
        return self.m

    # ---- operators ------------------------------------------------------------------------------------------
    def _check_same_shape(self, other: SparseMatrix) -> None:
        if self.shape != other.shape:
            raise LinalgError(f"Dimension mismatch between sparse matrices ({self.n}, {self.m}) and "
                              f"({other.n}, {other.m})")

    def _result_dtype(self, other: SparseMatrix) -> DataType:
        return self.dtype if self.dtype == other.dtype else f64

    def _combined(self, other: SparseMatrix, sign: float) -> SparseMatrix:
        self._check_same_shape(other)
        rows_a, cols_a, data_a = self._triplets()
        rows_b, cols_b, data_b = other._triplets()
        values = np.concatenate([data_a.astype(np.float64), sign * data_b.astype(np.float64)])
        return self._from_triplets(self.n, self.m, np.concatenate([rows_a, rows_b]),
                                   np.concatenate([cols_a, cols_b]), values, self._result_dtype(other))

    def __add__(self, other: Any) -> SparseMatrix:
        if not isinstance(other, SparseMatrix):
            return NotImplemented
        return self._combined(other, 1.0)

    def __sub__(self, other: Any) -> SparseMatrix:
        if not isinstance(other, SparseMatrix):
            return NotImplemented
        return self._combined(other, -1.0)

    def __iadd__(self, other: Any) -> SparseMatrix:
        return self.__add__(other)

    def __isub__(self, other: Any) -> SparseMatrix:
        return self.__sub__(other)

    def __neg__(self) -> SparseMatrix:
        return self * -1.0

    def _scaled(self, factor: float) -> SparseMatrix:
        out = SparseMatrix(sm=self)
        out._data = (self._data.astype(np.float64) * float(factor)).astype(self.dtype.np_dtype)
        return out

    def __mul__(self, other: Any) -> SparseMatrix:
        """A scalar times the matrix, or the element-wise (Hadamard) product with another SparseMatrix."""
        if isinstance(other, SparseMatrix):
            self._check_same_shape(other)
            keys_a = self._triplets()[0] * self.m + self._indices
            keys_b = other._triplets()[0] * other.m + other._indices
            common, at_a, at_b = np.intersect1d(keys_a, keys_b, assume_unique=True, return_indices=True)
            values = self._data[at_a].astype(np.float64) * other._data[at_b].astype(np.float64)
            return self._from_triplets(self.n, self.m, common // self.m, common % self.m, values,
                                       self._result_dtype(other))
        if isinstance(other, numbers.Real) and not isinstance(other, bool):
            return self._scaled(float(other))
        return NotImplemented

    def __rmul__(self, other: Any) -> SparseMatrix:
        if isinstance(other, numbers.Real) and not isinstance(other, bool):
            return self._scaled(float(other))
        return NotImplemented

    def transpose(self) -> SparseMatrix:
        rows, cols, data = self._triplets()
        return self._from_triplets(self.m, self.n, cols, rows, data, self.dtype)

    @property
    def T(self) -> SparseMatrix:  # noqa: N802 - numpy's name
        return self.transpose()

    def __matmul__(self, other: Any) -> Any:
        if isinstance(other, SparseMatrix):
            return self._matmul_sparse(other)
        if isinstance(other, Ndarray):
            self._check_vector(other.shape)
            out = Ndarray(other.dtype, (self.n,), name="sparse matrix-vector product")
            out.from_numpy(self._matvec(other.to_numpy()))
            return out
        if isinstance(other, Field):
            self._check_vector(other.shape)
            return self._matvec(other.to_numpy())
        if isinstance(other, np.ndarray):
            self._check_vector(other.shape)
            return self._matvec(other)
        raise LinalgError(f"sparse matrix-matrix/vector multiplication does not support {type(other).__name__}; "
                          "use a SparseMatrix, a numpy vector, a wk.ndarray or a scalar field")

    def _check_vector(self, shape: tuple[int, ...]) -> None:
        if len(shape) != 1 or shape[0] != self.m:
            raise LinalgError(f"Dimension mismatch between sparse matrix ({self.n}, {self.m}) and vector {shape}")

    def _matvec(self, vector: np.ndarray) -> np.ndarray:
        rows, cols, data = self._triplets()
        products = data.astype(np.float64) * np.asarray(vector, np.float64)[cols]
        return np.bincount(rows, weights=products, minlength=self.n).astype(self.dtype.np_dtype)

    def _matmul_sparse(self, other: SparseMatrix) -> SparseMatrix:
        if self.m != other.n:
            raise LinalgError(f"Dimension mismatch between sparse matrices ({self.n}, {self.m}) and "
                              f"({other.n}, {other.m})")
        rows_a, cols_a, data_a = self._triplets()
        # every stored a[i, k] meets every stored b[k, j]: expand a's entries by the length of b's row k
        lengths = np.diff(other._indptr)[cols_a]
        starts = other._indptr[cols_a]
        first_of_each = np.repeat(np.cumsum(lengths) - lengths, lengths)
        positions = np.repeat(starts, lengths) + (np.arange(int(lengths.sum())) - first_of_each)
        values = np.repeat(data_a.astype(np.float64), lengths) * other._data[positions].astype(np.float64)
        return self._from_triplets(self.n, other.m, np.repeat(rows_a, lengths), other._indices[positions], values,
                                   self._result_dtype(other))

    # ---- elements -------------------------------------------------------------------------------------------
    def _position(self, i: int, j: int) -> tuple[int, bool]:
        if not (0 <= i < self.n and 0 <= j < self.m):
            raise IndexError(f"index ({i}, {j}) is outside the {self.n} x {self.m} sparse matrix")
        begin, end = int(self._indptr[i]), int(self._indptr[i + 1])
        at = begin + int(np.searchsorted(self._indices[begin:end], j))
        return at, at < end and int(self._indices[at]) == j

    def __getitem__(self, indices: tuple[int, int]) -> float:
        at, found = self._position(int(indices[0]), int(indices[1]))
        return float(self._data[at]) if found else 0.0

    def __setitem__(self, indices: tuple[int, int], value: float) -> None:
        i, j = int(indices[0]), int(indices[1])
        at, found = self._position(i, j)
        if found:
            self._data[at] = value
            return
        self._indices = np.insert(self._indices, at, j)
        self._data = np.insert(self._data, at, value)
        self._indptr[i + 1:] += 1
        self._rows = None

    # ---- output ---------------------------------------------------------------------------------------------
    def to_numpy(self) -> np.ndarray:
        """The dense matrix, as a numpy array of the matrix dtype."""
        dense = np.zeros((self.n, self.m), self.dtype.np_dtype)
        rows, cols, data = self._triplets()
        dense[rows, cols] = data
        return dense

    def __str__(self) -> str:
        """Taichi's (Eigen's) layout: each row as `[a, b, c]`, numbers with 4 significant digits, right-aligned
        to the widest."""
        texts = [[f"{value:.4g}" for value in row] for row in self.to_numpy().astype(np.float64).tolist()]
        width = max((len(t) for row in texts for t in row), default=0)
        return "\n".join("[" + ", ".join(t.rjust(width) for t in row) + "]" for row in texts)

    __repr__ = __str__

    def mmwrite(self, filename: str) -> None:
        """Write the matrix as a Matrix Market coordinate file."""
        rows, cols, data = self._triplets()
        with open(filename, "w") as out:
            out.write("%%MatrixMarket matrix coordinate real general\n")
            out.write(f"{self.n} {self.m} {self.nnz}\n")
            for row, col, value in zip(rows.tolist(), cols.tolist(), data):
                out.write(f"{row + 1} {col + 1} {format_number(value)}\n")


def format_number(value: Any) -> str:
    """The shortest text that reads back as `value` in its own precision (f32 or f64), without a trailing
    `.0`, as Taichi prints triplets."""
    value = value if isinstance(value, (np.float32, np.float64)) else np.float64(value)
    if not np.isfinite(value) or value == 0:
        return repr(float(value)).removesuffix(".0")
    exponent = int(np.floor(np.log10(abs(float(value)))))
    if -4 <= exponent < 16:       # the switch to an exponent that fmt (Taichi's printer) and Python's repr make
        return np.format_float_positional(value, unique=True, trim="-")
    return np.format_float_scientific(value, unique=True, trim="-", exp_digits=2)


def as_vector(value: Any, what: str) -> tuple[np.ndarray, Any]:
    """A right-hand side as a numpy vector, plus the wk.ndarray it came from (None otherwise)."""
    if isinstance(value, Ndarray):
        return value.to_numpy(), value
    if isinstance(value, Field):
        return value.to_numpy(), None
    if isinstance(value, np.ndarray):
        return value, None
    raise LinalgError(f"{what} takes a numpy array, a wk.ndarray or a field, got {type(value).__name__}")

