"""Vector swizzles as GLSL and Taichi name them: one to four letters of one group, `xyzw`, `rgba` or `stpq`
(`v.zyx`, `color.rgb`, `uv.st`). Python-scope vectors (host_matrix.py) and kernel code (frontend) both read
names through `positions`, so the two scopes accept the same names and refuse the same ones."""
from __future__ import annotations

from wgkern.errors import CompileError, WkError

GROUPS = ("xyzw", "rgba", "stpq")


def positions(name: str, n: int) -> list[int] | None:
    """The components `name` picks from a vector of `n`, or None when `name` is no swizzle (letters of no one
    group, or more than four). Letters of a group past the vector's size are a CompileError in Taichi's words
    (`vec2 only has attributes=('x', 'y'), got=('z',)`)."""
    if not 1 <= len(name) <= 4:
        return None
    for group in GROUPS:
        if all(c in group for c in name):
            picked = [group.index(c) for c in name]
            if max(picked) >= n:
                raise CompileError(f"vec{n} only has attributes={tuple(sorted(group[:n]))}, got={tuple(name)}")
            return picked
    return None


def check_length(name: str, count: int) -> None:
    """A swizzle store `v.xy = value` needs as many values as letters (Taichi's TaichiRuntimeError)."""
    if count != len(name):
        raise WkError(f"value len does not match the swizzle pattern={name}")
