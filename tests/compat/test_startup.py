"""`WGKERN_PROVIDE` read at interpreter start (wgkern/compat/startup.py) through the `wgkern-provide.pth` line
setup.py installs: the line as Python's `site` module runs it, and a real wheel built from this checkout,
installed into a new virtual environment."""
from __future__ import annotations

import importlib.util
import os
import runpy
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

from tests.compat.programs import REPO, check_energy, last_json, run_python, write_program

PTH_NAME = runpy.run_path(str(REPO / "setup.py"), run_name="setup")["PTH_NAME"]
PTH_LINE = runpy.run_path(str(REPO / "setup.py"), run_name="setup")["PTH_LINE"]


def _site_with_hook(folder: Path) -> Path:
    site = folder / "site"
    site.mkdir()
    (site / PTH_NAME).write_text(PTH_LINE)
    return site


def _through_site(site: Path, program: str, *args: str) -> list[str]:
    """`python program args` after `site` processes the folder holding the .pth file, as it does site-packages."""
    code = (f"import site, runpy, sys; site.addsitedir({str(site)!r}); sys.argv = [{program!r}, *{list(args)!r}]; "
            "runpy.run_path(sys.argv[0], run_name='__main__')")
    return ["-c", code]


@pytest.mark.parametrize("toolkit", ["quadrants", "taichi"])
def test_variable_provides_the_toolkit_from_start(arch, toolkit, tmp_path):
    site = _site_with_hook(tmp_path)
    program = write_program(tmp_path, toolkit)
    out = last_json(run_python(_through_site(site, str(program), arch.value), cwd=tmp_path,
                               env={"WGKERN_PROVIDE": f" {toolkit} "}))
    assert out["module"] == "wgkern" and out["arch"] == f"wk.{arch.value}"
    check_energy(out, arch.value)


def test_hook_costs_nothing_without_the_variable(tmp_path):
    """Unset (or empty), the line imports nothing and installs no finder; set, it installs its finder but
    imports wgkern only when the program imports the toolkit."""
    site = _site_with_hook(tmp_path)
    probe = tmp_path / "probe.py"
    probe.write_text("import json, sys\n"
                     "wgkern_modules = sorted(m for m in sys.modules if m.split('.')[0] == 'wgkern')\n"
                     "print(json.dumps([wgkern_modules, [type(f).__name__ for f in sys.meta_path]]))\n")
    for env in ({}, {"WGKERN_PROVIDE": ""}):
        modules, finders = last_json(run_python(_through_site(site, str(probe)), cwd=tmp_path, env=env))
        assert modules == [] and "ProvideOnFirstImport" not in finders
    modules, finders = last_json(run_python(_through_site(site, str(probe)), cwd=tmp_path,
                                            env={"WGKERN_PROVIDE": "quadrants,taichi"}))
    assert modules == [] and finders[0] == "ProvideOnFirstImport"


def test_unknown_name_in_the_variable_is_reported(tmp_path):
    site = _site_with_hook(tmp_path)
    (tmp_path / "uses.py").write_text("import taichi, json\nprint(json.dumps(taichi.__name__))\n")
    result = run_python(_through_site(site, str(tmp_path / "uses.py")), cwd=tmp_path,
                        env={"WGKERN_PROVIDE": "numpy,taichi"})
    assert last_json(result) == "wgkern"
    assert "wgkern: WGKERN_PROVIDE='numpy,taichi' names 'numpy'; wgkern stands in for quadrants and taichi, so " \
           "`import numpy` is left alone" in result.stderr


def _copy_source(tmp_path: Path) -> Path:
    """A copy of this checkout's packaging inputs (a build writes into the source tree)."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(REPO / name, source / name)
    for name in ("wgkern", "wgsl", "demos"):
        shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return source


def _pip(*args: str, builds: bool = False) -> None:
    """pip of this environment. A command that `builds` wgkern runs without build isolation where this
    environment can build it (no download); else pip fetches the build requirements."""
    can_build_here = importlib.util.find_spec("wheel") and importlib.util.find_spec("setuptools")
    isolation = ["--no-build-isolation"] if builds and can_build_here else []
    # away from the checkout and its PYTHONPATH: pip would take the checkout's wgkern.egg-info (an editable
    # install's metadata, on sys.path through the current folder) for wgkern being installed already
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run([sys.executable, "-m", "pip", *args, *isolation], capture_output=True, text=True,
                            timeout=240, cwd=tempfile.gettempdir(), env=env)
    assert result.returncode == 0, result.stderr[-3000:]


def _new_environment(tmp_path: Path) -> tuple[str, Path]:
    """A new virtual environment without pip: its python, and its site-packages, where a .pth file lists the
    folders of this environment's numpy and llvmlite (wgkern's dependencies), after the environment's own."""
    env_dir = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True, timeout=120)
    python = str(env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python"))
    purelib = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    import llvmlite
    import numpy
    dependency_dirs = {str(Path(m.__file__).resolve().parents[1]) for m in (numpy, llvmlite)}
    (purelib / "zz-test-dependencies.pth").write_text("\n".join(sorted(dependency_dirs)) + "\n")
    return python, purelib


def test_wheel_installs_the_hook(tmp_path):
    """The hook as users get it: the .pth at the root of the wheel, installed into a new environment's
    site-packages, provides Quadrants to a program run there, which runs on the wgkern of that install."""
    _pip("wheel", "-q", "--no-deps", "-w", str(tmp_path / "dist"), str(_copy_source(tmp_path)), builds=True)
    (wheel,) = (tmp_path / "dist").glob("wgkern-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        assert archive.read(PTH_NAME).decode() == PTH_LINE
    python, purelib = _new_environment(tmp_path)
    _pip("--python", python, "install", "-q", "--no-deps", "--no-index", str(wheel))
    assert (purelib / PTH_NAME).read_text() == PTH_LINE
    program = write_program(tmp_path, "quadrants")
    (tmp_path / "where.py").write_text("import json, quadrants\nprint(json.dumps(quadrants.__file__))\n")
    where = last_json(run_python(["where.py"], cwd=tmp_path, python=python, with_checkout=False,
                                 env={"WGKERN_PROVIDE": "quadrants"}))
    assert Path(where).resolve().is_relative_to(purelib.resolve())
    out = last_json(run_python([str(program), "cpu"], cwd=tmp_path, python=python, with_checkout=False,
                               env={"WGKERN_PROVIDE": "quadrants"}))
    assert out["module"] == "wgkern" and out["arch"] == "wk.cpu"
    check_energy(out, "cpu")


def test_editable_install_has_the_hook(tmp_path):
    """`pip install -e .` keeps the package in the source folder and still puts the .pth in site-packages."""
    source = _copy_source(tmp_path)
    python, purelib = _new_environment(tmp_path)
    _pip("--python", python, "install", "-q", "--no-deps", "-e", str(source), builds=True)
    assert (purelib / PTH_NAME).read_text() == PTH_LINE
    (tmp_path / "where.py").write_text("import json, taichi\nprint(json.dumps(taichi.__file__))\n")
    where = last_json(run_python(["where.py"], cwd=tmp_path, python=python, with_checkout=False,
                                 env={"WGKERN_PROVIDE": "taichi"}))
    assert Path(where).resolve() == (source / "wgkern" / "__init__.py").resolve()
