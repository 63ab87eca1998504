"""The parameter rules of a kernel: the argument kinds, what each parameter accepts (ParamRule, read once per
kernel from its annotations), and binding a call's positional and keyword arguments to the parameters.

The bottom of the argument modules: lang/argument_checks.py, lang/argument_holdings.py and lang/arguments.py
build on it."""
from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass
from typing import Any

from wgkern.errors import ArgumentError, CallError
from wgkern.lang.types import (DataType, NdarrayType, SparseMatrixBuilderType, Template, VectorType,
                               called_annotation, to_dtype)

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
