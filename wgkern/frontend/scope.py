"""Name bindings of kernel code: block-scoped locals (as in Taichi), loop variables and compile-time names.

A name is bound to a `LocalVar` (scalar Alloca), `VectorVar` (one Alloca per element), `StructVar` (one
binding per member), `GlobalVar` (a
kernel-scope reduction variable in a temp slot), `Fixed` (an immutable
runtime value: a loop index or an unassigned argument) or `Static` (a compile-time Python object). Names first
assigned inside an `if`/loop body are local to that body."""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

from wgkern.ir import nodes as ir
from wgkern.lang import types as T


@dataclass(eq=False)
class LocalVar:
    alloca: ir.Alloca

    @property
    def dtype(self) -> T.DataType:
        return self.alloca.dtype


@dataclass(eq=False)
class VectorVar:
    allocas: list[ir.Alloca]
    n: int
    m: int = 0

    @property
    def dtype(self) -> T.DataType:
        return self.allocas[0].dtype


@dataclass(eq=False)
class StructVar:
    """A local struct variable: one LocalVar/VectorVar/StructVar per member (frontend/structs.py)."""
    stype: Any
    members: dict[str, Any]


@dataclass(eq=False)
class GlobalVar:
    """A kernel-scope variable that a top-level (parallel) loop reduces into with `+=` etc.: it lives in a
    'temp' slot (shape (1,) for a scalar, the element shape for a vector/matrix) so those updates can be
    atomic, as in Taichi. With `ref` set it is instead a func's wk.template() parameter bound to a field or
    ndarray element (`inc(f[i])`): reads, writes and `+=` go to that element."""
    slot: ir.ContainerSlot
    element_shape: tuple[int, ...] = ()
    ref: Any = None

    @property
    def dtype(self) -> T.DataType:
        return self.slot.dtype


@dataclass(eq=False)
class Fixed:
    """An immutable runtime value; `what` names it in 'cannot assign to ...' errors."""
    value: Any
    what: str


@dataclass(eq=False)
class Static:
    """A compile-time Python object (template argument, captured field, `x = wk.static(...)`, unrolled index)."""
    value: Any


@dataclass(frozen=True)
class VectorShape:
    """What wk.static(...) sees of a vector variable: n (rows), m (columns, 1 for vectors), shape, len()."""
    n: int
    m_: int = 0

    @property
    def m(self) -> int:
        return self.m_ or 1

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.n, self.m_) if self.m_ else (self.n,)

    def __len__(self) -> int:
        return self.n


Binding = LocalVar | VectorVar | StructVar | GlobalVar | Fixed | Static


class Scope:
    """A stack of name -> Binding dicts, one per open block of one function."""

    def __init__(self) -> None:
        self.levels: list[dict[str, Binding]] = [{}]
        self.expired: set[str] = set()   # names whose defining block has closed (for error hints)
        # containers whose reads carry no gradient from here to the end of each open block (wk.stop_grad(x))
        self.stopped: list[set[int]] = [set()]

    def lookup(self, name: str) -> Binding | None:
        for level in reversed(self.levels):
            if name in level:
                return level[name]
        return None

    def define(self, name: str, binding: Binding) -> None:
        self.levels[-1][name] = binding

    def is_outer(self, name: str) -> bool:
        """True if `name` is bound, but not in the innermost block (used for 'local to the block' hints)."""
        return name not in self.levels[-1] and self.lookup(name) is not None

    @contextmanager
    def block(self) -> Iterator[None]:
        self.levels.append({})
        self.stopped.append(set())
        try:
            yield
        finally:
            closed = self.levels.pop()
            self.stopped.pop()
            self.expired.update(name for name in closed if self.lookup(name) is None)

    def stop_gradient(self, container: Any) -> None:
        """`wk.stop_grad(x)` on a field or ndarray: its reads in the rest of this block carry no gradient."""
        self.stopped[-1].add(id(container))

    def gradient_stopped(self, container: Any) -> bool:
        return any(id(container) in level for level in self.stopped)

    def static_names(self) -> dict[str, Any]:
        """Every name bound to a compile-time value (innermost wins), for wk.static evaluation."""
        out: dict[str, Any] = {}
        for level in self.levels:
            for name, binding in level.items():
                if isinstance(binding, Static):
                    out[name] = binding.value
                else:
                    out.pop(name, None)
        return out

    def vector_shapes(self) -> dict[str, VectorShape]:
        """Vector/matrix variables as shape-only stand-ins (`wk.static(range(v.n))` works; their values do
        not exist at compile time)."""
        out: dict[str, VectorShape] = {}
        for level in self.levels:
            for name, binding in level.items():
                if isinstance(binding, VectorVar):
                    out[name] = VectorShape(binding.n, binding.m)
                elif isinstance(binding, GlobalVar) and binding.element_shape:
                    shape = binding.element_shape
                    out[name] = VectorShape(shape[0], shape[1] if len(shape) > 1 else 0)
                elif isinstance(binding, Fixed) and hasattr(binding.value, "elements"):
                    # an unassigned vector argument of a func (a VectorValue): its shape is known
                    out[name] = VectorShape(binding.value.n, binding.value.m)
                else:
                    out.pop(name, None)
        return out

    def runtime_names(self) -> set[str]:
        names: set[str] = set()
        for level in self.levels:
            for name, binding in level.items():
                if isinstance(binding, Static):
                    names.discard(name)
                else:
                    names.add(name)
        return names
