"""Taichi's `taichi.lang.expr.Expr`, the class of a kernel-scope value. Programs ask
`wk.static(isinstance(x, ti.lang.expr.Expr))` to tell a vector or matrix variable of the kernel from a field
(a sorting network that reads `x.n` of one and `x.shape[0]` of the other). Inside wk.static a runtime variable
is a stand-in (frontend/static_eval.py RuntimeOperand, with the shape of a vector variable; frontend/scope.py
VectorShape where only shapes are given), so that is what the check matches; a field, a Python value or a host
vector is not an Expr, as in Taichi. The frontend, which sits above this module, registers those classes in
`STAND_IN_CLASSES` when it is imported."""
from __future__ import annotations

from typing import Any


STAND_IN_CLASSES: list[type] = []    # the frontend's stand-ins for kernel values inside wk.static


class _ExprClass(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, tuple(STAND_IN_CLASSES))


class Expr(metaclass=_ExprClass):
    """Only for isinstance checks; kernel values are not built from it."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("wk.lang.expr.Expr is for isinstance checks inside wk.static(...); "
                        "kernel values are made by kernel code")
