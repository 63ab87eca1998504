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
    ("face", frozenset({"launch", "launch_plan", "linalg", "algorithms", "radix_sort", "graph", "screen", "gui", "ui", "tools",
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


def imported_modules(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The wgkern modules (or packages) an import statement names, relative imports resolved."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name.split(".")[0] == "wgkern"]
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
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
