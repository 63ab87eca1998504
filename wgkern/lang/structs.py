"""Struct fields, as Taichi programs declare them: `wk.types.struct(pos=vec3, mass=float).field(shape=n)`,
`wk.Struct.field({"pos": vec3, "mass": float}, shape=n)` or a `@wk.dataclass` class's `.field(shape=n)`.

A struct field is one field per member (structure of arrays), all of the same shape: `s.pos` is the member
field itself, in kernels and on the host, and `s[i].pos` its element; a member of struct type is itself a
struct field (`s.inner.a`). Kernels loop over a struct field like over any field (`for i in s`), copy elements
into local struct values (`p = s[i]`, modifiable), make values (`P(pos=..., m=1.0)`), store them (`s[i] = p`)
and pass them to and return them from funcs (frontend/structs.py). On the host `s.to_numpy()` gives a dict of
arrays, `s.from_numpy(d)` takes one, `s[i]` reads/writes members (`s[i].mass = 2.0`, `s[i] = P(...)`)."""
from __future__ import annotations

from typing import Any

from wgkern.errors import ArgumentError, CompileError, SourceLoc, WkError
from wgkern.lang.types import DataType, out_of_range, range_text


class StructType:
    """`wk.types.struct(name=dtype, ...)`: member names and their dtypes (scalars, vectors, matrices, nested
    struct types); `methods` are the @wk.func methods of a `@wk.dataclass` class. Called in a kernel or func
    (`P(pos=..., m=1.0)`) it makes a struct value; called in Python scope, a `HostStruct`."""

    def __init__(self, members: dict[str, Any], name: str = "", methods: dict[str, Any] | None = None):
        if not members:
            raise WkError(f"struct {name} needs at least one member" if name else "a struct needs at least one member")
        self.members = dict(members)
        self.name = name
        self.methods = dict(methods or {})
        self.host_methods: dict[str, Any] = {}     # a @wk.dataclass's plain Python methods (HostStruct only)

    def field(self, shape: Any = (), needs_grad: bool = False, name: str = "", offset: Any = None,
              needs_dual: bool = False, layout: Any = None) -> StructField:
        """A struct field: each member a field of `shape` (with its `offset`, `needs_grad` for float members and
        `needs_dual`); Quadrants' `layout=wk.Layout.AOS / SOA` is taken (lang/layout.py)."""
        if layout is not None:
            from wgkern.lang.layout import check_layout
            check_layout(layout, f"{self!r}.field")
        return StructField(self, shape, needs_grad, name, offset=offset, needs_dual=needs_dual)

    def __call__(self, *args: Any, **kwargs: Any) -> HostStruct:
        return HostStruct(self, member_values(self, args, kwargs, repr(self)))

    def __repr__(self) -> str:
        if self.name:
            return self.name
        return "wk.types.struct(" + ", ".join(f"{k}={v!r}" for k, v in self.members.items()) + ")"


def member_values(stype: StructType, args: tuple[Any, ...], kwargs: dict[str, Any], what: str) -> dict[str, Any]:
    """Taichi's struct constructor arguments: positional in member order, then by name (a dict for a nested
    struct member is accepted too); members not given are None (zero). Raises naming unknown/duplicate ones."""
    names = list(stype.members)
    if len(args) > len(names):
        raise WkError(f"{what} has {len(names)} members ({', '.join(names)}); got {len(args)} positional values")
    values: dict[str, Any] = dict(zip(names, args))
    for name, value in kwargs.items():
        if name not in stype.members:
            raise WkError(f"{what} has no member '{name}' (members: {', '.join(names)})")
        if name in values:
            raise WkError(f"{what}: member '{name}' given twice")
        values[name] = value
    return {name: values.get(name) for name in names}


def leaf_types(stype: StructType) -> list[Any]:
    """The member dtypes (scalars, vector/matrix types) of a struct type in member order, nested structs
    flattened: how a kernel returns a struct (one value per leaf)."""
    leaves: list[Any] = []
    for dtype in stype.members.values():
        leaves.extend(leaf_types(dtype) if isinstance(dtype, StructType) else [dtype])
    return leaves


def from_leaves(stype: StructType, values: Any) -> HostStruct:
    """The HostStruct whose leaves (leaf_types order) are the next items of the iterator `values`."""
    members = {name: from_leaves(dtype, values) if isinstance(dtype, StructType) else next(values)
               for name, dtype in stype.members.items()}
    return HostStruct(stype, members)


def _check_integer_member(stype: StructType, name: str, dtype: DataType, value: Any) -> None:
    """Integer vector members take integers their dtype holds: numpy's assignment would truncate floats and
    wrap numpy integers silently."""
    import numpy as np
    source = np.asarray(value)
    if source.dtype.kind not in "iubO" or (source.dtype.kind == "O" and not all(
            isinstance(item, (int, np.integer, np.bool_)) for item in source.reshape(-1))):
        raise ArgumentError(f"struct {stype!r}: member '{name}' has {dtype!r} components but got {value!r}")
    bad = out_of_range(source, dtype)
    if bad is not None:
        raise ArgumentError(f"struct {stype!r}: member '{name}' has {dtype!r} components but got {bad}, out of "
                            f"their range ({range_text(dtype)})")


_MEMBER_VIEWS = {"keys": list, "items": dict.items, "entries": dict}


class HostStruct:
    """A struct value in Python scope (`P(pos=wk.math.vec3(1, 2, 3), m=2.0)`): members as attributes; a kernel
    argument annotated with the struct type takes one, and so does `s[i] = value` on a struct field."""

    def __init__(self, stype: StructType, values: dict[str, Any]):
        from wgkern.lang.host_matrix import host_matrix
        import numpy as np
        members = {}
        for name, dtype in stype.members.items():
            value = values.get(name)
            if isinstance(dtype, StructType):
                if isinstance(value, _HostElement):
                    value = value.to_dict()
                if isinstance(value, dict):
                    value = dtype(**value)
                elif value is not None and not isinstance(value, HostStruct):
                    value = dtype(value)     # Taichi: a nested struct given one value takes it as its first member
                members[name] = value if isinstance(value, HostStruct) else dtype()
            elif hasattr(dtype, "element_shape"):
                array = np.zeros(dtype.element_shape, dtype.dtype.np_dtype)
                if value is not None:
                    if dtype.dtype.is_int:
                        _check_integer_member(stype, name, dtype.dtype, value)
                    array[...] = value
                members[name] = host_matrix(array)
            else:
                members[name] = (0 if value is None else value)
        object.__setattr__(self, "struct_type", stype)
        object.__setattr__(self, "members", members)

    def __getattr__(self, name: str) -> Any:
        members = self.__dict__.get("members", {})
        if name in members:
            return members[name]
        stype = self.__dict__.get("struct_type")
        method = getattr(stype, "host_methods", {}).get(name)
        if method is not None:
            return method.__get__(self)
        if name in _MEMBER_VIEWS:       # Taichi's / Quadrants' s.keys, s.items, s.entries (after the members)
            return _MEMBER_VIEWS[name](members)
        raise AttributeError(f"struct {self.__dict__.get('struct_type')!r} has no member '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self.members:
            raise AttributeError(f"struct {self.struct_type!r} has no member '{name}'")
        self.members[name] = value

    def to_dict(self) -> dict[str, Any]:
        return {k: v.to_dict() if isinstance(v, HostStruct) else v for k, v in self.members.items()}

    def __repr__(self) -> str:
        return f"{self.struct_type!r}(" + ", ".join(f"{k}={v!r}" for k, v in self.members.items()) + ")"

    def __str__(self) -> str:
        """Printed as Taichi prints a struct: a dict of its members, vectors as lists."""
        def plain(value: Any) -> Any:
            if isinstance(value, HostStruct):
                return {k: plain(v) for k, v in value.members.items()}
            return value.tolist() if hasattr(value, "tolist") else value
        return str(plain(self))


class StructField:
    """The member fields of a struct field; see the module docstring."""

    def __init__(self, struct_type: StructType, shape: Any, needs_grad: bool, name: str, offset: Any = None,
                 needs_dual: bool = False):
        from wgkern.lang.fields import _caller_variable_name, field
        name = name or _caller_variable_name() or "struct"
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "struct_type", struct_type)
        members: dict[str, Any] = {}
        for member, dtype in struct_type.members.items():
            if isinstance(dtype, StructType):
                members[member] = StructField(dtype, shape, needs_grad, f"{name}.{member}", offset=offset,
                                              needs_dual=needs_dual)
                continue
            float_member = getattr(dtype, "is_float", None)
            if float_member is None:
                float_member = getattr(getattr(dtype, "dtype", None), "is_float", dtype is float)
            members[member] = field(dtype, shape=shape, needs_grad=needs_grad and bool(float_member),
                                    needs_dual=needs_dual and bool(float_member), name=f"{name}.{member}",
                                    offset=offset)
        object.__setattr__(self, "members", members)
        object.__setattr__(self, "shape", next(iter(members.values())).shape)
        object.__setattr__(self, "offset", next(iter(members.values())).offset)   # the members' (offset=)

    _place_node: Any = None             # set by node.place(s) (lang/snode.py)

    @property
    def snode(self) -> Any:
        """Taichi's `s.snode`: the place node of the struct field's members."""
        return next(iter(self.members.values())).snode if self._place_node is None else self._place_node

    def parent(self, n: int = 1) -> Any:
        return self.snode.parent(n)

    def __getattr__(self, member: str) -> Any:
        members = self.__dict__.get("members", {})
        if member in members:
            return members[member]
        raise AttributeError(f"struct field '{self.__dict__.get('name', '?')}' has no member '{member}'")

    def __setattr__(self, member: str, value: Any) -> None:
        raise WkError(f"struct field '{self.name}': assign to elements (s.{member}[i] = ..., s.{member}.fill(...))")

    def __str__(self) -> str:
        """`print(struct_field)` on the host prints its members' values (as Taichi does)."""
        return str(self.to_numpy())

    def to_numpy(self) -> dict[str, Any]:
        return {member: f.to_numpy() for member, f in self.members.items()}

    def to_torch(self, device: Any = None) -> dict[str, Any]:
        """Taichi's: a dict of one torch tensor per member."""
        return {member: f.to_torch(device) for member, f in self.members.items()}

    def from_torch(self, tensors: dict[str, Any]) -> None:
        self.from_numpy({member: t.detach().cpu().numpy() for member, t in tensors.items()})

    @property
    def element_shape(self) -> tuple[int, ...]:
        return ()

    @property
    def keys(self) -> list[str]:
        """The member names (Taichi's `s.keys`)."""
        return list(self.members)

    def get_member_field(self, key: str) -> Any:
        """Quadrants' `s.get_member_field(key)`: the field (or struct field) of one member."""
        if key not in self.members:
            raise KeyError(f"struct field '{self.name}' has no member '{key}' (its members: {', '.join(self.members)})")
        return self.members[key]

    @property
    def has_grad(self) -> Any:
        """Whether a member has a `.grad` (read as `s.has_grad` or called, Quadrants' `s.has_grad()`)."""
        from wgkern.lang.fields import Flag
        return Flag(any(f.has_grad for f in self.members.values()))

    @property
    def has_dual(self) -> Any:
        from wgkern.lang.fields import Flag
        return Flag(any(f.has_dual for f in self.members.values()))

    @property
    def dtype(self) -> StructType:
        return self.struct_type

    @property
    def grad(self) -> StructField | None:
        """The members' gradients as a struct field (members without one are left out); None if none has one."""
        grads = {}
        for member, f in self.members.items():
            g = f.grad
            if g is not None:
                grads[member] = g
        if not grads:
            return None
        view = object.__new__(StructField)
        object.__setattr__(view, "name", f"{self.name}.grad")
        object.__setattr__(view, "struct_type", StructType({m: self.struct_type.members[m] for m in grads}))
        object.__setattr__(view, "members", grads)
        object.__setattr__(view, "shape", self.shape)
        return view

    def copy_from(self, other: StructField) -> None:
        """Copy every member from a struct field of the same members and shape."""
        if not isinstance(other, StructField) or set(other.members) != set(self.members):
            raise WkError(f"struct field '{self.name}'.copy_from() takes a struct field with the members "
                          f"{', '.join(self.members)}")
        for member, f in self.members.items():
            f.copy_from(other.members[member])

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

    def __setitem__(self, index: Any, value: Any) -> None:
        """`s[i] = P(...)` (or a dict of members) on the host: every member given is written."""
        items = value.members if isinstance(value, HostStruct) else \
            value.to_dict() if isinstance(value, _HostElement) else value
        if not isinstance(items, dict):
            raise WkError(f"struct field '{self.name}': s[i] = ... takes a struct value or a dict of members, "
                          f"not {type(value).__name__}")
        element = _HostElement(self, index)
        for member, member_value in items.items():
            setattr(element, member, member_value)


class _HostElement:
    """`s[i]` on the host: its members read and written one by one."""

    def __init__(self, owner: StructField, index: Any):
        object.__setattr__(self, "_owner", owner)
        object.__setattr__(self, "_index", index)

    def __getattr__(self, member: str) -> Any:
        return getattr(self._owner, member)[self._index]

    def __setattr__(self, member: str, value: Any) -> None:
        target = getattr(self._owner, member)
        target[self._index] = value.to_dict() if isinstance(value, (HostStruct, _HostElement)) else value

    def to_dict(self) -> dict[str, Any]:
        out = {}
        for member in self._owner.members:
            value = getattr(self, member)
            out[member] = value.to_dict() if isinstance(value, _HostElement) else \
                (value.tolist() if hasattr(value, "tolist") else value)
        return out

    def __repr__(self) -> str:
        """Printed as Taichi prints an element of a struct field: a dict of its members' values."""
        return str(self.to_dict())


def struct(**members: Any) -> StructType:
    """`wk.types.struct(pos=wk.math.vec3, mass=wk.f32)`."""
    return StructType(members)


def dataclass(cls: type) -> StructType:
    """`@wk.dataclass` on a class of annotated members (`pos: wk.math.vec3`, `mass: wk.f32`): Taichi's spelling of
    a struct type, named after the class (`Particle.field(shape=n)`). Its @wk.func methods are called on struct
    values and field elements in kernels (`p.energy()`, `s[i].move(dt)`; `self` is the value itself, so a
    method's writes to `self` change it); plain Python methods are methods of its Python-scope values
    (HostStruct), and a kernel that calls one gets an error naming it."""
    import inspect
    from wgkern.lang.kernel import Func
    if not isinstance(cls, type):
        raise WkError(f"@wk.dataclass decorates a class, not {type(cls).__name__}")
    try:
        members = inspect.get_annotations(cls, eval_str=True)
    except Exception as exc:  # noqa: BLE001 - any failure to evaluate a user's annotation
        raise WkError(f"@wk.dataclass {cls.__name__}: cannot evaluate its member annotations ({exc})") from None
    methods = {name: value for name, value in vars(cls).items() if isinstance(value, Func)}
    plain = {name: value for name, value in vars(cls).items()
             if callable(value) and not name.startswith("__") and name not in methods}
    if not members:
        raise WkError(f"@wk.dataclass {cls.__name__} has no annotated members (name: dtype)")
    defaulted = [name for name in members if name in vars(cls)]
    if defaulted:        # a struct's members start at zero: a default value would be silently dropped
        raise CompileError(f"@wk.dataclass {cls.__name__}: default values of members are not supported "
                           f"({', '.join(defaulted)}); members start at zero (Default value in @dataclass is not "
                           "supported.)", _member_loc(cls, defaulted[0]))
    stype = StructType(members, name=cls.__name__, methods=methods)
    stype.host_methods = plain
    return stype


def _member_loc(cls: type, member: str) -> SourceLoc | None:
    """Where `member` is declared in the source of `cls` (None where the source cannot be read)."""
    import inspect
    try:
        lines, first = inspect.getsourcelines(cls)
        filename = inspect.getsourcefile(cls)
    except (OSError, TypeError):
        return None
    for offset, line in enumerate(lines):
        stripped = line.lstrip()
        if stripped.startswith(f"{member}:") or stripped.startswith(f"{member} :"):
            return SourceLoc(filename, first + offset, len(line) - len(stripped))
    return None


def host_type_of(value: Any) -> Any:
    """The member type a Python-scope value gives a `wk.Struct(...)` member."""
    import numpy as np
    from wgkern.lang import types as T
    if isinstance(value, HostStruct):
        return value.struct_type
    if isinstance(value, (bool, np.bool_)):
        return bool
    if isinstance(value, (int, np.integer)):
        return int
    if isinstance(value, (float, np.floating)):
        return float
    array = np.asarray(value)
    if array.ndim not in (1, 2) or array.dtype == object:
        raise WkError(f"wk.Struct(...) members are numbers, vectors, matrices or structs, not {type(value).__name__}")
    dtype = float if array.dtype.kind == "f" else int
    return T.vector(array.shape[0], dtype) if array.ndim == 1 else T.matrix(array.shape[0], array.shape[1], dtype)


class Struct:
    """`wk.Struct.field({"pos": vec3, ...}, shape=n)` (Taichi's spelling). In kernel code `wk.Struct({...})` or
    `wk.Struct(pos=..., m=...)` makes a struct value whose member types are the values' own; so does it in Python
    scope (a HostStruct, which kernels may read as a global)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> HostStruct:  # type: ignore[misc]
        if len(args) > 1 or (args and not isinstance(args[0], dict)):
            raise WkError("wk.Struct(...) takes a dict of members or members by name")
        given = {**(args[0] if args else {}), **kwargs}
        if not given or not all(isinstance(name, str) for name in given):
            raise WkError("wk.Struct(...) needs members named by strings")
        values = {name: Struct(value) if isinstance(value, dict) else value for name, value in given.items()}
        return HostStruct(StructType({name: host_type_of(value) for name, value in values.items()}), values)

    @staticmethod
    def field(members: dict[str, Any], shape: Any = (), needs_grad: bool = False, name: str = "",
              **options: Any) -> StructField:
        return StructType(members).field(shape, needs_grad, name, **options)
