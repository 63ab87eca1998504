"""wk.linalg.SparseSolver against numpy.linalg.solve, with scipy and without it (the import made to fail)."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import wgkern as wk
from wgkern.linalg import dense_factor
from wgkern.linalg import solver as solver_module
from wgkern.linalg.solver import SOLVER_TYPES
from tests.linalg.test_matrix import sparse


@pytest.fixture(params=["scipy", "numpy"])
def factorization(request, monkeypatch):
    if request.param == "scipy":
        pytest.importorskip("scipy.sparse.linalg")
    else:               # a None entry in sys.modules makes `import scipy...` raise ImportError
        for name in ("scipy", "scipy.sparse", "scipy.sparse.linalg"):
            monkeypatch.setitem(sys.modules, name, None)
        assert solver_module._scipy_sparse() is None
    return request.param


def spd(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((n, n)) * (rng.random((n, n)) < 0.2))
    return (a @ a.T + n * np.eye(n)).astype(np.float64)


@pytest.mark.parametrize("solver_type", ["LLT", "LDLT", "LU"])
def test_spd_systems(arch, factorization, solver_type):
    a = spd(30, 0)
    A = sparse(a, wk.f64)
    b = np.linspace(-1, 1, 30)
    solver = wk.linalg.SparseSolver(wk.f64, solver_type=solver_type)
    solver.analyze_pattern(A)
    solver.factorize(A)
    x = solver.solve(b)
    assert solver.info() and isinstance(x, np.ndarray) and x.dtype == np.float64
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-9, atol=1e-12)


def test_general_system_with_lu_and_return_types(arch, factorization):
    a = spd(12, 1).astype(np.float32) + np.triu(np.ones((12, 12), np.float32), 1)   # not symmetric
    A = sparse(a)
    b = np.arange(12, dtype=np.float32)
    solver = wk.linalg.SparseSolver(solver_type="LU")
    solver.compute(A)
    expected = np.linalg.solve(a.astype(np.float64), b)
    x = solver.solve(b)
    assert x.dtype == np.float32
    np.testing.assert_allclose(x, expected, rtol=1e-5, atol=1e-6)
    nd = wk.ndarray(wk.f32, 12)
    nd.from_numpy(b)
    out = solver.solve(nd)
    assert isinstance(out, wk.lang.fields.Ndarray)
    np.testing.assert_allclose(out.to_numpy(), expected, rtol=1e-5, atol=1e-6)
    field = wk.field(wk.f32, 12)
    field.from_numpy(b)
    np.testing.assert_allclose(solver.solve(field), expected, rtol=1e-5, atol=1e-6)


def test_llt_and_ldlt_read_the_lower_triangle(arch, factorization):
    a = np.array([[4., 1., 0.], [2., 5., 1.], [0., 3., 6.]])
    symmetric = np.tril(a) + np.tril(a, -1).T
    b = np.array([1., 2., 3.])
    for solver_type in ("LLT", "LDLT"):
        solver = wk.linalg.SparseSolver(wk.f64, solver_type=solver_type)
        solver.compute(sparse(a, wk.f64))
        np.testing.assert_allclose(solver.solve(b), np.linalg.solve(symmetric, b), rtol=1e-12, atol=1e-14)


def test_failures_are_reported_by_info_and_solve_raises(arch, factorization):
    indefinite = np.array([[-1., 0., 0.], [0., 1., 0.], [0., 0., 1.]])
    llt = wk.linalg.SparseSolver(wk.f64, solver_type="LLT")
    llt.compute(sparse(indefinite, wk.f64))
    assert not llt.info()
    with pytest.raises(wk.linalg.LinalgError, match=r"LLT factorization failed: the matrix is not positive "
                                                    r"definite \(pivot -1 .*info\(\) is False"):
        llt.solve(np.ones(3))
    ldlt = wk.linalg.SparseSolver(wk.f64, solver_type="LDLT")
    ldlt.compute(sparse(indefinite, wk.f64))
    assert ldlt.info()
    np.testing.assert_allclose(ldlt.solve(np.ones(3)), [-1., 1., 1.])
    rank_one = np.array([[1., 2.], [2., 4.]])          # the second pivot is 4 - 2 * 2 = 0 exactly
    for solver_type in SOLVER_TYPES:
        singular = wk.linalg.SparseSolver(wk.f64, solver_type=solver_type)
        singular.compute(sparse(rank_one, wk.f64))
        assert not singular.info()
        with pytest.raises(wk.linalg.LinalgError, match=f"{solver_type} factorization failed: the matrix is singular"):
            singular.solve(np.array([1., 2.]))
    nd = wk.ndarray(wk.f64, 2)                          # every kind of right-hand side raises, none gives zeros
    with pytest.raises(wk.linalg.LinalgError, match="factorization failed"):
        singular.solve(nd)


def test_a_new_factorization_replaces_a_failed_one(arch, factorization):
    solver = wk.linalg.SparseSolver(wk.f64, solver_type="LDLT")
    solver.compute(sparse(np.zeros((2, 2)), wk.f64))
    assert not solver.info()
    solver.compute(sparse(np.diag([2., 4.]), wk.f64))
    assert solver.info()
    np.testing.assert_allclose(solver.solve(np.array([1., 1.])), [0.5, 0.25])
    solver.analyze_pattern(sparse(np.eye(2), wk.f64))    # a new pattern needs a new factorization
    assert not solver.info()
    with pytest.raises(wk.linalg.LinalgError, match="before solve"):
        solver.solve(np.ones(2))


def test_without_scipy_large_systems_name_what_to_install(arch, monkeypatch):
    for name in ("scipy", "scipy.sparse", "scipy.sparse.linalg"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setattr(solver_module, "DENSE_LIMIT", 8)
    solver = wk.linalg.SparseSolver(wk.f64, solver_type="LLT")
    with pytest.raises(wk.linalg.LinalgError, match=r"a 9 x 9 sparse matrix needs scipy \(pip install scipy, or "
                                                    r"pip install 'wgkern\[sparse\]'\); .* up to 8 x 8"):
        solver.compute(sparse(np.eye(9), wk.f64))
    solver.compute(sparse(spd(8, 3), wk.f64))
    np.testing.assert_allclose(solver.solve(np.ones(8)), np.linalg.solve(spd(8, 3), np.ones(8)), rtol=1e-12)


@pytest.mark.parametrize("solver_type", SOLVER_TYPES)
def test_systems_larger_than_one_panel(arch, factorization, solver_type):
    n = 3 * dense_factor.PANEL + 5                        # three full panels and a partial one
    a = spd(n, 4)
    if solver_type == "LU":
        a = a + np.triu(np.ones((n, n)), 1)
    b = np.cos(np.arange(n))
    solver = wk.linalg.SparseSolver(wk.f64, solver_type=solver_type)
    solver.compute(sparse(a, wk.f64))
    # a backward-stable solve in f64: |A x - b| <= c n u (|A| |x| + |b|) with u = 2^-53; c = 10 is generous
    x = solver.solve(b)
    bound = 10 * n * 2.0 ** -53 * (np.abs(a) @ np.abs(x) + np.abs(b))
    assert (np.abs(a @ x - b) <= bound).all()


def test_misuse_is_an_error(arch):
    with pytest.raises(wk.linalg.LinalgError, match="not supported"):
        wk.linalg.SparseSolver(solver_type="QR")
    solver = wk.linalg.SparseSolver(wk.f32)
    with pytest.raises(wk.linalg.LinalgError, match="before solve"):
        solver.solve(np.ones(2, np.float32))
    with pytest.raises(wk.linalg.LinalgError, match="not consistent"):
        solver.analyze_pattern(sparse(np.eye(2), wk.f64))
