"""Calls in kernel code, dispatched by what is called: `wk.*` intrinsics (by identity, intrinsics.py), methods of
vectors, fields and structs, user classes, compile-time folding of pure Python callables. The rules for each kind
of call live beside it: builtin_calls.py (casts, random, constructors, reductions), func_calls.py (@wk.func
inlining), atomic_calls.py, print_calls.py."""
from __future__ import annotations

import ast
import builtins
import functools
import importlib
import inspect
import operator
import sys
import types
from typing import Any

import numpy as np

from wgkern.errors import CompileError, WkError
from wgkern.frontend import arith, intrinsics, linalg, static_eval, vectors
from wgkern.frontend.sparse import SPARSE_INTRINSICS, DynamicMethod, is_tree_query
from wgkern.frontend.buffer_view import BufferViewMethod
from wgkern.frontend.texture import TextureMethod
from wgkern.lang.buffer_view import BufferView
from wgkern.frontend.scope import Fixed, Static
from wgkern.frontend.values import (AtomicMethod, BoundMethod, ElementShape, GlobalRef, NdarrayRef, VectorValue,
                                    describe, is_runtime)
from wgkern.ir import nodes as ir
from wgkern.ir.ops import BinaryOpKind
from wgkern.lang import math as wm
from wgkern.lang import types as T
from wgkern.lang.kernel import BoundFunc, BoundKernel, Func, Kernel
from wgkern.lang.matrix import Matrix, Vector
from wgkern.lang.simt import SIMT_CALLS
from wgkern.lang.simt.block import SharedArray
from wgkern.lang.simt.tile import outer as tile_outer
from wgkern.lang.structs import Struct, StructType
from wgkern.runtime.materialization import sync as program_sync
from wgkern.frontend.builtin_calls import SEQUENCE_REDUCTIONS
from wgkern.frontend.frames import hashable

CAST_BUILTINS = {builtins.int: lambda: T.DEFAULT_INT, builtins.float: lambda: T.DEFAULT_FLOAT,
                 builtins.bool: lambda: T.u1}     # read at compile time: wk.init(default_fp=...) sets them
# Python's reductions of a list, for lists holding run-time values (`sum([I[i] * n ** i for i in ...])`)


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
        if not hashable(callee):
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
            self.check_tile_subgroup(callee)            # frontend/tiles.py: a tile needs N invocations
            return self.call_func(callee, node)
        if isinstance(callee, BoundFunc):
            return self.call_func(callee.func, node, leading=[callee.instance])
        if callee in intrinsics.ATOMICS:
            return self.atomic_call(intrinsics.ATOMICS[callee], node)
        if callee is wm.ndrange:
            return self.ndrange_value(node)
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

    def ndrange_value(self, node: ast.Call) -> Any:
        """`wk.ndrange(...)` anywhere but a for loop's header: with compile-time bounds, the Python value (the
        index tuples), as in Taichi, so a func can return a stencil that a caller unrolls with
        `wk.static(wk.grouped(stencil()))`; with run-time bounds it can only be a loop's iterable."""
        args = self.visit_elements(node.args)
        kwargs = self.visit_keywords(node.keywords)
        if any(is_runtime(a) or (isinstance(a, (tuple, list)) and any(is_runtime(b) for b in a))
               for a in [*args, *kwargs.values()]):
            raise CompileError("wk.ndrange() with run-time bounds can only be used as the iterable of a for loop")
        try:
            return wm.ndrange(*args, **kwargs)
        except (TypeError, ValueError) as exc:
            raise CompileError(str(exc)) from None

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


# `operator.add(a, b)` and its kin called in kernel code (a program passing `ops=operator.add` around): the
# binary operator it names.
OPERATOR_BINARY = {
    operator.add: ast.Add, operator.sub: ast.Sub, operator.mul: ast.Mult, operator.truediv: ast.Div,
    operator.floordiv: ast.FloorDiv, operator.mod: ast.Mod, operator.pow: ast.Pow, operator.matmul: ast.MatMult,
    operator.and_: ast.BitAnd, operator.or_: ast.BitOr, operator.xor: ast.BitXor, operator.lshift: ast.LShift,
    operator.rshift: ast.RShift,
}
