"""wk._logging (Quadrants' qd._logging): level threshold, one writer per level, writers a program may replace."""
from __future__ import annotations

import pytest

import wgkern as wk
from wgkern import _logging


@pytest.fixture(autouse=True)
def restore_level():
    yield
    wk.set_logging_level(wk.INFO)


def test_threshold(capsys):
    wk.set_logging_level(wk.WARN)
    assert _logging.is_logging_effective(wk.ERROR) and not _logging.is_logging_effective(wk.INFO)
    _logging.info("hidden {}", 1)
    _logging.warn("shown {} of {n}", 1, n=2)
    assert capsys.readouterr().err == "[wgkern:warn] shown 1 of 2\n"


def test_writers_can_be_replaced_and_restored(capsys):
    seen = []
    _logging.error = seen.append
    try:
        _logging.error("routed")
    finally:
        _logging.error = _logging._get_logging(_logging.ERROR)
    assert seen == ["routed"]
    _logging.error("back")
    assert capsys.readouterr().err == "[wgkern:error] back\n"


def test_unknown_level():
    with pytest.raises(ValueError, match="unknown log level 'loud'"):
        wk.set_logging_level("loud")
    with pytest.raises(ValueError, match="unknown log level 'loud'"):
        _logging._get_logging("loud")
