"""Vector and matrix values in Python scope: numpy arrays with the methods of Taichi's `ti.Vector`/`ti.Matrix`.

Outside kernels, `wk.Vector([...])`, `wk.Matrix([[...]])`, `wk.math.vec3(...)` and reading one element of a vector
or matrix field (`v[i]`) give a `HostMatrix`: an ordinary numpy array (arithmetic, `@`, indexing, numpy
functions all as usual) that also has `norm`, `norm_sqr`, `normalized`, `dot`, `cross`, `outer_product`,
`determinant`, `inverse`, `trace`, `to_numpy`, `x`/`y`/`z`/`w`, swizzles (`v.xyz`, `v.xy = ...`, `v.rgb`, `v.st`) and
`n`/`m`, as Taichi programs use them in
Python scope. An entry (`v[0]`, `v.x`, `m[i, j]`, iterating a vector) is a Python int, float or bool, as in Taichi;
reductions give Python-side numpy scalars; `to_numpy()` a plain array. Augmented assignment
(`v += w`) makes a new value with the promoted dtype, as in Taichi, rather than numpy's in-place update.

An element read from a container (`v[i]`, `s[i].pos`) writes through: `v[i][1] = 9.0`, `v[i].y = 7.0`,
`m[i][0, 1] = 5.0` (also through a view such as `m[i][0][1] = 5.0`) store into the container, as in Taichi."""
from __future__ import annotations

from typing import Any

import numpy as np

from wgkern.errors import CompileValueError
from wgkern.lang import swizzle

_AXES = "xyzw"


class HostMatrix(np.ndarray):
    """See the module docstring. `_source` is (root array, container, index) for a container's element and
    views of it, else None."""

    _source: tuple[Any, Any, Any] | None = None

    def __array_finalize__(self, obj: Any) -> None:
        source = getattr(obj, "_source", None)
        # views of an element write through too; arithmetic results (new memory) do not
        self._source = source if source is not None and np.may_share_memory(self, obj) else None

    def __getitem__(self, key: Any) -> Any:
        """A single entry is a Python int, float or bool (as Taichi gives, and as a scalar field's element
        read is); slices and rows stay HostMatrix views."""
        value = super().__getitem__(key)
        return value.item() if isinstance(value, np.generic) else value

    def __iter__(self) -> Any:
        """A vector's entries as Python scalars (see __getitem__); a matrix's rows as vectors."""
        return iter(self.tolist()) if self.ndim == 1 else super().__iter__()

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)
        if self._source is not None:
            root, container, index = self._source
            container[index] = np.asarray(root)

    def norm(self, eps: float = 0.0) -> Any:
        return np.sqrt(self.norm_sqr() + eps)

    def norm_sqr(self) -> Any:
        plain = np.asarray(self)
        return (plain * plain).sum()

    def normalized(self, eps: float = 0.0) -> HostMatrix:
        """Taichi's: v * (1 / (norm(v) + eps))."""
        return (np.asarray(self) * (1 / (self.norm() + eps))).view(HostMatrix)

    def norm_inv(self, eps: float = 0.0) -> Any:
        return 1 / self.norm(eps)

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
        """The inverse; an integer matrix's is computed and returned in f32 (its entries are fractions)."""
        dtype = self.dtype if self.dtype.kind == "f" else np.float32
        return np.linalg.inv(np.asarray(self)).astype(dtype, copy=False).view(HostMatrix)

    def cast(self, dtype: Any) -> HostMatrix:
        """Taichi's `v.cast(dtype)`: the elements converted (`float` / `int` take default_fp / default_ip)."""
        from wgkern.lang.types import to_dtype
        return np.asarray(self).astype(to_dtype(dtype).np_dtype).view(HostMatrix)

    def to_list(self) -> list[Any]:
        """Taichi's `v.to_list()`: nested Python lists of the entries."""
        return np.asarray(self).tolist()

    @property
    def entries(self) -> np.ndarray:
        """Taichi's (1.7) and Quadrants' `m.entries`: the entries as a plain numpy array of the same shape and
        dtype."""
        return np.array(self)

    def trace(self) -> Any:
        if self.ndim != 2 or self.shape[0] != self.shape[1]:
            raise CompileValueError(f"trace() expected a square matrix, got shape {self.shape}")
        return np.trace(np.asarray(self))

    def to_numpy(self) -> np.ndarray:
        return np.array(self)

    @property
    def n(self) -> int:
        return self.shape[0]

    @property
    def m(self) -> int:
        return self.shape[1] if self.ndim > 1 else 1

    def _component(self, axis: int) -> Any:
        if self.ndim != 1:
            raise AttributeError(f"a matrix of {self.shape} has no component '{_AXES[axis]}'")
        swizzle.positions(_AXES[axis], self.shape[0])      # past the vector's size: Taichi's error
        return self[axis]

    x = property(lambda self: self._component(0), lambda self, v: self.__setitem__(self._axis(0), v))
    y = property(lambda self: self._component(1), lambda self, v: self.__setitem__(self._axis(1), v))
    z = property(lambda self: self._component(2), lambda self, v: self.__setitem__(self._axis(2), v))
    w = property(lambda self: self._component(3), lambda self, v: self.__setitem__(self._axis(3), v))

    def _axis(self, axis: int) -> int:
        self._component(axis)
        return axis

    def _swizzle(self, name: str) -> list[int] | None:
        """Positions named by a swizzle (lang/swizzle.py: `xyz`, `wx`, `rgb`, `st`, `a`), else None; letters
        past the vector's size raise (single x/y/z/w are properties)."""
        if self.ndim != 1:
            return None
        return swizzle.positions(name, self.shape[0])

    def __getattr__(self, name: str) -> Any:
        if len(name) == 1 and name in _AXES:        # the x/y/z/w property failed: its own message
            return self._component(_AXES.index(name))
        positions = self._swizzle(name) if not name.startswith("_") else None
        if positions is None:
            raise AttributeError(f"'HostMatrix' object has no attribute '{name}'")
        if len(positions) == 1:                      # `color.a`: the component itself
            return self[positions[0]]
        return np.asarray(self)[positions].view(HostMatrix)

    def __setattr__(self, name: str, value: Any) -> None:
        positions = self._swizzle(name) if not name.startswith("_") and name not in ("x", "y", "z", "w") else None
        if positions is None:
            super().__setattr__(name, value)
            return
        if len(positions) > 1:
            swizzle.check_length(name, np.size(value))
        self[positions] = value

    def __repr__(self) -> str:
        return repr(np.asarray(self))

    def __array_wrap__(self, array: Any, context: Any = None, return_scalar: bool = False) -> Any:
        if return_scalar or np.ndim(array) == 0:
            return np.asarray(array)[()]
        return super().__array_wrap__(array, context, return_scalar)


def _rebinding(operator_name: str) -> Any:
    """`v += w` on a Python-scope vector gives a new value (as Taichi's does): the result's dtype is promoted
    (`ti.Vector([0, 0]) += 0.5` makes a float vector, where numpy's in-place add would refuse the cast) and
    other names for the old value keep it."""
    def augmented(self: HostMatrix, other: Any) -> Any:
        return getattr(self, operator_name)(other)
    augmented.__name__ = operator_name.replace("__", "__i", 1)
    return augmented


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift",
              "rshift"):
    setattr(HostMatrix, f"__i{_name}__", _rebinding(f"__{_name}__"))


def host_matrix(array: np.ndarray) -> HostMatrix:
    return array.view(HostMatrix)


def container_element(array: np.ndarray, container: Any, index: tuple[int, ...]) -> HostMatrix:
    """`container[index]` as a HostMatrix whose component writes store back into the container."""
    element = array.view(HostMatrix)
    element._source = (element, container, index)
    return element
