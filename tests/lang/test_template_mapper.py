"""qd.lang._template_mapper: its __builtins__ is the namespace kernels read builtin names from (Genesis sets
`__debug__` there to switch its kernels' debug blocks)."""
from __future__ import annotations

import builtins

import wgkern as wk


@wk.kernel
def debug_flag() -> wk.i32:
    result = 0
    if __debug__:
        result = 1
    return result


def test_builtins_namespace_reaches_kernels(arch):
    namespace = wk.lang._template_mapper.__builtins__
    assert namespace is vars(builtins)
    saved = namespace["__debug__"]
    namespace["__debug__"] = False
    try:
        assert debug_flag() == 0
    finally:
        namespace["__debug__"] = saved
    wk.init(arch=arch)                 # a new program: the kernel compiles again with the restored flag
    assert debug_flag() == 1
