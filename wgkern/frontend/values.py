"""What an expression evaluates to inside the frontend.

Runtime values are IR statements (scalars), `VectorValue` (a scalarised vector/matrix: a list of scalar IR
values) and `GlobalRef` (an addressed element of a field/ndarray, loaded lazily so it can also be a store or
atomic target). Everything else is a compile-time Python object (numbers, tuples, fields, modules...)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from wgkern.ir import nodes as ir
from wgkern.lang import types as T


@dataclass(eq=False)
class VectorValue:
    """A vector (m == 0, n elements) or an n x m matrix (row-major elements), each a scalar IR value."""
    elements: list[ir.Stmt]
    n: int
    m: int = 0

    @property
    def dtype(self) -> T.DataType:
        return self.elements[0].dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.n, self.m) if self.m else (self.n,)

    @property
    def is_matrix(self) -> bool:
        return self.m > 0

    def at(self, i: int, j: int | None = None) -> ir.Stmt:
        return self.elements[i * self.m + j] if j is not None else self.elements[i]

    def row(self, i: int) -> VectorValue:
        return VectorValue(self.elements[i * self.m:(i + 1) * self.m], self.m)


class ElementShape(tuple):
    """An ndarray argument's element shape: a tuple, and also callable as Taichi's `a.element_shape()` (which
    gives a list: `wk.static(a.element_shape() == [2])`)."""

    def __call__(self) -> list[int]:
        return list(self)



class DataclassView:
    """A `dataclasses.dataclass` kernel argument (Quadrants) as kernel code sees it: `s.a` is the NdarrayRef of
    an ndarray member (each is a kernel argument of its own), a nested dataclass is a view too, and any other
    member (a field, a number) is the compile-time value it holds."""

    def __init__(self, value: Any, members: dict[str, Any]) -> None:
        self._wk_value = value
        self._wk_members = members

    @staticmethod
    def of(value: Any, refs: dict[tuple[str, ...], Any], prefix: tuple[str, ...]) -> DataclassView:
        import dataclasses
        members: dict[str, Any] = {}
        for member in dataclasses.fields(value):
            path = prefix + (member.name,)
            item = getattr(value, member.name)
            if path in refs:
                members[member.name] = refs[path]
            elif dataclasses.is_dataclass(item) and not isinstance(item, type):
                members[member.name] = DataclassView.of(item, refs, path)
        return DataclassView(value, members)

    def __getattr__(self, name: str) -> Any:
        members = self.__dict__["_wk_members"]
        if name in members:
            return members[name]
        return getattr(self.__dict__["_wk_value"], name)

    def __repr__(self) -> str:
        return f"{type(self._wk_value).__name__} argument"

class ObjectView:
    """A template object holding wk.ndarrays (a @wk.data_oriented instance) as kernel code sees it: `o.a` is the
    NdarrayRef of an ndarray attribute (each is a kernel argument of its own), an attribute object holding some
    is a view too, its funcs and methods are bound to the view, and anything else is the object's attribute."""

    def __init__(self, value: Any, members: dict[str, Any]) -> None:
        self._wk_value = value
        self._wk_members = members

    @staticmethod
    def of(value: Any, refs: dict[tuple[str, ...], Any], prefix: tuple[str, ...]) -> ObjectView:
        members: dict[str, Any] = {}
        depth = len(prefix)
        for path, ref in refs.items():
            if len(path) > depth and path[:depth] == prefix and path[depth] not in members:
                name = path[depth]
                members[name] = ref if len(path) == depth + 1 else \
                    ObjectView.of(getattr(value, name), refs, prefix + (name,))
        return ObjectView(value, members)

    def __getattr__(self, name: str) -> Any:
        import types

        from wgkern.lang.kernel import BoundFunc
        members = self.__dict__["_wk_members"]
        if name in members:
            return members[name]
        value = self.__dict__["_wk_value"]
        item = getattr(value, name)
        if isinstance(item, BoundFunc) and item.instance is value:
            return BoundFunc(item.func, self)
        if isinstance(item, types.MethodType) and item.__self__ is value:
            return types.MethodType(item.__func__, self)
        return item

    @property  # type: ignore[misc]
    def __class__(self) -> type:       # isinstance(self, MyClass) in kernel code holds for the view too
        return type(self.__dict__["_wk_value"])

    def __repr__(self) -> str:
        return f"{type(self._wk_value).__name__} argument"


@dataclass(eq=False)
class NdarrayRef:
    """An ndarray kernel argument (or its `.grad`) as seen by kernel code."""
    arg_index: int
    name: str
    dtype: T.DataType
    ndim: int                    # the array's own axes
    element_shape: tuple[int, ...] = ()
    is_grad: bool = False
    clamp: bool = False          # annotated boundary="clamp": indices are clamped into the extent

    def __post_init__(self) -> None:
        self.element_shape = ElementShape(self.element_shape)

    @property
    def shape(self) -> tuple[RuntimeExtent, ...]:
        """What wk.static(...) sees of `a.shape`: as many axes as the array has (`len(a.shape)`), each extent
        known only at run time (kernel code reads `a.shape[k]` as a value)."""
        return tuple(RuntimeExtent(self.name, k) for k in range(self.ndim))


@dataclass(frozen=True)
class RuntimeExtent:
    """One axis length of an ndarray argument inside wk.static(...): using it as a number is an error."""
    name: str
    axis: int

    def _refuse(self, *args: Any) -> Any:
        from wgkern.errors import CompileError
        raise CompileError(f"the length of axis {self.axis} of ndarray '{self.name}' is known only at run time; "
                           f"use {self.name}.shape[{self.axis}] outside wk.static(...) (e.g. range({self.name}."
                           f"shape[{self.axis}]))")

    __index__ = __int__ = __float__ = __bool__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse


@dataclass(eq=False)
class GlobalRef:
    """container[indices]; `element_shape` lists the element axes not yet indexed (vector/matrix fields)."""
    slot: ir.ContainerSlot
    indices: list[ir.Stmt]
    element_shape: tuple[int, ...] = ()
    label: str = ""
    clamp: bool = False          # element indices added later are clamped too (NdarrayRef.clamp)


@dataclass(eq=False)
class StructElement:
    """`s[indices]` of a struct field (lang/structs.py): its members are reached as attributes."""
    owner: Any
    indices: list[Any]
    label: str = ""


@dataclass(eq=False)
class StructValue:
    """A struct value (frontend/structs.py): member name -> scalar, VectorValue or nested StructValue; `label`
    names the field element it was copied from, if any."""
    stype: Any
    members: dict[str, Any]
    label: str = ""


@dataclass(eq=False)
class BoundMethod:
    """`v.dot` before the call: a vector method bound to its receiver (None for `wk.Vector.dot`, the method taken
    from the class: the call's first argument is the receiver)."""
    receiver: Any
    name: str


@dataclass(eq=False)
class AtomicMethod:
    """`x[i].atomic_add` before the call: Taichi 0.x's method spelling of `wk.atomic_add(x[i], v)` on a field or
    ndarray element; `op` is the ir.ops.AtomicOpKind it performs."""
    ref: GlobalRef
    op: Any


def is_runtime(value: Any) -> bool:
    return isinstance(value, (ir.Stmt, VectorValue, GlobalRef))


def is_python_number(value: Any) -> bool:
    return isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating))


def python_number_dtype(value: Any) -> T.DataType:
    """Literal typing (Taichi's defaults): bool -> u1, int -> i32 (i64/u64 when it does not fit), float -> f32;
    numpy float16/float32 scalars keep their width, other numpy scalars take the defaults like Python ones."""
    if isinstance(value, (bool, np.bool_)):
        return T.u1
    if isinstance(value, (int, np.integer)):
        number = int(value)
        for dtype in (T.i32, T.i64, T.u64):
            if T.value_fits(number, dtype):
                return dtype
        return T.i64
    if isinstance(value, np.float16):
        return T.f16
    return T.DEFAULT_FLOAT


def describe(value: Any) -> str:
    """Short description of a value for error messages."""
    if isinstance(value, ir.Stmt):
        return f"a {value.dtype.name if value.dtype else 'void'} value"
    if isinstance(value, VectorValue):
        kind = "matrix" if value.is_matrix else "vector"
        return f"a {'x'.join(map(str, value.shape))} {kind} of {value.dtype.name}"
    if isinstance(value, GlobalRef):
        return f"an element of '{value.label or value.slot.name}'"
    if isinstance(value, StructValue):
        return f"a struct value of {value.stype!r}"
    if isinstance(value, StructElement):
        return f"the struct element {value.label}[...]"
    if isinstance(value, NdarrayRef):
        return f"the ndarray argument '{value.name}'"
    if isinstance(value, type):
        return f"the Python type '{value.__name__}'"
    name = getattr(value, "__name__", None)
    if name is not None:
        return f"'{name}'"
    return f"a Python {type(value).__name__}"
