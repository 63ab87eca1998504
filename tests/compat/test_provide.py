"""`wgkern.provide(toolkit)` (wgkern/compat): every module of the toolkit's table imports as the wgkern object
it names, in both import forms; modules wgkern lacks raise ModuleNotFoundError naming the feature; wgkern's own
modules stay as they were; an installed copy of the toolkit is shadowed with a log line, one already imported
is refused. Each case runs in a fresh interpreter (a provided toolkit stays for the process)."""
from __future__ import annotations

import pytest

import wgkern as wk
from tests.compat.programs import check_energy, last_json, run_python, write_program

# Imports every table entry both ways and reports, per module, whether it is the object the table names.
_LAYOUT_CHECK = '''
import importlib, json, sys
import wgkern
toolkit = sys.argv[1]
wgkern.provide(toolkit)
from wgkern.compat import toolkit as table_of
from wgkern.compat.finder import resolve
table = table_of(toolkit)
report = {"same": {}, "from_import": {}, "missing": {}}
for name, target in table.modules.items():
    report["same"][name] = importlib.import_module(name) is resolve(target)
    parent, _, child = name.rpartition(".")
    if parent:
        scope = {}
        exec(f"from {parent} import {child} as got", scope)
        report["from_import"][name] = scope["got"] is resolve(target)
for name in [*table.missing, toolkit + ".no_such_module"]:
    for statement in (f"import {name}", "from {} import {}".format(*name.rsplit(".", 1))):
        try:
            exec(statement, {})
            report["missing"][statement] = "imported"
        except ImportError as exc:
            report["missing"][statement] = f"{type(exc).__name__}: {exc}"
report["reexports"] = {}
for module in table.reexports:
    scope = {}
    exec(f"from {module} import cpu, vulkan, ndrange, static", scope)
    report["reexports"][module] = [scope[n] is getattr(wgkern, n) for n in ("cpu", "vulkan", "ndrange", "static")]
report["package_only"] = {}
for package in table.packages:
    try:
        importlib.import_module(package + "._private_part")
    except ModuleNotFoundError as exc:
        report["package_only"][package] = str(exc)
report["own_specs"] = [m.__spec__.name for m in (wgkern, wgkern.lang.impl, wgkern.lang.math, wgkern.ui)]
report["math_name"] = wgkern.math.__name__
print(json.dumps(report))
'''


@pytest.mark.parametrize("toolkit", ["quadrants", "taichi"])
def test_module_layout_resolves_to_wgkern(toolkit, tmp_path):
    (tmp_path / "layout.py").write_text(_LAYOUT_CHECK)
    report = last_json(run_python(["layout.py", toolkit], cwd=tmp_path))
    table = wk.compat.toolkit(toolkit)
    assert report["same"] == {name: True for name in table.modules}
    assert all(report["from_import"].values()) and len(report["from_import"]) == len(table.modules) - 1
    for name, feature in table.missing.items():
        for statement in (f"import {name}", "from {} import {}".format(*name.rsplit(".", 1))):
            assert report["missing"][statement] == (
                f"ModuleNotFoundError: No module named '{name}': wgkern stands in for {table.display} "
                f"(wgkern.provide('{toolkit}')), and {name} holds {feature}, which wgkern does not have")
    assert report["missing"][f"import {toolkit}.no_such_module"].endswith(
        f"{toolkit}.no_such_module is not one of the {table.display} modules wgkern provides (docs/porting.md "
        "lists them)")
    # a name that is no module of the toolkit's, imported from a module: Python's own error for a missing name
    assert report["missing"][f"from {toolkit} import no_such_module"] == \
        "ImportError: cannot import name 'no_such_module' from 'wgkern' (" + str(wk.__file__) + ")"
    # `lang` and `lang.misc` hold the top-level names too; the toolkit's packages with unlisted (private)
    # submodules are packages, so importing one of those gives the finder's error, not "is not a package"
    assert report["reexports"] == {module: [True] * 4 for module in table.reexports} and table.reexports
    assert report["package_only"] == {
        package: f"No module named '{package}._private_part': wgkern stands in for {table.display} "
                 f"(wgkern.provide('{toolkit}')), and {package}._private_part is not one of the {table.display} "
                 "modules wgkern provides (docs/porting.md lists them)" for package in table.packages}
    # wgkern's own modules keep their import attributes
    assert report["own_specs"] == ["wgkern", "wgkern.lang.impl", "wgkern.lang.math", "wgkern.ui"]
    assert report["math_name"] == "wgkern.lang.math"


@pytest.mark.parametrize("toolkit", ["quadrants", "taichi"])
def test_program_runs_after_provide(arch, toolkit, tmp_path):
    program = write_program(tmp_path, toolkit)
    code = (f"import runpy, sys, wgkern; wgkern.provide({toolkit!r}); sys.argv = [{str(program)!r}, "
            f"{arch.value!r}]; runpy.run_path(sys.argv[0], run_name='__main__')")
    out = last_json(run_python(["-c", code], cwd=tmp_path))
    assert out["module"] == "wgkern" and out["arch"] == f"wk.{arch.value}"
    check_energy(out, arch.value)


def _fake_installed_toolkit(folder, name):
    """A stand-in for an installed copy of the toolkit: importing it would say so."""
    package = folder / "site" / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("REAL = True\n")
    return folder / "site"


def test_installed_toolkit_is_shadowed_with_a_log_line(tmp_path):
    site = _fake_installed_toolkit(tmp_path, "quadrants")
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import wgkern; wgkern.provide('quadrants'); "
            "import quadrants; print(quadrants is wgkern, hasattr(quadrants, 'REAL'))")
    result = run_python(["-c", code, str(site)], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "False"]
    assert f"wgkern.provide('quadrants'): `import quadrants` gives wgkern; the Quadrants installed at " \
           f"{site / 'quadrants' / '__init__.py'} is not used" in result.stderr


def test_toolkit_imported_before_provide_is_refused(tmp_path):
    site = _fake_installed_toolkit(tmp_path, "taichi")
    code = "import sys; sys.path.insert(0, sys.argv[1]); import taichi; import wgkern; wgkern.provide('taichi')"
    result = run_python(["-c", code, str(site)], cwd=tmp_path)
    assert result.returncode == 1
    assert "ImportError: wgkern.provide('taichi'): taichi was already imported from " in result.stderr
    assert "call wgkern.provide('taichi') before the program's first `import taichi`" in result.stderr


def test_provide_names_the_toolkits_it_knows():
    with pytest.raises(ValueError, match=r"wgkern.provide\('numpy'\): wgkern stands in for 'quadrants' and "
                                         r"'taichi'"):
        wk.provide("numpy")


def test_provide_twice_and_after_a_hand_made_alias(tmp_path):
    """A program that already put wgkern in sys.modules under the toolkit's name (a hand-made alias) may still
    call provide, and calling it again changes nothing."""
    code = ("import sys, json, wgkern; sys.modules['quadrants'] = wgkern; wgkern.provide('quadrants'); "
            "wgkern.provide('quadrants'); import quadrants.lang.field as f; from wgkern.compat import provided; "
            "print(json.dumps([f is wgkern.lang.fields, provided(), sys.meta_path.count(sys.meta_path[0])]))")
    assert last_json(run_python(["-c", code], cwd=tmp_path)) == [True, ["quadrants"], 1]
