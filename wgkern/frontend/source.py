"""The Python source of a kernel/func: parsed AST and the map from AST positions to real file locations.

`inspect.getsourcelines` gives the function's lines and first line number; the source is dedented before
parsing, so a node's (lineno, col_offset) is shifted back to the file's coordinates here, in one place.
A code object's source is read and parsed once (a func is inlined into many kernels): the parse is kept per code
object, which Python never changes, so a redefined function (a new code object) or one whose `__code__` is
replaced (IPython's autoreload) is read afresh. The tree is shared by every function made from that code object
and by every build: the frontend never changes it, and what it finds in a tree depends on the tree alone
(frames.py)."""
from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
import types
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable

from wgkern.errors import CompileError, SourceLoc


@dataclass(eq=False)
class FunctionSource:
    """A parsed function: `tree` is its FunctionDef; `loc(node)` gives a node's SourceLoc in the real file."""
    fn: Callable[..., Any]
    filename: str
    first_line: int
    lines: list[str]
    indent: int
    tree: ast.FunctionDef
    locs: dict[tuple[int, int], SourceLoc] = field(default_factory=dict)   # by (lineno, col_offset), see loc()

    def loc(self, node: ast.AST) -> SourceLoc:
        """The node's place in the file (made once per position of the code object's source: every AST node the
        frontend visits asks)."""
        lineno = getattr(node, "lineno", 1)
        offset = getattr(node, "col_offset", 0)
        found = self.locs.get((lineno, offset))
        if found is None:
            index = lineno - 1
            text = self.lines[index].rstrip("\r\n") if 0 <= index < len(self.lines) else None
            found = self.locs[lineno, offset] = SourceLoc(self.filename, self.first_line + lineno - 1,
                                                          offset + self.indent, text)
        return found

    @property
    def def_loc(self) -> SourceLoc:
        return self.loc(self.tree)

    @property
    def decorator_module(self) -> str:
        """`qd` for a function decorated `@qd.kernel` / `@qd.func(...)`: the name the program gives the package,
        for messages that name its decorators as the program spells them ('wk' when there is none)."""
        for decorator in self.tree.decorator_list:
            node = decorator.func if isinstance(decorator, ast.Call) else decorator
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                return node.value.id
        return "wk"


def _leading_spaces(line: str) -> int:
    return len(line) - len(line.lstrip())


@dataclass(frozen=True, eq=False)
class _Parsed:
    """What parse_function found in one code object's source (FunctionSource's fields but the function)."""
    filename: str
    first_line: int
    lines: list[str]
    indent: int
    tree: ast.FunctionDef
    locs: dict[tuple[int, int], SourceLoc] = field(default_factory=dict)


class _PerCode:
    """What was found for each code object, by identity. (Code objects compare equal by their bytecode and line
    numbers but not their file, so two files holding the same function at the same lines share a key of a
    WeakKeyDictionary: each value remembers its own code object.)"""

    def __init__(self) -> None:
        self.found: weakref.WeakKeyDictionary[types.CodeType, tuple[weakref.ref, Any]] = weakref.WeakKeyDictionary()

    def get(self, code: Any) -> Any:
        if not isinstance(code, types.CodeType):
            return None
        held = self.found.get(code)
        return held[1] if held is not None and held[0]() is code else None

    def put(self, code: Any, value: Any) -> None:
        if isinstance(code, types.CodeType):
            self.found[code] = (weakref.ref(code), value)


_PARSED = _PerCode()


def parse_function(fn: Callable[..., Any]) -> FunctionSource:
    """Parse `fn`'s source (once per code object). Raises CompileError when the source is unavailable or not a
    plain `def`."""
    code = getattr(fn, "__code__", None)
    parsed = _PARSED.get(code)
    if parsed is None:
        parsed = _parse(fn)
        _PARSED.put(code, parsed)
    return FunctionSource(fn, parsed.filename, parsed.first_line, parsed.lines, parsed.indent, parsed.tree,
                          parsed.locs)


def source_lines(fn: Callable[..., Any]) -> tuple[str, int, list[str]]:
    """The file, first line and lines of a `def`. Raises CompileError when the source is unavailable."""
    filename = getattr(getattr(fn, "__code__", None), "co_filename", "<unknown>")
    try:
        filename = inspect.getsourcefile(fn) or filename
        lines, first_line = inspect.getsourcelines(fn)
    except (OSError, TypeError) as exc:
        raise CompileError(f"cannot read the source of '{getattr(fn, '__name__', fn)}' ({exc}); kernels and "
                           "funcs must be defined in a file", SourceLoc(filename, 0)) from None
    return filename, max(first_line, 1), lines


def _parse(fn: Callable[..., Any]) -> _Parsed:
    filename = getattr(getattr(fn, "__code__", None), "co_filename", "<unknown>")
    if getattr(fn, "__name__", None) == "<lambda>":
        return _parse_lambda(fn, filename)
    filename, first_line, lines = source_lines(fn)
    code_lines = [line for line in lines if line.strip()]
    indent = min(_leading_spaces(line) for line in code_lines) if code_lines else 0
    source = textwrap.dedent("".join(lines))
    try:
        module = ast.parse(source)
    except SyntaxError as exc:
        raise CompileError(f"cannot parse the source of '{fn.__name__}': {exc.msg}",
                           SourceLoc(filename, first_line + (exc.lineno or 1) - 1)) from None
    defs = [node for node in module.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if not defs or isinstance(defs[0], ast.AsyncFunctionDef):
        raise CompileError(f"'{getattr(fn, '__name__', fn)}' must be defined with a plain 'def' statement "
                           "(lambdas and async functions cannot be kernels)", SourceLoc(filename, first_line))
    return _Parsed(filename, first_line, lines, indent, defs[0])


def _parse_lambda(fn: Callable[..., Any], filename: str) -> _Parsed:
    """A lambda (an undecorated callee of kernel code) as a one-statement `def` returning its body. The whole
    file is parsed, since several lambdas may share a line; the code object's first instruction position
    picks the right one."""
    code = fn.__code__
    lines = linecache.getlines(filename)
    try:
        module = ast.parse("".join(lines))
    except SyntaxError:
        module = None
    positions = [(line, col) for line, _, col, _ in code.co_positions() if line is not None and col is not None]
    candidates = [node for node in ast.walk(module) if isinstance(node, ast.Lambda)
                  and node.lineno == code.co_firstlineno] if module is not None else []
    def contained(node: ast.Lambda) -> int:
        start, end = (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)
        return sum(start <= position <= end for position in positions)

    scored = sorted(candidates, key=contained, reverse=True)
    if not scored or (len(scored) > 1 and contained(scored[0]) == contained(scored[1])):
        raise CompileError("cannot find the source of a lambda called from kernel code; make it a @wk.func",
                           SourceLoc(filename, code.co_firstlineno))
    node = scored[0]
    tree = ast.FunctionDef(name="<lambda>", args=node.args, body=[ast.Return(value=node.body)], decorator_list=[],
                           returns=None, type_comment=None, type_params=[])
    ast.copy_location(tree, node)
    ast.copy_location(tree.body[0], node.body)
    tree.end_lineno, tree.end_col_offset = node.end_lineno, node.end_col_offset
    return _Parsed(filename, 1, lines, 0, tree)
