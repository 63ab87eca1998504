"""The check of each argument value and its part of the kernel's cache key: scalars (in their dtype's range),
ndarrays (wk.ndarray or numpy: dtype, ndim, element shape), vector and struct values (their scalar components),
template values (template_key, IdentityKey) and the containers they hold (created by the live program).

Every mistake is an ArgumentError naming the kernel and the parameter (_where)."""
from __future__ import annotations

import reprlib
import weakref
from typing import Any

import numpy as np

from wgkern.errors import ArgumentError
from wgkern.lang.fields import Container, Field, Ndarray
from wgkern.lang.param_rules import NDARRAY, SCALAR, ParamRule, _where
from wgkern.lang.types import DataType, VectorType, from_numpy_dtype, out_of_range, range_text

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
