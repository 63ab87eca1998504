"""Quadrants' `qd.lang._template_mapper`: the module that maps a kernel's template arguments to the key of its
compiled variant. wgkern's mapping is `template_key` (lang/argument_checks.py), named here.

Programs reach this module for its `__builtins__` (the interpreter's builtins namespace): Genesis sets
`__builtins__["__debug__"]` there to switch the `if __debug__:` blocks of its kernels, and wgkern's kernel
compiler reads a kernel's names from that same namespace after the function's globals."""
from __future__ import annotations

from wgkern.lang.argument_checks import template_key  # noqa: F401 - the mapping this module stands for
