"""Calls in kernel code: `wk.*` intrinsics (by identity, intrinsics.py), casts, vector constructors and
methods, compile-time folding of pure Python callables, and inlining of `@wk.func` functions (arguments by
value, `return` anywhere, recursion rejected)."""
from __future__ import annotations

import ast
import builtins
import functools
import importlib
import inspect
import operator
import sys
import types
from dataclasses import dataclass
from typing import Any

import numpy as np

from wgkern.errors import CompileError, WkError
from wgkern.frontend import arith, intrinsics, linalg, static_eval, vectors
from wgkern.frontend.sparse import SPARSE_INTRINSICS, DynamicMethod, is_tree_query
from wgkern.frontend.buffer_view import BufferViewMethod
from wgkern.frontend.texture import TextureMethod
from wgkern.lang.buffer_view import BufferView
from wgkern.frontend.scope import Fixed, GlobalVar, LocalVar, Scope, Static, StructVar, VectorVar
from wgkern.frontend.values import (AtomicMethod, BoundMethod, ElementShape, GlobalRef, NdarrayRef, StructElement,
                                    StructValue, VectorValue, describe, is_python_number, is_runtime)
from wgkern.ir import nodes as ir
from wgkern.ir.ops import INT_ONLY_ATOMIC, AtomicOpKind, BinaryOpKind, UnaryOpKind
from wgkern.lang import math as wm
from wgkern.lang import types as T
from wgkern.lang.kernel import BoundFunc, BoundKernel, Func, Kernel, call_problems
from wgkern.lang.matrix import Matrix, Vector
from wgkern.lang.simt import SIMT_CALLS
from wgkern.lang.simt.block import SharedArray
from wgkern.lang.simt.tile import outer as tile_outer
from wgkern.lang.structs import Struct, StructType
from wgkern.runtime.program import sync as program_sync

CAST_BUILTINS = {builtins.int: lambda: T.DEFAULT_INT, builtins.float: lambda: T.DEFAULT_FLOAT,
                 builtins.bool: lambda: T.u1}     # read at compile time: wk.init(default_fp=...) sets them
# Python's reductions of a list, for lists holding run-time values (`sum([I[i] * n ** i for i in ...])`)
SEQUENCE_REDUCTIONS = {builtins.sum: BinaryOpKind.ADD, builtins.min: BinaryOpKind.MIN,
                       builtins.max: BinaryOpKind.MAX}


@dataclass(frozen=True, slots=True)
class FStringParts:
    """An f-string argument of print() in a kernel: (literal text or evaluated value, format spec) pairs."""
    parts: list[tuple[Any, str]]


def _is_user_function(callee: Any) -> bool:
    """A plain Python function or lambda written by the user (not wgkern's own, not a library's)."""
    if not isinstance(callee, types.FunctionType):
        return False
    module = getattr(callee, "__module__", None) or ""
    root = module.split(".")[0]
    return root not in _LIBRARY_MODULES and root not in sys.stdlib_module_names


_LIBRARY_MODULES = frozenset({"wgkern", "numpy", "scipy"})


def _is_taichi_func(callee: Any) -> bool:
    """A `@ti.func` of the taichi package itself, as a ported program still imports it
    (`from taichi.examples.patterns import taichi_logo`)."""
    return isinstance(callee, types.FunctionType) and getattr(callee, "_is_taichi_function", False) \
        and hasattr(callee, "__wrapped__")


_PORTED_TAICHI_FUNCS: dict[Any, types.FunctionType] = {}


def _ported_taichi_func(fn: types.FunctionType) -> types.FunctionType:
    """The Python function under a taichi `@ti.func`, its globals naming wgkern's modules where they named
    taichi's (`ti`, `ti.math`): compiled as a wk.func, it runs as the ported program's own funcs do."""
    if fn not in _PORTED_TAICHI_FUNCS:
        original = inspect.unwrap(fn)
        namespace = {name: _wgkern_module_for(value) for name, value in original.__globals__.items()}
        ported = types.FunctionType(original.__code__, namespace, original.__name__, original.__defaults__,
                                    original.__closure__)
        ported.__kwdefaults__ = original.__kwdefaults__
        ported.__module__ = original.__module__
        ported.__qualname__ = original.__qualname__
        _PORTED_TAICHI_FUNCS[fn] = ported
    return _PORTED_TAICHI_FUNCS[fn]


LOOP_CONFIG_OPTIONS = frozenset({"serialize", "block_dim", "parallelize", "block_dim_adaptive", "bit_vectorize",
                                 "name"})


def _wgkern_module_for(value: Any) -> Any:
    """wgkern's module standing for a taichi module (taichi -> wgkern, taichi.math -> wgkern.math); other values
    as they are."""
    name = getattr(value, "__name__", "") if isinstance(value, types.ModuleType) else ""
    if name == "taichi" or name.startswith("taichi."):
        try:
            return importlib.import_module("wgkern" + name[len("taichi"):])
        except ImportError:
            pass        # none: using it in the function fails with the name of what it lacks
    return value


def _is_user_class(callee: Any) -> bool:
    """A class written by the user (a `@data_oriented` ray or hit record), not wgkern's, a library's or a builtin."""
    if not isinstance(callee, type) or issubclass(callee, BaseException):
        return False
    module = getattr(callee, "__module__", None) or ""
    root = module.split(".")[0]
    return root not in _LIBRARY_MODULES and root not in sys.stdlib_module_names and root != "builtins"



class CallMixin:
    def visit_Call(self, node: ast.Call) -> Any:
        if isinstance(node.func, ast.Attribute) and node.func.attr == "fill" \
                and isinstance(node.func.value, (ast.Name, ast.Attribute)):
            target = self.visit(node.func.value)
            if isinstance(target, NdarrayRef) or (getattr(target, "is_field", False) and hasattr(target, "shape")):
                return self.fill_in_kernel(target, node)
        callee = self.visit(node.func)
        if not _hashable(callee):
            raise CompileError(f"{describe(callee)} is not callable in kernel code")
        if callee is wm.static:
            return self.static_call(node)
        if callee is tile_outer:
            return self.outer_product(node)             # frontend/tiles.py
        if callee is wm.static_print:
            print(*[self.static_print_value(arg) for arg in node.args])
            return None
        if callee is wm.static_assert:
            values = [static_eval.evaluate(arg, self.frame.fn, self.frame.scope, self.frame.src.filename)
                      for arg in node.args]
            if not values or not values[0]:
                raise CompileError(str(values[1]) if len(values) > 1 else "wk.static_assert() failed")
            return None
        if isinstance(callee, Func):
            return self.call_func(callee, node)
        if isinstance(callee, BoundFunc):
            return self.call_func(callee.func, node, leading=[callee.instance])
        if callee in intrinsics.ATOMICS:
            return self.atomic_call(intrinsics.ATOMICS[callee], node)
        if callee is wm.ndrange:
            raise CompileError("wk.ndrange() can only be used as the iterable of a for loop")
        if callee is builtins.print:
            return self.print_call(node)
        if isinstance(callee, (Kernel, BoundKernel)):
            raise CompileError(f"cannot call the kernel '{callee.name}' from kernel code; make it a @wk.func")
        if _is_taichi_func(callee):
            return self.call_func(self.ctx.plain_func(_ported_taichi_func(callee)), node)
        if _is_user_function(callee):
            # Taichi runs an undecorated function's body on the kernel's values, which is inlining it
            return self.call_func(self.ctx.plain_func(callee), node)
        if isinstance(callee, types.MethodType) and _is_user_function(callee.__func__):
            # a plain method of a user's object (`ray.at(t)`), inlined the same way with its receiver
            return self.call_func(self.ctx.plain_func(callee.__func__), node, leading=[callee.__self__])
        if _is_user_class(callee):
            return self.construct_user_object(callee, node)
        args = self.visit_elements(node.args)
        kwargs = self.visit_keywords(node.keywords)
        return self.call_value(callee, args, kwargs)

    def construct_user_object(self, cls: type, node: ast.Call) -> Any:
        """`Ray(origin, direction)` in kernel code: Taichi runs the class's Python constructor on the kernel's
        values, so the object holds them as attributes (read with `ray.origin`, methods inlined as plain
        functions). The constructor runs as Python here too; one that computes with the values fails."""
        args = self.visit_elements(node.args)
        kwargs = self.visit_keywords(node.keywords)
        try:
            return cls(*args, **kwargs)
        except WkError:
            raise
        except Exception as exc:  # noqa: BLE001 - the user's constructor, run on kernel values
            raise CompileError(f"constructing {cls.__name__}(...) in kernel code ran its Python __init__ on "
                               f"kernel values, which failed ({type(exc).__name__}: {exc}); store the values "
                               f"as they are, or make the computation a @wk.func") from None

    def fill_in_kernel(self, target: Any, node: ast.Call) -> None:
        """`x.fill(value)` in kernel code (Taichi allows it): a loop over x storing value, parallel where a
        loop written there would be."""
        if len(node.args) != 1 or node.keywords:
            raise CompileError("fill() takes one value")
        value = self.rvalue(node.args[0])
        loop = ast.parse("for __wk_fill_index in __wk_grouped(__wk_fill_target):\n"
                         "    __wk_fill_target[__wk_fill_index] = __wk_fill_value").body[0]
        for inner in ast.walk(loop):
            ast.copy_location(inner, node)
            if hasattr(inner, "end_lineno"):
                inner.end_lineno, inner.end_col_offset = node.end_lineno, node.end_col_offset
        with self.frame.scope.block():
            scope = self.frame.scope
            scope.define("__wk_fill_target", Static(target))
            scope.define("__wk_grouped", Static(wm.grouped))
            scope.define("__wk_fill_value", Fixed(value, "fill value") if is_runtime(value) else Static(value))
            self.visit_For(loop)
        return None

    def visit_keywords(self, keywords: list[ast.keyword]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for keyword in keywords:
            value = self.rvalue(keyword.value)
            if keyword.arg is None:
                if is_runtime(value) or not isinstance(value, dict):
                    raise CompileError("'**' arguments must be compile-time dicts")
                out.update(value)
            else:
                out[keyword.arg] = value
        return out

    def static_call(self, node: ast.Call) -> Any:
        if node.keywords or not node.args:
            raise CompileError("wk.static() takes one or more positional expressions")
        values = [static_eval.resolve(static_eval.evaluate(arg, self.frame.fn, self.frame.scope,
                                                           self.frame.src.filename, runtime_operands=True),
                                      lambda operand: self.read_binding(operand.binding))
                  for arg in node.args]
        return values[0] if len(values) == 1 else tuple(values)

    # ---- dispatch ---------------------------------------------------------------------------------------
    def call_value(self, callee: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        static_args = not any(is_runtime(a) for a in args) and not any(is_runtime(v) for v in kwargs.values())
        if isinstance(callee, ElementShape) and not args and not kwargs:
            return callee()                 # Taichi's a.element_shape() of an ndarray argument
        if isinstance(callee, DynamicMethod):
            return self.call_dynamic_method(callee, args, kwargs)
        if isinstance(callee, TextureMethod):
            return self.call_texture_method(callee, args, kwargs)
        if isinstance(callee, BufferViewMethod):
            return self.call_buffer_view_method(callee, args, kwargs)
        if callee is BufferView:
            return self.make_buffer_view(args, kwargs)
        if callee in SPARSE_INTRINSICS:
            return self.sparse_call(callee, args, kwargs)
        if static_args and is_tree_query(callee):
            return callee(*args, **kwargs)
        if isinstance(callee, AtomicMethod):
            if len(args) != 1 or kwargs:
                raise CompileError(f".atomic_{callee.op.value}(value) on an element of '{callee.ref.label}' "
                                   "takes one value")
            return self.global_atomic(callee.op, callee.ref, args[0])
        if isinstance(callee, BoundMethod):
            if callee.receiver is None:        # `wk.Vector.norm(v)`: the first argument is the receiver
                receiver = self.as_value(args[0]) if args else None
                if not isinstance(receiver, VectorValue):
                    raise CompileError(f"wk.Vector.{callee.name}(v, ...) / wk.Matrix.{callee.name}(m, ...) takes a "
                                       f"vector or matrix as its first argument, got {describe(receiver)}")
                callee = BoundMethod(receiver, callee.name)
                args = list(args[1:])
            if callee.name == "cast":      # v.cast(dtype): the argument is a dtype, not a value
                if "dt" in kwargs or "dtype" in kwargs:
                    args = [*args, kwargs.pop("dt", None) or kwargs.pop("dtype")]
                return self.no_kwargs(kwargs, callee.name) or vectors.call_method(
                    self.b, callee.receiver, callee.name, list(args))
            return self.no_kwargs(kwargs, callee.name) or vectors.call_method(
                self.b, callee.receiver, callee.name, [self.as_value(a) for a in args])
        if isinstance(callee, StructType):
            return self.construct_struct(callee, args, kwargs)
        if callee is Struct:
            return self.anonymous_struct(args, kwargs)
        if callee is builtins.range and not static_args:
            raise CompileError("range() with run-time bounds can only be a for loop's iterable (for i in range(n)); "
                               "anywhere else (a comprehension, a list) its bounds must be compile-time")
        if callee is builtins.len:
            return self.len_of(args)
        if (callee is builtins.all or callee is builtins.any) and not static_args:
            value = self.as_value(self.one_arg(args, kwargs, callee.__name__))
            if not isinstance(value, VectorValue):
                raise CompileError(f"{callee.__name__}() takes a vector, got {describe(value)}")
            return vectors.call_method(self.b, value, callee.__name__, [])
        if callee is wm.block_local or callee is wm.cache_read_only:
            from wgkern.lang.fields import Container
            from wgkern.lang.scalar_component import ScalarComponent
            if kwargs or not all(isinstance(a, (GlobalRef, Container, ScalarComponent)) for a in args):
                raise CompileError(f"{describe(callee)} takes fields")
            return None
        if callee is wm.block_dim:
            if len(args) != 1 or kwargs:
                raise CompileError("block_dim(n) takes the number of threads per block")
            self.ctx.block_dim_next_loop = self.checked_block_dim(args[0])
            return None
        if callee is wm.loop_config:
            unknown = sorted(set(kwargs) - LOOP_CONFIG_OPTIONS)
            if args or unknown:
                raise CompileError(f"wk.loop_config() takes the keywords {', '.join(sorted(LOOP_CONFIG_OPTIONS))}; "
                                   f"got {', '.join(unknown) or f'{len(args)} positional argument(s)'}")
            # Taichi: serialize=True "equals to setting parallelize to 1"
            self.ctx.serialize_next_loop = bool(kwargs.get("serialize", False)) or kwargs.get("parallelize") == 1
            if kwargs.get("block_dim") is not None:
                self.ctx.block_dim_next_loop = self.checked_block_dim(kwargs["block_dim"])
            return None
        if callee is program_sync:
            return self.sync_in_kernel(args, kwargs)
        if callee in SIMT_CALLS or callee is SharedArray:
            return self.simt_call(callee, args, kwargs)
        if callee is wm.bit_width:
            value = self.as_value(self.one_arg(args, kwargs, "bit_width"))      # a Python int: the default int
            if isinstance(value, VectorValue):
                raise CompileError(f"wk.bit_width() takes a scalar, got {describe(value)}")
            return value.dtype.bits
        if callee is wm.cast:
            return self.cast_call(args, kwargs)
        if callee is wm.bit_cast:
            return self.bit_cast_call(args, kwargs)
        if isinstance(callee, T.DataType):
            if len(args) != 1 or kwargs:
                raise CompileError(f"{callee.name}() takes exactly one argument: A primitive type can only decorate "
                                   "a single expression.")
            return self.cast_to(args[0], callee)
        if callee in CAST_BUILTINS and not static_args:
            return self.cast_to(self.one_arg(args, kwargs, callee.__name__), CAST_BUILTINS[callee]())
        if isinstance(callee, type) and issubclass(callee, np.generic):
            if static_args:              # `np.int64(0)`, `np.float32(0.5)` on constants: a numpy scalar
                return callee(*args, **kwargs)
            return self.cast_to(self.one_arg(args, kwargs, callee.__name__), T.from_numpy_dtype(callee))
        if callee is wm.select:
            if len(args) != 3 or kwargs:
                raise CompileError("wk.select(cond, a, b) takes 3 arguments")
            return self.select_values(*args)
        if callee is wm.random:
            return self.random_call(args, kwargs)
        if callee is wm.randn:
            return self.randn_call(args, kwargs)
        if callee is wm.frexp:
            value = self.as_value(self.one_arg(args, kwargs, "frexp"))
            if isinstance(value, VectorValue):
                pairs = [arith.frexp(self.b, e) for e in value.elements]
                return (VectorValue([m for m, _ in pairs], value.n, value.m),
                        VectorValue([e for _, e in pairs], value.n, value.m))
            return arith.frexp(self.b, value)
        if callee is wm.make_spd:
            return linalg.make_spd(self.b, self._matrix_argument(args, kwargs, "make_spd(A) takes one symmetric matrix"))
        if callee is wm.assume_in_range or callee is wm.volatile_load:
            if len(args) != (4 if callee is wm.assume_in_range else 1) or kwargs:
                raise CompileError(f"{callee.__name__}() takes {4 if callee is wm.assume_in_range else 1} "
                                   "argument(s)")
            return self.as_value(args[0])
        if callee is wm.loop_unique:
            if not 1 <= len(args) + len(kwargs) <= 2 or set(kwargs) - {"covers"}:
                raise CompileError("loop_unique(val, covers=None) takes a value and optionally the fields it indexes")
            return self.as_value(args[0])
        if callee is wm.no_activate:
            return None
        if callee is wm.isnan or callee is wm.isinf:
            value = self.as_value(self.one_arg(args, kwargs, callee.__name__))
            check = functools.partial(arith.float_class, self.b, nan=callee is wm.isnan)
            return vectors.map_elements(value, check) if isinstance(value, VectorValue) else check(value)
        if callee is wm.eig:
            return linalg.eig(self.b, self._matrix_argument(args, kwargs, "wk.eig(A) takes one 2x2 matrix"))
        if callee is wm.sym_eig:
            return linalg.sym_eig(self.b, self._matrix_argument(args, kwargs,
                                                                "wk.sym_eig(A) takes one symmetric matrix"))
        if callee is wm.svd or callee is wm.polar_decompose:
            matrix = self._matrix_argument(args, kwargs, f"wk.{callee.__name__}(A) takes one matrix")
            return (linalg.svd if callee is wm.svd else linalg.polar_decompose)(self.b, matrix)
        if callee is wm.raw_div or callee is wm.raw_mod:
            if len(args) != 2 or kwargs:
                raise CompileError(f"wk.{callee.__name__}(a, b) takes 2 arguments")
            return self.raw_division(args[0], args[1], callee is wm.raw_mod)
        if callee is wm.bit_shr:
            if len(args) != 2 or kwargs:
                raise CompileError("wk.bit_shr(x, n) takes 2 arguments")
            value = self.as_scalar(args[0])
            if not value.dtype.is_int:
                raise CompileError(f"wk.bit_shr() shifts integers, got {describe(value)}")
            unsigned = T.to_dtype(f"uint{value.dtype.bits}") if value.dtype.is_signed else value.dtype
            shifted = self.binary_values(BinaryOpKind.SHR, self.b.cast(value, unsigned), args[1])
            return self.b.cast(shifted, value.dtype)
        if callee is wm.stop_grad:
            target = self.one_arg(args, kwargs, "stop_grad")
            slot = self.container_slot_of(target)
            if slot is not None:          # Taichi's stop_grad(x) on a field: x's reads after it carry no gradient
                self.frame.scope.stop_gradient(slot)
                return None
            value = self.as_value(target)
            return vectors.map_elements(value, self.stopped) if isinstance(value, VectorValue) else self.stopped(value)
        if callee is wm.zero or callee is wm.one:
            value = self.as_value(self.one_arg(args, kwargs, callee.__name__))
            filled = 1 if callee is wm.one else 0
            if isinstance(value, VectorValue):
                return VectorValue([self.b.const(filled, e.dtype) for e in value.elements], value.n, value.m)
            return self.b.const(filled, value.dtype)
        if callee is wm.clamp:
            if len(args) != 3 or kwargs:
                raise CompileError("wk.clamp(x, lo, hi) takes 3 arguments")
            low = self.binary_values(BinaryOpKind.MAX, args[0], args[1])
            return self.binary_values(BinaryOpKind.MIN, low, args[2])
        if callee in intrinsics.CONSTANT_CONSTRUCTORS:
            if not static_args:
                raise CompileError(f"{describe(callee)} needs compile-time arguments")
            array = callee(*args, **kwargs)
            dtype = T.from_numpy_dtype(array.dtype)
            return VectorValue([self.b.const(v, dtype) for v in array.reshape(-1).tolist()], array.shape[0],
                               array.shape[1] if array.ndim == 2 else 0)
        if callee in SEQUENCE_REDUCTIONS and len(args) in (1, 2) and isinstance(args[0], (list, tuple)) and \
                any(is_runtime(e) for e in args[0]):
            return self.reduce_sequence(callee, args, kwargs)
        if static_args and callee in intrinsics.FOLDABLE:
            return callee(*args, **kwargs)
        if callee in intrinsics.UNARY_FUNCTIONS:
            return self.unary_call(callee, args, kwargs)
        if callee in intrinsics.BINARY_FUNCTIONS:
            if len(args) != 2 or kwargs:
                raise CompileError(f"{describe(callee)} takes 2 arguments, got {len(args)}")
            return self.binary_values(intrinsics.BINARY_FUNCTIONS[callee], args[0], args[1])
        if callee in intrinsics.REDUCTIONS:
            return self.reduction_call(intrinsics.REDUCTIONS[callee], args, kwargs)
        if callee in intrinsics.VECTOR_FUNCTIONS:
            if not args or not isinstance(self.as_value(args[0]), VectorValue):
                raise CompileError(f"{describe(callee)} needs a vector as its first argument")
            return vectors.call_method(self.b, self.as_value(args[0]), intrinsics.VECTOR_FUNCTIONS[callee],
                                       [self.as_value(a) for a in args[1:]])
        if isinstance(callee, T.VectorType):
            return self.construct_vector(callee, args)
        if callee is Vector or callee is Matrix:
            return self.construct_from_lists(callee is Matrix, args, kwargs)
        if callee is Matrix.diag:
            args = [*args, *(kwargs.pop(key) for key in ("dim", "val") if key in kwargs)]
            if len(args) != 2 or kwargs or not isinstance(args[0], int):
                raise CompileError("wk.Matrix.diag(n, value) takes a compile-time size and a value")
            value = self.as_scalar(args[1])
            zero = self.b.const(0, value.dtype)
            n = args[0]
            return VectorValue([value if r == c else zero for r in range(n) for c in range(n)], n, n)
        if callee is Matrix.outer_product:
            if len(args) != 2 or kwargs:
                raise CompileError("wk.Matrix.outer_product(a, b) takes two vectors")
            first = self.as_value(args[0])
            if not isinstance(first, VectorValue):
                raise CompileError(f"wk.Matrix.outer_product(a, b) takes two vectors, got {describe(first)}")
            return vectors.outer_product(self.b, first, self.as_value(args[1]))
        if callee is Matrix.rows or callee is Matrix.cols:
            return self.matrix_from_vectors(callee is Matrix.cols, args, kwargs)
        if callee in OPERATOR_BINARY and len(args) == 2 and not kwargs:
            return self.binary_op(OPERATOR_BINARY[callee], args[0], args[1])
        if isinstance(callee, VectorValue) and args and not kwargs:
            return self.vector_subscript(callee, list(args))      # older Taichi's v(0) / m(i, j) element access
        if callable(callee):
            raise CompileError(f"cannot call {describe(callee)} inside a kernel: only wk.* functions, @wk.func "
                               "functions and pure builtins on compile-time values can be called (wrap "
                               "compile-time Python in wk.static(...))")
        raise CompileError(f"{describe(callee)} is not callable")

    def reduce_sequence(self, callee: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """`sum([...])`, `max([...])`, `min([...])` over a list of run-time values (Taichi evaluates them as
        Python does, with its operators): folded left to right, `sum` from its start value (0 by default)."""
        items = list(args[0])
        if kwargs.keys() - {"start"} or (callee is not builtins.sum and (len(args) > 1 or kwargs)):
            raise CompileError(f"{describe(callee)}() over run-time values takes one list"
                               + (" and a start value" if callee is builtins.sum else ""))
        if callee is builtins.sum:
            total = args[1] if len(args) > 1 else kwargs.get("start", 0)
            for item in items:
                total = self.binary_op(ast.Add, total, item)
            return total
        if not items:
            raise CompileError(f"{describe(callee)}() of an empty list")
        result = items[0]
        for item in items[1:]:
            result = self.binary_values(SEQUENCE_REDUCTIONS[callee], result, item)
        return result

    def container_slot_of(self, target: Any) -> ir.ContainerSlot | None:
        """The slot of a field or ndarray named in kernel code (None for anything else)."""
        from wgkern.lang.fields import Field
        if isinstance(target, NdarrayRef):
            return self.ctx.ndarray_slot(target)
        if isinstance(target, Field) and getattr(target, "is_field", True):
            return self.ctx.field_slot(target)
        return None

    def stopped(self, value: ir.Stmt) -> ir.Stmt:
        """`wk.stop_grad`: a float passed through its bits as an integer (int casts carry no derivative)."""
        if not value.dtype.is_float:
            return value
        bits = T.i16 if value.dtype.bits == 16 else T.i32 if value.dtype.bits == 32 else T.i64
        return self.b.bitcast(self.b.bitcast(value, bits), value.dtype)

    def unary_values(self, op: UnaryOpKind, value: Any) -> Any:
        value = self.as_value(value)
        return vectors.unary(self.b, op, value) if isinstance(value, VectorValue) else arith.unary(self.b, op, value)

    def raw_division(self, a: Any, b: Any, remainder: bool) -> Any:
        """`wk.raw_div` / `wk.raw_mod`: C semantics (integer division truncates toward zero, the remainder takes
        the dividend's sign; floats: a / b and fmod)."""
        a, b = self.as_value(a), self.as_value(b)
        dtype = T.promote(a.dtype, b.dtype)
        if dtype.is_float:
            quotient = self.binary_values(BinaryOpKind.DIV, a, b)
            if not remainder:
                return quotient
            truncated = self.select_values(self.binary_values(BinaryOpKind.CMP_LT, quotient, 0.0),
                                           self.unary_values(UnaryOpKind.CEIL, quotient),
                                           self.unary_values(UnaryOpKind.FLOOR, quotient))
            return self.binary_values(BinaryOpKind.SUB, a, self.binary_values(BinaryOpKind.MUL, truncated, b))
        floored = self.binary_values(BinaryOpKind.FLOORDIV, a, b)
        rest = self.binary_values(BinaryOpKind.SUB, a, self.binary_values(BinaryOpKind.MUL, floored, b))
        signs_differ = self.binary_values(BinaryOpKind.CMP_NE, self.binary_values(BinaryOpKind.CMP_LT, a, 0),
                                          self.binary_values(BinaryOpKind.CMP_LT, b, 0))
        inexact = self.binary_values(BinaryOpKind.CMP_NE, rest, 0)
        adjust = self.binary_values(BinaryOpKind.BIT_AND, signs_differ, inexact)
        quotient = self.select_values(adjust, self.binary_values(BinaryOpKind.ADD, floored, 1), floored)
        if not remainder:
            return quotient
        return self.binary_values(BinaryOpKind.SUB, a, self.binary_values(BinaryOpKind.MUL, quotient, b))

    @staticmethod
    def no_kwargs(kwargs: dict[str, Any], name: str) -> None:
        if kwargs:
            raise CompileError(f"'{name}' takes no keyword arguments")

    def _matrix_argument(self, args: list[Any], kwargs: dict[str, Any], message: str) -> Any:
        """The matrix of wk.svd / eig / sym_eig / polar_decompose / make_spd(A[, dtype]): Taichi's optional
        second argument is the dtype to compute in."""
        if not 1 <= len(args) <= 2 or kwargs:
            raise CompileError(message)
        matrix = self.as_value(args[0])
        if len(args) == 2 and isinstance(matrix, VectorValue):
            matrix = vectors.cast(self.b, matrix, self.as_dtype(args[1]))
        return matrix

    @staticmethod
    def one_arg(args: list[Any], kwargs: dict[str, Any], name: str) -> Any:
        if len(args) != 1 or kwargs:
            raise CompileError(f"{name}() takes exactly one argument")
        return args[0]

    def len_of(self, args: list[Any]) -> Any:
        if len(args) != 1:
            raise CompileError("len() takes exactly one argument")
        target = args[0]
        if self.is_container(target):
            if not target.shape:
                raise CompileError(f"len() of the 0-d field '{target.name}'")
            return target.shape[0]
        from wgkern.frontend.values import NdarrayRef
        if isinstance(target, NdarrayRef):
            return self.ndarray_attribute(target, "shape")[0]
        if isinstance(target, VectorValue):
            return target.n
        if is_runtime(target):
            raise CompileError(f"len() of {describe(target)}")
        return len(target)

    def cast_to(self, value: Any, dtype: T.DataType) -> Any:
        value = self.as_value(value)
        if isinstance(value, VectorValue):
            return vectors.cast(self.b, value, dtype)
        return self.b.cast(value, dtype)

    def cast_call(self, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if "dtype" in kwargs:
            args = [*args, kwargs.pop("dtype")]
        if len(args) != 2 or kwargs:
            raise CompileError("wk.cast(value, dtype) takes 2 arguments")
        return self.cast_to(args[0], self.as_dtype(args[1]))

    def bit_cast_call(self, args: list[Any], kwargs: dict[str, Any]) -> ir.Stmt:
        """wk.bit_cast(value, dtype): a scalar's bits read as a dtype of the same width."""
        if "dtype" in kwargs:
            args = [*args, kwargs.pop("dtype")]
        if len(args) != 2 or kwargs:
            raise CompileError("wk.bit_cast(value, dtype) takes 2 arguments")
        dtype = self.as_dtype(args[1])
        value = self.as_value(args[0])
        if isinstance(value, VectorValue):
            raise CompileError("wk.bit_cast takes a scalar value")
        if value.dtype.bits != dtype.bits:
            raise CompileError(f"wk.bit_cast from {value.dtype.name} to {dtype.name} changes the width "
                               f"({value.dtype.bits} -> {dtype.bits} bits)")
        return self.b.bitcast(value, dtype)

    def random_call(self, args: list[Any], kwargs: dict[str, Any]) -> ir.Stmt:
        if len(args) > 1 or set(kwargs) - {"dtype"}:
            raise CompileError("wk.random() takes one optional argument, dtype")
        dtype = self.as_dtype(args[0] if args else kwargs.get("dtype", T.f32))
        if dtype.is_int and dtype.bits == 64:
            # every bit random, as in Taichi (a backend's RandomValue of a 64-bit integer is one 32-bit draw)
            high, low = (self.b.insert(ir.RandomValue(dtype=T.u32, site=self.ctx.next_random_site()))
                         for _ in range(2))
            wide = self.b.binary(BinaryOpKind.BIT_OR,
                                 self.b.binary(BinaryOpKind.SHL, self.b.cast(high, T.u64), self.b.const(32, T.u64)),
                                 self.b.cast(low, T.u64))
            return wide if dtype == T.u64 else self.b.bitcast(wide, dtype)
        if dtype == T.f64:
            return self.random_f64()
        return self.b.insert(ir.RandomValue(dtype=dtype, site=self.ctx.next_random_site()))

    def random_f64(self) -> ir.Stmt:
        """An f64 uniform in [0, 1) with all 53 bits of its mantissa random, as Taichi's (one 32-bit draw leaves
        f64 values on a coarse grid): 27 bits of one draw and 26 of another, (high * 2^26 + low) * 2^-53, exact."""
        high, low = (self.b.insert(ir.RandomValue(dtype=T.u32, site=self.ctx.next_random_site()))
                     for _ in range(2))
        high = self.b.binary(BinaryOpKind.SHR, high, self.b.const(5, T.u32))
        low = self.b.binary(BinaryOpKind.SHR, low, self.b.const(6, T.u32))
        mantissa = self.b.add(self.b.mul(self.b.cast(high, T.f64), self.b.const(2.0 ** 26, T.f64)),
                              self.b.cast(low, T.f64))
        return self.b.mul(mantissa, self.b.const(2.0 ** -53, T.f64))

    def static_print_value(self, arg: ast.expr) -> Any:
        """What `wk.static_print` shows for one argument at compile time: a compile-time value itself, a runtime
        value as `<wk.Expr ...>` (its type; Taichi prints an expression placeholder too)."""
        try:
            return static_eval.evaluate(arg, self.frame.fn, self.frame.scope, self.frame.src.filename)
        except CompileError:
            value = self.visit(arg)
            if isinstance(value, VectorValue):
                kind = f"{'x'.join(map(str, value.shape))} {value.dtype.name}"
            else:
                kind = getattr(getattr(value, "dtype", None), "name", type(value).__name__)
            return f"<wk.Expr {kind}>"

    def print_call(self, node: ast.Call) -> None:
        """print(*args, sep=' ', end='\\n') with compile-time text and runtime scalars/vectors (ir.Print), and
        f-strings among the arguments: their `{value:spec}` fields print like arguments, formatted by `spec`."""
        args = [self.fstring_parts(arg) if isinstance(arg, ast.JoinedStr)
                else self.str_format_parts(arg) if is_str_format(arg) else self.visit(arg) for arg in node.args]
        kwargs = self.visit_keywords(node.keywords)
        options = {"sep": " ", "end": "\n"}
        for name, value in kwargs.items():
            if name == "flush":
                continue
            if name not in options or not isinstance(value, str):
                raise CompileError(f"print() inside kernels takes sep= and end= strings, not {name}={value!r}")
            options[name] = value
        pieces, values, formats = [""], [], []

        def text(piece: str) -> None:
            pieces[-1] += piece

        def value(stmt: ir.Stmt, spec: str) -> None:
            values.append(stmt)
            formats.append(spec)
            pieces.append("")

        def item(arg: Any, spec: str = "", in_string: bool = False) -> None:
            if isinstance(arg, (list, tuple)) and not in_string:
                text("[")                                   # Taichi prints a list or tuple as a list
                for e, element in enumerate(arg):
                    text(", " if e else "")
                    item(element)
                text("]")
                return
            if isinstance(arg, str) or (not is_runtime(arg) and not isinstance(arg, (GlobalRef, VectorValue))):
                from wgkern.runtime.printing import format_constant, format_value
                if isinstance(arg, (float, np.floating)) and not spec and not in_string:
                    text(format_value(arg, T.DEFAULT_FLOAT))     # a float literal prints as a float value
                else:
                    # an f-string or str.format() field of a compile-time value is Python's text, as in Taichi
                    text(format_constant(arg, spec) if spec else str(arg))
                return
            arg = self.as_value(arg)
            if isinstance(arg, VectorValue):
                rows = [arg.row(i) for i in range(arg.n)] if arg.is_matrix else [arg]
                text("[" if arg.is_matrix else "")
                for r, row in enumerate(rows):
                    text(", " if r else "")
                    text("[")
                    for e, element in enumerate(row.elements):
                        text(", " if e else "")
                        value(element, spec)
                    text("]")
                text("]" if arg.is_matrix else "")
            else:
                value(arg, spec)

        for k, arg in enumerate(args):
            if k:
                text(options["sep"])
            if isinstance(arg, FStringParts):
                for part, spec in arg.parts:
                    item(part, spec, in_string=True)
            else:
                item(arg)
        text(options["end"])
        for stmt, spec in zip(values, formats):
            if spec:
                self.check_format_spec(stmt.dtype, spec)
        self.b.insert(ir.Print(values=values, pieces=tuple(pieces),
                               formats=tuple(formats) if any(formats) else ()))
        return None

    def fstring_parts(self, node: ast.JoinedStr) -> FStringParts:
        """An f-string's literal text and `{expression:spec}` fields, the expressions evaluated here; a spec must
        be literal text (`{x:.3f}`, not `{x:{width}}`). `!r`/`!s`/`!a` conversions print as the value does."""
        parts: list[tuple[Any, str]] = []
        for piece in node.values:
            if isinstance(piece, ast.Constant):
                parts.append((str(piece.value), ""))
                continue
            spec = ""
            if piece.format_spec is not None:
                if not all(isinstance(p, ast.Constant) for p in piece.format_spec.values):
                    raise CompileError("an f-string format spec in a kernel must be literal text (like {x:.3f})")
                spec = "".join(str(p.value) for p in piece.format_spec.values)
            parts.append((self.visit(piece.value), spec))
        return FStringParts(parts)

    def str_format_parts(self, node: ast.Call) -> FStringParts:
        """`"{} at {name:.2f}".format(a, name=b)` as a print() argument: the same parts as the f-string would give,
        fields numbered (`{0}`), automatic (`{}`) or named, the arguments evaluated here."""
        import string
        template = node.func.value.value
        if any(isinstance(arg, ast.Starred) for arg in node.args) or any(k.arg is None for k in node.keywords):
            raise CompileError("str.format() in a kernel takes plain arguments (no *args / **kwargs)")
        positional = [self.visit(arg) for arg in node.args]
        named = {k.arg: self.visit(k.value) for k in node.keywords}
        parts: list[tuple[Any, str]] = []
        automatic = 0
        try:
            fields = list(string.Formatter().parse(template))
        except ValueError as exc:
            raise CompileError(f"bad format string {template!r} ({exc})") from None
        for literal, field, spec, _conversion in fields:
            if literal:
                parts.append((literal, ""))
            if field is None:
                continue
            if "{" in (spec or ""):
                raise CompileError("a str.format() spec in a kernel must be literal text (like {:.3f})")
            if field == "":
                key: Any = automatic
                automatic += 1
            else:
                key = int(field) if field.isdigit() else field
            source = positional if isinstance(key, int) else named
            if (isinstance(key, int) and key >= len(positional)) or (isinstance(key, str) and key not in named):
                raise CompileError(f"format string {template!r} refers to {{{field}}}, which no argument gives")
            parts.append((source[key], spec or ""))
        return FStringParts(parts)

    def check_format_spec(self, dtype: Any, spec: str) -> None:
        from wgkern.runtime.printing import format_value
        try:
            format_value(0, dtype, spec)
        except (ValueError, TypeError) as exc:
            raise CompileError(f"format spec '{spec}' does not apply to a {dtype.name} value ({exc})") from None

    def randn_call(self, args: list[Any], kwargs: dict[str, Any]) -> ir.Stmt:
        """Box-Muller: sqrt(-2 log(1 - u1)) cos(2 pi u2), u1 and u2 two uniform draws in [0, 1)."""
        if len(args) > 1 or set(kwargs) - {"dtype"}:
            raise CompileError("wk.randn() takes one optional argument, dtype")
        dtype = self.as_dtype(args[0] if args else kwargs.get("dtype", T.f32))
        if not dtype.is_float:
            raise CompileError(f"wk.randn() gives floats, not {dtype.name}")
        b = self.b
        u1 = b.insert(ir.RandomValue(dtype=dtype, site=self.ctx.next_random_site()))
        u2 = b.insert(ir.RandomValue(dtype=dtype, site=self.ctx.next_random_site()))
        radius = b.unary(UnaryOpKind.SQRT, b.mul(b.const(-2.0, dtype),
                                                 b.unary(UnaryOpKind.LOG, b.sub(b.const(1.0, dtype), u1))))
        angle = b.mul(b.const(2 * np.pi, dtype), u2)
        return b.mul(radius, b.unary(UnaryOpKind.COS, angle))

    def unary_call(self, callee: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        op = intrinsics.UNARY_FUNCTIONS[callee]
        result_dtype = None
        if callee in intrinsics.WITH_RESULT_DTYPE:
            if len(args) == 2:
                result_dtype = args.pop()
            elif "dtype" in kwargs:
                result_dtype = kwargs.pop("dtype")
        if len(args) != 1 or kwargs:
            raise CompileError(f"{describe(callee)} takes one argument, got {len(args)}")
        value = self.as_value(args[0])
        if isinstance(value, VectorValue):
            out: Any = vectors.unary(self.b, op, value)
        else:
            out = arith.unary(self.b, op, value)
        if callee in intrinsics.PYTHON_INT_RESULT:
            result_dtype = T.DEFAULT_INT
        return self.cast_to(out, self.as_dtype(result_dtype)) if result_dtype is not None else out

    def reduction_call(self, op: BinaryOpKind, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if kwargs or not args:
            raise CompileError("min()/max() take one or more positional arguments")
        if len(args) == 1:
            value = self.as_value(args[0])
            if not isinstance(value, VectorValue):
                raise CompileError("min()/max() of a single scalar")
            return vectors.reduce(self.b, op, value.elements)
        out = args[0]
        for arg in args[1:]:
            out = self.binary_values(op, out, arg)
        return out

    # ---- vectors ------------------------------------------------------------------------------------------
    def flatten_args(self, args: list[Any]) -> list[ir.Stmt]:
        flat: list[ir.Stmt] = []
        for arg in args:
            if isinstance(arg, (list, tuple)):
                flat.extend(self.flatten_args(list(arg)))
                continue
            value = self.as_value(arg)
            flat.extend(value.elements if isinstance(value, VectorValue) else [value])
        return flat

    def construct_vector(self, vtype: T.VectorType, args: list[Any]) -> VectorValue:
        flat = self.flatten_args(args)
        if len(flat) == 1:
            flat = flat * vtype.size
        if len(flat) != vtype.size:
            raise CompileError(f"{vtype!r} takes {vtype.size} values (or one to broadcast), got {len(flat)}")
        return VectorValue([self.b.cast(e, vtype.dtype) for e in flat], vtype.n, vtype.m)

    def construct_from_lists(self, is_matrix: bool, args: list[Any], kwargs: dict[str, Any]) -> VectorValue:
        dtype = kwargs.pop("dt", None)
        if len(args) == 2 and dtype is None:
            dtype = args.pop()
        if len(args) != 1 or kwargs or not isinstance(args[0], (list, tuple)):
            raise CompileError("wk.Vector/wk.Matrix take a list of values (and an optional dt)")
        rows = args[0]
        if is_matrix and rows and not any(isinstance(r, (list, tuple)) for r in rows):
            is_matrix = False      # wk.Matrix([a, b]) is a vector, as in Taichi
        if is_matrix:
            if not rows or not all(isinstance(r, (list, tuple)) for r in rows):
                raise CompileError("wk.Matrix takes a list of rows")
            n, m = len(rows), len(rows[0])
        else:
            n, m = len(self.flatten_args([rows])), 0
        flat = self.flatten_args([rows])
        if len(flat) != n * (m or 1):
            raise CompileError("wk.Matrix rows must all have the same length")
        if dtype is None:
            flat = vectors.unify_dtype(self.b, flat)
        else:       # each element cast on its own, as Taichi does: an i8 -128 beside a u32 stays -128 in an i64
            flat = [self.b.cast(e, self.as_dtype(dtype)) for e in flat]
        return VectorValue(flat, n, m)

    def matrix_from_vectors(self, as_columns: bool, args: list[Any], kwargs: dict[str, Any]) -> VectorValue:
        """wk.Matrix.rows([v0, v1, ...]) / wk.Matrix.cols([...]) with vectors of one length."""
        name = "cols" if as_columns else "rows"
        if len(args) != 1 or kwargs or not isinstance(args[0], (list, tuple)) or not args[0]:
            raise CompileError(f"wk.Matrix.{name} takes a list of vectors")
        vectors_in = [self.as_value(v) for v in args[0]]
        if not all(isinstance(v, VectorValue) and not v.is_matrix for v in vectors_in):
            raise CompileError(f"wk.Matrix.{name} takes a list of vectors")
        length = vectors_in[0].n
        if any(v.n != length for v in vectors_in):
            raise CompileError(f"wk.Matrix.{name}: the vectors have different lengths "
                               f"({', '.join(str(v.n) for v in vectors_in)})")
        flat = vectors.unify_dtype(self.b, [e for v in vectors_in for e in v.elements])
        rows = VectorValue(flat, len(vectors_in), length)
        return vectors.transpose(self.b, rows) if as_columns else rows

    # ---- atomics ------------------------------------------------------------------------------------------
    def atomic_call(self, op: AtomicOpKind, node: ast.Call) -> Any:
        arity = 3 if op is AtomicOpKind.CAS else 2
        if len(node.args) != arity or node.keywords:
            raise CompileError("wk.atomic_cas takes three arguments: (destination, expected, desired)"
                               if op is AtomicOpKind.CAS else "atomics take two arguments: (destination, value)")
        target_node = node.args[0]
        binding = self.frame.scope.lookup(target_node.id) if isinstance(target_node, ast.Name) else None
        operands = [self.as_value(self.visit(arg)) for arg in node.args[1:]]
        value = operands[-1]
        expected = operands[0] if op is AtomicOpKind.CAS else None
        if isinstance(binding, GlobalVar):
            return self.global_atomic(op, self.global_var_ref(binding), value, expected)
        if isinstance(binding, (LocalVar, VectorVar)):
            return self.local_atomic(op, binding, value, expected)
        if isinstance(target_node, (ast.Subscript, ast.Attribute)) and self.local_vector_var(target_node.value):
            place = self.target_place(target_node)     # an element of a local vector: a plain update
            old = self.read_place(place)
            self.write_place(place, self.atomic_update(op, old, value, expected))
            return old
        target = self.visit(target_node)
        if self.is_zero_d_field(target) and op is AtomicOpKind.CAS:     # Quadrants-only, so Quadrants' rule
            raise CompileError(f"wk.atomic_cas: cannot use a Field directly as the first operand of 'atomic_cas'; "
                               f"index it first (e.g. `{getattr(target, 'name', '') or 'field'}[None]`)")
        if self.is_zero_d_field(target):    # older Taichi's `ti.atomic_add(total, v)` on a 0-d field: total[None]
            target = self.subscript(target, [None], getattr(target, "name", "") or "0-d field")
        if not isinstance(target, GlobalRef):
            raise CompileError(f"wk.atomic_{op.value}: the destination (first argument) must be a writable "
                               f"field/ndarray element or local variable, got {describe(target)} (cannot use a "
                               f"non-writable target as the first operand of atomic_{op.value})")
        return self.global_atomic(op, target, value, expected)

    def global_atomic(self, op: AtomicOpKind, ref: GlobalRef, value: Any, expected: Any = None) -> Any:
        if op in INT_ONLY_ATOMIC and ref.slot.dtype.is_float:
            raise CompileError(f"atomic {op.value} needs an integer destination, '{ref.label}' is "
                               f"{ref.slot.dtype.name}")
        if op is AtomicOpKind.CAS and ref.element_shape:
            raise CompileError(f"wk.atomic_cas on a vector/matrix element ('{ref.label}') is not supported (as in "
                               "Quadrants); compare-and-swap one component, e.g. x[i][0]")
        if op is AtomicOpKind.CAS:
            _check_cas_operands([expected, value])
        if getattr(ref.slot.host, "quant", None) is not None:     # frontend/quant.py
            return self.quant_atomic(op, ref, value, expected)
        value = self.as_value(value)
        ptrs = self.element_ptrs(ref)
        if isinstance(value, VectorValue):
            if value.shape != ref.element_shape:
                raise CompileError(f"atomic on '{ref.label}' with {describe(value)}: shapes differ")
            olds = [self.b.atomic(op, p, v) for p, v in zip(ptrs, value.elements)]
        else:
            olds = [self.b.atomic(op, p, value, expected) for p in ptrs]
        self.activate_on_write(ref)
        if not ref.element_shape:
            return olds[0]
        return VectorValue(olds, ref.element_shape[0], ref.element_shape[1] if len(ref.element_shape) > 1 else 0)

    def local_atomic(self, op: AtomicOpKind, binding: LocalVar | VectorVar, value: Any, expected: Any = None) -> Any:
        """Atomics on a local variable are plain read-modify-writes (a local is private to its thread)."""
        old = self.read_binding(binding)
        self.write_binding(binding, self.atomic_update(op, old, value, expected))
        return old

    def atomic_update(self, op: AtomicOpKind, old: Any, value: Any, expected: Any) -> Any:
        """The new contents of a thread-private destination holding `old` after atomic `op`."""
        if op is AtomicOpKind.EXCHANGE:
            if isinstance(old, VectorValue) and not isinstance(value, VectorValue):
                return VectorValue([value] * len(old.elements), old.n, old.m)
            return value
        if op is AtomicOpKind.CAS:
            if isinstance(old, VectorValue):
                raise CompileError(f"wk.atomic_cas on {describe(old)} is not supported (as in Quadrants); "
                                   "compare-and-swap one component, e.g. v[0]")
            if old.dtype.is_float:
                raise CompileError(f"atomic cas needs an integer destination, got {describe(old)}")
            _check_cas_operands([expected, value])
            same = self.b.binary(BinaryOpKind.CMP_EQ, old, self.b.cast(expected, old.dtype))
            return self.b.select(same, self.b.cast(value, old.dtype), old)
        return self.binary_values(intrinsics.ATOMIC_AS_BINARY[op], old, value)

    # ---- @wk.func inlining --------------------------------------------------------------------------------
    def call_func(self, func: Func, node: ast.Call, leading: list[Any] | None = None) -> Any:
        if self.ctx.func_stack.count(func) >= _MAX_RECURSION:
            # recursion is inlined, so it must end at compile time (wk.static conditions on template arguments)
            chain = " -> ".join(f.name for f in self.ctx.func_stack[self.ctx.func_stack.index(func):][:4])
            raise CompileError(f"recursion deeper than {_MAX_RECURSION} levels: '{func.name}' calls itself "
                               f"({chain} -> ...); funcs are inlined, so recursion must end at compile time "
                               "(e.g. `if wk.static(n > 0):` on a wk.template() argument)")
        if getattr(func, "requires_top_level", False) and (self.in_runtime_loop() or self.frame.branch_depth
                                                           or self.ctx.enclosed_func_calls):
            raise CompileError(f"wk.func '{func.name}' must be called at the top level of a kernel: its loops run "
                               "one after another as launches, which they cannot do inside a run-time loop or "
                               "`if` (also through the funcs calling it)")
        params = list(func.signature.parameters.values())
        for param in params:
            if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                raise CompileError(f"wk.func '{func.name}': *args/**kwargs parameters are not supported")
        args: list[Any] = list(leading or [])          # a bound method's instance comes first
        for arg_node in node.args:
            if isinstance(arg_node, ast.Starred):     # f(*pair): a tuple / vector of known length, by value
                args.extend(self.visit_elements([arg_node]))
                continue
            param = params[len(args)] if len(args) < len(params) else None
            args.append(self.func_argument(func, param, arg_node))
        kwargs = {}
        for keyword in node.keywords:
            if keyword.arg is None:
                raise CompileError("'**' arguments are not supported in wk.func calls")
            param = func.signature.parameters.get(keyword.arg)
            kwargs[keyword.arg] = self.func_argument(func, param, keyword.value)
        try:
            bound = func.signature.bind(*args, **kwargs)
        except TypeError as exc:
            problems = call_problems(func.signature, len(args), kwargs) or str(exc)
            raise CompileError(f"wrong arguments in the call to wk.func '{func.name}': {problems}") from None
        bound.apply_defaults()
        return self.inline(func, bound.arguments)

    def func_argument(self, func: Func, param: inspect.Parameter | None, node: ast.expr) -> Any:
        """Evaluate one argument in the caller. A local variable (scalar, vector, struct) passed to a
        wk.template() parameter is passed by reference (its binding), as in Taichi, where a func may update the
        caller's struct through it; everything else by value."""
        if param is not None and isinstance(node, ast.Name):
            annotation = self.resolve_annotation(param.annotation, func.fn)     # in the func's module
            binding = self.frame.scope.lookup(node.id)
            if isinstance(annotation, T.Template) and isinstance(binding, (LocalVar, VectorVar, GlobalVar,
                                                                           StructVar)):
                return _ByReference(binding)
        value = self.visit(node)
        if isinstance(value, GlobalRef):
            if param is not None and isinstance(self.resolve_annotation(param.annotation, func.fn), T.Template):
                return _ByReference(GlobalVar(value.slot, value.element_shape, value))
            value = self.load_ref(value)
        return value

    def sync_in_kernel(self, args: list[Any], kwargs: dict[str, Any]) -> None:
        """`wk.sync()` between a kernel's top-level statements, as Taichi programs write it to separate two
        loops: nothing to do, the kernel's top-level loops already run one after another (each is its own task).
        Inside a loop or a func it would promise a barrier between threads, which kernels do not have."""
        if args or kwargs:
            raise CompileError("wk.sync() takes no arguments")
        if not self.frame.is_kernel or self.in_runtime_loop():
            raise CompileError("wk.sync() inside a kernel only separates its top-level statements (where it does "
                               "nothing: top-level loops already run one after another); inside a loop or a "
                               "wk.func threads cannot wait for each other, so split the work into two top-level "
                               "loops")
        return None

    def inline(self, func: Func, arguments: dict[str, Any]) -> Any:
        from wgkern.frontend.builder import Frame, ReturnState, assigned_names, reduction_names
        src = self.ctx.source_of(func.fn)
        caller = self.frame
        call_loc = self.b.loc
        frame = Frame(src, is_kernel=False, scope=Scope(), assigned=assigned_names(src.tree),
                      reduction_names=reduction_names(src.tree, func.fn))
        annotation = func.signature.return_annotation
        frame.ret = ReturnState(self.return_mode(src.tree),
                                None if annotation is inspect.Signature.empty else annotation)
        enclosed = bool(self.in_runtime_loop() or caller.branch_depth)
        self.ctx.enclosed_func_calls += enclosed
        self.frame = frame
        self.ctx.func_stack.append(func)
        try:
            if frame.ret.annotation is not None:
                frame.ret.annotation = self.resolve_annotation(frame.ret.annotation)
            for name, value in arguments.items():
                param = func.signature.parameters[name]
                self.bind_func_param(name, self.resolve_annotation(param.annotation), value)
            if frame.ret.mode == "flag":
                frame.ret.flag = self.b.alloca(T.u1, f"{func.name}.returned")
                self.b.store(frame.ret.flag, self.b.const(False, T.u1))   # explicit: the call may sit in a loop
                frame.ret.entry_block = self.b.block
                frame.ret.entry_index = len(self.b.block.stmts)
            self.visit_body(src.tree.body)
            if frame.ret.mode == "none" and frame.ret.annotation not in (None, "None", type(None)):
                raise CompileError(f"wk.func '{func.name}' has a return type but no 'return' statement (Function "
                                   "has a return type but does not have a return statement)",
                                   call_loc)
        except CompileError as exc:
            if exc.loc is not None and exc.loc.filename == call_loc.filename and exc.loc.lineno == call_loc.lineno:
                raise
            context = f" (in wk.func '{func.name}' called at {call_loc})"
            if context in exc.message:          # a recursive func: name each call site once
                raise
            raise type(exc)(exc.message + context, exc.loc) from None
        finally:
            self.ctx.func_stack.pop()
            self.ctx.enclosed_func_calls -= enclosed
            self.frame = caller
        ret = frame.ret
        if ret.mode == "flag":
            return self.read_binding(ret.result) if ret.result is not None else None
        return ret.value

    @staticmethod
    def return_mode(tree: ast.FunctionDef) -> str:
        returns = [n for n in ast.walk(tree) if isinstance(n, ast.Return)]
        if not returns:
            return "none"
        if len(returns) == 1 and tree.body and returns[0] is tree.body[-1]:
            return "direct"
        return "flag"

    def bind_func_param(self, name: str, annotation: Any, value: Any) -> None:
        scope = self.frame.scope
        if isinstance(value, _ByReference):
            scope.define(name, value.binding)
            return
        if isinstance(annotation, StructType) or isinstance(value, StructValue) or (
                isinstance(value, StructElement) and annotation is not inspect.Parameter.empty
                and not isinstance(annotation, T.Template)):
            # a struct argument is a copy (as in Taichi); a field element passed without an annotation, or
            # as a template, is the element itself (a @wk.dataclass method's `self`)
            stype = annotation if isinstance(annotation, StructType) else None
            scope.define(name, self.new_struct_var(name, self.struct_of(value, stype, f"parameter '{name}'")))
            return
        if isinstance(annotation, T.Template) or not (is_runtime(value) or is_python_number(value)):
            scope.define(name, Static(value) if not is_runtime(value) else Fixed(value, "template argument"))
            return
        if isinstance(annotation, (T.DataType, T.VectorType)) or annotation in (int, float):
            value = self.cast_to(value, self.as_dtype(annotation))
            if isinstance(annotation, T.VectorType) and (not isinstance(value, VectorValue)
                                                         or value.shape != annotation.element_shape):
                got = value.shape[0] if isinstance(value, VectorValue) else 1
                raise CompileError(f"parameter '{name}' expects {annotation!r}, got {describe(value)} ('{name}' is "
                                   f"expected to be a Matrix with n {annotation.n}, but got {got})")
        elif not is_runtime(value) and name not in self.frame.assigned:
            scope.define(name, Static(value))      # a Python number stays compile-time until assigned
            return
        if name in self.frame.assigned:
            scope.define(name, self.new_variable(name, self.as_value(value)))
        else:
            scope.define(name, Fixed(self.as_value(value), "argument"))

    def func_return(self, node: ast.Return) -> None:
        ret = self.frame.ret
        value = self.visit(node.value) if node.value is not None else None
        if isinstance(value, GlobalRef):
            value = self.load_ref(value)
        if isinstance(value, StructElement):
            value = self.load_struct(value)
        if ret.mode == "direct":
            ret.value = self.cast_to_return_annotation(value)
            return
        if value is not None:
            value = value if isinstance(value, StructValue) else self.as_value(value)
            if ret.result is None:
                ret.result = self.make_result_variable(value)
                ret.first_kind = describe(value)
            elif _value_kind(value) != _binding_kind(ret.result):
                raise CompileError(f"wk.func '{self.frame.name}' returns {describe(value)} here but "
                                   f"{ret.first_kind} at an earlier 'return'; every return must give the same kind "
                                   "of value")
            self.write_binding(ret.result, value)
        self.b.store(ret.flag, self.b.const(True, T.u1))
        if self.in_runtime_loop():
            if self.frame.loops[-1] == "parallel" or "parallel" in self.frame.loops:
                raise CompileError(f"'return' inside a loop of wk.func '{self.frame.name}' that runs as the "
                                   "kernel's parallel loop (a parallel loop cannot be left early); call the func "
                                   "inside a loop, or use wk.loop_config(serialize=True)")
            self.b.insert(ir.Break())

    def cast_to_return_annotation(self, value: Any) -> Any:
        """A func's returned number or vector in its annotated dtype (`-> wk.i32` truncates a float, as in
        Taichi); a Python number stays a compile-time value."""
        annotation = self.frame.ret.annotation
        if not (isinstance(annotation, (T.DataType, T.VectorType)) or annotation is int or annotation is float):
            return value
        dtype = self.as_dtype(annotation)
        if is_python_number(value) and not isinstance(annotation, T.VectorType):
            return float(value) if dtype.is_float else int(value)
        if is_runtime(value) and not isinstance(value, StructValue):
            return self.cast_to(value, dtype)
        return value

    def make_result_variable(self, value: Any) -> LocalVar | VectorVar:
        """The result variable of a flag-mode func, placed at the func's entry so every path sees it."""
        ret = self.frame.ret
        annotation = ret.annotation
        if isinstance(value, StructValue):
            entry: list[ir.Stmt] = []
            struct_var = self.struct_var_at_entry(value, f"{self.frame.name}.result", entry)
            ret.entry_block.stmts[ret.entry_index:ret.entry_index] = entry
            return struct_var
        if isinstance(value, VectorValue):
            dtype = annotation.dtype if isinstance(annotation, T.VectorType) else value.dtype
            allocas = [ir.Alloca(dtype=dtype, name=f"{self.frame.name}.result", loc=self.b.loc)
                       for _ in value.elements]
            binding: LocalVar | VectorVar = VectorVar(allocas, value.n, value.m)
        else:
            dtype = self.as_dtype(annotation) if annotation is not None else value.dtype
            allocas = [ir.Alloca(dtype=dtype, name=f"{self.frame.name}.result", loc=self.b.loc)]
            binding = LocalVar(allocas[0])
        ret.entry_block.stmts[ret.entry_index:ret.entry_index] = allocas
        return binding


_MAX_RECURSION = 16      # nested inlined calls of one func (compile-time recursion, Taichi's meta-programming)


def _value_kind(value: Any) -> Any:
    """What a returned value is, for checking a func's returns agree: scalar, vector/matrix shape, struct type."""
    if isinstance(value, VectorValue):
        return value.shape
    if isinstance(value, StructValue):
        return value.stype
    return ()


def _binding_kind(binding: Any) -> Any:
    if isinstance(binding, VectorVar):
        return (binding.n, binding.m) if binding.m else (binding.n,)
    if isinstance(binding, StructVar):
        return binding.stype
    return ()


def _hashable(obj: Any) -> bool:
    try:
        hash(obj)
    except TypeError:
        return False
    return True


class _ByReference:
    """A caller's local variable passed to a wk.template() parameter."""

    def __init__(self, binding: Any):
        self.binding = binding


def _check_cas_operands(operands: list[Any]) -> None:
    """Quadrants' rule: atomic_cas compares and stores integers only, one scalar at a time."""
    for name, operand in zip(("expected", "desired"), operands):
        if isinstance(operand, VectorValue):
            raise CompileError(f"wk.atomic_cas: the {name} value is {describe(operand)}; compare-and-swap works "
                               "on one scalar element at a time")
        if operand.dtype.is_float:
            raise CompileError(f"wk.atomic_cas takes integer operands, the {name} value is {describe(operand)}")


def is_str_format(node: ast.expr) -> bool:
    """`"...".format(...)`: a literal string's format() call."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
            and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str))


# `operator.add(a, b)` and its kin called in kernel code (a program passing `ops=operator.add` around): the
# binary operator it names.
OPERATOR_BINARY = {
    operator.add: ast.Add, operator.sub: ast.Sub, operator.mul: ast.Mult, operator.truediv: ast.Div,
    operator.floordiv: ast.FloorDiv, operator.mod: ast.Mod, operator.pow: ast.Pow, operator.matmul: ast.MatMult,
    operator.and_: ast.BitAnd, operator.or_: ast.BitOr, operator.xor: ast.BitXor, operator.lshift: ast.LShift,
    operator.rshift: ast.RShift,
}
