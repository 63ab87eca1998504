"""wk.linalg.SparseMatrix: operators against dense numpy, Taichi's return types and printed layout."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from tests.error_bounds import assert_within, f32_bound


def sparse(dense: np.ndarray, dtype=wk.f32) -> wk.linalg.SparseMatrix:
    rows, cols = np.nonzero(dense)
    matrix = wk.linalg.SparseMatrix(dense.shape[0], dense.shape[1], dtype=dtype)
    matrix.build_from_ndarray(np.stack([rows, cols, dense[rows, cols]], axis=1))
    return matrix


def random_dense(seed: int, n: int, m: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, m)) * (rng.random((n, m)) < 0.3)).astype(np.float32)


def test_operators_match_dense_numpy(arch):
    a, b, c = random_dense(0, 7, 5), random_dense(1, 7, 5), random_dense(2, 5, 6)
    A, B, C = sparse(a), sparse(b), sparse(c)
    np.testing.assert_allclose((A + B).to_numpy(), a + b, rtol=1e-6)
    np.testing.assert_allclose((A - B).to_numpy(), a - b, rtol=1e-6)
    np.testing.assert_allclose((A * 2.5).to_numpy(), a * 2.5, rtol=1e-6)
    np.testing.assert_allclose((0.5 * A).to_numpy(), a * 0.5, rtol=1e-6)
    np.testing.assert_allclose((A * B).to_numpy(), a * b, rtol=1e-6)
    # both products in f32: 5 products and 4 sums per entry, in either order, on terms up to |a| @ |c|
    assert_within((A @ C).to_numpy(), a @ c, 2 * f32_bound(9, np.abs(a) @ np.abs(c)), "A @ C")
    np.testing.assert_allclose(A.transpose().to_numpy(), a.T)
    assert (A @ C).shape == (7, 6) and A.transpose().shape == (5, 7)
    with pytest.raises(wk.linalg.LinalgError, match="Dimension mismatch"):
        A + C


def test_matrix_vector_products_return_what_taichi_returns(arch):
    a = random_dense(3, 6, 4)
    A = sparse(a)
    x = np.arange(1, 5, dtype=np.float32)
    y = A @ x
    assert isinstance(y, np.ndarray) and y.dtype == np.float32
    np.testing.assert_allclose(y, a @ x, rtol=1e-5)
    nd = wk.ndarray(wk.f32, 4)
    nd.from_numpy(x)
    out = A @ nd
    assert isinstance(out, wk.lang.fields.Ndarray) and out.shape == (6,)
    np.testing.assert_allclose(out.to_numpy(), a @ x, rtol=1e-5)
    field = wk.field(wk.f32, 4)
    field.from_numpy(x)
    np.testing.assert_allclose(A @ field, a @ x, rtol=1e-5)
    with pytest.raises(wk.linalg.LinalgError, match="Dimension mismatch"):
        A @ np.ones(5, np.float32)


def test_elements_read_and_write(arch):
    a = random_dense(4, 4, 4)
    A = sparse(a)
    for i in range(4):
        for j in range(4):
            assert A[i, j] == pytest.approx(float(a[i, j]))
    A[0, 3] = 7.0
    A[2, 2] = -1.0
    a[0, 3], a[2, 2] = 7.0, -1.0
    np.testing.assert_array_equal(A.to_numpy(), a)


def test_str_is_taichis_layout(arch):
    builder = wk.linalg.SparseMatrixBuilder(3, 4, max_num_triplets=10)

    @wk.kernel
    def fill(K: wk.types.sparse_matrix_builder()):
        K[0, 0] += 1.5
        K[1, 2] += 0.001
        K[2, 3] -= 123.456
        K[0, 3] += 1e-7

    fill(builder)
    assert str(builder.build()) == ("[   1.5,      0,      0,  1e-07]\n"
                                    "[     0,      0,  0.001,      0]\n"
                                    "[     0,      0,      0, -123.5]")


def test_build_from_ndarray_sums_duplicates(arch):
    triplets = wk.Vector.ndarray(3, wk.f32, shape=4)
    triplets.from_numpy(np.array([[0, 1, 2], [1, 2, 3], [0, 1, 5], [2, 0, 7]], np.float32))
    A = wk.linalg.SparseMatrix(n=3, m=3, dtype=wk.f32)
    A.build_from_ndarray(triplets)
    assert str(A) == "[0, 7, 0]\n[0, 0, 3]\n[7, 0, 0]"
    with pytest.raises(wk.linalg.LinalgError, match="multiple of 3"):
        A.build_from_ndarray(wk.ndarray(wk.f32, 4))
