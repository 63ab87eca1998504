"""Quadrants' register tiles, wk.simt.Tile16x16 / Tile32x32 (lang/simt/tile.py, frontend/tiles.py), on the arches
with subgroups (`gpu`). A tile needs a subgroup of 16 (32) invocations: lavapipe's has 8, and 16 when started with
LP_NATIVE_VECTOR_WIDTH=512, so each program runs in a subprocess with that setting (harmless elsewhere); lavapipe
has no working 32-invocation subgroups, so Tile32x32 runs where the GPU has them (CUDA, NVIDIA's Vulkan).
Results are checked against numpy in f64 and, where Quadrants is installed, against its run of the same program."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import skip_if_profile_lacks_a_feature

import wgkern as wk

PRELUDE = """
import json, os, sys
import numpy as np
import {module} as qd
qd.init(arch=getattr(qd, os.environ.get("TILE_ARCH", "vulkan")))
"""


def start_tile_program(tmp_path, arch, body: str, module: str = "wgkern", tile: int = 16,
                       wide: bool = True) -> subprocess.CompletedProcess:
    """Run `body` after PRELUDE in a new process on `arch`; `wide`: lavapipe's subgroups hold `tile` invocations
    (LP_NATIVE_VECTOR_WIDTH=32 * tile), else the setting is removed and lavapipe's have 8."""
    path = tmp_path / f"tile_{module}.py"
    path.write_text(PRELUDE.replace("{module}", module) + textwrap.dedent(body))
    env = {**os.environ, "TILE_ARCH": str(arch.value if hasattr(arch, "value") else arch)}
    env.pop("LP_NATIVE_VECTOR_WIDTH", None)
    if wide:
        env["LP_NATIVE_VECTOR_WIDTH"] = str(32 * tile)
    if module == "wgkern":      # the wgkern this test imported, installed or not
        package_root = str(Path(wk.__file__).resolve().parents[1])
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=400, env=env)
    skip_if_profile_lacks_a_feature(done)
    return done


def run_tile_program(tmp_path, arch, body: str, module: str = "wgkern", tile: int = 16, wide: bool = True) -> dict:
    done = start_tile_program(tmp_path, arch, body, module, tile, wide)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


FACTOR = """
N = 16
n = 40
rng = np.random.default_rng(0)
M = rng.standard_normal((n, n))
S = (M @ M.T + n * np.eye(n)).astype(np.float32)
B = rng.standard_normal((2, n, n)).astype(np.float32)
U = rng.standard_normal((n, 2)).astype(np.float32)
H = qd.field(qd.f32, shape=(n, n))
L = qd.field(qd.f32, shape=(n, n))
B3 = qd.field(qd.f32, shape=(2, n, n))
X = qd.ndarray(qd.f32, shape=(N, N))
R = qd.field(qd.f32, shape=(N, N))
u = qd.field(qd.f32, shape=(n, 2))
H.from_numpy(S)
B3.from_numpy(B)
u.from_numpy(U)

@qd.func
def factor(T: qd.template(), EPS):
    # blocked left-looking Cholesky of H into L with tiles, as Genesis's island solver runs it
    N_BLOCKS = (n + N - 1) // N
    for k_blk in range(N_BLOCKS):
        k_lo = k_blk * N
        k_hi = qd.min(k_lo + N, n)
        L_kk = T.eye(dtype=qd.f32)
        L_kk[:] = H[k_lo:k_hi, k_lo:k_hi]
        for j_blk in range(k_blk):
            j_lo = j_blk * N
            for i_col in range(N):
                v = L[k_lo:k_hi, j_lo + i_col]
                L_kk -= qd.outer(v, v)
        L_kk.cholesky_(EPS)
        for i_blk in range(k_blk + 1, N_BLOCKS):
            i_lo = i_blk * N
            i_hi = qd.min(i_lo + N, n)
            L_ik = T.zeros(dtype=qd.f32)
            L_ik[:] = H[i_lo:i_hi, k_lo:k_hi]
            for j_blk in range(k_blk):
                j_lo = j_blk * N
                for i_col in range(N):
                    a = L[i_lo:i_hi, j_lo + i_col]
                    b = L[k_lo:k_hi, j_lo + i_col]
                    L_ik -= qd.outer(a, b)
            L_kk.solve_triangular_(L_ik)
            L[i_lo:i_hi, k_lo:k_hi] = L_ik
        L[k_lo:k_hi, k_lo:k_hi] = L_kk
        qd.simt.subgroup.sync()

@qd.kernel
def run(x: qd.types.ndarray(qd.f32, ndim=2)):
    qd.loop_config(block_dim=N)
    for i in range(N):
        factor(qd.simt.Tile16x16, 1e-12)
        shared = qd.simt.block.SharedArray((N, N), qd.f32)
        t = qd.simt.Tile16x16.zeros(dtype=qd.f32)
        t[:] = B3[1, 3:3 + N, 2:2 + N]            # a 3-d slice into a tile, out to an ndarray and a shared array
        x[0:N, 0:N] = t
        shared[0:N, 0:N] = t
        qd.simt.subgroup.sync()
        w = qd.simt.Tile16x16.zeros(dtype=qd.f32)
        w[:] = shared[0:N, 0:12]                  # columns past the slice stay 0
        w -= qd.outer(u[0:N, 0], u[4:N + 4, 1])
        w -= qd.outer(u[30:n + 9, 1], u[0:N, 0])  # rows past the array read 0
        R[0:N, 0:N] = w

run(X)
print(json.dumps({"L": np.tril(L.to_numpy()).tolist(), "X": X.to_numpy().tolist(), "R": R.to_numpy().tolist()}))
"""


def test_blocked_cholesky_slices_and_outer_products(gpu, tmp_path):
    out = run_tile_program(tmp_path, gpu, FACTOR)
    n, N = 40, 16
    rng = np.random.default_rng(0)
    M = rng.standard_normal((n, n))
    S = (M @ M.T + n * np.eye(n)).astype(np.float32).astype(np.float64)
    B = rng.standard_normal((2, n, n)).astype(np.float32)
    U = rng.standard_normal((n, 2)).astype(np.float32).astype(np.float64)
    exact = np.linalg.cholesky(S)
    # Cholesky's backward error is |dA| <= (n + 1) u |L| |L^T| (Higham, Thm. 10.3) with u = 2^-24; the factor's
    # forward error is then at most cond(S) times that relative to |L|, and the blocked order adds one rounding
    # per block update: 4 (n + 1) u cond(S) max|L| bounds every entry
    tolerance = 4 * (n + 1) * 2.0**-24 * np.linalg.cond(S) * np.abs(exact).max()
    np.testing.assert_allclose(np.array(out["L"]), exact, rtol=0, atol=tolerance)
    np.testing.assert_array_equal(np.array(out["X"], np.float32), B[1, 3:3 + N, 2:2 + N])
    expected = np.zeros((N, N))
    expected[:, :12] = B[1, 3:3 + N, 2:2 + 12]
    column = np.zeros(N)
    column[:n - 30] = U[30:, 1]
    expected -= np.outer(U[:N, 0], U[4:N + 4, 1]) + np.outer(column, U[:N, 0])
    # each entry: two products and two subtractions in f32, |error| <= 4 u (|w| + sum |u_i v_j|)
    bound = 4 * 2.0**-24 * (np.abs(expected).max() + 2 * np.abs(U).max() ** 2)
    np.testing.assert_allclose(np.array(out["R"]), expected, rtol=0, atol=bound)


def test_blocked_cholesky_matches_quadrants(gpu, tmp_path):
    if gpu != wk.vulkan:
        pytest.skip("Quadrants runs this program on Vulkan here")
    pytest.importorskip("quadrants")
    ours = run_tile_program(tmp_path, gpu, FACTOR)
    theirs = run_tile_program(tmp_path, gpu, FACTOR, module="quadrants")
    np.testing.assert_array_equal(ours["X"], theirs["X"])
    # the same algorithm with its dot products summed in another order: within the forward bound above
    np.testing.assert_allclose(ours["L"], theirs["L"], rtol=0, atol=1e-5)
    np.testing.assert_allclose(ours["R"], theirs["R"], rtol=0, atol=1e-5)


SOLVE32 = """
N = 32
lanes = qd.field(qd.i32, shape=())

@qd.kernel
def count_lanes():
    qd.loop_config(block_dim=N)
    for i in range(N):
        lanes[None] = qd.simt.subgroup.reduce_add(1)

count_lanes()
if lanes[None] != N:
    print(json.dumps({"skip": f"the subgroups here sum over {lanes[None]} invocations, not 32"}))
    sys.exit(0)
rng = np.random.default_rng(5)
M = rng.standard_normal((N, N))
S = (M @ M.T + N * np.eye(N)).astype(np.float32)
B = rng.standard_normal((N, N)).astype(np.float32)
A = qd.field(qd.f32, shape=(N, N))
Bf = qd.field(qd.f32, shape=(N, N))
E = qd.field(qd.f32, shape=(N, N))
A.from_numpy(S)
Bf.from_numpy(B)

@qd.kernel
def run():
    qd.loop_config(block_dim=N)
    for i in range(N):
        L = qd.simt.Tile32x32.eye()
        e = qd.simt.Tile32x32.eye(dtype=qd.f32)
        L[:] = A[0:N, 0:N]
        L.cholesky_(1e-12)
        b = qd.simt.Tile32x32.zeros()
        b[:] = Bf[0:N, 0:N]
        L.solve_triangular_(b)
        Bf[0:N, 0:N] = b
        E[0:N, 0:N] = e
        A[0:N, 0:N] = L

run()
print(json.dumps({"L": np.tril(A.to_numpy()).tolist(), "X": Bf.to_numpy().tolist(), "E": E.to_numpy().tolist()}))
"""


def test_tile32_factor_and_triangular_solve(gpu, tmp_path):
    out = run_tile_program(tmp_path, gpu, SOLVE32, tile=32)
    if "skip" in out:           # lavapipe reports 32 invocations at LP_NATIVE_VECTOR_WIDTH=1024 but runs 16
        pytest.skip(out["skip"])
    N = 32
    rng = np.random.default_rng(5)
    M = rng.standard_normal((N, N))
    S = (M @ M.T + N * np.eye(N)).astype(np.float32).astype(np.float64)
    B = rng.standard_normal((N, N)).astype(np.float32).astype(np.float64)
    exact = np.linalg.cholesky(S)
    solution = np.linalg.solve(exact, B.T).T             # X L^T = B
    tolerance = 4 * (N + 1) * 2.0**-24 * np.linalg.cond(S)       # as above, relative to max|L| and max|X|
    np.testing.assert_allclose(np.array(out["L"]), exact, rtol=0, atol=tolerance * np.abs(exact).max())
    np.testing.assert_allclose(np.array(out["X"]), solution, rtol=0, atol=tolerance * np.abs(solution).max())
    assert out["E"] == np.eye(N).tolist()


def test_tile_errors_name_the_line(gpu):
    a = wk.field(wk.f32, shape=(16, 16))

    @wk.kernel
    def open_slice():
        for i in range(16):
            t = wk.simt.Tile16x16.zeros()
            t[:] = a[0:, 0:16]

    @wk.kernel
    def add_outer():
        for i in range(16):
            t = wk.simt.Tile16x16.zeros()
            t += wk.outer(a[0:16, 0], a[0:16, 1])

    @wk.kernel
    def from_a_column():
        for i in range(16):
            t = wk.simt.Tile16x16.zeros()
            t[:] = a[0:16, 3]

    @wk.kernel
    def one_index_slice():
        for i in range(16):
            a[i, 0] = a[0:4]

    @wk.kernel
    def double():
        for i in range(16):
            t = wk.simt.Tile16x16.zeros(dtype=wk.f64)
            a[i, 0] = wk.cast(t.r[0], wk.f32)

    with pytest.raises(wk.CompileError, match="Tile16x16 holds f32 values .* not f64"):
        double()
    with pytest.raises(wk.CompileError, match="needs both row bounds and no step"):
        open_slice()
    with pytest.raises(wk.CompileError, match=r"takes `t -= wk.outer\(u, v\)` as its one update"):
        add_outer()
    with pytest.raises(wk.CompileError, match=r"t\[:\] loads a tile from a slice a\[r0:r1, c0:c1\]"):
        from_a_column()
    with pytest.raises(wk.CompileError, match="makes a tile slice: a\\[r0:r1, c0:c1\\]"):
        one_index_slice()


def test_the_cpu_has_no_tiles(arch):
    if arch != wk.cpu:
        pytest.skip("the CPU's refusal")
    out = wk.field(wk.f32, shape=4)

    @wk.kernel
    def k():
        for i in range(4):
            t = wk.simt.Tile16x16.zeros()
            out[i] = t.r[0]

    with pytest.raises(wk.CompileError, match="Tile16x16 lives in a subgroup's registers, which the cpu arch"):
        k()
