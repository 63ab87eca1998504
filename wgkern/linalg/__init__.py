"""`wk.linalg` (Taichi's `ti.linalg`): sparse matrices assembled in kernels and solved on the host, and
matrix-free solvers on fields.

builder.py owns the device-side triplet buffers kernels append to; matrix.py the host CSR matrix and its
operators; solver.py the direct solvers (dense_factor.py their numpy factorizations where scipy is
missing); cg.py the conjugate-gradient solver of a SparseMatrix; matrixfree.py
the matrix-free solvers (LinearOperator, MatrixFreeCG, MatrixFreeBICGSTAB), whose device-side vector algebra
is in vector_ops.py. How `K[i, j] += v` lowers lives in frontend/sparse_matrix.py."""
from wgkern.errors import LinalgError
from wgkern.linalg.builder import SparseMatrixBuilder
from wgkern.linalg.cg import SparseCG
from wgkern.linalg.matrix import SparseMatrix
from wgkern.linalg.matrixfree import LinearOperator, MatrixFreeBICGSTAB, MatrixFreeCG
from wgkern.linalg.solver import SparseSolver

CG = SparseCG          # the name an earlier Taichi gave SparseCG (its misc/cg_solver.py still calls ti.linalg.CG)

__all__ = ["CG", "LinalgError", "LinearOperator", "MatrixFreeBICGSTAB", "MatrixFreeCG", "SparseCG", "SparseMatrix",
           "SparseMatrixBuilder", "SparseSolver"]
