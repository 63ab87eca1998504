"""wk.linalg.SparseCG: SPD systems against numpy.linalg.solve, Eigen's stopping rule, Taichi's test case, errors."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from tests.linalg.test_matrix import sparse


def laplacian_2d(n: int, shift: float = 0.0) -> np.ndarray:
    """The 5-point Laplacian of an n x n grid with Dirichlet boundaries (SPD), plus shift on the diagonal."""
    one_d = 2 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)
    return np.kron(one_d, np.eye(n)) + np.kron(np.eye(n), one_d) + shift * np.eye(n * n)


@pytest.mark.parametrize("dtype, rtol", [(wk.f32, 1e-4), (wk.f64, 1e-10)])
def test_poisson_matches_dense_solve(arch, dtype, rtol):
    a = laplacian_2d(8)
    A = sparse(a, dtype)
    b = np.sin(np.linspace(0, 3, 64)) + 0.5
    cg = wk.linalg.SparseCG(A, b, max_iter=200, atol=1e-7 if dtype == wk.f32 else 1e-12)
    x, converged = cg.solve()
    expected = np.linalg.solve(a, b)
    assert converged is True and x.dtype == dtype.np_dtype and x.shape == (64,)
    np.testing.assert_allclose(x, expected, rtol=rtol, atol=rtol * np.abs(expected).max())
    assert 0 < cg.iterations <= 64 and cg.error < (1e-7 if dtype == wk.f32 else 1e-12)


@pytest.mark.parametrize("dtype", [wk.f32, wk.f64])
def test_taichi_case_random_psd_from_builder(arch, dtype):
    """tests/python/test_sparse_cg.py of Taichi: A A^T assembled in a kernel, b from an ndarray."""
    n = 10
    rng = np.random.default_rng(7)
    dense = rng.random((n, n))
    psd = dense @ dense.T + 0.1 * np.eye(n)
    builder = wk.linalg.SparseMatrixBuilder(n, n, max_num_triplets=300, dtype=dtype)
    b = wk.ndarray(dtype, shape=n)
    x0 = wk.ndarray(dtype, shape=n)

    @wk.kernel
    def fill(K: wk.types.sparse_matrix_builder(), values: wk.types.ndarray(), rhs: wk.types.ndarray()):
        for i, j in wk.ndrange(n, n):
            K[i, j] += values[i, j]
        for i in range(n):
            rhs[i] = i + 1

    fill(builder, psd, b)
    A = builder.build(dtype=dtype)
    cg = wk.linalg.SparseCG(A, b, x0, max_iter=50, atol=1e-6)
    x, exit_code = cg.solve()
    assert exit_code
    np.testing.assert_allclose(x, np.linalg.solve(psd, b.to_numpy()), rtol=1e-2 if dtype == wk.f32 else 1e-6)


def test_initial_guess_and_field_right_hand_side(arch):
    a = laplacian_2d(5, shift=0.5)
    A = sparse(a, wk.f64)
    expected = np.linspace(-1, 1, 25)
    b = wk.field(wk.f64, shape=25)
    b.from_numpy(a @ expected)
    x, converged = wk.linalg.SparseCG(A, b, x0=expected, max_iter=0).solve()
    assert converged                         # the guess already solves it: no iteration needed
    np.testing.assert_array_equal(x, expected)
    cold = wk.linalg.SparseCG(A, b, max_iter=100, atol=1e-12)
    x, converged = cold.solve()
    assert converged and cold.iterations > 0
    np.testing.assert_allclose(x, expected, atol=1e-10)


def test_exit_code_false_when_max_iter_too_small(arch):
    a = laplacian_2d(10)
    A = sparse(a, wk.f64)
    cg = wk.linalg.SparseCG(A, np.ones(100), max_iter=3, atol=1e-10)
    x, converged = cg.solve()
    assert converged is False and cg.iterations == 3 and cg.error > 1e-10
    assert np.all(np.isfinite(x))


def test_zero_right_hand_side_gives_zero(arch):
    A = sparse(laplacian_2d(3), wk.f32)
    x, converged = wk.linalg.SparseCG(A, np.zeros(9, np.float32), x0=np.ones(9, np.float32)).solve()
    assert converged and not x.any()


def test_bad_input_is_reported(arch):
    A = sparse(laplacian_2d(3), wk.f32)
    with pytest.raises(wk.linalg.LinalgError, match=r"b has shape \(4,\); the matrix is \(9, 9\)"):
        wk.linalg.SparseCG(A, np.ones(4))
    with pytest.raises(wk.linalg.LinalgError, match="x0 has shape"):
        wk.linalg.SparseCG(A, np.ones(9), x0=np.ones(3))
    with pytest.raises(wk.linalg.LinalgError, match="square matrix"):
        wk.linalg.SparseCG(sparse(np.ones((3, 4), np.float32)), np.ones(3))
    with pytest.raises(TypeError, match="must be a wk.linalg.SparseMatrix"):
        wk.linalg.SparseCG(np.eye(3), np.ones(3))
    with pytest.raises(wk.linalg.LinalgError, match="takes a numpy array, a wk.ndarray or a field"):
        wk.linalg.SparseCG(A, [1.0] * 9)
    with pytest.raises(wk.linalg.LinalgError, match="max_iter must be an integer >= 0"):
        wk.linalg.SparseCG(A, np.ones(9), max_iter=-1)


def test_cg_is_the_earlier_name_of_sparse_cg(arch):
    builder = wk.linalg.SparseMatrixBuilder(2, 2, max_num_triplets=8)

    @wk.kernel
    def fill(K: wk.types.sparse_matrix_builder()):
        K[0, 0] += 4.0
        K[0, 1] += 1.0
        K[1, 0] += 1.0
        K[1, 1] += 3.0

    fill(builder)
    assert wk.linalg.CG is wk.linalg.SparseCG
    x, converged = wk.linalg.CG(builder.build(), np.array([1.0, 2.0], np.float32), max_iter=50, atol=1e-6).solve()
    assert converged
    np.testing.assert_allclose(x, np.linalg.solve([[4.0, 1.0], [1.0, 3.0]], [1.0, 2.0]), rtol=1e-5)
