"""wk.linalg.MatrixFreeCG / MatrixFreeBICGSTAB / LinearOperator: Taichi's tests ported, systems of every field
shape against numpy.linalg.solve, exit codes, the quiet=False log, workspace reuse and the errors.

No `from __future__ import annotations` here: the ported Taichi kernel annotates a parameter with a local
(`tol: dtype`), which only an evaluated annotation can see."""
import math

import numpy as np
import pytest

import wgkern as wk
from wgkern.linalg import LinearOperator, MatrixFreeBICGSTAB, MatrixFreeCG
from tests.linalg.test_cg import laplacian_2d

SOLVERS = [MatrixFreeCG, MatrixFreeBICGSTAB]


def taichi_case(solver, dtype) -> None:
    """tests/python/test_matrixfree_cg.py and test_matrixfree_bicgstab.py of Taichi 1.7, as written there."""
    GRID = 32
    Ax = wk.field(dtype=dtype, shape=(GRID, GRID))
    x = wk.field(dtype=dtype, shape=(GRID, GRID))
    b = wk.field(dtype=dtype, shape=(GRID, GRID))
    left, top = (2.0, 3.0) if solver is MatrixFreeBICGSTAB else (1.0, 1.0)   # BiCGSTAB's A is not symmetric

    @wk.kernel
    def init():
        for i, j in wk.ndrange(GRID, GRID):
            xl = i / (GRID - 1)
            yl = j / (GRID - 1)
            b[i, j] = wk.sin(2 * math.pi * xl) * wk.sin(2 * math.pi * yl)
            x[i, j] = 0.0

    @wk.kernel
    def compute_Ax(v: wk.template(), mv: wk.template()):
        for i, j in v:
            l = left * v[i - 1, j] if i - 1 >= 0 else 0.0
            r = v[i + 1, j] if i + 1 <= GRID - 1 else 0.0
            t = top * v[i, j + 1] if j + 1 <= GRID - 1 else 0.0
            b = v[i, j - 1] if j - 1 >= 0 else 0.0
            mv[i, j] = 20 * v[i, j] - l - r - t - b

    @wk.kernel
    def check_solution(sol: wk.template(), ans: wk.template(), tol: dtype) -> bool:
        exit_code = True
        for i, j in wk.ndrange(GRID, GRID):
            if wk.abs(ans[i, j] - sol[i, j]) < tol:
                pass
            else:
                exit_code = False
        return exit_code

    A = LinearOperator(compute_Ax)
    init()
    solver(A, b, x, maxiter=10 * GRID * GRID, tol=1e-18, quiet=True)
    compute_Ax(x, Ax)
    assert check_solution(Ax, b, tol=1e-6)


@pytest.mark.parametrize("solver", SOLVERS, ids=lambda s: s.__name__)
@pytest.mark.parametrize("dtype", [wk.f32, wk.f64], ids=str)
def test_taichi_tests(arch, solver, dtype):
    taichi_case(solver, dtype)


@wk.kernel
def _poisson(v: wk.template(), out: wk.template()):
    n = v.shape[0]
    for i, j in v:
        total = 4 * v[i, j]
        if i > 0:
            total -= v[i - 1, j]
        if i < n - 1:
            total -= v[i + 1, j]
        if j > 0:
            total -= v[i, j - 1]
        if j < n - 1:
            total -= v[i, j + 1]
        out[i, j] = total


@pytest.mark.parametrize("solver", SOLVERS, ids=lambda s: s.__name__)
@pytest.mark.parametrize("dtype, tol, rtol", [(wk.f32, 1e-5, 1e-4), (wk.f64, 1e-12, 1e-10)], ids=["f32", "f64"])
def test_poisson_matches_dense_solve(arch, solver, dtype, tol, rtol):
    n = 12
    rng = np.random.default_rng(3)
    rhs = rng.standard_normal((n, n))
    b = wk.field(dtype, shape=(n, n))
    x = wk.field(dtype, shape=(n, n))
    b.from_numpy(rhs)
    assert solver(LinearOperator(_poisson), b, x, tol=tol, maxiter=500) is True
    expected = np.linalg.solve(laplacian_2d(n), rhs.reshape(-1)).reshape(n, n)
    np.testing.assert_allclose(x.to_numpy(), expected, rtol=rtol, atol=rtol * np.abs(expected).max())


@wk.kernel
def _tridiagonal(v: wk.template(), out: wk.template()):
    """A 1-D operator on an offset field (indices -3 .. n-4): 3 on the diagonal, -1 beside it."""
    first = -3
    last = v.shape[0] - 4
    for i in v:
        total = 3 * v[i]
        if i > first:
            total -= v[i - 1]
        if i < last:
            total -= v[i + 1]
        out[i] = total


def test_offset_field_and_initial_guess(arch):
    n = 40
    a = 3 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)
    expected = np.cos(np.arange(n) * 0.3)
    b = wk.field(wk.f64, shape=n, offset=-3)
    x = wk.field(wk.f64, shape=n, offset=-3)
    b.from_numpy(a @ expected)
    x.from_numpy(expected)
    # the guess solves it: no iteration, x untouched (maxiter=0 still reports success)
    assert MatrixFreeCG(LinearOperator(_tridiagonal), b, x, tol=1e-8, maxiter=0)
    np.testing.assert_array_equal(x.to_numpy(), expected)
    x.fill(0)
    assert MatrixFreeCG(LinearOperator(_tridiagonal), b, x, tol=1e-10)
    np.testing.assert_allclose(x.to_numpy(), expected, atol=1e-9)


@wk.kernel
def _blocks(v: wk.template(), out: wk.template()):
    """A 2x2 SPD block (vector fields) coupled to the neighbour along the third axis of a 3-D grid."""
    block = wk.Matrix([[4.0, 1.0], [1.0, 3.0]])
    depth = v.shape[2]
    for i, j, k in v:
        total = block @ v[i, j, k]
        if k > 0:
            total -= v[i, j, k - 1]
        if k < depth - 1:
            total -= v[i, j, k + 1]
        out[i, j, k] = total


@pytest.mark.parametrize("solver", SOLVERS, ids=lambda s: s.__name__)
def test_vector_field_on_a_3d_grid(arch, solver):
    shape = (3, 2, 5)
    count = math.prod(shape)
    dense = np.zeros((count, 2, count, 2))
    for cell in range(count):
        dense[cell, :, cell, :] = [[4.0, 1.0], [1.0, 3.0]]
        if cell % 5 > 0:
            dense[cell, :, cell - 1, :] -= np.eye(2)
        if cell % 5 < 4:
            dense[cell, :, cell + 1, :] -= np.eye(2)
    rhs = np.random.default_rng(5).standard_normal(shape + (2,)).astype(np.float32)
    b = wk.Vector.field(2, wk.f32, shape=shape)
    x = wk.Vector.field(2, wk.f32, shape=shape)
    b.from_numpy(rhs)
    assert solver(LinearOperator(_blocks), b, x, tol=1e-5)
    expected = np.linalg.solve(dense.reshape(2 * count, 2 * count), rhs.reshape(-1).astype(np.float64))
    np.testing.assert_allclose(x.to_numpy().reshape(-1), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("solver", SOLVERS, ids=lambda s: s.__name__)
def test_exit_code_false_when_maxiter_too_small(arch, solver):
    n = 16
    b = wk.field(wk.f64, shape=(n, n))
    x = wk.field(wk.f64, shape=(n, n))
    b.fill(1.0)
    assert solver(LinearOperator(_poisson), b, x, tol=1e-12, maxiter=3) is False
    residual = wk.field(wk.f64, shape=(n, n))
    _poisson(x, residual)
    error = np.linalg.norm(residual.to_numpy() - 1.0)
    assert np.isfinite(error) and error > 1e-3 and x.to_numpy().any()    # moved, not converged


def test_bicgstab_breakdown_reports_failure(arch):
    @wk.kernel
    def rotate(v: wk.template(), out: wk.template()):   # A = [[0, -1], [1, 0]]: r0 . A r0 = 0
        for _ in range(1):
            out[0] = -v[1]
            out[1] = v[0]

    b = wk.field(wk.f32, shape=2)
    x = wk.field(wk.f32, shape=2)
    b.from_numpy(np.array([1.0, 0.0], np.float32))
    assert MatrixFreeBICGSTAB(LinearOperator(rotate), b, x, tol=1e-6) is False


def test_plain_python_operator_and_log(arch, capsys):
    """A LinearOperator around a Python function that launches kernels (as Taichi allows), and quiet=False."""
    n = 8
    b = wk.field(wk.f32, shape=(n, n))
    x = wk.field(wk.f32, shape=(n, n))
    b.fill(1.0)
    calls = []

    def apply(v, out):
        calls.append(1)
        _poisson(v, out)

    assert MatrixFreeCG(LinearOperator(apply), b, x, tol=1e-4, quiet=False)
    log = capsys.readouterr().out
    assert log.startswith(">>> Initial residual = 6.400000e+01\n")
    assert ">>> Iter =    1, Residual = " in log and ">>> Conjugate Gradient method converged." in log
    iterations = int(log.split(">>> #iterations ")[1].split()[0])
    assert len(calls) == iterations + 1                       # A x0, then one product per iteration
    assert MatrixFreeCG(LinearOperator(apply), b, x, tol=1e-30, maxiter=2, quiet=False) is False
    assert "failed to converge in 2 iterations" in capsys.readouterr().out


def test_workspace_is_reused_and_solves_repeat_exactly(arch):
    n = 10
    b = wk.field(wk.f32, shape=(n, n))
    x = wk.field(wk.f32, shape=(n, n))
    b.fill(1.0)
    A = LinearOperator(_poisson)
    assert MatrixFreeCG(A, b, x, tol=1e-4)
    compiles = wk.stats()["kernel_compiles"]
    x.fill(0)
    b.fill(2.0)
    assert MatrixFreeCG(A, b, x, tol=1e-4)
    assert wk.stats()["kernel_compiles"] == compiles
    residual = wk.field(wk.f32, shape=(n, n))
    _poisson(x, residual)
    np.testing.assert_allclose(residual.to_numpy(), 2.0, atol=1e-4)
    first = x.to_numpy()
    x.fill(0)
    assert MatrixFreeCG(A, b, x, tol=1e-4)
    np.testing.assert_array_equal(x.to_numpy(), first)      # no atomics in the dot products: same bits


def test_bad_input_is_reported(arch):
    A = LinearOperator(_poisson)
    b = wk.field(wk.f32, shape=(4, 4))
    x = wk.field(wk.f32, shape=(4, 4))
    with pytest.raises(TypeError, match="needs a callable matvec"):
        LinearOperator(3)
    with pytest.raises(TypeError, match="A must be a wk.linalg.LinearOperator"):
        MatrixFreeCG("A", b, x)
    with pytest.raises(TypeError, match=r"Dtype mismatch b.dtype\(f32\) != x.dtype\(f64\)."):
        MatrixFreeCG(A, b, wk.field(wk.f64, shape=(4, 4)))
    with pytest.raises(TypeError, match="Not supported dtype: i32"):
        MatrixFreeBICGSTAB(A, wk.field(wk.i32, shape=(4, 4)), wk.field(wk.i32, shape=(4, 4)))
    with pytest.raises(wk.linalg.LinalgError, match=r"Dimension mismatch b.shape\(4, 4\) != x.shape\(4, 5\)."):
        MatrixFreeCG(A, b, wk.field(wk.f32, shape=(4, 5)))
    with pytest.raises(wk.linalg.LinalgError, match="Dimension mismatch"):
        MatrixFreeCG(A, b, wk.Vector.field(2, wk.f32, shape=(4, 4)))
    with pytest.raises(TypeError, match="b must be a field"):
        MatrixFreeCG(A, np.zeros((4, 4), np.float32), x)
    with pytest.raises(wk.linalg.LinalgError, match="maxiter must be an integer >= 0"):
        MatrixFreeCG(A, b, x, maxiter=-2)
    with pytest.raises(wk.linalg.LinalgError, match=r"Dimension mismatch x.shape\(4, 4\) != Ax.shape\(4,\)."):
        A.matvec(x, wk.field(wk.f32, shape=4))
    # Taichi's error types: ti.TaichiTypeError-free code catches TypeError / ti.TaichiRuntimeError
    with pytest.raises(wk.TaichiRuntimeError):
        MatrixFreeCG(A, b, wk.field(wk.f32, shape=(4, 5)))


def test_bicgstab_log_and_taichi_namespace(arch, capsys):
    assert (wk.linalg.LinearOperator, wk.linalg.MatrixFreeCG, wk.linalg.MatrixFreeBICGSTAB) == \
        (LinearOperator, MatrixFreeCG, MatrixFreeBICGSTAB)
    b = wk.field(wk.f64, shape=(6, 6))
    x = wk.field(wk.f64, shape=(6, 6))
    b.fill(1.0)
    assert MatrixFreeBICGSTAB(LinearOperator(_poisson), b, x, tol=np.float64(1e-9), maxiter=np.int64(100),
                              quiet=False)
    log = capsys.readouterr().out.splitlines()
    assert log[0] == ">>> Initial residual = 3.600000e+01"
    assert log[1].startswith(">>> Iter =    1, Residual = ")
    assert log[-1].startswith(">>> BICGSTAB method converged at #iterations ")
