"""`wk.linalg.SparseSolver`: direct solves of SparseMatrix systems on the host, as Taichi's (Eigen's).

LLT and LDLT read only the lower triangle (Eigen's Simplicial solvers do), so they solve the symmetric matrix
it defines. As in Taichi, a failed factorization sets info() False: for LLT a pivot that is not > 0 (the matrix is
not positive definite), for LDLT and LU a pivot that is 0 (the matrix is singular). solve() after a failure
raises LinalgError saying why. With scipy installed the factorization is SuperLU's (scipy.sparse.linalg.splu:
diagonal pivots in a symmetric ordering for LLT/LDLT); without it, a dense one (dense_factor.py) for systems
up to DENSE_LIMIT unknowns, and beyond that an error saying to install scipy."""
from __future__ import annotations

from typing import Any

import numpy as np

from wgkern.errors import LinalgError
from wgkern.lang.fields import Ndarray
from wgkern.lang.types import f32, to_dtype
from wgkern.linalg import dense_factor
from wgkern.linalg.matrix import SparseMatrix, as_vector

SOLVER_TYPES = ("LLT", "LDLT", "LU")
ORDERINGS = ("AMD", "COLAMD")
# Largest system factorized densely when scipy is missing: 4096^2 f64 is 128 MiB, and the factorization's
# n^3/3 multiply-adds (2 * 10^10) take a few seconds on a CPU.
DENSE_LIMIT = 4096
INSTALL_SCIPY = "pip install scipy, or pip install 'wgkern[sparse]'"


def _scipy_sparse() -> Any:
    try:
        import scipy.sparse
        import scipy.sparse.linalg
    except ImportError:
        return None
    return scipy.sparse


class SparseSolver:
    """Taichi's `ti.linalg.SparseSolver(dtype=f32, solver_type="LLT", ordering="AMD")`:
    `analyze_pattern(A)`, `factorize(A)` (or `compute(A)`), then `solve(b)` (b a numpy array, a wk.ndarray or
    a field; a wk.ndarray gives a wk.ndarray, the others a numpy array) and `info()` (did it succeed)."""

    def __init__(self, dtype: Any = f32, solver_type: str = "LLT", ordering: str = "AMD"):
        if solver_type not in SOLVER_TYPES or ordering not in ORDERINGS:
            raise LinalgError(f"The solver type {solver_type} with {ordering} is not supported; use one of "
                              f"{list(SOLVER_TYPES)} with one of {list(ORDERINGS)}")
        self.dtype = to_dtype(dtype)
        self.solver_type = solver_type
        self.ordering = ordering
        self.matrix: SparseMatrix | None = None
        self._factor: Any = None          # callable: right-hand side (f64) -> solution (f64)
        self._failure: str | None = None  # why the last factorization failed

    @staticmethod
    def _check_matrix(sparse_matrix: Any) -> SparseMatrix:
        if not isinstance(sparse_matrix, SparseMatrix):
            raise LinalgError(f"The parameter type: {type(sparse_matrix).__name__} is not supported in linear "
                              "solvers; pass a wk.linalg.SparseMatrix")
        if sparse_matrix.n != sparse_matrix.m:
            raise LinalgError(f"the sparse solver needs a square matrix, got {sparse_matrix.shape}")
        return sparse_matrix

    def compute(self, sparse_matrix: SparseMatrix) -> None:
        """analyze_pattern then factorize."""
        self.analyze_pattern(sparse_matrix)
        self.factorize(sparse_matrix)

    def analyze_pattern(self, sparse_matrix: SparseMatrix) -> None:
        """Checks the matrix (the ordering is chosen when factorizing)."""
        matrix = self._check_matrix(sparse_matrix)
        if matrix.dtype != self.dtype:
            raise LinalgError(f"The SparseSolver's dtype {self.dtype!r} is not consistent with the "
                              f"SparseMatrix's dtype {matrix.dtype!r}")
        self.matrix = matrix
        self._factor = None
        self._failure = None

    def factorize(self, sparse_matrix: SparseMatrix) -> None:
        matrix = self._check_matrix(sparse_matrix)
        self.matrix = matrix
        rows, cols, data = matrix._triplets()
        values = data.astype(np.float64)
        if self.solver_type in ("LLT", "LDLT"):       # the symmetric matrix of the lower triangle
            lower = rows >= cols
            strict = rows > cols
            rows, cols = np.concatenate([rows[lower], cols[strict]]), np.concatenate([cols[lower], rows[strict]])
            values = np.concatenate([values[lower], values[strict]])
        sparse = _scipy_sparse()
        if sparse is not None:
            self._factor, self._failure = self._factorize_sparse(sparse, matrix.n, rows, cols, values)
        else:
            self._factor, self._failure = self._factorize_dense(matrix.n, rows, cols, values)

    def _pivot_failure(self, value: float, where: str) -> str:
        if self.solver_type == "LLT" and np.isfinite(value) and value != 0:
            return f"the matrix is not positive definite (pivot {value:g} {where})"
        return f"the matrix is singular (pivot {value:g} {where})"

    def _factorize_sparse(self, sparse: Any, n: int, rows: np.ndarray, cols: np.ndarray,
                          values: np.ndarray) -> tuple[Any, str | None]:
        # in the matrix's own precision, as Eigen factorizes: an f32 singular-but-consistent system (a pure
        # Neumann Poisson matrix) keeps a tiny last pivot there and solves, as it does in Taichi
        system = sparse.csc_matrix((values.astype(self.dtype.np_dtype), (rows, cols)), shape=(n, n))
        try:
            if self.solver_type == "LU":
                factor = sparse.linalg.splu(system, permc_spec="COLAMD")
            else:      # no row pivoting: U's diagonal holds the LDL^T pivots of a symmetric reordering
                factor = sparse.linalg.splu(system, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                                            options={"SymmetricMode": True})
        except RuntimeError as error:            # SuperLU: "Factor is exactly singular"
            return None, f"the matrix is singular (SuperLU: {error})"
        pivots = factor.U.diagonal()
        bad = ~np.isfinite(pivots) | (pivots <= 0 if self.solver_type == "LLT" else pivots == 0)
        if bad.any():
            return None, self._pivot_failure(float(pivots[np.argmax(bad)]), "in SuperLU's reordering")
        dtype = self.dtype.np_dtype
        return (lambda b: factor.solve(b.astype(dtype)).astype(np.float64)), None

    def _factorize_dense(self, n: int, rows: np.ndarray, cols: np.ndarray,
                         values: np.ndarray) -> tuple[Any, str | None]:
        if n > DENSE_LIMIT:
            raise LinalgError(f"factorizing a {n} x {n} sparse matrix needs scipy ({INSTALL_SCIPY}); without "
                              f"it wk.linalg factorizes densely, up to {DENSE_LIMIT} x {DENSE_LIMIT}")
        dense = np.zeros((n, n))
        np.add.at(dense, (rows, cols), values)
        dense = dense.astype(self.dtype.np_dtype)        # factorized in the matrix's precision, as Eigen does
        if self.solver_type == "LU":
            factor = dense_factor.lu(dense)
        else:
            factor = dense_factor.ldlt(dense, positive=self.solver_type == "LLT")
        if isinstance(factor, dense_factor.PivotFailure):
            return None, self._pivot_failure(factor.value, f"at row {factor.row}")
        return (lambda b: factor.solve(b).astype(np.float64)), None

    def solve(self, b: Any) -> Any:
        """The solution of A x = b. After a failed factorization (info() False) it raises LinalgError."""
        if self.matrix is None or (self._factor is None and self._failure is None):
            raise LinalgError("call compute() (or analyze_pattern() and factorize()) before solve()")
        vector, source = as_vector(b, "SparseSolver.solve")
        if vector.shape != (self.matrix.n,):
            raise LinalgError(f"SparseSolver.solve: the right-hand side has shape {vector.shape}; the matrix is "
                              f"{self.matrix.shape}")
        if self._failure is not None:
            raise LinalgError(f"SparseSolver.solve: the {self.solver_type} factorization failed: {self._failure}; "
                              "info() is False. " + _FAILURE_ADVICE[self.solver_type])
        solution = self._factor(np.asarray(vector, np.float64))
        if isinstance(source, Ndarray):
            out = Ndarray(source.dtype, (self.matrix.m,), name="sparse solve")
            out.from_numpy(solution)
            return out
        return solution.astype(self.dtype.np_dtype)

    def info(self) -> bool:
        """True when the last factorization succeeded."""
        return self._factor is not None


_FAILURE_ADVICE = {
    "LLT": "LDLT factorizes symmetric indefinite matrices, LU any non-singular one",
    "LDLT": "LU pivots by rows and factorizes any non-singular matrix",
    "LU": "a singular system has no unique solution",
}
