"""Vector and matrix values in Python scope: numpy arrays with the methods of Taichi's `ti.Vector`/`ti.Matrix`.

Outside kernels, `wk.Vector([...])`, `wk.Matrix([[...]])`, `wk.math.vec3(...)` and reading one element of a vector
or matrix field (`v[i]`) give a `HostMatrix`: an ordinary numpy array (arithmetic, `@`, indexing, numpy
functions all as usual) that also has `norm`, `norm_sqr`, `normalized`, `dot`, `cross`, `outer_product`,
`determinant`, `inverse`, `trace`, `to_numpy`, `x`/`y`/`z`/`w` and `n`/`m`, as Taichi programs use them in
Python scope. Reductions give Python-side numpy scalars; `to_numpy()` a plain array."""
from __future__ import annotations

from typing import Any

import numpy as np

_AXES = "xyzw"


class HostMatrix(np.ndarray):
    """See the module docstring."""

    def norm(self, eps: float = 0.0) -> Any:
        return np.sqrt(self.norm_sqr() + eps)

    def norm_sqr(self) -> Any:
        plain = np.asarray(self)
        return (plain * plain).sum()

    def normalized(self, eps: float = 0.0) -> HostMatrix:
        return (np.asarray(self) / self.norm(eps)).view(HostMatrix)

    def dot(self, other: Any) -> Any:   # noqa: D102 - Taichi's dot: the sum of the element products
        return (np.asarray(self) * np.asarray(other)).sum()

    def cross(self, other: Any) -> Any:
        result = np.cross(np.asarray(self), np.asarray(other))
        return result.view(HostMatrix) if np.ndim(result) else result

    def outer_product(self, other: Any) -> HostMatrix:
        return np.outer(np.asarray(self), np.asarray(other)).view(HostMatrix)

    def determinant(self) -> Any:
        return np.linalg.det(np.asarray(self))

    def inverse(self) -> HostMatrix:
        return np.linalg.inv(np.asarray(self)).astype(self.dtype, copy=False).view(HostMatrix)

    def trace(self, *args: Any, **kwargs: Any) -> Any:
        return np.trace(np.asarray(self), *args, **kwargs)

    def to_numpy(self) -> np.ndarray:
        return np.array(self)

    @property
    def n(self) -> int:
        return self.shape[0]

    @property
    def m(self) -> int:
        return self.shape[1] if self.ndim > 1 else 1

    def _component(self, axis: int) -> Any:
        if self.ndim != 1 or axis >= self.shape[0]:
            raise AttributeError(f"a vector of {self.shape[0] if self.ndim == 1 else self.shape} has no "
                                 f"component '{_AXES[axis]}'")
        return self[axis]

    x = property(lambda self: self._component(0), lambda self, v: self.__setitem__(0, v))
    y = property(lambda self: self._component(1), lambda self, v: self.__setitem__(1, v))
    z = property(lambda self: self._component(2), lambda self, v: self.__setitem__(2, v))
    w = property(lambda self: self._component(3), lambda self, v: self.__setitem__(3, v))

    def __repr__(self) -> str:
        return repr(np.asarray(self))

    def __array_wrap__(self, array: Any, context: Any = None, return_scalar: bool = False) -> Any:
        if return_scalar or np.ndim(array) == 0:
            return np.asarray(array)[()]
        return super().__array_wrap__(array, context, return_scalar)


def host_matrix(array: np.ndarray) -> HostMatrix:
    return array.view(HostMatrix)
