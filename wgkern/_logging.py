"""wgkern's log: the level names (Taichi's and Quadrants' `trace` ... `critical`), the threshold
(`wk.set_logging_level`, `wk.init(log_level=...)`) and one writer function per level (`debug`, `info`, `warn`, ...).

A message at or above the threshold goes to stderr as `[wgkern:LEVEL] message`. The writers are module
attributes looked up at each use, so a program may replace them (Quadrants' `qd._logging.warn = my_logger`, as
Genesis does to route the messages to its own logger) and put them back with `_get_logging(level)`."""
from __future__ import annotations

import sys
from typing import Any, Callable

TRACE, DEBUG, INFO, WARN, ERROR, CRITICAL = "trace", "debug", "info", "warn", "error", "critical"
supported_log_levels = [TRACE, DEBUG, INFO, WARN, ERROR, CRITICAL]     # least to most severe
_RANK = {level: rank for rank, level in enumerate(supported_log_levels)}
_threshold = INFO


def _check_level(level: str) -> None:
    if level not in _RANK:
        raise ValueError(f"unknown log level {level!r}; use wk.TRACE, wk.DEBUG, wk.INFO, wk.WARN, wk.ERROR or "
                         "wk.CRITICAL")


def set_logging_level(level: str) -> None:
    """Messages below `level` are dropped from now on."""
    global _threshold  # noqa: PLW0603 - the process-wide log threshold
    _check_level(level)
    _threshold = level


def is_logging_effective(level: str) -> bool:
    """Whether a message at `level` is written at the current threshold."""
    _check_level(level)
    return _RANK[level] >= _RANK[_threshold]


def _get_logging(level: str) -> Callable[..., None]:
    """The writer of `level`: `writer(message, *args, **kwargs)` formats `message.format(*args, **kwargs)` and
    writes it when the level is effective."""
    _check_level(level)

    def write(message: Any, *args: Any, **kwargs: Any) -> None:
        if _RANK[level] >= _RANK[_threshold]:
            text = str(message).format(*args, **kwargs) if args or kwargs else str(message)
            print(f"[wgkern:{level}] {text}", file=sys.stderr)

    write.__name__ = level
    return write


trace = _get_logging(TRACE)
debug = _get_logging(DEBUG)
info = _get_logging(INFO)
warn = _get_logging(WARN)
error = _get_logging(ERROR)
critical = _get_logging(CRITICAL)
