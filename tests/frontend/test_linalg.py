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


def _special_matrices(d: int) -> list[np.ndarray]:
    """The inputs MPM codes meet: diagonal unsorted, a reflection (det < 0), zero, singular, identity."""
    if d == 2:
        return [np.diag([2.0, 3.0]), np.diag([1.0, -1.0]),     # diag(1, -1): x = y = 0 in the polar step
                np.array([[1.0, 0.5], [0.5, 1.0]]), np.zeros((2, 2)), np.array([[1.0, 2.0], [2.0, 4.0]])]
    return [np.diag([2.0, 3.0, 1.0]), np.diag([1.0, -1.0, 2.0]), np.zeros((3, 3)),
            np.outer([1.0, 2.0, 3.0], [1.0, 0.0, 1.0]), np.eye(3)]


@pytest.mark.parametrize("d", [2, 3])
def test_svd_and_polar_factorise_with_rotations(arch, d):
    a = np.random.default_rng(d).normal(size=(1024, d, d))
    special = _special_matrices(d)
    a[:len(special)] = special
    u, s, v, r, p = _decompose(a)
    t = (0, 2, 1)
    atol = 1e-5 * d
    np.testing.assert_allclose(u @ s @ np.transpose(v, t), a, atol=atol)
    for rotation in (u, v, r):
        np.testing.assert_allclose(rotation @ np.transpose(rotation, t), np.broadcast_to(np.eye(d), a.shape),
                                   atol=atol)
        np.testing.assert_allclose(np.linalg.det(rotation), 1.0, atol=atol)
    sigma = np.diagonal(s, axis1=1, axis2=2)
    assert np.count_nonzero(s - np.einsum("ij,ni->nij", np.eye(d), sigma)) == 0      # diagonal
    assert (sigma[:, :-1] >= np.abs(sigma[:, 1:]) - 1e-6).all() and (sigma[:, 0] >= 0).all()   # decreasing
    np.testing.assert_allclose(np.sort(np.abs(sigma), axis=1), np.sort(np.linalg.svd(a, compute_uv=False), axis=1),
                               atol=atol)
    np.testing.assert_allclose(np.sign(sigma[:, -1]) * np.abs(sigma).prod(axis=1), np.linalg.det(a),
                               atol=1e-4)                            # the sign of det(A) rides on the last
    np.testing.assert_allclose(r @ p, a, atol=atol)
    np.testing.assert_allclose(p, np.transpose(p, t), atol=atol)
    np.testing.assert_allclose(s[0], np.diag(np.sort(np.diagonal(special[0]))[::-1]), atol=1e-6)


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


@pytest.mark.parametrize("d", [2, 3])
def test_sym_eig(arch, d):
    n = 512
    A, values, vectors = (wk.Matrix.field(d, d, wk.f32, shape=n), wk.Vector.field(d, wk.f32, shape=n),
                          wk.Matrix.field(d, d, wk.f32, shape=n))

    @wk.kernel
    def k():
        for i in A:
            w, v = wk.sym_eig(A[i])
            values[i] = w
            vectors[i] = v

    a = np.random.default_rng(d).normal(size=(n, d, d))
    a = a + np.transpose(a, (0, 2, 1))
    a[0] = np.diag(np.arange(d, dtype=np.float64))              # diagonal, increasing
    a[1] = 0.0
    A.from_numpy(a.astype(np.float32))
    k()
    w, v = values.to_numpy().astype(np.float64), vectors.to_numpy().astype(np.float64)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a), atol=2e-5)        # increasing, as Taichi's
    np.testing.assert_allclose(a @ v, v * w[:, None, :], atol=5e-5)          # A v_k = w_k v_k, columnwise
    np.testing.assert_allclose(np.linalg.det(v), 1.0, atol=2e-5)


def test_matrix_rows_and_cols_from_vectors(arch):
    out = wk.Matrix.field(2, 3, wk.f32, shape=2)

    @wk.kernel
    def build(s: wk.f32):
        a = wk.Vector([1.0, 2.0, 3.0]) * s
        b = wk.Vector([4.0, 5.0, 6.0])
        out[0] = wk.Matrix.rows([a, b])
        out[1] = wk.Matrix.cols([wk.Vector([a.x, b.x]), wk.Vector([a.y, b.y]), wk.Vector([a.z, b.z])])

    build(2.0)
    want = np.array([[2.0, 4.0, 6.0], [4.0, 5.0, 6.0]])
    np.testing.assert_array_equal(out.to_numpy(), [want, want])
    np.testing.assert_array_equal(wk.Matrix.cols([[1, 2], [3, 4]]), [[1, 3], [2, 4]])

    @wk.kernel
    def ragged():
        out[0][0, 0] = wk.Matrix.rows([wk.Vector([1.0, 2.0]), wk.Vector([1.0, 2.0, 3.0])])[0, 0]

    with pytest.raises(wk.CompileError, match="different lengths \\(2, 3\\)"):
        ragged()
