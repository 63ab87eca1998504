"""Kernel code of Quadrants' fork/join regions (lang/graph_regions.py): `with wk.graph.parallel_context():` and the
`with wk.graph.parallel():` sections in it.

A region is checked whole before any of it is translated (the grammar Quadrants enforces): its body holds only
sections, optionally under `if wk.static(...)` or `for ... in wk.static(...)`; a section's body is straight-line
task work, with no `wk.graph.do_while` loop, checkpoint, region or section anywhere inside it. Then the sections
are translated in the order written, as if the `with` lines were not there: their outermost loops stay outermost,
so each runs in parallel, one after another, and the work after the region sees all of their writes.

Errors name the constructs as the kernel spells them (`qd.graph.parallel()` in a program that imports wgkern as
qd), so the messages read like the source."""
from __future__ import annotations

import ast
from typing import Any

from wgkern.errors import CompileError
from wgkern.lang import graph_regions

_REGION, _SECTION = "parallel_context", "parallel"


def spelling(func: ast.expr) -> str:
    try:
        return ast.unparse(func)
    except Exception:  # noqa: BLE001 - a name for a message only
        return "wk.graph.parallel"


def module_prefix(func: ast.expr, default: str = "wk") -> str:
    """`qd` for `qd.graph.parallel` / `qd.static`: the name the kernel's module alias starts with."""
    while isinstance(func, ast.Attribute):
        func = func.value
    return func.id if isinstance(func, ast.Name) else default


def _names(func: ast.expr, name: str) -> bool:
    """`<...>.graph.<name>`, `graph.<name>` or the flat `<...>.graph_<name>` / `graph_<name>` (syntactic: used on
    code not yet translated, whose names may only exist once it is)."""
    if isinstance(func, ast.Attribute):
        if func.attr == "graph_" + name:
            return True
        return func.attr == name and (
            (isinstance(func.value, ast.Attribute) and func.value.attr == "graph")
            or (isinstance(func.value, ast.Name) and func.value.id == "graph"))
    return isinstance(func, ast.Name) and func.id == "graph_" + name


def _call_named(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Call) and _names(node.func, name)


def _is_checkpoint(node: ast.expr) -> bool:
    """Quadrants' `qd.checkpoint(...)` (wgkern has no checkpoints; a section may not hold one in either)."""
    return isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Attribute) and node.func.attr == "checkpoint")
        or (isinstance(node.func, ast.Name) and node.func.id == "checkpoint"))


def _is_static(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Attribute) and node.func.attr == "static")
        or (isinstance(node.func, ast.Name) and node.func.id == "static"))


class GraphRegionMixin:
    """FunctionBuilder rules for `with` statements opening a region or a section."""

    graph_region_depth = 0       # regions being translated around the current statement (0 or 1)
    graph_section_depth = 0      # sections being translated around the current statement (0 or 1)

    def graph_region_kind(self, context: Any, callee: Any) -> str | None:
        """'parallel_context' / 'parallel' when `with <context>:` opens a region / a section, else None."""
        if callee is graph_regions.parallel_context:
            return _REGION
        if callee is graph_regions.parallel:
            return _SECTION
        return None

    def visit_graph_region(self, node: ast.With, kind: str) -> bool:
        call = node.items[0].context_expr
        name = spelling(call.func)
        if len(node.items) != 1 or node.items[0].optional_vars is not None:
            raise CompileError(f"'with {name}():' takes no 'as' target and no other context manager")
        if call.args or call.keywords:
            raise CompileError(f"{name}() takes no arguments")
        if kind == _SECTION:
            region = name[:-len(_SECTION)] + _REGION if name.endswith("." + _SECTION) else "wk.graph.parallel_context"
            if not self.graph_region_depth:
                raise CompileError(f"{name}() can only be used directly inside a {region}() region")
            return self._translate_section(node)
        prefix = module_prefix(call.func)
        if not self.frame.is_kernel:
            raise CompileError(f"{name}() can only be used inside @{prefix}.kernel, not @{prefix}.func")
        if not getattr(self.ctx.kernel, "graph", False):
            raise CompileError(f"{name}() requires @{prefix}.kernel(graph=True): write @{prefix}.kernel(graph=True) "
                               f"above '{self.ctx.kernel.name}'")
        if self.graph_section_depth:
            raise CompileError(f"{name}() cannot appear inside a {name[:-len(_REGION)]}parallel() body")
        if self.graph_region_depth:
            raise CompileError(f"{name}() regions cannot be nested")
        self._check_region_body(node.body, name, prefix)
        self.graph_region_depth += 1
        try:
            return self.visit_body(node.body)
        finally:
            self.graph_region_depth -= 1

    def _translate_section(self, node: ast.With) -> bool:
        self.graph_section_depth += 1
        try:
            return self.visit_body(node.body)
        finally:
            self.graph_section_depth -= 1

    # ---- the grammar, checked on the region's source before it is translated ---------------------------------
    def _check_region_body(self, stmts: list[ast.stmt], region: str, prefix: str) -> None:
        section = region[:-len(_REGION)] + _SECTION if region.endswith("." + _REGION) else "wk.graph.parallel"
        for k, stmt in enumerate(stmts):
            if isinstance(stmt, ast.Pass) or (k == 0 and isinstance(stmt, ast.Expr)
                                              and isinstance(stmt.value, ast.Constant)
                                              and isinstance(stmt.value.value, str)):
                continue
            if isinstance(stmt, ast.With) and stmt.items and _call_named(stmt.items[0].context_expr, _SECTION):
                self._check_section_body(stmt.body, section)
                continue
            if isinstance(stmt, ast.If) and _is_static(stmt.test):
                self._check_region_body(stmt.body, region, prefix)
                self._check_region_body(stmt.orelse, region, prefix)
                continue
            if isinstance(stmt, ast.For) and not stmt.orelse and _is_static(stmt.iter):
                self._check_region_body(stmt.body, region, prefix)
                continue
            raise CompileError(
                f"a {region}() region may contain only 'with {section}():' sections (optionally inside "
                f"'if {prefix}.static(...)' or 'for ... in {prefix}.static(...)'); this {type(stmt).__name__} "
                "statement would run outside every section: move it out of the region",
                self.frame.src.loc(stmt))

    def _check_section_body(self, stmts: list[ast.stmt], section: str) -> None:
        for stmt in stmts:
            for node in ast.walk(stmt):
                if isinstance(node, ast.While) and _call_named(node.test, "do_while"):
                    raise CompileError(
                        f"{spelling(node.test.func)}() cannot appear inside a {section}() section: a section is "
                        "straight-line task work (put the region inside the do_while loop instead)",
                        self.frame.src.loc(node))
                if not isinstance(node, ast.With):
                    continue
                for item in node.items:
                    expr = item.context_expr
                    if _is_checkpoint(expr):
                        raise CompileError(f"{spelling(expr.func)}() cannot appear inside a {section}() section: a "
                                           "section is straight-line task work", self.frame.src.loc(node))
                    if _call_named(expr, _REGION):
                        raise CompileError(f"{spelling(expr.func)}() cannot appear inside a {section}() section",
                                           self.frame.src.loc(node))
                    if _call_named(expr, _SECTION):
                        raise CompileError(f"{section}() sections cannot be nested inside one another",
                                           self.frame.src.loc(node))
