"""`wk.static(expr)`: evaluate a kernel-code expression with Python at compile time.

The expression runs with Python's own `eval` over the function's globals, closure cells and the compile-time
names in scope (template arguments, captured fields, unrolled loop indices), so comprehensions, lambdas and any
Python call work there. A name bound to a runtime value is reported as such, except inside a tuple, list or
iterator (`wk.static(enumerate((i, j)))`, `wk.static(zip(a, (i, j)))`): there it is a `RuntimeOperand`, a stand-in
that Python can place and move but not compute with, which the caller turns back into the kernel value (as in
Taichi and Quadrants, whose `static()` passes such tuples through)."""
from __future__ import annotations

import ast
import builtins
import contextlib
from typing import Any, Callable

from wgkern.errors import CompileError, WkError
from wgkern.frontend import call_trace, reads
from wgkern.frontend.scope import Scope, VectorShape
from wgkern.lang import expr, host_access


def closure_values(fn: Callable[..., Any]) -> dict[str, Any]:
    """The function's closure cells that are filled (name -> value)."""
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None) or ()
    out: dict[str, Any] = {}
    if code is None:
        return out
    for name, cell in zip(code.co_freevars, cells):
        try:
            out[name] = cell.cell_contents
        except ValueError:
            continue
    return out


def runtime_value_error(name: str) -> CompileError:
    return CompileError(f"wk.static() needs compile-time values, but '{name}' is a runtime value (its arguments "
                        "must be compile-time constants)")


class RuntimeAttribute(AttributeError):
    """An attribute of a RuntimeOperand was read (an AttributeError, so hasattr() and getattr(x, a, default) work);
    reported as the runtime value it is."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


class RuntimeOperand:
    """A runtime name inside a wk.static(...) expression: it can be put in tuples, lists, enumerate() or zip()
    and unpacked, but any computation with it (arithmetic, comparison, truth, range(), indexing) is refused with
    the name, since its value exists only when the kernel runs. `binding` is the name's scope binding; `shape`
    gives a vector variable's n / m / shape / len()."""

    def __init__(self, name: str, binding: Any, shape: VectorShape | None) -> None:
        self.name, self.binding, self.shape_info = name, binding, shape

    def __getattr__(self, attr: str) -> Any:
        info = self.__dict__.get("shape_info")
        if info is not None and attr in ("n", "m", "shape"):
            return getattr(info, attr)
        raise RuntimeAttribute(self.__dict__.get("name", "?"))

    def __len__(self) -> int:
        if self.shape_info is None:
            raise runtime_value_error(self.name)
        return len(self.shape_info)

    def __repr__(self) -> str:
        return f"<runtime value '{self.name}'>"

    __hash__ = object.__hash__


expr.STAND_IN_CLASSES.extend((RuntimeOperand, VectorShape))   # `isinstance(x, ti.lang.expr.Expr)` (lang/expr.py)


def _refuse(self: RuntimeOperand, *args: Any) -> Any:
    raise runtime_value_error(self.name)


for _method in ("add radd sub rsub mul rmul truediv rtruediv floordiv rfloordiv mod rmod pow rpow matmul rmatmul "
                "and rand or ror xor rxor lshift rlshift rshift rrshift neg pos abs invert eq ne lt le gt ge bool "
                "index int float complex iter getitem contains call round trunc floor ceil").split():
    setattr(RuntimeOperand, f"__{_method}__", _refuse)


def resolve(value: Any, convert: Callable[[RuntimeOperand], Any]) -> Any:
    """`value` with each RuntimeOperand in it (also inside tuples, lists and the iterators enumerate(), zip(),
    map() and filter(), which become tuples) replaced by `convert(operand)`."""
    if isinstance(value, RuntimeOperand):
        return convert(value)
    if isinstance(value, tuple) and any(isinstance(v, (RuntimeOperand, tuple, list)) for v in value):
        return tuple(resolve(v, convert) for v in value)
    if isinstance(value, list):
        return [resolve(v, convert) for v in value]
    if isinstance(value, (enumerate, zip, map, filter)):     # consumed once, as the loop would: resolved items
        return tuple(resolve(v, convert) for v in value)
    return value


def evaluate(node: ast.expr, fn: Callable[..., Any], scope: Scope, filename: str,
             runtime_operands: bool = False) -> Any:
    """The value of `node`. With `runtime_operands`, runtime names are RuntimeOperands (the result may hold
    some; a result that is one is refused); without, they are undefined names."""
    namespace: dict[str, Any] = dict(vars(builtins))
    namespace.update(getattr(fn, "__globals__", {}))
    namespace.update(closure_values(fn))
    runtime_names = scope.runtime_names()
    for name in runtime_names:
        namespace.pop(name, None)
    namespace.update(scope.static_names())
    shapes = scope.vector_shapes()
    if runtime_operands:
        for name in runtime_names:
            namespace[name] = RuntimeOperand(name, scope.lookup(name), shapes.get(name))
    else:
        namespace.update(shapes)
    log = reads.current()
    calls_python = False
    if log is not None:
        frontend_names = set(runtime_names) | set(scope.static_names()) | set(shapes)   # the build's own values
        calls_python = log.expression(node, fn, frontend_names.__contains__, namespace)
    expression = ast.Expression(body=node)
    ast.fix_missing_locations(expression)
    code = compile(expression, filename, "eval")
    host_access.static_reads_refused += 1      # a container's values are run-time data: never baked into the code
    try:
        with call_trace.traced(log, code) if calls_python else contextlib.nullcontext():
            value = eval(code, namespace)  # noqa: S307 - compile-time evaluation of the user's own expression
    except NameError as exc:
        name = getattr(exc, "name", None)
        if name in runtime_names:
            raise CompileError(f"wk.static() needs compile-time values, but '{name}' is a runtime value (its "
                               "arguments must be compile-time constants)") from None
        raise CompileError(f"name '{name}' is not defined") from None
    except RuntimeAttribute as exc:
        raise runtime_value_error(exc.name) from None
    except WkError:
        raise
    except Exception as exc:  # the user's expression failed in Python
        raise CompileError(f"wk.static() evaluation failed: {type(exc).__name__}: {exc}") from None
    finally:
        host_access.static_reads_refused -= 1
    if isinstance(value, RuntimeOperand):
        raise runtime_value_error(value.name)
    return value
