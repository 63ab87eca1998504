"""PyTorch interop (lang/torch_interop.py): to_torch(copy=True|False|None), _unwrap(), and torch tensors as
ndarray kernel arguments (in place on the CPU, staged in and out elsewhere). Skipped without torch."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from wgkern.runtime.arch import Arch

torch = pytest.importorskip("torch")


@wk.kernel
def scale(values: wk.types.ndarray(dtype=wk.f32, ndim=1), factor: wk.f32):
    for i in values:
        values[i] = values[i] * factor


@wk.kernel
def add_rows(target: wk.types.ndarray(dtype=wk.f32, ndim=2), source: wk.types.ndarray()):
    for i, j in target:
        target[i, j] += source[i, j]


@wk.kernel
def fill_vector_field(x: wk.template(), value: wk.f32):
    for i in x:
        x[i] = wk.Vector([value, value, value])


@wk.kernel
def fill_vector_ndarray(x: wk.types.ndarray(), value: wk.f32):
    for i in x:
        x[i] = wk.Vector([value, value, value])


@wk.kernel
def total(values: wk.types.ndarray(dtype=wk.i32, ndim=1)) -> wk.i32:
    result = 0
    for i in values:
        result += values[i]
    return result


def test_unwrap_is_the_container(arch):
    x = wk.ndarray(wk.f32, 3)
    y = wk.field(wk.f32, 3)
    assert x._unwrap() is x and y._unwrap() is y
    assert wk.Tensor(x)._unwrap() is x


@pytest.mark.parametrize("make", [wk.field, wk.ndarray])
def test_to_torch_copies_by_default(arch, make):
    x = make(wk.f32, shape=(2, 3))
    x.fill(1.5)
    copied = x.to_torch()
    copied += 1.0
    np.testing.assert_array_equal(x.to_numpy(), np.full((2, 3), 1.5, np.float32))
    assert tuple(copied.shape) == (2, 3) and copied.dtype == torch.float32


@pytest.mark.parametrize("make", [wk.field, wk.ndarray])
def test_to_torch_without_copy(arch, make):
    x = make(wk.types.vector(3, wk.f32), shape=4)
    x.fill(2.0)
    if arch in (Arch.cpu, Arch.cuda):             # host memory on the CPU, cuda:0's memory on CUDA
        shared = x.to_torch(copy=False)
        assert tuple(shared.shape) == (4, 3) and shared.device.type == ("cpu" if arch == Arch.cpu else "cuda")
        shared[1, 2] = -7.0                      # the tensor is the container's memory
        assert x.to_numpy()[1, 2] == -7.0
        scale_field = x.to_numpy()
        assert scale_field.sum() == pytest.approx(2.0 * 11 - 7.0)
        assert x.to_torch(copy=None).data_ptr() == shared.data_ptr()
        (fill_vector_field if make is wk.field else fill_vector_ndarray)(x, 3.0)   # the tensor reads a kernel's write
        assert shared.sum().item() == pytest.approx(3.0 * 12)
        with pytest.raises(ValueError, match=r"is in (cpu|cuda:0) memory; to_torch\(device='meta', copy=False\)"):
            x.to_torch(device="meta", copy=False)
    else:
        with pytest.raises(ValueError, match=rf"lives in device memory on wk\.{arch.value}; zero-copy"):
            x.to_torch(copy=False)
        fallback = x.to_torch(copy=None)         # a copy, as Quadrants falls back
        np.testing.assert_array_equal(fallback.numpy(), np.full((4, 3), 2.0, np.float32))


def test_to_torch_of_booleans(arch):
    flags = wk.ndarray(wk.u1, 3)
    flags[1] = True
    assert flags.to_torch(copy=None).tolist() == [False, True, False]
    if arch not in (Arch.cpu, Arch.cuda):        # stored as u32 on Vulkan: no view either way
        with pytest.raises(ValueError, match="copy"):
            flags.to_torch(copy=False)


def test_torch_tensor_as_ndarray_argument(arch):
    values = torch.arange(6, dtype=torch.float32)
    address = values.data_ptr()
    scale(values, 2.0)
    scale(values, 0.5)
    scale(values, 3.0)
    np.testing.assert_array_equal(values.numpy(), np.arange(6, dtype=np.float32) * 3.0)
    assert values.data_ptr() == address
    counts = torch.tensor([3, 4, 5], dtype=torch.int32)
    assert total(counts) == 12


def test_torch_tensors_unannotated_and_strided(arch):
    target = torch.zeros((3, 4), dtype=torch.float32)
    source = torch.arange(12, dtype=torch.float32).reshape(4, 3).t()    # a transposed (non-contiguous) view
    add_rows(target, source)
    np.testing.assert_array_equal(target.numpy(), source.numpy())
    column = torch.ones((4, 3), dtype=torch.float32)[:, 1]               # strided: staged, written back
    scale(column, 5.0)
    np.testing.assert_array_equal(column.numpy(), np.full(4, 5.0, np.float32))


def test_a_new_tensor_each_call_and_resized_storage(arch):
    for n in (3, 5, 3):
        values = torch.ones(n, dtype=torch.float32)
        scale(values, float(n))
        np.testing.assert_array_equal(values.numpy(), np.full(n, float(n), np.float32))
    grown = torch.ones(2, dtype=torch.float32)
    scale(grown, 2.0)
    grown.resize_(8).fill_(1.0)                  # same tensor, new storage and shape
    scale(grown, 4.0)
    np.testing.assert_array_equal(grown.numpy(), np.full(8, 4.0, np.float32))


def test_tensor_errors_name_the_parameter(arch):
    with pytest.raises(wk.ArgumentError, match=r"parameter 'values' expects dtype wk\.f32, got wk\.f64"):
        scale(torch.zeros(3, dtype=torch.float64), 1.0)
    with pytest.raises(wk.ArgumentError, match=r"parameter 'values' expects ndim=1"):
        scale(torch.zeros((2, 2), dtype=torch.float32), 1.0)


needs_cuda_tensors = pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA device")


@needs_cuda_tensors
def test_cuda_tensors_as_ndarray_arguments(arch):
    """On the CUDA arch a cuda:0 tensor runs in place (no copy: the same address, results visible to torch
    without a transfer); elsewhere it is refused naming both devices."""
    values = torch.arange(6, dtype=torch.float32, device="cuda")
    if arch != Arch.cuda:
        with pytest.raises(wk.ArgumentError, match=rf"parameter 'values' got a torch tensor on cuda:0, and this "
                                                   rf"program runs on wk\.{arch.value} .*pass tensor\.cpu\(\)"):
            scale(values, 2.0)
        return
    address = values.data_ptr()
    for factor in (2.0, 0.5, 3.0):
        scale(values, factor)
    torch.testing.assert_close(values.cpu(), torch.arange(6, dtype=torch.float32) * 3.0)
    assert values.data_ptr() == address
    assert total(torch.tensor([3, 4, 5], dtype=torch.int32, device="cuda")) == 12
    rows = torch.zeros((3, 4), dtype=torch.float32, device="cuda")
    with pytest.raises(wk.ArgumentError, match=r"non-contiguous torch tensor of torch.float32 on cuda:0"):
        add_rows(rows, torch.ones((4, 3), dtype=torch.float32, device="cuda").t())
    # a tensor torch frees and reallocates between launches: each launch uses the memory it is given
    for n in (3, 5, 3):
        fresh = torch.ones(n, dtype=torch.float32, device="cuda")
        scale(fresh, float(n))
        torch.testing.assert_close(fresh.cpu(), torch.full((n,), float(n)))
