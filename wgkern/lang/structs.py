"""Struct fields, as Taichi programs declare them: `wk.types.struct(pos=vec3, mass=float).field(shape=n)`,
`wk.Struct.field({"pos": vec3, "mass": float}, shape=n)` or a `@wk.dataclass` class's `.field(shape=n)`.

A struct field is one field per member (structure of arrays), all of the same shape: `s.pos` is the member
field itself, in kernels and on the host, and `s[i].pos` its element. Kernels loop over a struct field like
over any field (`for i in s`). Whole-struct values (`p = s[i]`) are not available in kernels: access members.
On the host `s.to_numpy()` gives a dict of arrays, `s.from_numpy(d)` takes one, `s[i]` reads/writes members
(`s[i].mass = 2.0`)."""
from __future__ import annotations

from typing import Any

from wgkern.errors import WkError


class StructType:
    """`wk.types.struct(name=dtype, ...)`: member names and their dtypes (scalars, vectors, matrices)."""

    def __init__(self, members: dict[str, Any], name: str = ""):
        if not members:
            raise WkError(f"struct {name} needs at least one member" if name else "a struct needs at least one member")
        self.members = dict(members)
        self.name = name

    def field(self, shape: Any = (), needs_grad: bool = False, name: str = "", **options: Any) -> StructField:
        return StructField(self, shape, needs_grad, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise WkError(f"struct {self.name or repr(self)}: whole struct values are not available; declare a struct "
                      "field (.field(shape=...)) and read or write its members (s[i].pos = ...)")

    def __repr__(self) -> str:
        if self.name:
            return self.name
        return "wk.types.struct(" + ", ".join(f"{k}={v!r}" for k, v in self.members.items()) + ")"


class StructField:
    """The member fields of a struct field; see the module docstring."""

    def __init__(self, struct_type: StructType, shape: Any, needs_grad: bool, name: str):
        from wgkern.lang.fields import _caller_variable_name, field
        name = name or _caller_variable_name() or "struct"
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "struct_type", struct_type)
        members = {}
        for member, dtype in struct_type.members.items():
            float_member = getattr(dtype, "is_float", None)
            if float_member is None:
                float_member = getattr(getattr(dtype, "dtype", None), "is_float", dtype is float)
            members[member] = field(dtype, shape=shape, needs_grad=needs_grad and bool(float_member),
                                    name=f"{name}.{member}")
        object.__setattr__(self, "members", members)
        object.__setattr__(self, "shape", next(iter(members.values())).shape)

    def __getattr__(self, member: str) -> Any:
        members = self.__dict__.get("members", {})
        if member in members:
            return members[member]
        raise AttributeError(f"struct field '{self.__dict__.get('name', '?')}' has no member '{member}'")

    def __setattr__(self, member: str, value: Any) -> None:
        raise WkError(f"struct field '{self.name}': assign to elements (s.{member}[i] = ..., s.{member}.fill(...))")

    def to_numpy(self) -> dict[str, Any]:
        return {member: f.to_numpy() for member, f in self.members.items()}

    def from_numpy(self, arrays: dict[str, Any]) -> None:
        unknown = set(arrays) - set(self.members)
        if unknown:
            raise WkError(f"struct field '{self.name}' has no member(s) {sorted(unknown)}")
        for member, array in arrays.items():
            self.members[member].from_numpy(array)

    def fill(self, value: Any) -> None:
        for f in self.members.values():
            f.fill(value)

    def __getitem__(self, index: Any) -> _HostElement:
        return _HostElement(self, index)


class _HostElement:
    """`s[i]` on the host: its members read and written one by one."""

    def __init__(self, owner: StructField, index: Any):
        object.__setattr__(self, "_owner", owner)
        object.__setattr__(self, "_index", index)

    def __getattr__(self, member: str) -> Any:
        return getattr(self._owner, member)[self._index]

    def __setattr__(self, member: str, value: Any) -> None:
        getattr(self._owner, member)[self._index] = value


def struct(**members: Any) -> StructType:
    """`wk.types.struct(pos=wk.math.vec3, mass=wk.f32)`."""
    return StructType(members)


def dataclass(cls: type) -> StructType:
    """`@wk.dataclass` on a class of annotated members (`pos: wk.math.vec3`, `mass: wk.f32`): Taichi's spelling of
    a struct type, named after the class (`Particle.field(shape=n)`). Methods are not available (kernels read and
    write members, `p[i].pos`), so a class that defines any is refused, naming them."""
    import inspect
    if not isinstance(cls, type):
        raise WkError(f"@wk.dataclass decorates a class, not {type(cls).__name__}")
    try:
        members = inspect.get_annotations(cls, eval_str=True)
    except Exception as exc:  # noqa: BLE001 - any failure to evaluate a user's annotation
        raise WkError(f"@wk.dataclass {cls.__name__}: cannot evaluate its member annotations ({exc})") from None
    methods = [name for name, value in vars(cls).items() if callable(value) and not name.startswith("__")]
    if methods:
        raise WkError(f"@wk.dataclass {cls.__name__}: methods ({', '.join(methods)}) are not available; read and "
                      "write the members of a struct field's elements in kernels and funcs instead")
    if not members:
        raise WkError(f"@wk.dataclass {cls.__name__} has no annotated members (name: dtype)")
    return StructType(members, name=cls.__name__)


class Struct:
    """`wk.Struct.field({"pos": vec3, ...}, shape=n)` (Taichi's spelling)."""

    @staticmethod
    def field(members: dict[str, Any], shape: Any = (), needs_grad: bool = False, name: str = "",
              **options: Any) -> StructField:
        return StructField(StructType(members), shape, needs_grad, name)
