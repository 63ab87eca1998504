"""Taichi's and Quadrants' exception names (`ti.lang.exception.TaichiCompilationError`, and the same names on
the package itself), each an alias of the wgkern error that covers the same failure (errors.py owns those)."""
from __future__ import annotations

from wgkern.errors import ArgumentError, CompileError, KernelAssertionError, WkError

_KINDS = {
    "CompilationError": CompileError, "SyntaxError": CompileError, "TypeError": CompileError,
    "NameError": CompileError, "RuntimeTypeError": ArgumentError, "RuntimeError": WkError,
    "IndexError": IndexError,     # a host-side index of the wrong length; BoundsCheckError is one too
    "AssertionError": KernelAssertionError,
}
ALIASES: dict[str, type] = {prefix + kind: error
                            for prefix in ("Taichi", "Quadrants") for kind, error in _KINDS.items()}
globals().update(ALIASES)
