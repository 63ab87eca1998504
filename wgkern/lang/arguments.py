"""Kernel argument specialisation: checks a call's arguments against the parameters' annotations and turns
them into a cache key, the frontend's ArgSpecs and the template values.

Every user mistake (count, kind, dtype, ndim, element shape, a container from an earlier wk.init, an integer its
type cannot hold) is an ArgumentError naming the parameter, with Quadrants' phrase for it where a ported test
matches one ("Invalid value for argument x - ..."). Non-contiguous numpy arrays are accepted (copied in and out). Parameter rules are computed once per kernel."""
from __future__ import annotations

import dataclasses
import inspect
import itertools
import reprlib
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from wgkern.errors import ArgumentError, CallError
from wgkern.ir.nodes import ArgSpec
from wgkern.lang.fields import Container, Field, Ndarray
from wgkern.lang.torch_arguments import torch_argument
from wgkern.lang.torch_interop import is_torch_tensor
from wgkern.lang.argument_cache import DATACLASS_ARGUMENTS
from wgkern.lang.types import (DataType, NdarrayType, SparseMatrixBuilderType, Template, VectorType,
                               called_annotation, f32, from_numpy_dtype, i32, out_of_range, range_text, to_dtype)

SCALAR, NDARRAY, TEMPLATE, VECTOR, STRUCT, INFER = "scalar", "ndarray", "template", "vector", "struct", "infer"
SPARSE_MATRIX_BUILDER = "sparse_matrix_builder"     # its buffers are passed as ndarray arguments (wgkern/linalg)
# The ndarrays a sparse_matrix_builder() parameter receives, in order (frontend/sparse_matrix.py binds them so).
SPARSE_BUILDER_BUFFERS = ("rows", "cols", "values", "count")
OBJECT = "object"           # a template object (@wk.data_oriented) holding wk.ndarrays: each is an argument of its own
DATACLASS = "dataclass"     # a dataclasses.dataclass value (Quadrants): ndarray members are arguments of their own
BUFFER_VIEW = "buffer_view"  # a wk.BufferView: its ndarray, then its offset and size as i32 arguments
TEXTURE = "texture"         # a wk.Texture: its texel ndarray is passed as an ndarray argument (lang/texture.py)


@dataclass(frozen=True, slots=True)
class ParamRule:
    """What one kernel parameter accepts, from its annotation. kind: scalar / ndarray / template /
    vector (a vector or matrix value) / struct (a struct value) / sparse_matrix_builder / dataclass (a
    `dataclasses.dataclass` type) / texture (a wk.Texture; `struct_type` holds its annotation) / infer (no
    annotation). Vector and struct values are passed at run time as scalar arguments, one per component
    (`leaves`); a sparse matrix builder as its ndarray buffers."""
    name: str
    kind: str
    dtype: DataType | None = None
    element_type: VectorType | None = None
    ndim: int | None = None
    struct_type: Any = None
    leaves: tuple[tuple[str, DataType], ...] = ()
    element_dim: int = 0         # ndarray(element_dim=k): a numpy argument's last k axes are its elements
    needs_grad: bool | None = None  # ndarray(needs_grad=False): the reverse kernel leaves the argument's .grad alone


@dataclass(slots=True)
class Specialisation:
    """The outcome of checking one call: `key` identifies the compiled variant; `values` are the
    arguments in parameter order (numpy arrays stay numpy; launch.py stages them). `parts[i]` is argument
    i's (kind, key part); the ArgSpecs are built from them only when a variant is compiled."""
    key: tuple[Any, ...]
    parts: list[tuple[str, Any]]
    template_values: dict[int, Any]
    values: list[Any]
    rules: list[ParamRule]
    _arg_specs: list[ArgSpec] | None = None

    @property
    def arg_specs(self) -> list[ArgSpec]:
        """One ArgSpec per parameter, then one scalar ArgSpec per component of each vector/struct parameter
        and one ndarray ArgSpec per buffer of each sparse matrix builder (in parameter order, as `values`
        holds them)."""
        if self._arg_specs is None:
            specs = [_arg_spec(rule, kind, part) for rule, (kind, part) in zip(self.rules, self.parts)]
            components: list[ArgSpec] = []
            for index, rule in enumerate(self.rules):
                if self.parts[index][0] in (DATACLASS, OBJECT):
                    members = self.parts[index][1][2]
                    first = len(specs) + len(components)
                    specs[index].components = tuple(range(first, first + len(members)))
                    components.extend(_arg_spec(ParamRule(f"{rule.name}.{'.'.join(path)}", NDARRAY), NDARRAY, part)
                                      for path, part in members)
                elif self.parts[index][0] == SPARSE_MATRIX_BUILDER:
                    buffers = _sparse_builder_specs(rule.name, self.parts[index][1])
                    first = len(specs) + len(components)
                    specs[index].components = tuple(range(first, first + len(buffers)))
                    components.extend(buffers)
                elif self.parts[index][0] == BUFFER_VIEW:
                    first = len(specs) + len(components)
                    specs[index].components = (first, first + 1, first + 2)
                    components.append(_arg_spec(ParamRule(f"{rule.name}.ndarray", NDARRAY), NDARRAY,
                                                self.parts[index][1]))
                    components.extend(ArgSpec(name=f"{rule.name}.{what}", kind=SCALAR, dtype=i32)
                                      for what in ("offset", "size"))
                elif self.parts[index][0] == TEXTURE:
                    specs[index].components = (len(specs) + len(components),)
                    components.append(ArgSpec(name=f"{rule.name}.texels", kind=NDARRAY, dtype=f32,
                                              ndim=self.parts[index][1].num_dims + 1))
                elif self.parts[index][0] in (VECTOR, STRUCT):
                    first = len(specs) + len(components)
                    specs[index].components = tuple(range(first, first + len(rule.leaves)))
                    components.extend(ArgSpec(name=f"{rule.name}{path}", kind=SCALAR, dtype=dtype)
                                      for path, dtype in rule.leaves)
            self._arg_specs = specs + components
        return self._arg_specs


def _sparse_builder_specs(name: str, dtype: DataType) -> list[ArgSpec]:
    """The ndarray ArgSpecs of one sparse_matrix_builder() parameter's buffers (SPARSE_BUILDER_BUFFERS)."""
    dtypes = (i32, i32, dtype, i32)
    return [ArgSpec(name=f"{name}.{buffer}", kind="ndarray", dtype=buffer_dtype, ndim=1)
            for buffer, buffer_dtype in zip(SPARSE_BUILDER_BUFFERS, dtypes)]


def _arg_spec(rule: ParamRule, kind: str, part: Any) -> ArgSpec:
    if kind == SPARSE_MATRIX_BUILDER:
        return ArgSpec(name=rule.name, kind=SPARSE_MATRIX_BUILDER, dtype=part)
    if kind == TEXTURE:
        return ArgSpec(name=rule.name, kind=TEXTURE, dtype=part)
    if kind == BUFFER_VIEW:
        return ArgSpec(name=rule.name, kind=BUFFER_VIEW, dtype=part[1])
    if kind == STRUCT:
        return ArgSpec(name=rule.name, kind=TEMPLATE, dtype=rule.struct_type)
    if kind == DATACLASS:
        return ArgSpec(name=rule.name, kind=TEMPLATE, dtype=part[1])
    if kind == OBJECT:
        return ArgSpec(name=rule.name, kind=TEMPLATE)
    if kind == SCALAR:
        return ArgSpec(name=rule.name, kind=SCALAR, dtype=part)
    if kind == NDARRAY:
        _, dtype, ndim, element_shape, has_grad, _ = part
        return ArgSpec(name=rule.name, kind=NDARRAY, dtype=dtype, ndim=ndim, element_shape=element_shape,
                       needs_grad=bool(has_grad))
    if kind == VECTOR:
        assert rule.element_type is not None
        return ArgSpec(name=rule.name, kind=TEMPLATE, dtype=rule.dtype, element_shape=rule.element_type.element_shape)
    return ArgSpec(name=rule.name, kind=TEMPLATE)


def _resolve_annotation(kernel: Any, annotation: Any) -> Any:
    """Evaluate string annotations (modules using `from __future__ import annotations`)."""
    if not isinstance(annotation, str):
        return called_annotation(annotation)
    fn = inspect.unwrap(kernel.fn)
    namespace = dict(getattr(fn, "__globals__", {}))
    closure = inspect.getclosurevars(fn) if getattr(fn, "__closure__", None) else None
    if closure is not None:
        namespace.update(closure.nonlocals)
    try:
        return called_annotation(eval(annotation, namespace))  # noqa: S307 - the user's own annotation text
    except Exception as exc:  # noqa: BLE001
        raise ArgumentError(f"kernel '{kernel.name}': cannot evaluate annotation {annotation!r} ({exc})") \
            from None


def _rule_of(kernel: Any, param: inspect.Parameter) -> ParamRule:
    name = param.name
    if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
        raise ArgumentError(f"kernel '{kernel.name}': *args/**kwargs parameters are not supported ('{name}')")
    annotation = _resolve_annotation(kernel, param.annotation)
    from wgkern.lang.tensor import MatrixTensor, Tensor, VectorTensor
    if annotation is inspect.Parameter.empty or annotation in (Tensor, VectorTensor, MatrixTensor):
        return ParamRule(name, INFER)       # Quadrants' `x: qd.Tensor`: a field or an ndarray, as unannotated
    if isinstance(annotation, Template) or annotation is Template:
        return ParamRule(name, TEMPLATE)
    if isinstance(annotation, SparseMatrixBuilderType) or annotation is SparseMatrixBuilderType:
        return ParamRule(name, SPARSE_MATRIX_BUILDER)
    from wgkern.lang.buffer_view import BufferView, BufferViewType
    if isinstance(annotation, BufferViewType) or annotation is BufferView:
        dtype = annotation.dtype if isinstance(annotation, BufferViewType) else None
        element = dtype if isinstance(dtype, VectorType) else None
        return ParamRule(name, BUFFER_VIEW, element.dtype if element is not None else dtype, element, 1)
    from wgkern.lang.texture import RWTextureType, TextureType
    if isinstance(annotation, (TextureType, RWTextureType)) or annotation in (TextureType, RWTextureType):
        return ParamRule(name, TEXTURE, struct_type=annotation)       # struct_type: the texture annotation
    if isinstance(annotation, NdarrayType) or annotation is NdarrayType:
        if annotation is NdarrayType:
            annotation = NdarrayType()
        element = annotation.dtype if isinstance(annotation.dtype, VectorType) else None
        dtype = element.dtype if element is not None else annotation.dtype
        return ParamRule(name, NDARRAY, dtype, element, annotation.ndim, element_dim=annotation.element_dim,
                         needs_grad=annotation.needs_grad)
    if isinstance(annotation, VectorType):
        leaves = tuple((f"[{k}]", annotation.dtype) for k in range(annotation.size))
        return ParamRule(name, VECTOR, annotation.dtype, annotation, leaves=leaves)
    from wgkern.lang.structs import StructType
    if isinstance(annotation, StructType):
        return ParamRule(name, STRUCT, struct_type=annotation, leaves=tuple(_struct_leaves(annotation, "")))
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return ParamRule(name, DATACLASS, struct_type=annotation)
    try:
        return ParamRule(name, SCALAR, to_dtype(annotation))
    except TypeError:
        raise ArgumentError(f"kernel '{kernel.name}': parameter '{name}' has an unsupported annotation "
                            f"{annotation!r}; use a dtype (wk.f32, int, float), wk.types.ndarray(), "
                            "wk.template(), wk.types.vector/matrix or a dataclass") from None


def _struct_leaves(stype: Any, prefix: str) -> list[tuple[str, DataType]]:
    """(path, dtype) of every scalar component of a struct type, members in order, vectors element by element."""
    from wgkern.lang.structs import StructType
    out: list[tuple[str, DataType]] = []
    for member, spec in stype.members.items():
        path = f"{prefix}.{member}"
        if isinstance(spec, StructType):
            out.extend(_struct_leaves(spec, path))
        elif isinstance(spec, VectorType):
            out.extend((f"{path}[{k}]", spec.dtype) for k in range(spec.size))
        else:
            out.append((path, to_dtype(spec)))
    return out


def _struct_values(kernel: Any, rule: ParamRule, value: Any) -> list[Any]:
    """The scalar components of a struct argument (a struct value made in Python scope, or a dict)."""
    from wgkern.lang.structs import HostStruct
    if isinstance(value, dict):
        try:
            value = rule.struct_type(**value)
        except Exception as exc:  # noqa: BLE001 - WkError naming the member
            raise ArgumentError(f"{_where(kernel, rule)}: {exc}") from None
    if not isinstance(value, HostStruct) or list(value.struct_type.members) != list(rule.struct_type.members):
        raise ArgumentError(f"{_where(kernel, rule)} expects a {rule.struct_type!r} value (made by calling the "
                            f"struct type), got {type(value).__name__}")
    out: list[tuple[str, Any]] = []

    def flatten(item: Any, prefix: str) -> None:
        for name, member in item.members.items():
            path = f"{prefix}.{name}"
            if isinstance(member, HostStruct):
                flatten(member, path)
            elif isinstance(member, np.ndarray):
                out.extend((f"{path}[{k}]", v) for k, v in enumerate(member.reshape(-1).tolist()))
            else:
                out.append((path, member))
    flatten(value, "")
    if [path for path, _ in out] != [path for path, _ in rule.leaves]:
        # Same member names, other shapes (Quadrants' test_pass_struct_mismatch: a vec2 member where the
        # parameter has a vec3, at the top or in a nested struct value).
        at = next((i for i, ((p, _), (q, _)) in enumerate(zip(out, rule.leaves)) if p != q),
                  min(len(out), len(rule.leaves)))
        want = f"'{rule.name}{rule.leaves[at][0]}'" if at < len(rule.leaves) else "nothing"
        got = f"'{rule.name}{out[at][0]}'" if at < len(out) else "nothing"
        raise ArgumentError(f"{_where(kernel, rule)} expects a {rule.struct_type!r} value, got a "
                            f"{value.struct_type!r} value whose members have other shapes (component {at} "
                            f"is {want} in the parameter, {got} in the value)")
    return [_scalar_value(kernel, ParamRule(f"{rule.name}{path}", SCALAR, dtype), dtype, v)
            for (_, v), (path, dtype) in zip(out, rule.leaves)]


def dataclass_ndarray_members(value: Any, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any, Any]]:
    """(path, array, member annotation) of every wk.ndarray / numpy member of a dataclass value, nested
    dataclasses included, in field order: the order of the dataclass argument's ndarray arguments."""
    out: list[tuple[tuple[str, ...], Any, Any]] = []
    for member in dataclasses.fields(value):
        item = getattr(value, member.name)
        path = prefix + (member.name,)
        if isinstance(item, (Ndarray, np.ndarray)):
            out.append((path, item, member.type))
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            out.extend(dataclass_ndarray_members(item, path))
    return out


def object_containers(value: Any) -> tuple[tuple[tuple[str, ...], Any], ...]:
    """(path, container) of every wk.ndarray and field attribute of a template object (`self` of a
    @wk.data_oriented class, or any object passed as a wk.template()), searching the attributes that are
    @wk.data_oriented objects or dataclass values too, in attribute order."""
    return _holdings(value, ())[0][0]


def object_ndarray_members(value: Any) -> tuple[tuple[tuple[str, ...], Any], ...]:
    """(path, array) of the wk.ndarrays of a template object (object_containers). As in Quadrants, they are
    passed as ndarray arguments at each launch (so an attribute reassigned to another ndarray is the one the
    kernel sees)."""
    return _holdings(value, ())[0][1]


# This runs at every launch of a kernel taking such an object (a solver with hundreds of fields), so each
# object's relevant attributes are kept while its attribute names and values are the same objects (a version
# number per object), and each object's flattened holdings while its and its searched attributes' versions are.
_HELD_KINDS: dict[type, int] = {}       # attribute type -> 1 container, 2 object searched too, 0 neither
_OWN: dict[int, tuple[Any, tuple[Any, ...], list[tuple[str, Any, Any]], int]] = {}
_FLAT: dict[int, tuple[Any, tuple[Any, Any]]] = {}
_VERSIONS = itertools.count(1)
_NOTHING: tuple[tuple[Any, ...], tuple[Any, ...]] = ((), ())


def _held_kind(kind_of: type) -> int:
    kind = _HELD_KINDS.get(kind_of)
    if kind is None:
        kind = 1 if issubclass(kind_of, Container) else 2 if (
            getattr(kind_of, "_wk_data_oriented", False) or dataclasses.is_dataclass(kind_of)) else 0
        _HELD_KINDS[kind_of] = kind
    return kind


def _forget(key: int) -> None:
    _OWN.pop(key, None)
    _FLAT.pop(key, None)


def _own_members(value: Any, attributes: dict[str, Any]) -> tuple[list[tuple[str, Any, Any]], int]:
    """One object's (name, container, None) and (name, None, object) attributes, and their version."""
    snapshot = (tuple(attributes), tuple(map(id, attributes.values())))
    key = id(value)
    entry = _OWN.get(key)
    if entry is not None and entry[0]() is value and entry[1] == snapshot:
        return entry[2], entry[3]
    own: list[tuple[str, Any, Any]] = []
    for name, item in attributes.items():
        kind = _held_kind(type(item))
        if kind == 1:
            own.append((name, item, None))
        elif kind == 2:
            own.append((name, None, item))
    same = entry is not None and entry[0]() is value and len(entry[2]) == len(own) and all(
        a[0] == b[0] and a[1] is b[1] and a[2] is b[2] for a, b in zip(entry[2], own))
    version = entry[3] if same else next(_VERSIONS)     # other attributes changed: the same holdings
    try:
        reference = weakref.ref(value, lambda _, key=key: _forget(key))
    except TypeError:          # not weakly referable: not kept
        return own, version
    _OWN[key] = (reference, snapshot, own, version)
    return own, version


def _holdings(value: Any, stack: tuple[int, ...]) -> tuple[tuple[Any, Any], Any]:
    """((containers, ndarrays), signature) of an object; see object_containers. Equal signatures mean the same
    holdings (a version changes only with them), so the signature stands for them in kernel cache keys."""
    attributes = getattr(value, "__dict__", None)
    if not isinstance(attributes, dict) or id(value) in stack or len(stack) > 8:
        return _NOTHING, None
    own, version = _own_members(value, attributes)
    inner = stack + (id(value),)
    children = {name: _holdings(child, inner) for name, _, child in own if child is not None}
    signature = (version, tuple(sig for _, sig in children.values())) if children else version
    cached = _FLAT.get(id(value))
    if cached is not None and cached[0] == signature:
        return cached[1], signature
    flat: list[tuple[tuple[str, ...], Any]] = []
    for name, container, _ in own:
        if container is not None:
            flat.append(((name,), container))
        else:
            flat.extend(((name,) + path, c) for path, c in children[name][0][0])
    held = (tuple(flat), tuple((path, c) for path, c in flat if isinstance(c, Ndarray)))
    if id(value) in _OWN:
        _FLAT[id(value)] = (signature, held)
    return held, signature


def _object_part(kernel: Any, rule: ParamRule, value: Any, members: list[Any], program: Any,
                 components: list[Any]) -> tuple[Any, ...]:
    """The key part of a template object holding ndarrays: the object's identity and each ndarray's part; the
    ndarrays themselves are appended to `components`."""
    parts = []
    for path, array in members:
        parts.append((path, _ndarray_part(kernel, ParamRule(f"{rule.name}.{'.'.join(path)}", NDARRAY), array,
                                          program)))
        components.append(array)
    fields = tuple((path, c) for path, c in object_containers(value) if not isinstance(c, Ndarray))
    return (OBJECT, template_key(value), tuple(parts), fields)


def is_dataclass_value(value: Any) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def _dataclass_part(kernel: Any, rule: ParamRule, value: Any, program: Any,
                    components: list[Any]) -> tuple[Any, ...]:
    """Check a dataclass argument: its ndarray members become ndarray arguments (appended to `components`),
    checked against their member annotations (`a: wk.types.NDArray[wk.f32, 1]`); every other member is a
    compile-time value, as a template's. Returns the key part (DATACLASS, type, ndarray parts, other members)."""
    if rule.struct_type is not None and not isinstance(value, rule.struct_type):
        raise ArgumentError(f"{_where(kernel, rule)} expects a {rule.struct_type.__name__} value, got "
                            f"{type(value).__name__}")
    members = []
    for path, array, annotation in dataclass_ndarray_members(value):
        annotation = _resolve_annotation(kernel, annotation) if isinstance(annotation, str) else annotation
        member_rule = ParamRule(f"{rule.name}.{'.'.join(path)}", NDARRAY)
        if isinstance(annotation, NdarrayType):
            element = annotation.dtype if isinstance(annotation.dtype, VectorType) else None
            member_rule = ParamRule(member_rule.name, NDARRAY, element.dtype if element is not None
                                    else annotation.dtype, element, annotation.ndim)
        members.append((path, _ndarray_part(kernel, member_rule, array, program)))
        components.append(array)
    _check_integer_members(kernel, rule, value, "")
    others = []
    for member in dataclasses.fields(value):
        item = getattr(value, member.name)
        if not isinstance(item, (Ndarray, np.ndarray)) and not is_dataclass_value(item):
            _check_template_containers(kernel, rule, item, program)
            others.append((member.name, template_key(item)))
        elif is_dataclass_value(item):
            others.append((member.name, _dataclass_key(item)))
    return (DATACLASS, type(value), tuple(members), tuple(others))


_INTEGER_MEMBERS: weakref.WeakKeyDictionary[type, dict[str, DataType]] = weakref.WeakKeyDictionary()


def _integer_members(cls: type) -> dict[str, DataType]:
    """The members of a dataclass type annotated with an integer dtype (`n: wk.i32`), worked out once per type;
    string annotations are read in the class's module."""
    found = _INTEGER_MEMBERS.get(cls)
    if found is None:
        import sys
        namespace = vars(sys.modules[cls.__module__]) if cls.__module__ in sys.modules else {}
        found = {}
        for member in dataclasses.fields(cls):
            annotation = member.type
            if isinstance(annotation, str):
                try:
                    annotation = eval(annotation, dict(namespace))  # noqa: S307 - the user's own annotation text
                except Exception:  # noqa: BLE001 - a name this module cannot resolve: the member is untyped
                    continue
            if isinstance(annotation, DataType) and annotation.is_int:
                found[member.name] = annotation
        _INTEGER_MEMBERS[cls] = found
    return found


def _check_integer_members(kernel: Any, rule: ParamRule, value: Any, prefix: str) -> None:
    """Number members annotated with an integer dtype, nested dataclasses included, must be numbers that dtype
    holds: kernel code would otherwise read a value the annotation says cannot exist."""
    for name, dtype in _integer_members(type(value)).items():
        item = getattr(value, name)
        if isinstance(item, (int, np.integer)) and (item < dtype.low or item > dtype.high):
            raise ArgumentError(f"{_where(kernel, rule)}: member '{prefix}{name}' is {dtype!r} but holds {item!r}, "
                                f"out of its range ({range_text(dtype)})")
    for member in dataclasses.fields(value):
        item = getattr(value, member.name)
        if is_dataclass_value(item):
            _check_integer_members(kernel, rule, item, f"{prefix}{member.name}.")


def _dataclass_key(value: Any) -> Any:
    """The compile-time identity of a nested dataclass member (its ndarray members excluded: they are arguments)."""
    return (type(value), tuple((m.name, _dataclass_key(getattr(value, m.name)) if is_dataclass_value(
        getattr(value, m.name)) else None if isinstance(getattr(value, m.name), (Ndarray, np.ndarray))
        else template_key(getattr(value, m.name))) for m in dataclasses.fields(value)))


def param_rules(kernel: Any) -> list[ParamRule]:
    rules = getattr(kernel, "_wk_param_rules", None)
    if rules is None:
        rules = [_rule_of(kernel, p) for p in kernel.params]
        kernel._wk_param_rules = rules
    return rules


def _bind(kernel: Any, rules: list[ParamRule], args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    if not kwargs and len(args) == len(rules):
        return list(args)
    unknown = [name for name in kwargs if name not in kernel.signature.parameters]
    if unknown:
        names = ", ".join(r.name for r in rules)
        raise CallError(f"kernel '{kernel.name}({names})' has no parameter named {', '.join(map(repr, unknown))} "
                        f"({'; '.join(f'Unexpected argument {name!r}' for name in unknown)})")
    try:
        bound = kernel.signature.bind(*args, **kwargs)
    except TypeError as exc:
        from wgkern.lang.kernel import call_problems
        names = ", ".join(r.name for r in rules)
        problems = call_problems(kernel.signature, len(args), kwargs) or str(exc)
        raise CallError(f"kernel '{kernel.name}({names})' called with {len(args)} positional and "
                        f"{len(kwargs)} keyword arguments: {problems}") from None
    bound.apply_defaults()
    return list(bound.arguments.values())


def _where(kernel: Any, rule: ParamRule) -> str:
    return f"kernel '{kernel.name}', parameter '{rule.name}'"


def _check_program(kernel: Any, rule: ParamRule, value: Container, program: Any) -> None:
    if value.program is not program or not program.alive:
        raise ArgumentError(f"{_where(kernel, rule)}: {value.kind_name} '{value.name}' was created before the "
                            "last wk.reset()/wk.init() and its memory is gone; create it again")


def _scalar_value(kernel: Any, rule: ParamRule, dtype: DataType, value: Any) -> Any:
    """Check a scalar argument and return it as a Python number of the right kind."""
    kind = type(value)
    if dtype.is_float:
        if kind is float:
            return value
        if kind is int or kind is bool or isinstance(value, (np.floating, np.integer, np.bool_)):
            return float(value)
    elif dtype.is_bool:
        if kind is bool or kind is int or isinstance(value, (np.integer, np.bool_)):
            return bool(value)
    else:
        if kind is int or kind is bool or isinstance(value, (np.integer, np.bool_)):
            number = int(value)
            if number < dtype.low or number > dtype.high:       # Taichi would pass it wrapped (2**40 as 0)
                raise ArgumentError(f"{_where(kernel, rule)} is {dtype!r} but got {value!r}, out of its range "
                                    f"({range_text(dtype)})")
            return number
        if isinstance(value, (float, np.floating)):
            names = [p.name for p in getattr(kernel, "params", [])]
            position = f"({names.index(rule.name)},)" if rule.name in names else repr(rule.name)
            raise ArgumentError(f"{_where(kernel, rule)} is {dtype!r} but got the float {value!r}; "
                                "pass an int or annotate the parameter as a float type (Argument "
                                f"{position} (type={type(value)!r}) cannot be converted into required type "
                                f"{dtype.name})")
    if isinstance(value, np.ndarray) and value.shape == ():
        return _scalar_value(kernel, rule, dtype, value[()])
    raise ArgumentError(f"{_where(kernel, rule)} expects a {dtype!r} scalar, got {type(value).__name__}")


def _ndarray_part(kernel: Any, rule: ParamRule, value: Any, program: Any) -> tuple[Any, ...]:
    """Check an ndarray argument (wk.ndarray or numpy array); return its key part
    (NDARRAY, dtype, ndim, element_shape, has_grad, is_numpy)."""
    if isinstance(value, Ndarray):
        _check_program(kernel, rule, value, program)
        dtype, element, ndim = value.dtype, value.element_type, len(value.shape)
        has_grad = value.grad is not None and rule.needs_grad is not False
        is_numpy = False
    elif isinstance(value, np.ndarray):       # strided views too: numpy arguments are copied in and out
        try:
            dtype = from_numpy_dtype(value.dtype)
        except TypeError:
            raise ArgumentError(f"{_where(kernel, rule)}: numpy dtype {value.dtype} is not supported") from None
        element = rule.element_type
        if element is None and rule.element_dim and value.ndim >= rule.element_dim:
            # Taichi's element_dim: the last axes of the numpy array are the elements, in the array's dtype
            tail = value.shape[value.ndim - rule.element_dim:]
            element = VectorType(tail[0], tail[1] if rule.element_dim == 2 else 0, dtype)
        if element is not None:
            tail = element.element_shape
            if value.shape[value.ndim - len(tail):] != tail or value.ndim < len(tail):
                if rule.ndim is not None and value.ndim != rule.ndim + len(tail):     # Quadrants' two phrasings
                    quadrants = (f"required array has ndim={rule.ndim} element_dim={len(tail)}, array with "
                                 f"{value.ndim} dimensions is provided")
                else:
                    quadrants = (f"required element_shape={tail}, array with element shape of "
                                 f"{value.shape[max(value.ndim - len(tail), 0):]}")
                raise ArgumentError(f"{_where(kernel, rule)}: expects elements of shape {tail} "
                                    f"({element!r}); the numpy array has shape {value.shape} (Invalid value for "
                                    f"argument {rule.name} - {quadrants})")
        ndim = value.ndim - (len(element.element_shape) if element is not None else 0)
        has_grad = False
        is_numpy = True
    elif isinstance(value, Field):
        raise ArgumentError(f"{_where(kernel, rule)} is a wk.types.ndarray(); got field '{value.name}' (use it "
                            "by closure, or annotate the parameter wk.template())")
    else:
        raise ArgumentError(f"{_where(kernel, rule)} expects a wk.ndarray or a numpy array, got "
                            f"{type(value).__name__} (Invalid type for argument {rule.name}, got "
                            f"{reprlib.repr(value)})")
    # A numpy array for a vector/matrix annotation keeps its own scalar dtype (Quadrants compiles for it: a
    # float64 (n, 3) array passes for dtype=wk.math.vec3); a scalar annotation's dtype must match.
    numpy_for_vectors = is_numpy and rule.element_type is not None
    if rule.dtype is not None and dtype != rule.dtype and not numpy_for_vectors:
        raise ArgumentError(f"{_where(kernel, rule)} expects dtype {rule.dtype!r}, got {dtype!r} (Invalid value "
                            f"for argument {rule.name} - required array has dtype={rule.dtype!r})")
    if rule.element_dim and not is_numpy and (element is None or len(element.element_shape) != rule.element_dim):
        kind = "vector" if rule.element_dim == 1 else "matrix"
        raise ArgumentError(f"{_where(kernel, rule)} expects {kind} elements, got "
                            f"{repr(element) if element is not None else 'scalar elements'}")
    if rule.element_type is not None and not is_numpy and element != rule.element_type:
        got = repr(element) if element is not None else "scalar elements"
        raise ArgumentError(f"{_where(kernel, rule)} expects elements {rule.element_type!r}, got {got}")
    if rule.element_type is None and rule.kind == NDARRAY and element is not None and rule.dtype is not None:
        raise ArgumentError(f"{_where(kernel, rule)} expects scalar elements of {rule.dtype!r}, got "
                            f"{element!r}")
    if rule.ndim is not None and ndim != rule.ndim:
        raise ArgumentError(f"{_where(kernel, rule)} expects ndim={rule.ndim}, got an array with ndim={ndim} "
                            f"(Invalid value for argument {rule.name} - required array has ndim={rule.ndim}, array "
                            f"with {ndim} dimensions is provided)")
    element_shape = element.element_shape if element is not None else ()
    return (NDARRAY, dtype, ndim, element_shape, has_grad, is_numpy)


class IdentityKey:
    """A template object compared by identity (a @data_oriented instance, a plain Python object) without keeping
    it alive: kernel caches keyed by it let the object go (Taichi's test_oop_memory_leak). A key whose object has
    died equals no other key, so a new object given the dead one's id() compiles afresh."""
    __slots__ = ("ref", "ident")

    def __init__(self, value: Any):
        self.ref = weakref.ref(value)
        self.ident = id(value)

    def __hash__(self) -> int:
        return self.ident

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IdentityKey) or other.ident != self.ident:
            return False
        alive = self.ref()
        return alive is not None and alive is other.ref()


def template_key(value: Any) -> Any:
    """A hashable identity of a template value: containers by identity, numbers by (type, value), other objects
    by their own hash and equality, or by identity (IdentityKey) when they define neither."""
    if isinstance(value, Container):
        return value
    if isinstance(value, (bool, int, float, str, np.generic)) or value is None:
        return (type(value), value)
    if isinstance(value, (tuple, list)):
        return (type(value), tuple(template_key(v) for v in value))
    if isinstance(value, np.ndarray):
        return (np.ndarray, value.dtype.str, value.shape, value.tobytes())
    kind = type(value)
    by_identity = kind.__hash__ is object.__hash__ and kind.__eq__ is object.__eq__
    if not by_identity:
        try:
            hash(value)
            return value
        except TypeError:          # unhashable (defines __eq__ only): by identity
            pass
    try:
        return IdentityKey(value)
    except TypeError:              # not weakly referable: the object itself, or its id() if unhashable
        return value if by_identity else (kind, id(value))


def _check_template_containers(kernel: Any, rule: ParamRule, value: Any, program: Any) -> None:
    if isinstance(value, Container):
        _check_program(kernel, rule, value, program)
    elif isinstance(value, (tuple, list)):
        for item in value:
            _check_template_containers(kernel, rule, item, program)


def _vector_value(kernel: Any, rule: ParamRule, value: Any) -> Any:
    element = rule.element_type
    assert element is not None
    raw = getattr(value, "to_numpy", lambda: value)()
    try:
        if element.dtype.is_int:
            data = _integer_components(kernel, rule, element.dtype, np.asarray(raw))
        else:
            data = np.asarray(raw, dtype=element.dtype.np_dtype)
    except (TypeError, ValueError) as exc:
        if isinstance(exc, ArgumentError):
            raise
        raise ArgumentError(f"{_where(kernel, rule)} expects a {element!r} value, got {type(value).__name__}") \
            from None
    if data.shape != element.element_shape:
        raise ArgumentError(f"{_where(kernel, rule)} expects {element!r} (shape {element.element_shape}), got "
                            f"shape {data.shape}")
    return data


def _integer_components(kernel: Any, rule: ParamRule, dtype: DataType, source: np.ndarray) -> np.ndarray:
    """The components of a vector or matrix argument of an integer type: each must be an integer (a bool
    counts) that `dtype` holds, as for a scalar argument; numpy's cast would wrap or truncate silently."""
    if source.dtype.kind == "O":
        for item in source.reshape(-1):
            if not isinstance(item, (int, np.integer, np.bool_)):
                raise ArgumentError(f"{_where(kernel, rule)} has {dtype!r} components but got {item!r}")
    elif source.dtype.kind not in "iub":
        raise ArgumentError(f"{_where(kernel, rule)} has {dtype!r} components but got {source.dtype} values; "
                            "pass integers or annotate the parameter with a float type")
    bad = out_of_range(source, dtype)
    if bad is not None:
        raise ArgumentError(f"{_where(kernel, rule)} has {dtype!r} components but got {bad}, out of their range "
                            f"({range_text(dtype)})")
    return source.astype(dtype.np_dtype)


def specialise(kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any], program: Any) -> Specialisation:
    """Check a call against the kernel's parameters; see the module docstring. This runs on every launch:
    the common cases (a float for a float parameter, a live container) take the shortest path."""
    try:
        rules = kernel._wk_param_rules
    except AttributeError:
        rules = param_rules(kernel)
    if not rules and not args and not kwargs:     # a kernel without parameters: one variant, reused
        cached = getattr(kernel, "_wk_no_argument_spec", None)
        if cached is None:
            cached = kernel._wk_no_argument_spec = Specialisation((), [], {}, [], rules)
        return cached
    values = _bind(kernel, rules, args, kwargs) if kwargs or len(args) != len(rules) else list(args)
    parts: list[tuple[str, Any]] = []
    templates: dict[int, Any] = {}
    components: list[Any] = []
    for index, rule in enumerate(rules):
        value = values[index]
        kind = rule.kind
        if kind == INFER:
            kind, rule = _infer(kernel, rule, value)
        if kind == SCALAR:
            dtype = rule.dtype
            assert dtype is not None
            if not (type(value) is float and dtype.kind == "f"):
                values[index] = _scalar_value(kernel, rule, dtype, value)
            parts.append((SCALAR, dtype))
        elif kind == NDARRAY:
            if not isinstance(value, (Ndarray, np.ndarray)) and is_torch_tensor(value):
                value = values[index] = torch_argument(value, program, _where(kernel, rule))
            parts.append((NDARRAY, _ndarray_part(kernel, rule, value, program)))
        elif kind == VECTOR:
            components.extend(_vector_value(kernel, rule, value).reshape(-1).tolist())
            parts.append((VECTOR, rule.element_type))
        elif kind == STRUCT:
            components.extend(_struct_values(kernel, rule, value))
            parts.append((STRUCT, rule.struct_type))
        elif kind == SPARSE_MATRIX_BUILDER:
            buffers_of = getattr(value, "kernel_buffers", None)
            if buffers_of is None:
                raise ArgumentError(f"{_where(kernel, rule)} expects a wk.linalg.SparseMatrixBuilder, got "
                                    f"{type(value).__name__}")
            buffers = buffers_of(_where(kernel, rule))
            for buffer in buffers:
                _check_program(kernel, rule, buffer, program)
            components.extend(buffers)
            parts.append((SPARSE_MATRIX_BUILDER, value.dtype))
        elif kind == BUFFER_VIEW:
            from wgkern.lang.buffer_view import BufferView
            if not isinstance(value, BufferView):
                raise ArgumentError(f"{_where(kernel, rule)} expects a wk.BufferView (data[a:b] or BufferView(data, "
                                    f"offset, size)), got {type(value).__name__}")
            array = value.get_ndarray()
            parts.append((BUFFER_VIEW, _ndarray_part(kernel, ParamRule(f"{rule.name}.ndarray", NDARRAY, rule.dtype,
                                                                       rule.element_type, 1), array, program)))
            components.extend([array, value.offset, value.size])
        elif kind == TEXTURE:
            from wgkern.lang.texture import texture_argument
            part = texture_argument(_where(kernel, rule), rule.struct_type, value)
            _check_program(kernel, rule, value._texels, program)
            components.append(value._texels)
            parts.append((TEXTURE, part))
        elif kind == DATACLASS or (kind == TEMPLATE and is_dataclass_value(value)):
            part = DATACLASS_ARGUMENTS.part(rule, value, program, components, template_key,
                                            lambda out: _dataclass_part(kernel, rule, value, program, out))
            templates[index] = value
            parts.append((DATACLASS, part))
        else:
            if isinstance(value, Container):
                if value.program is not program or not program.alive:
                    _check_program(kernel, rule, value, program)
                part = value
            else:
                (held, members), signature = _holdings(value, ()) if hasattr(value, "__dict__") and not \
                    type(value).__module__.startswith("wgkern.") else (_NOTHING, None)  # a user object, not a Texture
                if members:
                    templates[index] = value
                    parts.append((OBJECT, _object_part(kernel, rule, value, members, program, components)))
                    continue
                _check_template_containers(kernel, rule, value, program)
                part = template_key(value)
                if held:         # the fields it holds now: one reassigned (or made again) is a new variant
                    part = (part, signature)
            templates[index] = value
            parts.append((TEMPLATE, part))
    if components:
        values.extend(components)
    return Specialisation(tuple(parts), parts, templates, values, rules)


def _infer(kernel: Any, rule: ParamRule, value: Any) -> tuple[str, ParamRule]:
    """An unannotated parameter: numbers are scalars (int -> i32, float -> f32), wk.ndarray/numpy arrays are
    ndarrays, everything else (fields, tuples, ...) is a compile-time template."""
    if isinstance(value, bool):
        return SCALAR, ParamRule(rule.name, SCALAR, to_dtype(bool))
    if isinstance(value, (int, float, np.integer, np.floating)):
        return SCALAR, ParamRule(rule.name, SCALAR, to_dtype(type(value) if isinstance(value, (int, float))
                                                            else value.dtype))
    if isinstance(value, (Ndarray, np.ndarray)) or is_torch_tensor(value):
        return NDARRAY, ParamRule(rule.name, NDARRAY)
    from wgkern.lang.texture import Texture
    if isinstance(value, Texture):
        return TEXTURE, ParamRule(rule.name, TEXTURE)
    return TEMPLATE, ParamRule(rule.name, TEMPLATE)
