"""What the Genesis scene tests do where their packages are missing (runs.py): skip, naming the package, or, under
WK_CLIENTS_REQUIRED=1 as CI's client stage sets it, fail. These run everywhere, Genesis installed or not."""
from __future__ import annotations

import importlib.util

import pytest

from tests.clients.genesis import runs

REASON = "genesis-world is not installed (pip install -e '.[clients]' installs genesis-world, quadrants and torch)"


def test_nothing_happens_when_nothing_is_missing():
    runs.require_installed(None, {"WK_CLIENTS_REQUIRED": "1"})


@pytest.mark.parametrize("environ", [{}, {"WK_CLIENTS_REQUIRED": "0"}, {"WK_CLIENTS_REQUIRED": ""}])
def test_a_missing_package_skips_by_default(environ: dict):
    with pytest.raises(pytest.skip.Exception, match=r"genesis-world is not installed \(pip install"):
        runs.require_installed(REASON, environ)


@pytest.mark.parametrize("value", ["1", "true", "YES"])
def test_a_missing_package_fails_where_the_scenes_are_required(value: str):
    with pytest.raises(pytest.fail.Exception,
                       match=rf"genesis-world is not installed .*; WK_CLIENTS_REQUIRED={value} makes this a failure"):
        runs.require_installed(REASON, {"WK_CLIENTS_REQUIRED": value})


def test_missing_names_the_first_absent_package(monkeypatch: pytest.MonkeyPatch):
    present = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *rest: None if name == "quadrants" else present("numpy"))
    assert runs.missing() == ("quadrants is not installed (pip install -e '.[clients]' installs genesis-world, "
                              "quadrants and torch)")
