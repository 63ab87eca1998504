"""The cores of Taichi's implicit solver examples (implicit_mass_spring, stable_fluid -S, implicit_fem -s),
shortened: the same program text runs on wgkern and, where Taichi is importable, on Taichi in a subprocess."""
from __future__ import annotations

import json
import runpy
import subprocess
import sys

import numpy as np
import pytest

import wgkern as wk

# implicit_mass_spring.py's Cloth, trimmed to its linear algebra (N=3, a few steps)
MASS_SPRING = '''
import numpy as np

@ti.data_oriented
class Cloth:
    def __init__(self, N):
        self.N = N
        self.NV = (N + 1) ** 2
        self.NE = 2 * N * (N + 1) + 2 * N * N
        self.pos = ti.Vector.field(2, ti.f32, self.NV)
        self.initPos = ti.Vector.field(2, ti.f32, self.NV)
        self.vel = ti.Vector.field(2, ti.f32, self.NV)
        self.force = ti.Vector.field(2, ti.f32, self.NV)
        self.mass = ti.field(ti.f32, self.NV)
        self.vel_1D = ti.ndarray(ti.f32, 2 * self.NV)
        self.force_1D = ti.ndarray(ti.f32, 2 * self.NV)
        self.b = ti.ndarray(ti.f32, 2 * self.NV)
        self.spring = ti.Vector.field(2, ti.i32, self.NE)
        self.Jx = ti.Matrix.field(2, 2, ti.f32, self.NE)
        self.Jv = ti.Matrix.field(2, 2, ti.f32, self.NE)
        self.rest_len = ti.field(ti.f32, self.NE)
        self.ks, self.kd, self.kf = 1000.0, 0.5, 1.0e5
        self.gravity = ti.Vector([0.0, -2.0])
        self.init_pos()
        self.init_edges()
        self.MassBuilder = ti.linalg.SparseMatrixBuilder(2 * self.NV, 2 * self.NV, max_num_triplets=10000)
        self.DBuilder = ti.linalg.SparseMatrixBuilder(2 * self.NV, 2 * self.NV, max_num_triplets=10000)
        self.KBuilder = ti.linalg.SparseMatrixBuilder(2 * self.NV, 2 * self.NV, max_num_triplets=10000)
        self.init_mass_sp(self.MassBuilder)
        self.M = self.MassBuilder.build()
        self.Jf = ti.Matrix.field(2, 2, ti.f32, 2)

    @ti.kernel
    def init_pos(self):
        for i, j in ti.ndrange(self.N + 1, self.N + 1):
            k = i * (self.N + 1) + j
            self.pos[k] = ti.Vector([i, j]) / self.N * 0.5 + ti.Vector([0.25, 0.25])
            self.initPos[k] = self.pos[k]
            self.mass[k] = 1.0

    @ti.kernel
    def init_edges(self):
        pos, spring, N, rest_len = ti.static(self.pos, self.spring, self.N, self.rest_len)
        for i, j in ti.ndrange(N + 1, N):
            idx, idx1 = i * N + j, i * (N + 1) + j
            spring[idx] = ti.Vector([idx1, idx1 + 1])
            rest_len[idx] = (pos[idx1] - pos[idx1 + 1]).norm()
        start = N * (N + 1)
        for i, j in ti.ndrange(N, N + 1):
            idx, idx1, idx2 = start + i + j * N, i * (N + 1) + j, i * (N + 1) + j + N + 1
            spring[idx] = ti.Vector([idx1, idx2])
            rest_len[idx] = (pos[idx1] - pos[idx2]).norm()
        start = 2 * N * (N + 1)
        for i, j in ti.ndrange(N, N):
            idx, idx1, idx2 = start + i * N + j, i * (N + 1) + j, (i + 1) * (N + 1) + j + 1
            spring[idx] = ti.Vector([idx1, idx2])
            rest_len[idx] = (pos[idx1] - pos[idx2]).norm()
        start = 2 * N * (N + 1) + N * N
        for i, j in ti.ndrange(N, N):
            idx, idx1, idx2 = start + i * N + j, i * (N + 1) + j + 1, (i + 1) * (N + 1) + j
            spring[idx] = ti.Vector([idx1, idx2])
            rest_len[idx] = (pos[idx1] - pos[idx2]).norm()

    @ti.kernel
    def init_mass_sp(self, M: ti.types.sparse_matrix_builder()):
        for i in range(self.NV):
            mass = self.mass[i]
            M[2 * i + 0, 2 * i + 0] += mass
            M[2 * i + 1, 2 * i + 1] += mass

    @ti.kernel
    def compute_force(self):
        for i in self.force:
            self.force[i] = self.gravity * self.mass[i]
        for i in self.spring:
            idx1, idx2 = self.spring[i][0], self.spring[i][1]
            dis = self.pos[idx2] - self.pos[idx1]
            force = self.ks * (dis.norm() - self.rest_len[i]) * dis.normalized()
            self.force[idx1] += force
            self.force[idx2] -= force
        self.force[self.N] += self.kf * (self.initPos[self.N] - self.pos[self.N])
        self.force[self.NV - 1] += self.kf * (self.initPos[self.NV - 1] - self.pos[self.NV - 1])

    @ti.kernel
    def compute_Jacobians(self):
        for i in self.spring:
            idx1, idx2 = self.spring[i][0], self.spring[i][1]
            dx = self.pos[idx1] - self.pos[idx2]
            I = ti.Matrix([[1.0, 0.0], [0.0, 1.0]])
            dxtdx = ti.Matrix([[dx[0] * dx[0], dx[0] * dx[1]], [dx[1] * dx[0], dx[1] * dx[1]]])
            l = dx.norm()
            if l != 0.0:
                l = 1.0 / l
            self.Jx[i] = (I - self.rest_len[i] * l * (I - dxtdx * l**2)) * self.ks
            self.Jv[i] = self.kd * I
        self.Jf[0] = ti.Matrix([[-self.kf, 0], [0, -self.kf]])
        self.Jf[1] = ti.Matrix([[-self.kf, 0], [0, -self.kf]])

    @ti.kernel
    def assemble_K(self, K: ti.types.sparse_matrix_builder()):
        for i in self.spring:
            idx1, idx2 = self.spring[i][0], self.spring[i][1]
            for m, n in ti.static(ti.ndrange(2, 2)):
                K[2 * idx1 + m, 2 * idx1 + n] -= self.Jx[i][m, n]
                K[2 * idx1 + m, 2 * idx2 + n] += self.Jx[i][m, n]
                K[2 * idx2 + m, 2 * idx1 + n] += self.Jx[i][m, n]
                K[2 * idx2 + m, 2 * idx2 + n] -= self.Jx[i][m, n]
        for m, n in ti.static(ti.ndrange(2, 2)):
            K[2 * self.N + m, 2 * self.N + n] += self.Jf[0][m, n]
            K[2 * (self.NV - 1) + m, 2 * (self.NV - 1) + n] += self.Jf[1][m, n]

    @ti.kernel
    def assemble_D(self, D: ti.types.sparse_matrix_builder()):
        for i in self.spring:
            idx1, idx2 = self.spring[i][0], self.spring[i][1]
            for m, n in ti.static(ti.ndrange(2, 2)):
                D[2 * idx1 + m, 2 * idx1 + n] -= self.Jv[i][m, n]
                D[2 * idx1 + m, 2 * idx2 + n] += self.Jv[i][m, n]
                D[2 * idx2 + m, 2 * idx1 + n] += self.Jv[i][m, n]
                D[2 * idx2 + m, 2 * idx2 + n] -= self.Jv[i][m, n]

    @ti.kernel
    def updatePosVel(self, h: ti.f32, dv: ti.types.ndarray()):
        for i in self.pos:
            self.vel[i] += ti.Vector([dv[2 * i], dv[2 * i + 1]])
            self.pos[i] += h * self.vel[i]

    @ti.kernel
    def copy_to(self, des: ti.types.ndarray(), source: ti.template()):
        for i in range(self.NV):
            des[2 * i] = source[i][0]
            des[2 * i + 1] = source[i][1]

    @ti.kernel
    def compute_b(self, b: ti.types.ndarray(), f: ti.types.ndarray(), Kv: ti.types.ndarray(), h: ti.f32):
        for i in range(2 * self.NV):
            b[i] = (f[i] + Kv[i] * h) * h

    def update(self, h):
        self.compute_force()
        self.compute_Jacobians()
        self.assemble_D(self.DBuilder)
        D = self.DBuilder.build()
        self.assemble_K(self.KBuilder)
        K = self.KBuilder.build()
        A = self.M - h * D - h**2 * K
        self.copy_to(self.vel_1D, self.vel)
        self.copy_to(self.force_1D, self.force)
        Kv = K @ self.vel_1D
        self.compute_b(self.b, self.force_1D, Kv, h)
        solver = ti.linalg.SparseSolver(solver_type="LDLT")
        solver.analyze_pattern(A)
        solver.factorize(A)
        dv = solver.solve(self.b)
        self.updatePosVel(h, dv)
        return A, K, D, dv


cloth = Cloth(N=3)
for _ in range(3):
    A, K, D, dv = cloth.update(0.01)
result = {"pos": cloth.pos.to_numpy().tolist(), "dv": dv.to_numpy().tolist(), "b": cloth.b.to_numpy().tolist(),
          "A": [[A[i, j] for j in range(A.m)] for i in range(A.n)]}
'''

# stable_fluid.py -S: the Laplacian assembled in a kernel, factorized once, solved (res=8)
STABLE_FLUID = '''
import numpy as np
res = 8

@ti.kernel
def fill_laplacian_matrix(A: ti.types.sparse_matrix_builder()):
    for i, j in ti.ndrange(res, res):
        row = i * res + j
        center = 0.0
        if j != 0:
            A[row, row - 1] += -1.0
            center += 1.0
        if j != res - 1:
            A[row, row + 1] += -1.0
            center += 1.0
        if i != 0:
            A[row, row - res] += -1.0
            center += 1.0
        if i != res - 1:
            A[row, row + res] += -1.0
            center += 1.0
        A[row, row] += center

N = res * res
K = ti.linalg.SparseMatrixBuilder(N, N, max_num_triplets=N * 6)
F_b = ti.ndarray(ti.f32, shape=N)
fill_laplacian_matrix(K)
L = K.build()
solver = ti.linalg.SparseSolver(solver_type="LDLT")
solver.analyze_pattern(L)
solver.factorize(L)
b = np.sin(np.arange(N)).astype(np.float32)
b -= b.mean()
F_b.from_numpy(b)
x = solver.solve(F_b)
result = {"L": [[L[i, j] for j in range(N)] for i in range(N)], "x": x.to_numpy().tolist(), "b": b.tolist()}
'''


def run_here(program: str, directory) -> dict:
    path = directory / "example.py"        # kernels are parsed from their source file
    path.write_text(program)
    return runpy.run_path(str(path), init_globals={"ti": wk})["result"]


def run_on_taichi(program: str, directory) -> dict:
    """The program's result on Taichi (CPU) in a subprocess; the test skips where taichi is not installed."""
    pytest.importorskip("taichi")
    script = ("import json, taichi as ti\nti.init(arch=ti.cpu, log_level=ti.ERROR)\n" + program
              + "\nprint('RESULT' + json.dumps(result))\n")
    path = directory / "example_taichi.py"
    path.write_text(script)
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT")]
    if done.returncode != 0 or not lines:
        pytest.fail(f"the example failed on Taichi: {done.stderr[-2000:]}")
    return json.loads(lines[-1][len("RESULT"):])


def test_implicit_mass_spring_core(arch, tmp_path):
    ours = run_here(MASS_SPRING, tmp_path)
    a, b, dv = (np.array(ours[k]) for k in ("A", "b", "dv"))
    np.testing.assert_allclose(a, a.T, rtol=1e-5, atol=1e-3)           # M - hD - h^2 K is symmetric
    np.testing.assert_allclose(dv, np.linalg.solve(a, b), rtol=1e-3, atol=1e-6)


def test_implicit_mass_spring_matches_taichi(arch, tmp_path):
    taichi = run_on_taichi(MASS_SPRING, tmp_path)
    ours = run_here(MASS_SPRING, tmp_path)
    np.testing.assert_allclose(np.array(ours["A"]), np.array(taichi["A"]), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(np.array(ours["pos"]), np.array(taichi["pos"]), rtol=1e-4, atol=1e-5)


def test_stable_fluid_poisson_core(arch, tmp_path):
    ours = run_here(STABLE_FLUID, tmp_path)
    laplacian, x, b = (np.array(ours[k]) for k in ("L", "x", "b"))
    assert np.allclose(laplacian.sum(axis=1), 0) and laplacian[0, 0] == 2 and laplacian[9, 9] == 4
    np.testing.assert_allclose(laplacian @ x, b, atol=1e-3)              # singular but consistent


def test_stable_fluid_poisson_matches_taichi(arch, tmp_path):
    taichi = run_on_taichi(STABLE_FLUID, tmp_path)
    ours = run_here(STABLE_FLUID, tmp_path)
    x = np.array(ours["x"])
    np.testing.assert_array_equal(np.array(ours["L"]), np.array(taichi["L"]))
    t = np.array(taichi["x"])
    np.testing.assert_allclose(x - x.mean(), t - t.mean(), atol=1e-3)     # both solve up to a constant
