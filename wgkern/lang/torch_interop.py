"""PyTorch interop: `x.to_torch(device, copy=...)` of a field or ndarray; torch tensors passed directly as
`wk.types.ndarray()` kernel arguments are lang/torch_arguments.py.

Zero-copy needs memory that both the kernels and torch use directly: host memory on the CPU arch, and on the
CUDA arch the device's memory (torch's `cuda:N` shares wgkern's primary context and legacy default stream):
- `to_torch(copy=False)` there gives a tensor over the container's memory (a DLPack export on the CPU, the CUDA
  Array Interface on CUDA; wgkern caches nothing keyed on the contents while the tensor lives); elsewhere, or
  for a dtype stored differently (u1) or a `device` other than the container's, it raises ValueError (as
  Quadrants does); `copy=None` gives the view where it can and a copy otherwise; `copy=True` (the default)
  always copies.
- A torch tensor passed for an ndarray parameter runs in place where its device is the program's (a CPU tensor
  on the CPU arch, a CUDA tensor on CUDA): a wk.ndarray adopting the tensor's memory (cached per tensor while
  its storage, shape and dtype stay the same). A CPU tensor on the other arches is staged as a numpy argument:
  copied in before the launch and, when the kernel writes it, back out into the tensor. A tensor on another
  device is refused with an ArgumentError naming both devices."""
from __future__ import annotations

import sys
import weakref
from typing import Any

from wgkern.errors import WkError

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
    view = container._host_ready()       # (placing a .grad placeholder first, as any host access)
    shared = container.program.backend.torch_device
    if view is None and shared is None:
        return (f"{container.kind_name} '{container.name}' lives in device memory on {container.program.arch!r}; "
                "zero-copy to_torch(copy=False) needs the CPU or CUDA arch (copy=None or copy=True copies)")
    if not container._same_storage:
        return (f"{container.kind_name} '{container.name}' of {container.dtype!r} is stored as "
                f"{container.storage_dtype}, which torch cannot view as {container.dtype!r}; use copy=True")
    home = "cpu" if view is not None else f"{shared[0]}:{shared[1]}"
    if device is not None and _device_name(device) != home:
        return (f"{container.kind_name} '{container.name}' is in {home} memory; to_torch(device={str(device)!r}, "
                "copy=False) would need a transfer (use copy=None or copy=True)")
    return None


def device_key(device: Any) -> tuple[str, int]:
    """A torch device (or its name) as (type, index), the form of Backend.torch_device; index 0 when unnamed."""
    if not hasattr(device, "type"):   # a name or an index; a torch.device is used as it is (a launch's tensors)
        device = _torch().device(device)
    return (device.type, device.index or 0)


def _device_name(device: Any) -> str:
    kind, index = device_key(device)
    return kind if kind == "cpu" else f"{kind}:{index}"


class _CudaArray:
    """A container's device memory described by the CUDA Array Interface (version 3), which torch.as_tensor
    takes without a copy; the tensor keeps this object, and so the container, alive. The stream is the legacy
    default stream (1), the one wgkern's CUDA launches use."""

    def __init__(self, container: Any):
        backend = container.program.backend
        self.container = container
        self.__cuda_array_interface__ = {
            "shape": container.full_shape, "typestr": container.storage_dtype.str, "strides": None,
            "data": (backend.device_address(container.buffer), False), "version": 3, "stream": 1}


def container_to_torch(container: Any, device: Any, keep_dims: bool, copy: bool | None) -> Any:
    """Container.to_torch (see the module docstring)."""
    torch = _torch(container)
    if copy is not True:
        refusal = _zero_copy_refusal(container, device)
        if refusal is None:
            if container._view is not None:
                shared = torch.from_dlpack(container)
            else:
                exported = _CudaArray(container)
                container._exports.append(weakref.ref(exported))
                container.generation += 1      # torch may write through the tensor
                home = container.program.backend.torch_device
                shared = torch.as_tensor(exported, device=f"{home[0]}:{home[1]}")
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
