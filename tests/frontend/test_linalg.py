"""wk.svd and wk.polar_decompose (frontend/linalg.py) on every arch, 2x2 and 3x3: factorisation properties
against numpy, the degenerate inputs MPM codes meet, and the errors."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk


def _decompose(a: np.ndarray) -> list[np.ndarray]:
    """U, sigma, V of wk.svd and R, P of wk.polar_decompose for each of the (d x d) matrices in `a`."""
    n, d = a.shape[:2]
    A, U, S, V, R, P = (wk.Matrix.field(d, d, wk.f32, shape=n) for _ in range(6))

    @wk.kernel
    def k():
        for i in A:
            u, s, v = wk.svd(A[i])
            U[i] = u
            S[i] = s
            V[i] = v
            r, p = wk.polar_decompose(A[i], wk.f32)
            R[i] = r
            P[i] = p

    A.from_numpy(a.astype(np.float32))
    k()
    return [f.to_numpy().astype(np.float64) for f in (U, S, V, R, P)]


def test_svd_and_polar_factorise_with_rotations(arch):
    rng = np.random.default_rng(0)
    a = rng.normal(size=(2048, 2, 2))
    a[0] = np.diag([2.0, 3.0])            # already diagonal, unsorted
    a[1] = np.diag([1.0, -1.0])           # a reflection: x = y = 0 in the polar step
    a[2] = [[1.0, 0.5], [0.5, 1.0]]
    a[3] = 0.0                            # the zero matrix
    a[4] = [[1.0, 2.0], [2.0, 4.0]]       # singular
    u, s, v, r, p = _decompose(a)
    t = (0, 2, 1)
    np.testing.assert_allclose(u @ s @ np.transpose(v, t), a, atol=1e-5)
    for rotation in (u, v, r):
        np.testing.assert_allclose(rotation @ np.transpose(rotation, t), np.broadcast_to(np.eye(2), a.shape),
                                   atol=1e-5)
        np.testing.assert_allclose(np.linalg.det(rotation), 1.0, atol=1e-5)
    assert (s[:, 0, 1] == 0).all() and (s[:, 1, 0] == 0).all()
    assert (s[:, 0, 0] >= s[:, 1, 1]).all() and (s[:, 0, 0] >= 0).all()
    np.testing.assert_allclose(np.sign(s[:, 1, 1]) * np.sign(s[:, 0, 0]) * np.abs(s[:, 0, 0] * s[:, 1, 1]),
                               np.linalg.det(a), atol=1e-4)       # the sign of det(A) rides on s2
    np.testing.assert_allclose(np.sort(np.abs(np.diagonal(s, axis1=1, axis2=2)), axis=1),
                               np.sort(np.linalg.svd(a, compute_uv=False), axis=1), atol=1e-5)
    np.testing.assert_allclose(r @ p, a, atol=1e-5)
    np.testing.assert_allclose(p, np.transpose(p, t), atol=1e-5)
    np.testing.assert_allclose(s[0], np.diag([3.0, 2.0]), atol=1e-6)


def test_3x3_svd_and_polar(arch):
    n = 1024
    a = np.random.default_rng(1).normal(size=(n, 3, 3))
    a[0] = np.diag([2.0, 3.0, 1.0])            # diagonal, unsorted
    a[1] = np.diag([1.0, -1.0, 2.0])           # det < 0
    a[2] = 0.0                                 # zero
    a[3] = np.outer([1.0, 2.0, 3.0], [1.0, 0.0, 1.0])      # rank 1
    a[4] = np.eye(3)
    u, s, v, r, p = _decompose(a)
    t = (0, 2, 1)
    np.testing.assert_allclose(u @ s @ np.transpose(v, t), a, atol=2e-5)
    for rotation in (u, v, r):
        np.testing.assert_allclose(rotation @ np.transpose(rotation, t), np.broadcast_to(np.eye(3), a.shape),
                                   atol=2e-5)
        np.testing.assert_allclose(np.linalg.det(rotation), 1.0, atol=2e-5)
    d = np.diagonal(s, axis1=1, axis2=2)
    assert np.count_nonzero(s - np.einsum("ij,ni->nij", np.eye(3), d)) == 0      # diagonal
    assert (d[:, 0] >= d[:, 1] - 1e-6).all() and (d[:, 1] >= np.abs(d[:, 2]) - 1e-5).all()
    np.testing.assert_allclose(np.sort(np.abs(d), axis=1), np.sort(np.linalg.svd(a, compute_uv=False), axis=1),
                               atol=2e-5)
    np.testing.assert_allclose(np.sign(d[:, 2]) * np.abs(d).prod(axis=1), np.linalg.det(a), atol=1e-4)
    np.testing.assert_allclose(r @ p, a, atol=2e-5)
    np.testing.assert_allclose(p, np.transpose(p, t), atol=2e-5)


def test_decompositions_name_what_they_support():
    m3 = wk.Matrix.field(4, 4, wk.f32, shape=2)
    v2 = wk.Vector.field(2, wk.f32, shape=2)

    @wk.kernel
    def three():
        for i in m3:
            u, s, v = wk.svd(m3[i])
            m3[i] = u

    @wk.kernel
    def vector():
        for i in v2:
            r, p = wk.polar_decompose(v2[i])

    with pytest.raises(wk.CompileError, match="2x2 and 3x3 matrices; this one is 4x4") as info:
        three()
    assert "wk.svd(m3[i])" in str(info.value)
    with pytest.raises(wk.CompileError, match="needs a square matrix"):
        vector()
    with pytest.raises(wk.WkError, match="inside a @wk.kernel"):
        wk.svd(np.eye(2))
