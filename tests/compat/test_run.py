"""`python -m wgkern run --as quadrants|taichi` (wgkern/compat/run.py): a program written for the toolkit runs
unchanged, as `__main__`, with its arguments, on each arch; `-m module`; its exit status; usage errors."""
from __future__ import annotations

import pytest

from tests.compat.programs import check_energy, last_json, run_python, write_program


@pytest.mark.parametrize("toolkit", ["quadrants", "taichi"])
def test_program_runs_unchanged_on_each_arch(arch, toolkit, tmp_path):
    program = write_program(tmp_path, toolkit)
    out = last_json(run_python(["-m", "wgkern", "run", "--as", toolkit, str(program), arch.value, "--flag"],
                               cwd=tmp_path))
    assert out["module"] == "wgkern" and out["name"] == "__main__"
    assert out["argv"] == [arch.value, "--flag"] and out["arch"] == f"wk.{arch.value}"
    check_energy(out, arch.value)


def test_module_form_sets_argv_and_path(tmp_path):
    package = tmp_path / "sim"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helper.py").write_text("SCALE = 3.0\n")
    (package / "main.py").write_text(
        "import json, sys\n"
        "import taichi as ti\n"
        "from sim.helper import SCALE\n"
        "ti.init()\n"
        "v = ti.field(ti.f32, shape=4)\n"
        "@ti.kernel\n"
        "def fill():\n"
        "    for i in v:\n"
        "        v[i] = SCALE * i\n"
        "fill()\n"
        "import os\n"
        "print(json.dumps({'argv': sys.argv, 'name': __name__, 'v': v.to_numpy().tolist(),\n"
        "                  'arch': str(ti.lang.impl.current_cfg().arch), 'env': os.environ['WGKERN_PROVIDE']}))\n")
    out = last_json(run_python(["-m", "wgkern", "run", "--as", "taichi", "-m", "sim.main", "a", "-b"], cwd=tmp_path,
                               env={"WGKERN_PROVIDE": "quadrants"}))
    assert out["env"] == "quadrants,taichi"        # for the processes the program starts
    assert out["name"] == "__main__" and out["argv"][1:] == ["a", "-b"] and out["argv"][0].endswith("main.py")
    assert out["v"] == [0.0, 3.0, 6.0, 9.0]
    assert out["arch"] == "wk.cpu"             # ti.init() with no arch is Taichi's CPU


def test_exit_status_and_exceptions_of_the_program(tmp_path):
    (tmp_path / "quits.py").write_text("import sys\nimport quadrants\nsys.exit(3)\n")
    assert run_python(["-m", "wgkern", "run", "--as", "quadrants", "quits.py"], cwd=tmp_path).returncode == 3
    (tmp_path / "fails.py").write_text("import quadrants.lang._fast_caching\n")
    result = run_python(["-m", "wgkern", "run", "--as", "quadrants", "fails.py"], cwd=tmp_path)
    assert result.returncode == 1
    assert "ModuleNotFoundError: No module named 'quadrants.lang._fast_caching': wgkern stands in for " \
           "Quadrants" in result.stderr and "fails.py\", line 1" in result.stderr


def test_a_wgkern_error_of_the_program_is_shown_as_python_shows_it(tmp_path):
    """A CompileError of the program's kernel: Python's traceback from the program's own frames, exit status 1."""
    (tmp_path / "bad.py").write_text("import taichi as ti\nti.init()\n\n@ti.kernel\ndef k():\n    ti.get_addr()\n\n"
                                     "k()\n")
    result = run_python(["-m", "wgkern", "run", "--as", "taichi", "bad.py"], cwd=tmp_path)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines[0] == "Traceback (most recent call last):" and 'bad.py", line 8, in <module>' in lines[1]
    assert "runpy" not in result.stderr and "run.py" not in result.stderr
    assert "wgkern.errors.CompileError: bad.py:6:5: wgkern.get_addr: ti.get_addr (the memory address of a field " \
        "element) is not available" in result.stderr


def test_usage_errors(tmp_path):
    result = run_python(["-m", "wgkern", "run", "--as", "quadrants", "nowhere.py"], cwd=tmp_path)
    assert result.returncode == 2 and "can't open file 'nowhere.py'" in result.stderr
    result = run_python(["-m", "wgkern", "run", "--as", "numpy", "x.py"], cwd=tmp_path)
    assert result.returncode == 2 and "invalid choice: 'numpy'" in result.stderr
    result = run_python(["-m", "wgkern", "run", "--as", "taichi"], cwd=tmp_path)
    assert result.returncode == 2 and "give the script to run" in result.stderr


@pytest.mark.parametrize("toolkit", ["quadrants", "taichi"])
def test_same_numbers_as_the_toolkit_itself(toolkit, tmp_path):
    """Where the real toolkit is installed (the `compare` extra), the program's numbers on its CPU and on
    wgkern's agree within the f32 bound of check_energy (both are checked against float64 by it, so they differ
    by at most twice that bound)."""
    import importlib.util
    if importlib.util.find_spec(toolkit) is None:
        pytest.skip(f"{toolkit} is not installed (pip install -e '.[compare]')")
    program = write_program(tmp_path, toolkit)
    theirs = last_json(run_python([str(program), "cpu"], cwd=tmp_path, with_checkout=False))
    ours = last_json(run_python(["-m", "wgkern", "run", "--as", toolkit, str(program), "cpu"], cwd=tmp_path))
    assert theirs["module"] == toolkit and ours["module"] == "wgkern" and theirs["x"] == ours["x"]
    check_energy(theirs, "cpu")
    check_energy(ours, "cpu")
