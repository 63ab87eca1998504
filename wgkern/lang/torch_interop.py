"""PyTorch interop: `x.to_torch(device, copy=...)` of a field or ndarray; torch tensors passed directly as
`wk.types.ndarray()` kernel arguments are lang/torch_arguments.py.

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

import sys
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
