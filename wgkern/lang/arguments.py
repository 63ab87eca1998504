"""Kernel argument specialisation: checks a call's arguments against the parameters' annotations and turns
them into a cache key, the frontend's ArgSpecs and the template values.

Every user mistake (count, kind, dtype, ndim, element shape, a container from an earlier wk.init, an integer its
type cannot hold) is an ArgumentError naming the parameter, with Quadrants' phrase for it where a ported test
matches one ("Invalid value for argument x - ..."). Non-contiguous numpy arrays are accepted (copied in and out). Parameter rules are computed once per kernel."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from wgkern.errors import ArgumentError
from wgkern.ir.nodes import ArgSpec
from wgkern.lang.argument_cache import DATACLASS_ARGUMENTS
from wgkern.lang.argument_checks import (_check_program, _check_template_containers, _ndarray_part, _scalar_value,
                                         _struct_values, _vector_value, template_key)
from wgkern.lang.argument_holdings import _NOTHING, _dataclass_part, _holdings, _object_part, is_dataclass_value
from wgkern.lang.fields import Container, Ndarray
from wgkern.lang.param_rules import (BUFFER_VIEW, DATACLASS, INFER, NDARRAY, OBJECT, SCALAR, SPARSE_BUILDER_BUFFERS,
                                     SPARSE_MATRIX_BUILDER, STRUCT, TEMPLATE, TEXTURE, VECTOR, ParamRule, _bind,
                                     _where, param_rules)
from wgkern.lang.torch_arguments import torch_argument
from wgkern.lang.torch_interop import is_torch_tensor
from wgkern.lang.types import DataType, f32, i32, to_dtype


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
