"""Calls of `@wk.func` functions in kernel code, or in Python code run while a kernel compiles (a `wk.static(...)`
expression): arguments bound by value (or by reference for `wk.ref` and Taichi's real_func), the body inlined,
`return` anywhere, recursion past a fixed depth rejected."""
from __future__ import annotations

import ast
import inspect
from typing import Any

from wgkern.errors import CompileError
from wgkern.frontend import static_eval
from wgkern.frontend.scope import Fixed, GlobalVar, LocalVar, Scope, Static, StructVar, VectorVar
from wgkern.frontend.values import (GlobalRef, StructElement, StructValue, VectorValue, describe, is_python_number,
                                    is_runtime)
from wgkern.ir import nodes as ir
from wgkern.lang import types as T
from wgkern.lang.kernel import Func, call_problems
from wgkern.lang.matrix import Matrix
from wgkern.lang.structs import StructType


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


class _ByReference:
    """A caller's local variable passed to a wk.template() parameter."""

    def __init__(self, binding: Any):
        self.binding = binding


class FuncCallMixin:
    """The builder's rules for calling and inlining @wk.func functions."""

    # ---- @wk.func inlining --------------------------------------------------------------------------------
    def call_func(self, func: Func, node: ast.Call, leading: list[Any] | None = None) -> Any:
        self.check_func_call(func)
        params = list(func.signature.parameters.values())
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
        return self.bind_and_inline(func, args, kwargs)

    def call_func_from_python(self, func: Func, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A wk.func called by Python code that runs while this kernel compiles, at the point where that code
        runs (`wk.static(wk.grouped(self.stencil_range()))`): inlined there with the arguments Python gave, by
        value; a runtime name among them (a RuntimeOperand of wk.static) stands for the variable's value."""
        self.check_func_call(func)
        self.check_tile_subgroup(func)      # `wk.static(...)` making a tile checks its subgroup too (tiles.py)

        def value(argument: Any) -> Any:
            return static_eval.resolve(argument, lambda operand: self.read_binding(operand.binding))
        return self.bind_and_inline(func, [value(a) for a in args], {k: value(v) for k, v in kwargs.items()})

    def bind_and_inline(self, func: Func, args: list[Any], kwargs: dict[str, Any]) -> Any:
        try:
            bound = func.signature.bind(*args, **kwargs)
        except TypeError as exc:
            problems = call_problems(func.signature, len(args), kwargs) or str(exc)
            raise CompileError(f"wrong arguments in the call to wk.func '{func.name}': {problems}") from None
        bound.apply_defaults()
        return self.inline(func, bound.arguments)

    def check_func_call(self, func: Func) -> None:
        """The rules a call of `func` must follow wherever it is made: a recursion that ends at compile time,
        top-level calls where the func requires them, no *args / **kwargs parameters."""
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
        for param in func.signature.parameters.values():
            if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                raise CompileError(f"wk.func '{func.name}': *args/**kwargs parameters are not supported")

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
        from wgkern.frontend.frames import Frame, ReturnState, assigned_names, reduction_names
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
        from wgkern.frontend.frames import per_tree
        return per_tree("returns", tree, lambda: _return_mode(tree))

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


def _return_mode(tree: ast.FunctionDef) -> str:
    """'none' (no return), 'direct' (one return, the function's last statement) or 'flag' (any other)."""
    returns = [n for n in ast.walk(tree) if isinstance(n, ast.Return)]
    if not returns:
        return "none"
    if len(returns) == 1 and tree.body and returns[0] is tree.body[-1]:
        return "direct"
    return "flag"
