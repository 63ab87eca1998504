"""Torch tensors passed directly as `wk.types.ndarray()` kernel arguments: a wk.ndarray adopting the tensor's memory
where the kernels can use it in place (a CPU tensor on the CPU arch, a CUDA tensor on the CUDA arch of the same
device; cached per tensor while its storage, shape and dtype stay the same); a CPU tensor on the other arches is a
numpy array over its memory, staged in and out like any numpy argument (lang/torch_interop.py has the overview)."""
from __future__ import annotations

import ctypes
import weakref
from typing import Any

import numpy as np

from wgkern.errors import ArgumentError
from wgkern.lang.torch_interop import _torch, device_key


# id(tensor) -> (weak reference to the tensor, (data_ptr, shape, dtype), the wk.ndarray adopting its memory)
_adopted: dict[int, tuple[Any, tuple[Any, ...], Any]] = {}


_NUMPY_DTYPES: dict[Any, np.dtype] = {}     # torch dtype -> numpy dtype


def _numpy_dtype(torch_dtype: Any, where: str) -> np.dtype:
    dtype = _NUMPY_DTYPES.get(torch_dtype)
    if dtype is None:
        torch = _torch()
        try:
            dtype = torch.empty(0, dtype=torch_dtype).numpy().dtype
        except TypeError:
            raise ArgumentError(f"{where} got a torch tensor of {torch_dtype}, which has no numpy/wgkern "
                                "counterpart") from None
        _NUMPY_DTYPES[torch_dtype] = dtype
    return dtype


def _memory_of(tensor: Any, dtype: np.dtype) -> np.ndarray:
    """A numpy array over the tensor's elements (its strides too), reached by address: a numpy view made by
    `tensor.numpy()` would keep torch from ever resizing the tensor's storage."""
    shape = tuple(tensor.shape)
    strides = tuple(stride * dtype.itemsize for stride in tensor.stride())
    span = 1 + sum((size - 1) * stride for size, stride in zip(shape, tensor.stride())) if tensor.numel() else 1
    raw = np.ctypeslib.as_array((ctypes.c_uint8 * (span * dtype.itemsize)).from_address(tensor.data_ptr()))
    return np.lib.stride_tricks.as_strided(raw.view(dtype), shape, strides)


def torch_argument(value: Any, program: Any, where: str) -> Any:
    """What a kernel gets for a torch tensor passed to an ndarray parameter: a wk.ndarray over its memory (a CPU
    tensor on the CPU arch, a CUDA tensor on the CUDA arch of the same device), else, for a CPU tensor, a numpy
    array sharing its memory (staged in and out like any numpy argument)."""
    backend = program.backend
    on_device = value.device.type != "cpu"
    if on_device and device_key(value.device) != backend.torch_device:
        shared = (f"; tensors on {backend.torch_device[0]}:{backend.torch_device[1]} are used in place"
                  if backend.torch_device else "")
        raise ArgumentError(f"{where} got a torch tensor on {value.device}, and this program runs on "
                            f"{program.arch!r} ({program.description}){shared}; pass tensor.cpu() and copy the "
                            "result back, or wk.init() the arch of the tensor's device")
    dtype = _numpy_dtype(value.dtype, where)
    if on_device and not value.is_contiguous():
        raise ArgumentError(f"{where} got a non-contiguous torch tensor of {value.dtype} on {value.device}, which "
                            "kernels cannot use in place; pass tensor.contiguous()")
    if not on_device and (not backend.adopts_host_memory or not value.is_contiguous() or dtype == np.bool_):
        return _memory_of(value, dtype)       # staged: copied in, and back out into the tensor when written
    ident = id(value)
    signature = (value.data_ptr(), tuple(value.shape), value.dtype, program.id)
    cached = _adopted.get(ident)
    if cached is not None and cached[0]() is value and cached[1] == signature:
        return cached[2]
    # The cache entry is checked against the tensor's address and shape at every call, and dropped with the
    # tensor, so the adopted ndarray is only used while that memory is the tensor's.
    from wgkern.lang.fields import Ndarray
    from wgkern.lang.types import from_numpy_dtype
    memory = dict(device_address=value.data_ptr()) if on_device else dict(host_memory=_memory_of(value, dtype))
    adopted = Ndarray(from_numpy_dtype(dtype), tuple(value.shape), name=f"torch tensor {tuple(value.shape)}",
                      **memory)
    # (no reference to the tensor: the cache would keep it forever. Its memory may go back to torch's caching
    # allocator while a launch still uses it; torch reuses it only for work queued after that launch, on the
    # same legacy default stream.)
    try:
        reference = weakref.ref(value, lambda _, ident=ident: _adopted.pop(ident, None))
    except TypeError:                         # not weakly referable: adopted afresh at each call
        return adopted
    _adopted[ident] = (reference, signature, adopted)
    return adopted
