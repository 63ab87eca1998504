"""Fresh "starts" of a program in one process, for the offline cache's tests: kernels written into a module
file of the test's own, imported afresh at each start (so its functions, classes and globals are new objects, as
in a new process), with a new program each time and the frontend's builds counted."""
from __future__ import annotations

import importlib.util
import itertools
import linecache
import shutil
import sys
import textwrap

import pytest

import wgkern as wk
from wgkern import launch
from tests.conftest import FAST_MATH

_names = itertools.count()


class Sources:
    """Module files under one folder, imported afresh at each `load` (each start's functions are new objects)."""

    def __init__(self, folder, text: str) -> None:
        self.name = f"wk_fcmod_{next(_names)}"
        self.path = folder / f"{self.name}.py"
        self.text = textwrap.dedent(text)

    def edit(self, old: str, new: str) -> None:
        assert old in self.text
        self.text = self.text.replace(old, new)

    def load(self):
        self.path.write_text(self.text)
        # an edit within the same second that keeps the size would pass both caches' checks
        linecache.cache.pop(str(self.path), None)
        shutil.rmtree(self.path.parent / "__pycache__", ignore_errors=True)
        sys.modules.pop(self.name, None)
        spec = importlib.util.spec_from_file_location(self.name, self.path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[self.name] = module
        spec.loader.exec_module(module)
        return module


@pytest.fixture
def starts(tmp_path, monkeypatch, arch):
    """`start(sources)`: a new program on `arch` with `sources` imported afresh; `builds` counts the frontend's
    builds."""
    monkeypatch.setenv("WK_CACHE_DIR", str(tmp_path / "cache"))
    builds: list[str] = []
    build = launch.build_kernel_ir

    def counted(kernel, spec):
        builds.append(kernel.name)
        return build(kernel, spec)

    monkeypatch.setattr(launch, "build_kernel_ir", counted)
    made: list[Sources] = []

    def start(sources: Sources, **options):
        wk.reset()
        wk.init(arch=arch, fast_math=FAST_MATH, **options)
        made.append(sources)
        return sources.load()

    start.builds = builds
    yield start
    wk.reset()
    for sources in made:
        sys.modules.pop(sources.name, None)
