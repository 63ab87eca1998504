"""`print(...)` in kernel code: literal pieces, f-strings and `"...".format(...)` around printed values, format specs
checked at compile time (the text itself is made on the host, ir/printing.py)."""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

import numpy as np

from wgkern.errors import CompileError
from wgkern.frontend import static_eval, vectors
from wgkern.frontend.values import GlobalRef, VectorValue, is_runtime
from wgkern.ir import nodes as ir
from wgkern.lang import types as T


@dataclass(frozen=True, slots=True)
class FStringParts:
    """An f-string argument of print() in a kernel: (literal text or evaluated value, format spec) pairs."""
    parts: list[tuple[Any, str]]


def is_str_format(node: ast.expr) -> bool:
    """`"...".format(...)`: a literal string's format() call."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
            and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str))


class PrintMixin:
    """The builder's rules for print calls."""

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
                from wgkern.ir.printing import format_constant, format_value
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
        from wgkern.ir.printing import format_value
        try:
            format_value(0, dtype, spec)
        except (ValueError, TypeError) as exc:
            raise CompileError(f"format spec '{spec}' does not apply to a {dtype.name} value ({exc})") from None
