"""What a template object or a dataclass argument holds: the wk.ndarrays passed as arguments of their own (in
field or attribute order), the fields, and the key part of such an argument (the other members are compile-time
values). An object's holdings are kept between launches while its attributes stay the same objects."""
from __future__ import annotations

import dataclasses
import itertools
import weakref
from typing import Any

import numpy as np

from wgkern.errors import ArgumentError
from wgkern.lang.argument_checks import _check_template_containers, _ndarray_part, template_key
from wgkern.lang.fields import Container, Ndarray
from wgkern.lang.param_rules import DATACLASS, NDARRAY, OBJECT, ParamRule, _resolve_annotation, _where
from wgkern.lang.types import DataType, NdarrayType, VectorType, range_text

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


def searched_objects(value: Any) -> list[Any]:
    """The objects below `value` whose attributes the holdings search of `value` reads (its @wk.data_oriented and
    dataclass attributes, theirs, ...), each once. While every one of them and `value` keep the same attribute
    names and values, `value`'s holdings are the same (launch_plan.py checks exactly that)."""
    found: dict[int, Any] = {}

    def visit(item: Any, stack: tuple[int, ...]) -> None:
        attributes = getattr(item, "__dict__", None)
        if not isinstance(attributes, dict) or id(item) in stack or len(stack) > 8:
            return
        if stack:
            found.setdefault(id(item), item)
        inner = stack + (id(item),)
        for _, _, child in _own_members(item, attributes)[0]:
            if child is not None:
                visit(child, inner)

    visit(value, ())
    found.pop(id(value), None)       # reached again through a cycle: checked as the argument itself
    return list(found.values())


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
