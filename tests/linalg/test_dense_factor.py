"""linalg/dense_factor.py: blocked LDL^T and LU against backward-error bounds, in f32 and f64, across panel edges,
and the pivot that stops a failed factorization."""
from __future__ import annotations

import numpy as np
import pytest

from wgkern.linalg import dense_factor
from wgkern.linalg.dense_factor import PANEL, PivotFailure


def backward_error_ok(a: np.ndarray, x: np.ndarray, b: np.ndarray, dtype: type, growth: float = 1.0) -> bool:
    """|A x - b| <= c n u (|A| |x| + |b|) per row, the bound a backward-stable factorization and solve meet
    (Higham, Accuracy and Stability, thms 9.4 and 10.4), with u the unit roundoff of `dtype`; c = 10 * growth
    leaves room for the constant and, for LDL^T without pivoting, the growth of the factors."""
    u = np.finfo(dtype).eps / 2
    a64, x64, b64 = (v.astype(np.float64) for v in (a, x, b))
    bound = 10 * growth * a.shape[0] * u * (np.abs(a64) @ np.abs(x64) + np.abs(b64))
    return bool((np.abs(a64 @ x64 - b64) <= bound).all())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, PANEL - 1, PANEL, 2 * PANEL + 3])
def test_ldlt_and_lu_solve_within_their_error_bounds(dtype, n):
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, n))
    spd = (a @ a.T + n * np.eye(n)).astype(dtype)
    general = (a + np.triu(np.ones((n, n)), 1)).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)
    llt = dense_factor.ldlt(spd, positive=True)
    assert llt.factors.dtype == dtype and backward_error_ok(spd, llt.solve(b), b, dtype)
    lu = dense_factor.lu(general)
    assert backward_error_ok(general, lu.solve(b), b, dtype, growth=n)   # partial pivoting's growth bound is
    # 2^(n-1) in theory; on random matrices it stays near sqrt(n), so n is a safe margin in practice


def test_ldlt_reads_only_the_lower_triangle_and_allows_negative_pivots():
    a = np.array([[-2.0, 99.0], [1.0, 3.0]])      # the 99 above the diagonal is never read
    factor = dense_factor.ldlt(a, positive=False)
    assert factor.pivots.tolist() == [-2.0, 3.5]
    np.testing.assert_allclose(factor.solve(np.array([1.0, 2.0])), np.linalg.solve([[-2.0, 1.0], [1.0, 3.0]],
                                                                                     [1.0, 2.0]), rtol=1e-15)
    assert dense_factor.ldlt(a, positive=True) == PivotFailure(0, -2.0)


def test_failures_name_the_first_bad_pivot():
    singular = np.array([[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [0.0, 0.0, 1.0]])
    assert dense_factor.ldlt(singular, positive=False) == PivotFailure(1, 0.0)
    assert dense_factor.lu(singular) == PivotFailure(1, 0.0)
    with_nan = np.eye(2)
    with_nan[1, 1] = np.nan
    failure = dense_factor.lu(with_nan)
    assert failure.row == 1 and np.isnan(failure.value)
