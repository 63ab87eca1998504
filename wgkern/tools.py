"""`wk.tools`: the image helper of Taichi's ti.tools that ported programs call (`imwrite`)."""
from __future__ import annotations

from wgkern.gui import imwrite

__all__ = ["imwrite"]
