"""Taichi's ti.tools.write_vtk: a 2-D or 3-D scalar field (or array) as cell data of a VTK rectilinear grid,
written by pyevtk as Taichi does (pyevtk is imported only here, and only when called)."""
from __future__ import annotations

from typing import Any

import numpy as np


def write_vtk(scalar_field: Any, filename: str) -> None:
    """Writes <filename>.vtr with the field's values as cell data named `filename`."""
    try:
        from pyevtk.hl import gridToVTK
    except ImportError:
        raise RuntimeError("write_vtk needs pyevtk to write VTK files (pip install pyevtk, or pip install "
                           "'wgkern[vtk]')") from None
    values = np.asarray(scalar_field.to_numpy() if hasattr(scalar_field, "to_numpy") else scalar_field)
    if values.ndim not in (2, 3):
        raise ValueError(f"write_vtk: scalar_field of shape {values.shape}; it must be a 2-D or 3-D scalar field")
    shape = values.shape
    if values.ndim == 2:
        values = values[np.newaxis, :, :]
        z = np.array([0, 1])
    else:
        z = np.arange(0, shape[2])
    gridToVTK(filename, x=np.arange(0, shape[0]), y=np.arange(0, shape[1]), z=z, cellData={filename: values})


__all__ = ["write_vtk"]
