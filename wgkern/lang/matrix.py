"""Vectors and matrices of the kernel language: `wk.math.vec2 .. mat4`, `wk.Vector` / `wk.Matrix`.

Inside kernels the frontend scalarises these (frontend/vectors.py); the objects here are what the names mean in
plain Python: the vector types (callable, usable as field dtypes and annotations), host-side constructors that
return numpy arrays with Taichi's vector/matrix methods (host_matrix.py), and the `.field(...)` helpers that create vector/matrix fields through lang/fields.py."""
from __future__ import annotations

import sys
from typing import Any

import numpy as np

from wgkern.errors import WkError

from wgkern.lang import types as T
from wgkern.lang.host_matrix import HostMatrix, host_matrix

vec2 = T.vector(2, T.f32)
vec3 = T.vector(3, T.f32)
vec4 = T.vector(4, T.f32)
ivec2 = T.vector(2, T.i32)
ivec3 = T.vector(3, T.i32)
ivec4 = T.vector(4, T.i32)
uvec2 = T.vector(2, T.u32)
uvec3 = T.vector(3, T.u32)
uvec4 = T.vector(4, T.u32)
mat2 = T.matrix(2, 2, T.f32)
mat3 = T.matrix(3, 3, T.f32)
mat4 = T.matrix(4, 4, T.f32)
VECTOR_ALIASES = ("vec2", "vec3", "vec4", "ivec2", "ivec3", "ivec4", "uvec2", "uvec3", "uvec4", "mat2", "mat3", "mat4")


def follow_default_types() -> None:
    """Taichi defines `vec3 = vector(3, float)`, `ivec3 = vector(3, int)`, `mat3 = matrix(3, 3, float)` (and
    Quadrants `uvec3` with the unsigned type of default_ip): they take the current default_fp / default_ip, so
    each wk.init rebuilds them here, and wk.math (lang/math.py) follows (a program that imported them by name
    before wk.init keeps the ones it imported)."""
    fp, ip = T.DEFAULT_FLOAT, T.DEFAULT_INT
    up = T.u64 if ip.bits == 64 else T.u32          # Quadrants' default_up: the unsigned type of default_ip
    rebuilt: dict[str, T.VectorType] = {}
    for n in (2, 3, 4):
        rebuilt[f"vec{n}"] = T.vector(n, fp)
        rebuilt[f"ivec{n}"] = T.vector(n, ip)
        rebuilt[f"uvec{n}"] = T.vector(n, up)
        rebuilt[f"mat{n}"] = T.matrix(n, n, fp)
    module = sys.modules[__name__]
    for name, vector_type in rebuilt.items():
        setattr(module, name, vector_type)


T.DEFAULT_TYPE_LISTENERS.append(follow_default_types)


def _flatten(values: Any) -> list[Any]:
    out: list[Any] = []
    for value in values:
        if isinstance(value, (list, tuple, np.ndarray)):
            out.extend(_flatten(list(np.asarray(value).reshape(-1)) if isinstance(value, np.ndarray) else value))
        else:
            out.append(value)
    return out


def make_vector_value(vtype: T.VectorType, values: tuple[Any, ...]) -> np.ndarray:
    """`wk.math.vec3(1, 2, 3)` called outside a kernel: a numpy array of the vector's element shape.
    One scalar broadcasts; otherwise the flattened arguments must fill the vector/matrix (row-major)."""
    flat = _flatten(values)
    if len(flat) == 1:
        flat = flat * vtype.size
    if len(flat) != vtype.size:
        raise TypeError(f"{vtype!r} takes {vtype.size} values (or one to broadcast), got {len(flat)}")
    return host_matrix(np.array(flat, dtype=vtype.dtype.np_dtype).reshape(vtype.element_shape))


T.VECTOR_TYPE_MAKERS["value"] = make_vector_value


class _HostValueClass(type):
    """isinstance(v, wk.Matrix) holds for Python-scope vector and matrix values (HostMatrix arrays), and
    isinstance(v, wk.Vector) for the vectors among them, as Taichi's Vector is a Matrix subclass."""

    vector_only = False

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, HostMatrix) and (obj.ndim == 1 if cls.vector_only else obj.ndim in (1, 2))


class Vector(metaclass=_HostValueClass):
    """`wk.Vector([a, b, c], dt=None)` constructs a vector; `wk.Vector.field(n, dtype, shape)` a vector field."""

    vector_only = True

    def __new__(cls, values: Any, dt: Any = None, shape: Any = None, **field_options: Any) -> Any:  # type: ignore[misc]
        if isinstance(values, int) and not isinstance(values, bool) and dt is not None:
            from wgkern.lang.legacy import vector_var      # Taichi's old `ti.Vector(n, dt=f32, shape=...)`
            return vector_var(values, dt, shape, **field_options)
        if shape is not None or field_options:
            raise TypeError("wk.Vector(values, dt=None) makes a vector value; for a field use "
                            "wk.Vector.field(n, dtype, shape)")
        flat = _flatten([values])
        dtype = T.to_dtype(dt) if dt is not None else _default_dtype(flat)
        return make_vector_value(T.vector(len(flat), dtype), tuple(flat))

    @staticmethod
    def zero(dtype: Any, n: int) -> np.ndarray:
        """`wk.Vector.zero(dtype, n)` (also inside kernels)."""
        return host_matrix(np.zeros(n, dtype=T.to_dtype(dtype).np_dtype))

    @staticmethod
    def one(dtype: Any, n: int) -> np.ndarray:
        return host_matrix(np.ones(n, dtype=T.to_dtype(dtype).np_dtype))

    @staticmethod
    def unit(n: int, i: int, dt: Any = None, dtype: Any = None) -> np.ndarray:
        """`wk.Vector.unit(n, i, dt=None)`: the i-th basis vector of size n; integers unless `dt` says otherwise
        (as in Taichi, so `I + wk.Vector.unit(2, 0)` is still an index)."""
        if not 0 <= i < n:
            raise WkError(f"wk.Vector.unit({n}, {i}): the index must be in [0, {n})")
        chosen = dt if dt is not None else dtype
        out = np.zeros(n, dtype=T.to_dtype(chosen if chosen is not None else T.i32).np_dtype)
        out[i] = 1
        return host_matrix(out)

    @staticmethod
    def field(n: int, dtype: Any = T.f32, shape: Any = None, needs_grad: bool = False, needs_dual: bool = False,
              **kwargs: Any) -> Any:
        from wgkern.lang.fields import field
        from wgkern.lang.quant import QuantType, quant_vector_field
        if isinstance(dtype, QuantType):
            return quant_vector_field(lambda scalar: field(T.vector(n, scalar), shape=shape, **kwargs), dtype,
                                      needs_grad=needs_grad, needs_dual=needs_dual)
        return field(T.vector(n, dtype), shape=shape, needs_grad=needs_grad, needs_dual=needs_dual, **kwargs)

    @staticmethod
    def var(n: int, dt: Any = T.f32, shape: Any = None, **kwargs: Any) -> Any:
        """Taichi's old `ti.Vector.var(n, dt, shape=None)`: `wk.Vector.field`."""
        from wgkern.lang.legacy import vector_var
        return vector_var(n, dt, shape, **kwargs)

    @staticmethod
    def tensor(n: int, dtype: Any, shape: Any, **kwargs: Any) -> Any:
        """Quadrants' `qd.Vector.tensor(n, dtype, shape, backend=...)`: a field or (default) ndarray of n-vectors."""
        from wgkern.lang.tensor import vector_tensor
        return vector_tensor(n, dtype, shape, **kwargs)

    @staticmethod
    def ndarray(n: int, dtype: Any = T.f32, shape: Any = (), needs_grad: bool = False, **kwargs: Any) -> Any:
        """`wk.Vector.ndarray(n, dtype, shape)`: an ndarray of n-vectors."""
        from wgkern.lang.fields import ndarray
        return ndarray(T.vector(n, dtype), shape=shape, needs_grad=needs_grad, **kwargs)


class Matrix(metaclass=_HostValueClass):
    """`wk.Matrix([[a, b], [c, d]], dt=None)` constructs a matrix; `wk.Matrix.field(n, m, dtype, shape)` a
    matrix field."""

    def __new__(cls, rows: Any, m: Any = None, dt: Any = None, shape: Any = None,  # type: ignore[misc]
                **field_options: Any) -> Any:
        if isinstance(rows, int) and not isinstance(rows, bool):
            if not isinstance(m, int) or dt is None:
                raise TypeError(f"wk.Matrix({rows}, ...): Taichi's old matrix-field form is wk.Matrix(n, m, dt=..., "
                                "shape=...); use wk.Matrix.field(n, m, dtype, shape)")
            from wgkern.lang.legacy import matrix_var      # Taichi's old `ti.Matrix(n, m, dt=f32, shape=...)`
            return matrix_var(rows, m, dt, shape, **field_options)
        if m is not None and dt is None:
            dt = m                                         # wk.Matrix(rows, f32): the dtype given by position
        if shape is not None or field_options:
            raise TypeError("wk.Matrix(rows, dt=None) makes a matrix value; for a field use "
                            "wk.Matrix.field(n, m, dtype, shape)")
        rows = [list(r) if isinstance(r, (list, tuple, np.ndarray)) else [r] for r in rows]
        flat = _flatten(rows)
        dtype = T.to_dtype(dt) if dt is not None else _default_dtype(flat)
        return make_vector_value(T.matrix(len(rows), len(rows[0]), dtype), tuple(flat))

    @staticmethod
    def zero(dtype: Any, n: int, m: int) -> np.ndarray:
        """`wk.Matrix.zero(dtype, n, m)` (also inside kernels)."""
        return host_matrix(np.zeros((n, m), dtype=T.to_dtype(dtype).np_dtype))

    @staticmethod
    def one(dtype: Any, n: int, m: int) -> np.ndarray:
        """`wk.Matrix.one(dtype, n, m)`: all ones (also inside kernels)."""
        return host_matrix(np.ones((n, m), dtype=T.to_dtype(dtype).np_dtype))

    @staticmethod
    def diag(dim: int, val: Any) -> np.ndarray:
        """`wk.Matrix.diag(n, value)`: the n x n matrix with `value` on its diagonal (also inside kernels)."""
        out = np.zeros((dim, dim), dtype=np.asarray(val).dtype if isinstance(val, np.generic) else
                       T.DEFAULT_INT.np_dtype if isinstance(val, int) else T.DEFAULT_FLOAT.np_dtype)
        np.fill_diagonal(out, val)
        return host_matrix(out)

    @staticmethod
    def outer_product(a: Any, b: Any) -> np.ndarray:
        """`wk.Matrix.outer_product(a, b)`: a b^T of two vectors (also inside kernels)."""
        return host_matrix(np.outer(np.asarray(a), np.asarray(b)))

    @staticmethod
    def rows(vectors: Any) -> np.ndarray:
        """`wk.Matrix.rows([r0, r1, ...])`: the matrix whose rows are the given vectors (also inside kernels)."""
        return host_matrix(np.stack([np.asarray(v) for v in vectors]))

    @staticmethod
    def cols(vectors: Any) -> np.ndarray:
        """`wk.Matrix.cols([c0, c1, ...])`: the matrix whose columns are the given vectors (also inside kernels)."""
        return host_matrix(np.stack([np.asarray(v) for v in vectors], axis=1))

    @staticmethod
    def identity(dtype: Any, n: int) -> np.ndarray:
        """`wk.Matrix.identity(dtype, n)` (also inside kernels)."""
        return host_matrix(np.eye(n, dtype=T.to_dtype(dtype).np_dtype))

    @staticmethod
    def field(n: int, m: int, dtype: Any = T.f32, shape: Any = None, needs_grad: bool = False,
              needs_dual: bool = False, **kwargs: Any) -> Any:
        from wgkern.lang.fields import field
        from wgkern.lang.quant import QuantType, quant_vector_field
        if isinstance(dtype, QuantType):
            return quant_vector_field(lambda scalar: field(T.matrix(n, m, scalar), shape=shape, **kwargs), dtype,
                                      needs_grad=needs_grad, needs_dual=needs_dual)
        return field(T.matrix(n, m, dtype), shape=shape, needs_grad=needs_grad, needs_dual=needs_dual, **kwargs)

    @staticmethod
    def var(n: int, m: int, dt: Any = T.f32, shape: Any = None, **kwargs: Any) -> Any:
        """Taichi's old `ti.Matrix.var(n, m, dt, shape=None)`: `wk.Matrix.field`."""
        from wgkern.lang.legacy import matrix_var
        return matrix_var(n, m, dt, shape, **kwargs)

    @staticmethod
    def ndarray(n: int, m: int, dtype: Any = T.f32, shape: Any = (), needs_grad: bool = False,
                **kwargs: Any) -> Any:
        """`wk.Matrix.ndarray(n, m, dtype, shape)`: an ndarray of n x m matrices."""
        from wgkern.lang.fields import ndarray
        return ndarray(T.matrix(n, m, dtype), shape=shape, needs_grad=needs_grad, **kwargs)

    @staticmethod
    def tensor(n: int, m: int, dtype: Any, shape: Any, **kwargs: Any) -> Any:
        """Quadrants' `qd.Matrix.tensor(n, m, dtype, shape, backend=...)`: a field or (default) ndarray of
        n x m matrices."""
        from wgkern.lang.tensor import matrix_tensor
        return matrix_tensor(n, m, dtype, shape, **kwargs)


def _default_dtype(values: list[Any]) -> T.DataType:
    if all(isinstance(v, (bool, np.bool_)) for v in values):
        return T.u1
    if all(isinstance(v, (int, np.integer)) for v in values):
        return T.DEFAULT_INT
    return T.DEFAULT_FLOAT
