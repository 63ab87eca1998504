"""`@wk.kernel` and `@wk.func`: the user's decorators and the Kernel/Func objects they make.

A Kernel only holds the Python function and forwards calls to the launch sequence
(wgkern/launch.py); compilation lives in frontend/, passes/ and backends/."""
from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import textwrap
import threading
from typing import Any, Callable

from wgkern.backends.base import LAUNCH_LOCK
from wgkern.errors import WkError
from wgkern.lang import rebinds


class _CompilingKernels(threading.local):
    """The kernel compilations at work on this thread, innermost last, each as the function that inlines a
    wk.func into it (`inline(func, args, kwargs)`): Python code run while a kernel compiles (a `wk.static(...)`
    expression such as `wk.static(wk.grouped(self.stencil()))`) may call a wk.func, which is then inlined into
    that kernel at that point, as in Taichi and Quadrants. Pushed and popped by the frontend's builder."""

    def __init__(self) -> None:
        self.inliners: list[Callable[[Func, tuple[Any, ...], dict[str, Any]], Any]] = []


COMPILING = _CompilingKernels()


class Func:
    """A device function: inlined into the kernels that call it."""

    requires_top_level = False     # @wk.func(requires_top_level=True): calls only at a kernel's top level

    def __init__(self, fn: Callable[..., Any]):
        self.fn = fn
        self.name = fn.__name__
        self.signature = inspect.signature(fn)
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if COMPILING.inliners:
            return COMPILING.inliners[-1](self, args, kwargs)
        raise WkError(f"wk.func '{self.name}' can only be called from inside a @wk.kernel or another @wk.func")

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        """`self.helper(...)` in a @wk.data_oriented class: the func with `self` bound (a template)."""
        return self if instance is None else BoundFunc(self, instance)


class PyFunc(Func):
    """`@wk.pyfunc` (Taichi's ti.pyfunc): inlined like a wk.func when kernels call it, and a plain Python
    function when Python calls it."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


class BoundFunc:
    """A wk.func method bound to its instance; kernels inline it with the instance as first argument."""

    def __init__(self, func: Func, instance: Any):
        self.func = func
        self.instance = instance

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(self.instance, *args, **kwargs)


def call_problems(signature: inspect.Signature, positional: int, keywords: Any) -> str:
    """What is wrong with calling `signature` with `positional` positional arguments and these keyword names, in
    Quadrants' words ("Too many arguments", "Missing argument 'b'", "Multiple values for argument 'a'",
    "Unexpected argument 'd'"), for the errors of kernel and func calls."""
    kinds = inspect.Parameter
    params = list(signature.parameters.values())
    slots = [p for p in params if p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD)]
    var_positional = any(p.kind is kinds.VAR_POSITIONAL for p in params)
    var_keyword = any(p.kind is kinds.VAR_KEYWORD for p in params)
    problems = []
    if positional > len(slots) and not var_positional:
        problems.append(f"Too many arguments: expected at most {len(slots)} positional, got {positional}")
    filled = {p.name for p in slots[:positional]}
    keywords = list(keywords)
    for name in keywords:
        if name in filled:
            problems.append(f"Multiple values for argument '{name}'")
        elif (name not in signature.parameters or signature.parameters[name].kind is kinds.POSITIONAL_ONLY) \
                and not var_keyword:
            problems.append(f"Unexpected argument '{name}'")
    for p in params:
        if p.default is kinds.empty and p.kind not in (kinds.VAR_POSITIONAL, kinds.VAR_KEYWORD) \
                and p.name not in filled and p.name not in keywords:
            problems.append(f"Missing argument '{p.name}'")
    return "; ".join(problems)


# The call path (wgkern/launch.py: specialise the arguments, compile through the frontend, launch) sits above the
# compiler, so it hands itself to this module when it is imported (wgkern/__init__.py imports it) rather than
# being imported from here. `_launch_kernel` is its launch_kernel, kept in a global for the per-call fast path.
_launcher: Any = None
_launch_kernel: Callable[..., Any] | None = None
_acquire, _release = LAUNCH_LOCK.acquire, LAUNCH_LOCK.release


def install_launcher(launcher: Any) -> None:
    """Called once by wgkern/launch.py: `launcher` has launch_kernel, kernel_ir_text and kernel_source."""
    global _launcher, _launch_kernel
    _launcher, _launch_kernel = launcher, launcher.launch_kernel


class Kernel:
    """An entry point called from Python. Calling it compiles (once per argument specialisation) and launches."""

    requires_top_level = False     # @wk.func(requires_top_level=True): calls only at a kernel's top level

    def __init__(self, fn: Callable[..., Any], graph: bool = False, checkpoints: bool = False,
                 fastcache: bool = False):
        self.fn = fn
        self.name = fn.__name__
        # @wk.kernel(fastcache=True): a warm start may skip the frontend when nothing it read changed
        # (wgkern/frontend_cache.py)
        self.fastcache = fastcache or getattr(fn, "_wk_fastcache", False)
        self.signature = inspect.signature(fn)
        self.params = list(self.signature.parameters.values())
        self.graph = graph               # @wk.kernel(graph=True): may hold wk.graph.parallel_context() regions
        self.checkpoints = checkpoints   # @wk.kernel(checkpoints=True): refused when it compiles (frontend)
        functools.update_wrapper(self, fn)
        self.last_compiled: Any = None   # launch.CompiledEntry of the most recent launch

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs and "qd_stream" in kwargs:         # Quadrants' stream: launches run in order on one queue
            kwargs = {k: v for k, v in kwargs.items() if k != "qd_stream"}
        _acquire()      # not `with LAUNCH_LOCK`: acquire/release calls cost half as much on the hot path
        try:
            return _launch_kernel(self, args, kwargs, False)
        finally:
            _release()

    no_grad = False        # @wk.ad.no_grad: .grad does nothing

    def grad(self, *args: Any, **kwargs: Any) -> Any:
        if self.no_grad:
            return None
        with LAUNCH_LOCK:
            return _launch_kernel(self, args, kwargs, reverse=True)

    def ir(self) -> str:
        return _launcher.kernel_ir_text(self)

    def source(self, arch: Any = None) -> str:
        return _launcher.kernel_source(self, arch)

    def __repr__(self) -> str:
        return f"<wk.kernel {self.name}>"

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        """A kernel defined in a @wk.data_oriented class: `obj.step(dt)` passes `obj` as a template."""
        return self if instance is None else BoundKernel(self, instance)


class BoundKernel:
    """`obj.kernel`: calls (and `.grad`) the kernel with `obj` as its first, template, argument."""

    def __init__(self, kernel: Kernel, instance: Any):
        self.kernel = kernel
        self.instance = instance
        self.name = kernel.name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.check_owner()
        return self.kernel(self.instance, *args, **kwargs)

    def grad(self, *args: Any, **kwargs: Any) -> Any:
        self.check_owner()
        return self.kernel.grad(self.instance, *args, **kwargs)

    def check_owner(self) -> None:
        """A kernel method runs on an instance of a @wk.data_oriented class (or a dataclass), as in Quadrants
        and Taichi: the mark is what lets a kernel find the containers the object holds."""
        owner = type(self.instance)
        if not (getattr(owner, "_wk_data_oriented", False) or dataclasses.is_dataclass(owner)):
            from wgkern.errors import CompileError
            raise CompileError(f"kernel '{self.name}' is a method of class {owner.__name__}: Please decorate "
                               f"class {owner.__name__} with @wk.data_oriented")

    def ir(self) -> str:
        return self.kernel.ir()

    def source(self, arch: Any = None) -> str:
        return self.kernel.source(arch)


def data_oriented(cls: Any) -> Any:
    """`@wk.data_oriented`: a class whose methods may be kernels and funcs using `self`'s fields (Taichi's
    decorator). Kernels and funcs bind `self` when accessed on an instance; the mark lets a kernel find the
    wk.ndarrays held by such objects (they are passed as arguments, lang/argument_holdings.py); its attribute
    assignments are counted (lang/rebinds.py), so a launch sees in one comparison that none changed."""
    cls._wk_data_oriented = True
    rebinds.watch(cls)
    return cls


def kernel(_fn: Callable[..., Any] | None = None, *, pure: bool | None = None, fastcache: bool = False,
           graph: bool = False, checkpoints: bool = False) -> Any:
    """`@wk.kernel`, also as `@wk.kernel(...)` with Quadrants' options: `fastcache` (or `pure`): the kernel
    depends only on its arguments and code, so a warm start takes its frontend's result from the offline cache
    when every function, name and attribute the frontend read is found unchanged (wgkern/frontend_cache.py);
    `graph` (launches are already batched into one submission) changes nothing but allows
    `wk.graph.parallel_context()` regions in the kernel;
    `checkpoints` (pausable graph kernels) is not available: such a kernel raises CompileError when first called."""
    if _fn is None:
        return functools.partial(kernel, pure=pure, fastcache=fastcache, graph=graph, checkpoints=checkpoints)
    if getattr(_fn, "_wk_perf_dispatch_registered", False):
        raise WkError(f"KERNEL_ANNOTATION_ORDER: '{_fn.__name__}' is registered with a wk.perf_dispatch before "
                      "@wk.kernel makes it a kernel; write @dispatcher.register above @wk.kernel")
    return Kernel(_fn, graph=graph, checkpoints=checkpoints, fastcache=bool(fastcache or pure))


def func(fn: Callable[..., Any] | None = None, *, is_real_function: bool = False,
         requires_top_level: bool = False) -> Any:
    """`@wk.func`, also as `@wk.func(...)`: Taichi's real functions (`is_real_function=True`) are inlined like
    every func; Quadrants' `requires_top_level=True` makes a call from inside a run-time loop or `if` a
    CompileError (the func's loops must run as launches one after another)."""
    if fn is None:
        return functools.partial(func, is_real_function=is_real_function, requires_top_level=requires_top_level)
    if is_real_function:
        check_real_func_annotations(fn)
    made = Func(fn)
    made.requires_top_level = requires_top_level
    return made


def real_func(fn: Callable[..., Any]) -> Func:
    """Taichi's `@ti.real_func` (a function compiled once and called at run time): here inlined like every
    `@wk.func`, with the same results; recursion deeper than the compile-time bound is a CompileError. As in
    Taichi and Quadrants, every parameter and a returned value must be annotated (check_real_func_annotations)."""
    check_real_func_annotations(fn)
    return Func(fn)


def check_real_func_annotations(fn: Callable[..., Any]) -> None:
    """A real function is compiled for its declared types: a CompileError names a parameter without an
    annotation, or a `return value` without a return annotation."""
    from wgkern.errors import CompileError
    signature = inspect.signature(fn)
    for name, param in signature.parameters.items():
        if param.annotation is inspect.Parameter.empty and name != "self":
            raise CompileError(f"parameter '{name}' of real function '{fn.__name__}' must be type annotated")
    if signature.return_annotation is not inspect.Signature.empty:
        return
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return                                  # no source to read (the compile reports what it finds)
    body = tree.body[0] if tree.body and isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)) else tree
    if any(isinstance(node, ast.Return) and node.value is not None for node in ast.walk(body)):
        raise CompileError(f"real function '{fn.__name__}' returns a value, so its return value must be annotated "
                           "(def f(...) -> type)")


def pure(fn: Any) -> Any:
    """Quadrants' `@qd.pure` (now `@qd.kernel(fastcache=True)`), above or below `@wk.kernel`."""
    if isinstance(fn, Kernel):
        fn.fastcache = True
    else:
        fn._wk_fastcache = True
    return fn


def pyfunc(fn: Callable[..., Any]) -> PyFunc:
    return PyFunc(fn)
