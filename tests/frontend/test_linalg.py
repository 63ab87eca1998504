"""wk.svd and wk.polar_decompose (frontend/linalg.py) on every arch, 2x2 and 3x3: factorisation properties
against numpy, the degenerate inputs MPM codes meet, and the errors."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from tests.error_bounds import assert_within, f32_bound


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


# Operations in sequence behind each entry (tests/error_bounds.py counts each at 8 U): 2x2, the closed-form polar
# factors (det, B, 1/sqrt|det B|: ~8), one Jacobi rotation of P (~12) and U = R V (3); 3x3, A^T A (5), 6 cyclic
# sweeps in which each entry takes 3 rotations of ~6 operations each (the rotation's cosine through sqrt and a
# division, then a 2-term update), A v / sigma with Gram-Schmidt and a cross product (~32).
_SVD_OPS = {2: 24, 3: 6 * 3 * 6 + 5 + 32}


@pytest.mark.parametrize("d", [2, 3])
def test_svd_and_polar_factorise_with_rotations(arch, d):
    a = np.random.default_rng(d).normal(size=(1024, d, d))
    special = _special_matrices(d)
    a[:len(special)] = special
    u, s, v, r, p = _decompose(a)
    t = (0, 2, 1)
    norm = np.linalg.norm(a, 2, axis=(1, 2))[:, None, None]           # ||A||_2 of each matrix
    orth = f32_bound(_SVD_OPS[d])                                     # |Q Q^T - I| entrywise, Q = U, V, R
    # |U sigma V^T - A| entrywise: the operations on values of size ||A||; the 2x2 svd also leaves an
    # off-diagonal of P below _DIAGONAL_TOLERANCE (1e-5) unrotated, as Taichi's does
    recon = f32_bound(_SVD_OPS[d], norm) + (1e-5 if d == 2 else 0.0)
    # singular values: Weyl's theorem on the reconstruction error (2-norm <= d * entrywise) plus sigma's
    # distortion by U and V being orthogonal only to within `orth` (2-norm <= d * orth each)
    sv = d * recon[:, :, 0] + 2 * d * orth * norm[:, :, 0]
    identity = np.broadcast_to(np.eye(d), a.shape)
    assert_within(u @ s @ np.transpose(v, t), a, recon, "U sigma V^T = A")
    for name, orthogonal in (("U", u), ("V", v), ("R", r)):
        assert_within(orthogonal @ np.transpose(orthogonal, t), identity, orth, f"{name} {name}^T = I")
    assert_within(np.linalg.det(v), 1.0, d * orth, "det V = 1")               # det(I + E) = 1 + tr E + ...
    sigma = np.diagonal(s, axis1=1, axis2=2)
    assert np.count_nonzero(s - np.einsum("ij,ni->nij", np.eye(d), sigma)) == 0      # diagonal
    assert (sigma[:, :-1] >= np.abs(sigma[:, 1:]) - sv).all() and (sigma[:, 0] >= 0).all()   # decreasing
    assert_within(np.sort(np.abs(sigma), axis=1), np.sort(np.linalg.svd(a, compute_uv=False), axis=1), sv,
                  "singular values")
    # R P = A: R = U V^T and P = V sigma V^T add 3 operations each to U, sigma, V's
    polar = f32_bound(_SVD_OPS[d] + 6, norm) + (1e-5 if d == 2 else 0.0)
    assert_within(r @ p, a, polar, "R P = A")
    assert_within(p, np.transpose(p, t), polar, "P symmetric")
    sign = np.where(np.linalg.det(a) < 0, -1.0, 1.0)
    if d == 3:      # U, R rotations; the sign of det(A) rides on the last singular value
        for rotation in (u, r):
            assert_within(np.linalg.det(rotation), 1.0, d * orth, "det = 1")
        # a product of d factors, each within sv of sigma_i <= ||A||
        assert_within(np.sign(sigma[:, -1]) * np.abs(sigma).prod(axis=1), np.linalg.det(a),
                      d * sv[:, 0] * norm[:, 0, 0] ** (d - 1), "the product of sigma is det A")
    else:           # Taichi's 2x2: P positive semi-definite, sigma >= 0; U and R reflections where det(A) < 0
        # P's eigenvalues are sigma's, within sv
        assert (sigma >= 0).all() and (np.linalg.eigvalsh(p) >= -sv).all()
        # P is the square root of A^T A: the Hermitian polar factor moves by at most sqrt(2) times a
        # perturbation of A (the R P = A bound), and R's departure from orthogonality adds orth * ||A||
        w, q = np.linalg.eigh(np.transpose(a, t) @ a)
        assert_within(p, q @ (np.sqrt(np.clip(w, 0, None))[..., None] * np.transpose(q, t)),
                      np.sqrt(2) * d * (polar + orth * norm), "P = sqrt(A^T A)")
        for orthogonal in (u, r):
            assert_within(np.linalg.det(orthogonal), sign, d * orth, "det = sign(det A)")
    # diag(2, 3, 1): sorted decreasing, each within the singular-value bound (||A|| = 3)
    assert_within(s[0], np.diag(np.sort(np.diagonal(special[0]))[::-1]), sv[0].max(), "sorted diagonal")


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


@pytest.mark.parametrize("d", [4, 6])
def test_sym_eig_of_larger_matrices(arch, d):
    # Quadrants' sym_eig for 4x4 and larger (a loop of Jacobi sweeps): eigenvectors form an orthogonal matrix
    n = 64
    A, values, vectors = (wk.Matrix.field(d, d, wk.f32, shape=n), wk.Vector.field(d, wk.f32, shape=n),
                          wk.Matrix.field(d, d, wk.f32, shape=n))

    @wk.kernel
    def k():
        for i in A:
            w, v = wk.sym_eig(A[i], wk.f32)
            values[i] = w
            vectors[i] = v

    a = np.random.default_rng(d).normal(size=(n, d, d))
    a = a + np.transpose(a, (0, 2, 1))
    a[0] = np.diag(np.arange(d, 0, -1, dtype=np.float64))       # diagonal, decreasing
    a[1] = 0.0
    a[2] = np.full((d, d), 1.0)                                 # repeated eigenvalue 0
    A.from_numpy(a.astype(np.float32))
    k()
    w, v = values.to_numpy().astype(np.float64), vectors.to_numpy().astype(np.float64)
    # 12 cyclic sweeps (frontend/linalg.py's _LOOP_SWEEPS); in each, an entry takes the 2d - 3 rotations of its
    # row's and column's pairs, ~6 operations each (the cosine through sqrt and a division, a 2-term update)
    ops = 12 * (2 * d - 3) * 6
    norm = np.linalg.norm(a, 2, axis=(1, 2))[:, None]                # ||A||_2 of each matrix
    orth = f32_bound(ops)                                            # |V^T V - I| entrywise
    # Weyl: the eigenvalues of A + E, |E_ij| <= f32_bound(ops, ||A||), move by at most ||E||_2 <= d max|E_ij|
    values = d * f32_bound(ops, norm)
    assert_within(w, np.linalg.eigvalsh(a), values, "eigenvalues")       # increasing
    # A v_k - w_k v_k = (A - w_k) (v_k - exact) + (exact w_k - w_k) v_k: the rotation errors of the columns
    # (orth, times ||A - w_k|| <= 2 ||A||, per entry over d terms) and the eigenvalue error
    assert_within(a @ v, v * w[:, None, :], values[:, :, None] + 2 * d * orth * norm[:, :, None], "A v = w v")
    assert_within(np.transpose(v, (0, 2, 1)) @ v, np.broadcast_to(np.eye(d), (n, d, d)), orth, "V^T V = I")


def test_eig_of_general_2x2_matrices(arch):
    # Taichi's wk.eig(A): eigenvalues as (real, imaginary) rows, unit eigenvectors as columns of (re, im) pairs
    cases = np.array([[[1, 1], [2, 3]], [[1, -1], [1, 1]], [[2, 0], [0, 2]], [[0, 1], [0, 0]], [[3, 1], [0, 2]]],
                     np.float64)
    n = len(cases)
    A, values, vectors = (wk.Matrix.field(2, 2, wk.f32, shape=n), wk.Matrix.field(2, 2, wk.f32, shape=n),
                          wk.Matrix.field(4, 2, wk.f32, shape=n))

    @wk.kernel
    def k():
        for i in A:
            values[i], vectors[i] = wk.eig(A[i])

    A.from_numpy(cases.astype(np.float32))
    k()
    v, w = values.to_numpy().astype(np.float64), vectors.to_numpy().astype(np.float64)
    lam = v[:, :, 0] + 1j * v[:, :, 1]
    vec = w[:, 0::2, :] + 1j * w[:, 1::2, :]
    for c in range(n):
        np.testing.assert_allclose(np.sort_complex(lam[c]), np.sort_complex(np.linalg.eigvals(cases[c])), atol=1e-5)
        for j in range(2):
            np.testing.assert_allclose(np.linalg.norm(vec[c][:, j]), 1.0, atol=1e-5)
            np.testing.assert_allclose(cases[c] @ vec[c][:, j], lam[c][j] * vec[c][:, j], atol=1e-5)
    np.testing.assert_allclose(vec[2], np.eye(2), atol=1e-6)        # a multiple of the identity: e_0, e_1


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


def _linalg_losses(dtype):
    d3, d2 = wk.Matrix.field(3, 3, dtype, shape=1, needs_grad=True), wk.Matrix.field(2, 2, dtype, shape=1,
                                                                                        needs_grad=True)
    loss = wk.field(dtype, shape=(), needs_grad=True)

    @wk.kernel
    def svd3():
        for i in d3:
            u, s, v = wk.svd(d3[i])
            loss[None] += s[0, 0] + 2 * s[2, 2] + u[0, 0] + 0.5 * v[1, 2]

    @wk.kernel
    def svd2():
        for i in d2:
            u, s, v = wk.svd(d2[i])
            loss[None] += u[0, 1] + s[1, 1] + v[1, 0]

    @wk.kernel
    def eig3():
        for i in d3:
            e, v = wk.sym_eig(d3[i] + d3[i].transpose())
            loss[None] += e[0] + 3 * e[2] + v[0, 0] * v[0, 0]

    @wk.kernel
    def polar2():
        for i in d2:
            r, s = wk.polar_decompose(d2[i])
            loss[None] += r[0, 1] + s[1, 1]

    return loss, [(svd3, d3), (svd2, d2), (eig3, d3), (polar2, d2)]


def test_decomposition_gradients_match_finite_differences(arch):
    """Reverse mode through svd / sym_eig / polar_decompose (unrolled Jacobi rotations) equals central
    differences in f64."""
    loss, cases = _linalg_losses(wk.f64)
    inputs = {3: np.array([[2.0, 0.5, 0.0], [0.1, 1.5, 0.2], [0.0, 0.3, 1.0]]), 2: np.array([[2.0, 0.5], [0.1, 1.5]])}
    for kernel, field in cases:
        a = inputs[field.n][None]
        field.from_numpy(a)
        with wk.ad.Tape(loss=loss):
            kernel()
        grad = field.grad.to_numpy().ravel()
        numeric = []
        for j in range(a.size):
            step = np.zeros(a.size)
            step[j] = 1e-6
            values = []
            for sign in (1, -1):
                field.from_numpy(a + sign * step.reshape(a.shape))
                loss[None] = 0.0
                kernel()
                values.append(loss[None])
            numeric.append((values[0] - values[1]) / 2e-6)
        np.testing.assert_allclose(grad, numeric, atol=1e-7, err_msg=kernel.name)


def test_decomposition_gradients_are_finite_in_f32(arch):
    """Converged and skipped Jacobi rotations, and zero singular values, contribute 0 to gradients (never
    0 * inf = NaN), also for diagonal, identity, singular and zero matrices."""
    m = wk.Matrix.field(3, 3, wk.f32, shape=64, needs_grad=True)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def k():
        for i in m:
            u, s, v = wk.svd(m[i])
            e, w = wk.sym_eig(m[i] + m[i].transpose())
            loss[None] += s[0, 0] + u[0, 0] + v[2, 1] + s[2, 2] + e[1] + w[1, 2]

    a = np.random.default_rng(1).normal(size=(64, 3, 3)).astype(np.float32)
    a[0], a[1], a[2], a[3] = np.diag([1.0, 2.0, 3.0]), np.eye(3), 0.0, [[1, 2, 3], [2, 4, 6], [0, 1, 0]]
    a[4] = [[1.0, 1e-10, 1e-10], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]     # A^T A's s_pq^2 underflows: no NaN
    a[5] = [[1.0, 1e-20, 1e-20], [0.0, 1.0, 1e-20], [0.0, 0.0, 1.0]]
    m.from_numpy(a)
    with wk.ad.Tape(loss=loss):
        k()
    assert np.isfinite(m.grad.to_numpy()).all() and np.isfinite(loss[None])


@pytest.mark.parametrize("d", [2, 3, 5])
def test_make_spd_clamps_negative_eigenvalues(arch, d):
    n = 256
    A, out = wk.Matrix.field(d, d, wk.f32, shape=n), wk.Matrix.field(d, d, wk.f32, shape=n)

    @wk.kernel
    def k():
        for i in A:
            out[i] = wk.make_spd(A[i])

    a = np.random.default_rng(7 + d).normal(size=(n, d, d))
    a = a + np.transpose(a, (0, 2, 1))
    A.from_numpy(a.astype(np.float32))
    k()
    values, vectors = np.linalg.eigh(a)
    expected = np.einsum("nik,nk,njk->nij", vectors, np.maximum(values, 0.0), vectors)
    np.testing.assert_allclose(out.to_numpy(), expected, atol=1e-4)
    np.testing.assert_allclose(wk.make_spd(a[0]), expected[0], atol=1e-12)     # the host form: numpy
