"""Checks shared by the compile-error tests: an error names the test file, the line of a given source text and
shows that line."""
from __future__ import annotations

import sys

import pytest
from tests.frontend.helpers import build, wk


def line_of(text: str, path: str) -> int:
    """The line of `path` that holds `text` (not counting calls of line_of itself)."""
    with open(path) as handle:
        for number, line in enumerate(handle, 1):
            if text in line and "line_of(" not in line:
                return number
    raise AssertionError(text)


def compile_error(kernel, *args) -> wk.CompileError:
    with pytest.raises(wk.CompileError) as info:
        build(kernel, *args)
    return info.value


def check(err: wk.CompileError, message: str, source: str) -> None:
    """`err` holds `message` and names the calling test file at the line of `source`, which it shows."""
    path = sys._getframe(1).f_code.co_filename
    text = str(err)
    assert message in text, text
    assert source in text, text
    assert err.filename == path
    assert err.lineno == line_of(source, path)
    assert f"{path}:{err.lineno}:" in text
    assert err.loc.source_line.strip().startswith(source.strip()[:20])
