"""Dense LDL^T and LU factorizations in numpy: what `wk.linalg.SparseSolver` uses when scipy is missing.

Both are blocked (an unblocked sweep over a panel of columns, then one matrix product for the rest), run in
the matrix's own precision as Eigen's solvers do, and report the first zero pivot (a non-positive one for
LLT) instead of dividing by it. LDL^T does not pivot (Eigen's Simplicial solvers do not); LU pivots by rows.
solver.py owns the choice between these and scipy's SuperLU."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PANEL = 64        # columns factorized one at a time before the rest of the matrix is updated by one product


@dataclass
class PivotFailure:
    """The pivot that stopped a factorization: its row in the matrix and its value."""
    row: int
    value: float


@dataclass
class DenseLDLT:
    """A = L D L^T with L unit lower triangular (stored below the diagonal of `factors`) and D = `pivots`."""
    factors: np.ndarray
    pivots: np.ndarray

    def solve(self, b: np.ndarray) -> np.ndarray:
        y = _substitute_lower(self.factors, b.astype(self.factors.dtype))
        z = y / self.pivots
        return _substitute_upper(self.factors.T, z, unit=True)


@dataclass
class DenseLU:
    """P A = L U: `factors` holds unit-lower L below the diagonal and U on and above it; `rows` is P."""
    factors: np.ndarray
    rows: np.ndarray

    def solve(self, b: np.ndarray) -> np.ndarray:
        y = _substitute_lower(self.factors, b.astype(self.factors.dtype)[self.rows])
        return _substitute_upper(self.factors, y, unit=False)


def ldlt(matrix: np.ndarray, positive: bool) -> DenseLDLT | PivotFailure:
    """Factorizes the symmetric `matrix` (only its lower triangle is read) without pivoting. Fails at the
    first pivot that is 0 or not finite, or, with `positive` (LLT), at the first that is not > 0."""
    a = np.tril(matrix)
    a = a + np.tril(a, -1).T
    n = a.shape[0]
    pivots = np.zeros(n, a.dtype)
    for start in range(0, n, PANEL):
        stop = min(start + PANEL, n)
        for k in range(start, stop):
            pivot = a[k, k]
            if not np.isfinite(pivot) or pivot == 0 or (positive and pivot < 0):
                return PivotFailure(k, float(pivot))
            pivots[k] = pivot
            column = a[k + 1:, k] / pivot
            # the panel's later columns see column k now; the columns right of the panel wait for one product
            a[k + 1:, k + 1:stop] -= np.outer(column, a[k, k + 1:stop])
            a[k + 1:, k] = column
        below = a[stop:, start:stop]
        a[stop:, stop:] -= (below * pivots[start:stop]) @ below.T
    return DenseLDLT(a, pivots)


def lu(matrix: np.ndarray) -> DenseLU | PivotFailure:
    """Factorizes `matrix` with partial (row) pivoting. Fails at the first column whose largest remaining
    entry is 0 (the matrix is singular) or not finite."""
    a = matrix.copy()
    n = a.shape[0]
    rows = np.arange(n)
    for start in range(0, n, PANEL):
        stop = min(start + PANEL, n)
        for k in range(start, stop):
            largest = k + int(np.argmax(np.abs(a[k:, k])))
            pivot = a[largest, k]
            if not np.isfinite(pivot) or pivot == 0:
                return PivotFailure(k, float(pivot))
            if largest != k:
                a[[k, largest]] = a[[largest, k]]
                rows[[k, largest]] = rows[[largest, k]]
            a[k + 1:, k] /= pivot
            a[k + 1:, k + 1:stop] -= np.outer(a[k + 1:, k], a[k, k + 1:stop])
        for i in range(start + 1, stop):         # U's rows right of the panel: unit-lower forward substitution
            a[i, stop:] -= a[i, start:i] @ a[start:i, stop:]
        a[stop:, stop:] -= a[stop:, start:stop] @ a[start:stop, stop:]
    return DenseLU(a, rows)


def _substitute_lower(factors: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solves L y = b for the unit lower triangle of `factors`, a panel at a time."""
    y = b.copy()
    n = factors.shape[0]
    for start in range(0, n, PANEL):
        stop = min(start + PANEL, n)
        y[start:stop] -= factors[start:stop, :start] @ y[:start]
        block = np.tril(factors[start:stop, start:stop], -1) + np.eye(stop - start, dtype=factors.dtype)
        y[start:stop] = np.linalg.solve(block, y[start:stop])
    return y


def _substitute_upper(factors: np.ndarray, b: np.ndarray, unit: bool) -> np.ndarray:
    """Solves U x = b for the upper triangle of `factors` (unit diagonal when `unit`), a panel at a time."""
    x = b.copy()
    n = factors.shape[0]
    for stop in range(n, 0, -PANEL):
        start = max(stop - PANEL, 0)
        x[start:stop] -= factors[start:stop, stop:] @ x[stop:]
        block = np.triu(factors[start:stop, start:stop], 1 if unit else 0)
        if unit:
            block = block + np.eye(stop - start, dtype=factors.dtype)
        x[start:stop] = np.linalg.solve(block, x[start:stop])
    return x
