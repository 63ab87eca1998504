"""`wk.linalg.SparseCG`: conjugate gradients on a SparseMatrix, on the host, as Taichi's CPU solver (Eigen's).

Like the matrix (matrix.py), the iteration lives on the host in numpy, in the matrix's precision. It follows
Eigen's ConjugateGradient, which Taichi calls: Jacobi (diagonal) preconditioning, the whole matrix used (Lower |
Upper), and a tolerance relative to the right-hand side: it stops once |b - A x| < atol |b|, and reports success
when that held within max_iter iterations. The matrix-free solvers on device fields are in matrixfree.py."""
from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from wgkern.errors import ArgumentError, LinalgError
from wgkern.lang.types import f32, f64
from wgkern.linalg.matrix import SparseMatrix, as_vector


class SparseCG:
    """Taichi's `ti.linalg.SparseCG(A, b, x0=None, max_iter=50, atol=1e-6)`: `solve()` returns
    `(x, converged)`, x a numpy vector of the matrix dtype (as Taichi's CPU backend returns).

    A must be symmetric positive definite; b and x0 are numpy vectors, wk.ndarrays or fields. x0 is the initial
    guess (zeros when None); Taichi's CPU solver ignores it and starts from zero, which reaches the same
    solution. After solve(), `iterations` (updates of x) and `error` (|b - A x| / |b|) describe the last
    solve."""

    def __init__(self, A: SparseMatrix, b: Any, x0: Any = None, max_iter: int = 50,  # noqa: N803
                 atol: float = 1e-6):
        if not isinstance(A, SparseMatrix):
            raise ArgumentError(f"SparseCG: A must be a wk.linalg.SparseMatrix, got {type(A).__name__}")
        if A.dtype not in (f32, f64):
            raise ArgumentError(f"Unsupported CG dtype: {A.dtype}")
        if A.n != A.m:
            raise LinalgError(f"SparseCG needs a square matrix, got {A.shape}")
        if not (isinstance(max_iter, numbers.Integral) and max_iter >= 0):
            raise LinalgError(f"SparseCG: max_iter must be an integer >= 0, got {max_iter!r}")
        if not (isinstance(atol, numbers.Real) and atol >= 0):
            raise LinalgError(f"SparseCG: atol must be a number >= 0, got {atol!r}")
        self.dtype = A.dtype
        self.matrix = A
        self.max_iter = int(max_iter)
        self.atol = float(atol)
        self.b = self._vector(b, "b")
        self.x0 = np.zeros(A.m, A.dtype.np_dtype) if x0 is None else self._vector(x0, "x0")
        self.iterations = 0
        self.error = 0.0

    def _vector(self, value: Any, name: str) -> np.ndarray:
        vector, _ = as_vector(value, f"SparseCG: {name}")
        vector = np.asarray(vector)
        if vector.shape != (self.matrix.n,):
            raise LinalgError(f"SparseCG: {name} has shape {vector.shape}; the matrix is {self.matrix.shape}, so "
                              f"it must be ({self.matrix.n},)")
        return vector.astype(self.dtype.np_dtype)

    def solve(self) -> tuple[np.ndarray, bool]:
        """(x, converged): the solution and whether |b - A x| < atol |b| within max_iter iterations."""
        dtype = self.dtype.np_dtype
        b = self.b
        x = self.x0.copy()
        rhs_norm2 = float(b @ b)
        if rhs_norm2 == 0:                      # Eigen: the solution of A x = 0 is 0, at once
            self.iterations, self.error = 0, 0.0
            return np.zeros_like(x), True
        threshold = max(self.atol * self.atol * rhs_norm2, float(np.finfo(dtype).tiny))
        matvec = self.matrix._matvec
        rows, cols, values = self.matrix._triplets()
        on_diagonal = rows == cols
        diagonal = np.zeros(self.matrix.n, dtype)
        diagonal[rows[on_diagonal]] = values[on_diagonal]
        inverse_diagonal = np.ones_like(diagonal)
        nonzero = diagonal != 0
        inverse_diagonal[nonzero] = dtype.type(1) / diagonal[nonzero]
        residual = b - matvec(x)
        residual_norm2 = float(residual @ residual)
        iteration = 0
        if residual_norm2 >= threshold:
            direction = inverse_diagonal * residual
            rz = residual @ direction
            while iteration < self.max_iter:
                product = matvec(direction)
                alpha = rz / (direction @ product)
                x += alpha * direction
                residual -= alpha * product
                iteration += 1
                residual_norm2 = float(residual @ residual)
                if residual_norm2 < threshold:
                    break
                preconditioned = inverse_diagonal * residual
                rz_old, rz = rz, residual @ preconditioned
                direction = preconditioned + (rz / rz_old) * direction
        self.iterations = iteration
        self.error = float(np.sqrt(residual_norm2 / rhs_norm2))
        return x, bool(self.error <= self.atol)
