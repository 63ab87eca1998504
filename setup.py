"""Build step beyond pyproject.toml: the `wgkern-provide.pth` file that makes `WGKERN_PROVIDE=quadrants` (or
`taichi`) work from interpreter start (wgkern/compat/startup.py). It goes to the root of site-packages, in a wheel
and in an editable install (`pip install -e .`) alike."""
from __future__ import annotations

import os

from setuptools import setup
from setuptools.command.build_py import build_py

PTH_NAME = "wgkern-provide.pth"
# One line, run by the `site` module at every interpreter start: one environment lookup (os is loaded by then)
# when the variable is unset; when it is set, wgkern/compat/startup.py is loaded on its own (importing the wgkern
# package would need its dependencies, which may not be on sys.path yet) and installs its finder.
PTH_LINE = (
    "import os; os.environ.get('WGKERN_PROVIDE') and exec(\"import importlib.util as u, os.path as p; "
    "w = u.find_spec('wgkern'); s = w and u.spec_from_file_location('wgkern_provide_startup', "
    "p.join(w.submodule_search_locations[0], 'compat', 'startup.py')); m = s and u.module_from_spec(s); "
    "s and (s.loader.exec_module(m), m.install())\")\n")


class BuildPyWithProvideHook(build_py):
    """build_py, plus the .pth file in the build's root (a wheel installs it into site-packages). An editable
    build keeps the package in place and puts into its wheel only what the wheel's root holds (setuptools'
    editable_wheel sets `install_lib` to it), so the file is written there."""

    def run(self) -> None:
        super().run()
        root = self.build_lib
        if getattr(self, "editable_mode", False):
            root = self.get_finalized_command("install").install_lib
        os.makedirs(root, exist_ok=True)
        with open(os.path.join(root, PTH_NAME), "w", encoding="utf-8") as out:
            out.write(PTH_LINE)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs = super().get_outputs(include_bytecode)
        if getattr(self, "editable_mode", False):
            return outputs
        return [*outputs, os.path.join(self.build_lib, PTH_NAME)]


if __name__ == "__main__":    # setuptools runs this file as __main__; tests read PTH_LINE without building
    setup(cmdclass={"build_py": BuildPyWithProvideHook})
