"""`x.fill(v)` for a field below sparse nodes, run on the device: a struct-for over the field stores v into its
active elements, as Taichi's fill does (inactive elements keep reading 0 and stay inactive).

The host-side alternative (an activity mask over the whole dense shape, a download and an upload) costs
seconds for the large, mostly inactive grids sparse nodes are made for. The value is a scalar argument of the
field's dtype (converted by numpy on the host, as a dense fill converts it), so one compiled kernel per dtype
serves every field and value."""
from __future__ import annotations

from typing import Any

import numpy as np

from wgkern.lang import kernel_functions as wm
from wgkern.lang.kernel import Kernel
from wgkern.lang.types import DataType, template

_FILL_KERNELS: dict[DataType, Kernel] = {}


def _fill_kernel(dtype: DataType) -> Kernel:
    """The fill kernel whose value parameter has `dtype` (made once per dtype)."""
    found = _FILL_KERNELS.get(dtype)
    if found is None:
        def fill_active_elements(target, value):
            for index in wm.grouped(target):
                target[index] = value
        fill_active_elements.__annotations__ = {"target": template(), "value": dtype}
        found = _FILL_KERNELS[dtype] = Kernel(fill_active_elements)
    return found


def fill_active(field: Any, value: Any) -> bool:
    """Fill the active elements of a field below sparse nodes with one scalar value on the device. False
    (nothing done) where that does not apply: a value per element component, or a quantized field (whose
    stores the host path rounds)."""
    data = np.asarray(value)
    if data.shape != () or getattr(field, "quant", None) is not None:
        return False
    stored = data.astype(field.dtype.np_dtype)        # the value the field holds, as a dense fill converts it
    _fill_kernel(field.dtype)(field, stored.item())
    return True
