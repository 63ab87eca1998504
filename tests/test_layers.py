"""The package's layers import downward only (docs/internals.md, "Layers").

Every import statement of every module under wgkern/ is parsed, at module level and inside functions alike, and
its target is placed in a layer by the module's first name under wgkern/. An import of a higher layer fails the
test, naming the importing file and line; so does a module that belongs to no layer (a new top-level module or
package must be given one here and in docs/internals.md)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import wgkern

# Bottom to top. A module may import its own layer and any layer below it.
LAYERS: list[tuple[str, frozenset[str]]] = [
    ("base", frozenset({"errors", "dtypes", "disk_cache", "resources", "_logging", "font", "png", "raster"})),
    ("ir", frozenset({"ir"})),
    ("analysis", frozenset({"passes", "sizing"})),
    ("backends", frozenset({"backends"})),
    ("runtime", frozenset({"runtime", "profiler"})),
    ("language", frozenset({"lang"})),
    ("frontend", frozenset({"frontend"})),
    ("face", frozenset({"launch", "launch_plan", "frontend_cache", "linalg", "algorithms", "radix_sort", "graph", "screen", "gui", "ui", "tools",
                        "compat", "distributed", "bench", "bench_floors", "bench_report", "bench_workloads", "bench_plot", "bench_targets", "fuzz", "cli_args", "_lib", "__init__", "__main__"})),
]
RANK = {name: rank for rank, (_, names) in enumerate(LAYERS) for name in names}
PACKAGE = Path(wgkern.__file__).parent


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def first_name(module: str) -> str:
    """`wgkern.lang.fields` -> `lang`; the package itself -> `__init__`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def from_target(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The module a `from ... import` statement reads from, a relative one resolved against `module`."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imported_modules(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The wgkern modules (or packages) an import statement names, relative imports resolved."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name.split(".")[0] == "wgkern"]
    target = from_target(module, is_package, node)
    if target.split(".")[0] != "wgkern":
        return []
    if target == "wgkern":      # `from wgkern import dtypes`: each name is a module or a name of the face
        return [f"wgkern.{alias.name}" if (PACKAGE / alias.name).exists() or (PACKAGE / f"{alias.name}.py").exists()
                else "wgkern" for alias in node.names]
    return [target]


def all_imports() -> list[tuple[Path, int, str, str]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in imported_modules(module, path.name == "__init__.py", node):
                    found.append((path, node.lineno, module, target))
    return found


def test_every_module_has_a_layer():
    names = {first_name(module_name(path)) for path in PACKAGE.rglob("*.py")}
    assert sorted(names - set(RANK)) == [], "give each new top-level module or package a layer (see this file)"


def test_imports_run_downward_only():
    upward = [f"{path.relative_to(PACKAGE.parent)}:{line}: {module} ({LAYERS[RANK[first_name(module)]][0]}) "
              f"imports {target} ({LAYERS[RANK[first_name(target)]][0]})"
              for path, line, module, target in all_imports()
              if RANK.get(first_name(target), -1) > RANK.get(first_name(module), len(LAYERS))]
    assert upward == [], "imports that run up a layer:\n" + "\n".join(upward)


def test_the_check_sees_an_upward_import(tmp_path):
    """The parser resolves the forms the package uses, so an upward import cannot slip past it."""
    source = ("from wgkern.lang import fields\nfrom ..frontend import calls\nimport wgkern.launch\n"
              "def f():\n    from wgkern import gui\n")
    tree = ast.parse(source)
    targets = [t for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
               for t in imported_modules("wgkern.ir.nodes", False, node)]
    assert targets == ["wgkern.lang", "wgkern.frontend", "wgkern.launch", "wgkern.gui"]
    assert all(RANK[first_name(t)] > RANK["ir"] for t in targets)


@pytest.mark.parametrize("layer", [name for name, _ in LAYERS])
def test_layers_are_in_docs(layer):
    """docs/internals.md lists the same layers, bottom to top."""
    text = (PACKAGE.parent / "docs" / "internals.md").read_text()
    assert f"| {layer} |" in text


# ---- circles: no import circle of more than two modules ---------------------------------------------------------

def _outside_type_checking(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The import statements of a module that run: those under `if TYPE_CHECKING:` (annotations only) are left
    out, the rest are kept wherever they stand (module level, functions, methods)."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _import_targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom, modules: set[str]) -> set[str]:
    """The package's modules an import statement loads: `from wgkern.lang import fields` names the module
    wgkern.lang.fields, `from wgkern.lang.fields import field` the module wgkern.lang.fields."""
    if isinstance(node, ast.Import):
        named = [alias.name for alias in node.names]
    else:
        parent = from_target(module, is_package, node)
        named = [f"{parent}.{alias.name}" if f"{parent}.{alias.name}" in modules else parent for alias in node.names]
    targets = set()
    for name in named:
        while name not in modules and "." in name:
            name = name.rsplit(".", 1)[0]
        if name in modules and name != module and name.split(".")[0] == "wgkern":
            targets.add(name)
    return targets


def import_graph() -> dict[str, set[str]]:
    """module -> the package's modules it imports (at any depth of its code, TYPE_CHECKING blocks excepted)."""
    paths = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}
    modules = set(paths)
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        graph[module] = set()
        for node in _outside_type_checking(tree):
            graph[module] |= _import_targets(module, path.name == "__init__.py", node, modules)
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative: the strongly connected components (import circles) of the graph."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for start in sorted(graph):
        if start in order:
            continue
        work = [(start, iter(sorted(graph[start])))]
        order[start] = low[start] = len(order)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in order:
                    order[successor] = low[successor] = len(order)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, ())))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], order[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == order[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(sorted(component))
    return components


def test_no_import_circle_of_more_than_two_modules():
    """Dependencies run one way: two modules may import each other (a class and its helper), no longer circle
    may exist (docs/internals.md, "Layers")."""
    graph = import_graph()
    circles = [component for component in strongly_connected(graph) if len(component) > 2]
    report = [f"circle of {len(c)} modules:\n" + "\n".join(
        f"  {m} -> {', '.join(sorted(graph[m] & set(c)))}" for m in c) for c in circles]
    assert circles == [], "\n".join(report)


def test_the_circle_finder_sees_a_circle_of_three():
    """Tarjan's components on a known graph: a -> b -> c -> a is one circle, d <-> e another, f alone."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": {"d"}, "f": {"a"}}
    assert sorted(strongly_connected(graph)) == [["a", "b", "c"], ["d", "e"], ["f"]]


def test_the_import_graph_resolves_submodules_and_skips_type_checking():
    """`from package import module` names the module; imports inside functions count; those under
    `if TYPE_CHECKING:` (annotations only, never run) do not."""
    source = ("from typing import TYPE_CHECKING\nfrom wgkern.lang import fields\n"
              "if TYPE_CHECKING:\n    from wgkern.lang.snode import SNode\n"
              "def f():\n    from wgkern.lang.sparse import activate\n    import wgkern.lang.quant\n")
    modules = {"wgkern.lang.fields", "wgkern.lang.snode", "wgkern.lang.sparse", "wgkern.lang.quant",
               "wgkern.lang.structs"}
    targets = set()
    for node in _outside_type_checking(ast.parse(source)):
        targets |= _import_targets("wgkern.lang.structs", False, node, modules)
    assert targets == {"wgkern.lang.fields", "wgkern.lang.sparse", "wgkern.lang.quant"}
