"""`wk.static(expr)`: evaluate a kernel-code expression with Python at compile time.

The expression runs with Python's own `eval` over the function's globals, closure cells and the compile-time
names in scope (template arguments, captured fields, unrolled loop indices), so comprehensions, lambdas and any
Python call work there. A name bound to a runtime value is reported as such."""
from __future__ import annotations

import ast
import builtins
from typing import Any, Callable

from wgkern.errors import CompileError, WkError
from wgkern.frontend.scope import Scope
from wgkern.lang import fields


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


def evaluate(node: ast.expr, fn: Callable[..., Any], scope: Scope, filename: str) -> Any:
    namespace: dict[str, Any] = dict(vars(builtins))
    namespace.update(getattr(fn, "__globals__", {}))
    namespace.update(closure_values(fn))
    runtime_names = scope.runtime_names()
    for name in runtime_names:
        namespace.pop(name, None)
    namespace.update(scope.static_names())
    namespace.update(scope.vector_shapes())
    expression = ast.Expression(body=node)
    ast.fix_missing_locations(expression)
    code = compile(expression, filename, "eval")
    fields.static_reads_refused += 1      # a container's values are run-time data: never baked into the code
    try:
        return eval(code, namespace)  # noqa: S307 - compile-time evaluation of the user's own expression
    except NameError as exc:
        name = getattr(exc, "name", None)
        if name in runtime_names:
            raise CompileError(f"wk.static() needs compile-time values, but '{name}' is a runtime value (its "
                               "arguments must be compile-time constants)") from None
        raise CompileError(f"name '{name}' is not defined") from None
    except WkError:
        raise
    except Exception as exc:  # the user's expression failed in Python
        raise CompileError(f"wk.static() evaluation failed: {type(exc).__name__}: {exc}") from None
    finally:
        fields.static_reads_refused -= 1
