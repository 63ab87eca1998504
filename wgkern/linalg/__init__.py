"""`wk.linalg` (Taichi's `ti.linalg`): sparse matrices assembled in kernels and solved on the host.

builder.py owns the device-side triplet buffers kernels append to; matrix.py the host CSR matrix and its
operators; solver.py the direct solvers; cg.py the conjugate-gradient solvers. How `K[i, j] += v` lowers lives
in frontend/sparse_matrix.py."""
from wgkern.errors import LinalgError
from wgkern.linalg.builder import SparseMatrixBuilder
from wgkern.linalg.matrix import SparseMatrix
from wgkern.linalg.solver import SparseSolver

__all__ = ["LinalgError", "SparseMatrix", "SparseMatrixBuilder", "SparseSolver"]
