"""PyTorch interop: `x.to_torch(device, copy=...)` of a field or ndarray, and torch tensors passed directly as
`wk.types.ndarray()` kernel arguments.

Zero-copy needs the data in host memory the kernels use directly, which only the CPU arch has:
- `to_torch(copy=False)` on the CPU gives a tensor over the container's memory (a DLPack export, so wgkern
  caches nothing keyed on its contents while the tensor lives); elsewhere, or for a dtype stored differently
  (u1) or a `device` other than the CPU, it raises ValueError (as Quadrants does); `copy=None` gives the
  view where it can and a copy otherwise; `copy=True` (the default) always copies.
- A CPU torch tensor passed for an ndarray parameter runs in place on the CPU arch: a wk.ndarray adopting the
  tensor's memory (cached per tensor while its storage, shape and dtype stay the same). On the other arches it
  is staged as a numpy argument: copied in before the launch and, when the kernel writes it, back out into the
  tensor. A tensor on another torch device is refused with an ArgumentError (move it to the CPU first)."""
from __future__ import annotations

import ctypes
import sys
import weakref
from typing import Any

import numpy as np

from wgkern.errors import ArgumentError, WkError

_CPU = (1, 0)      # DLPack's (kDLCPU, device 0)


def _torch(container: Any = None) -> Any:
    try:
        import torch
    except ImportError:
        what = f"{container.kind_name} '{container.name}'.to_torch()" if container is not None else "to_torch()"
        raise WkError(f"{what} needs PyTorch (pip install torch, or pip install 'wgkern[torch]'); to_numpy() "
                      "gives the contents as a numpy array") from None
    return torch


def _zero_copy_refusal(container: Any, device: Any) -> str | None:
    """Why `container` cannot be shared with torch without a copy (for `device`), or None when it can."""
    if container._host_ready() is None:       # (placing a .grad placeholder first, as any host access)
        return (f"{container.kind_name} '{container.name}' lives in device memory on {container.program.arch!r}; "
                "zero-copy to_torch(copy=False) needs the CPU arch (copy=None or copy=True copies)")
    if not container._same_storage:
        return (f"{container.kind_name} '{container.name}' of {container.dtype!r} is stored as "
                f"{container.storage_dtype}, which torch cannot view as {container.dtype!r}; use copy=True")
    if device is not None and _torch().device(device).type != "cpu":
        return (f"{container.kind_name} '{container.name}' is in host memory; to_torch(device={str(device)!r}, "
                "copy=False) would need a transfer (use copy=None or copy=True)")
    return None


def container_to_torch(container: Any, device: Any, keep_dims: bool, copy: bool | None) -> Any:
    """Container.to_torch (see the module docstring)."""
    torch = _torch(container)
    if copy is not True:
        refusal = _zero_copy_refusal(container, device)
        if refusal is None:
            shared = torch.from_dlpack(container)
            shape = container._numpy_shape(keep_dims)
            return shared if tuple(shared.shape) == shape else shared.view(shape)
        if copy is False:
            raise ValueError(refusal)
    tensor = torch.from_numpy(container.to_numpy(keep_dims=keep_dims))
    return tensor if device is None else tensor.to(device)


def is_torch_tensor(value: Any) -> bool:
    """Whether `value` is a torch tensor (without importing torch when the program never did)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


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
    """What a kernel gets for a torch tensor passed to an ndarray parameter: a wk.ndarray over its memory (CPU
    arch), else a numpy array sharing its memory (staged in and out like any numpy argument)."""
    if value.device.type != "cpu":
        raise ArgumentError(f"{where} got a torch tensor on {value.device}; wgkern takes CPU tensors as ndarray "
                            "arguments (pass tensor.cpu(), and copy the result back)")
    dtype = _numpy_dtype(value.dtype, where)
    if not program.backend.adopts_host_memory or not value.is_contiguous() or dtype == np.bool_:
        return _memory_of(value, dtype)       # staged: copied in, and back out into the tensor when written
    ident = id(value)
    signature = (value.data_ptr(), tuple(value.shape), value.dtype, program.id)
    cached = _adopted.get(ident)
    if cached is not None and cached[0]() is value and cached[1] == signature:
        return cached[2]
    # The cache entry is checked against the tensor's address and shape at every call, and dropped with the
    # tensor, so the adopted ndarray is only used while that memory is the tensor's.
    memory = _memory_of(value, dtype)
    from wgkern.lang.fields import Ndarray
    from wgkern.lang.types import from_numpy_dtype
    adopted = Ndarray(from_numpy_dtype(dtype), tuple(value.shape), name=f"torch tensor {tuple(value.shape)}",
                      host_memory=memory)
    try:
        reference = weakref.ref(value, lambda _, ident=ident: _adopted.pop(ident, None))
    except TypeError:                         # not weakly referable: adopted afresh at each call
        return adopted
    _adopted[ident] = (reference, signature, adopted)
    return adopted
