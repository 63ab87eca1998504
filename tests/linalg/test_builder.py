"""wk.linalg.SparseMatrixBuilder: triplets appended in kernels, build() (duplicates summed), overflow."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk


def test_kernel_triplets_build_the_dense_matrix(arch):
    n = 6
    builder = wk.linalg.SparseMatrixBuilder(n, n, max_num_triplets=100)

    @wk.kernel
    def fill(K: wk.types.sparse_matrix_builder(), scale: wk.f32):
        for i in range(n):
            K[i, i] += 2.0 * scale
            if i > 0:
                K[i, i - 1] -= scale
            if i < n - 1:
                K[i, i + 1] -= 1.5 * scale

    fill(builder, 2.0)
    expected = 4.0 * np.eye(n) - 2.0 * np.eye(n, k=-1) - 3.0 * np.eye(n, k=1)
    matrix = builder.build()
    assert matrix.shape == (n, n) and (matrix.n, matrix.m) == (n, n)
    np.testing.assert_allclose(matrix.to_numpy(), expected)
    assert matrix.to_numpy().dtype == np.float32
    assert matrix[1, 0] == -2.0 and matrix[0, 5] == 0.0


def test_duplicates_are_summed_and_build_empties_the_builder(arch):
    builder = wk.linalg.SparseMatrixBuilder(4, 5, max_num_triplets=1000, dtype=wk.f64)

    @wk.kernel
    def fill(K: wk.types.sparse_matrix_builder()):
        for i in range(400):          # 400 parallel appends to the same few entries
            K[i % 4, (i * 7) % 5] += 0.25
        K[3, 4] -= 1.0

    fill(builder)
    assert builder.num_triplets == 401
    expected = np.zeros((4, 5))
    for i in range(400):
        expected[i % 4, (i * 7) % 5] += 0.25
    expected[3, 4] -= 1.0
    matrix = builder.build()
    assert matrix.dtype == wk.f64
    np.testing.assert_allclose(matrix.to_numpy(), expected)
    assert builder.num_triplets == 0
    fill(builder)
    np.testing.assert_allclose(builder.build().to_numpy(), expected)


def test_builder_in_a_func_and_print_triplets(arch, capsys):
    builder = wk.linalg.SparseMatrixBuilder(3, 3, max_num_triplets=8)

    @wk.func
    def put(K: wk.template(), i, v):
        K[i, i] += v

    @wk.kernel
    def fill(K: wk.types.sparse_matrix_builder()):
        put(K, 0, 1.5)
        K[2, 1] -= 123456789.0

    fill(builder)
    builder.print_triplets()
    assert capsys.readouterr().out.splitlines() == [
        "n=3, m=3, num_triplets=2 (max=8)", "[0, 0] = 1.5", "[2, 1] = -123456790"]


def test_overflow_is_an_error_naming_max_num_triplets_and_writes_nothing_past_it(arch):
    builder = wk.linalg.SparseMatrixBuilder(8, 8, max_num_triplets=10)

    @wk.kernel
    def fill(K: wk.types.sparse_matrix_builder()):
        for i in range(64):
            K[i % 8, i // 8] += 1.0

    fill(builder)
    assert builder.num_triplets == 64
    with pytest.raises(wk.linalg.LinalgError, match="max_num_triplets=10"):
        builder.build()
    small = wk.linalg.SparseMatrixBuilder(8, 8, max_num_triplets=64)
    fill(small)          # the same kernel, a builder of another size: still correct
    np.testing.assert_allclose(small.build().to_numpy(), np.ones((8, 8)))
    assert builder.num_triplets == 0      # build() emptied it: usable again


def test_kernel_misuse_is_reported(arch):
    builder = wk.linalg.SparseMatrixBuilder(2, 2, max_num_triplets=4)

    @wk.kernel
    def multiply(K: wk.types.sparse_matrix_builder()):
        K[0, 0] *= 2.0

    @wk.kernel
    def one_index(K: wk.types.sparse_matrix_builder()):
        K[0] += 2.0

    with pytest.raises(wk.CompileError, match="only '\\+=' and '-='"):
        multiply(builder)
    with pytest.raises(wk.CompileError, match="two indices"):
        one_index(builder)
    with pytest.raises(wk.ArgumentError, match="SparseMatrixBuilder"):
        multiply(wk.ndarray(wk.f32, 4))


def test_builder_kernels_have_no_grad(arch):
    x = wk.field(wk.f32, 3, needs_grad=True)
    builder = wk.linalg.SparseMatrixBuilder(3, 3, max_num_triplets=4)

    @wk.kernel
    def fill(K: wk.types.sparse_matrix_builder()):
        for i in range(3):
            K[i, i] += x[i]

    fill(builder)
    with pytest.raises(wk.AutodiffError, match="sparse matrix builder 'K'"):
        fill.grad(builder)
