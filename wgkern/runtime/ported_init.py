"""How `wk.init` reads its arguments while a program written for Taichi or Quadrants runs (`wgkern.provide`,
`python -m wgkern run --as ...`): the `InitConventions` of the original's `init`, set for the process by
wgkern/compat and applied here before `wk.init` does its own work.

Taichi 1.7 and Quadrants 1.3 read `init` the same way, so one set of rules serves both; the conventions only name
the caller (`ti.init` / `qd.init`, in messages), the prefix of its environment variables (`TI_` / `QD_`) and the
keywords its compile configuration has. The rules:
- `arch=None` is the CPU, unless `<PREFIX>_ARCH` (or wgkern's `WK_ARCH`) names an arch; `arch` may be a list,
  whose first available arch is taken.
- A missing arch falls back to the CPU with a warning line on stderr (`enable_fallback=True` is the default);
  `log_level="error"` or `"critical"` silences it, as it silences the original's warnings.
- `short_circuit_operators` is on by default.
- `<PREFIX>_DEFAULT_FP` / `<PREFIX>_DEFAULT_IP` (`32` or `64`) set the default dtypes when the call does not.
- Every keyword of the original's configuration is accepted (those wgkern acts on act, runtime/init_options.py);
  any other is the original's `KeyError`, and so is `default_up`."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

# Keywords both Taichi 1.7.4's and Quadrants 1.3.3's `init` accept besides their compile configuration.
_CALL_KEYWORDS = frozenset({"enable_fallback", "require_version", "log_level", "gdb_trigger",
                            "short_circuit_operators", "print_full_traceback", "unrolling_limit"})
# Log levels at which the original prints no warning.
_QUIET_LEVELS = ("error", "critical")


@dataclass(frozen=True, slots=True)
class InitConventions:
    """The `init` of a toolkit whose programs run on wgkern: `caller` names it in messages (`ti.init`),
    `env_prefix` starts its environment variables (`TI`), `options` lists its configuration's keywords."""
    caller: str
    env_prefix: str
    options: frozenset[str]

    def read(self, arch: Any, options: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """(arch, keywords for wk.init) from the arguments a ported program passed to its `init`."""
        if "default_up" in options:
            raise KeyError("'default_up' is always the unsigned type of 'default_ip'. Please set 'default_ip' "
                           "instead.")
        unknown = [key for key in options if key not in self.options and key not in _CALL_KEYWORDS]
        if unknown:
            raise KeyError(f"Unrecognized keyword argument(s) for {self.caller}: {', '.join(unknown)}")
        options = dict(options)
        options.setdefault("enable_fallback", True)
        options.setdefault("short_circuit_operators", True)
        for key, dtype_names in (("default_fp", {"32": "f32", "64": "f64"}),
                                 ("default_ip", {"32": "i32", "64": "i64"})):
            variable = f"{self.env_prefix}_{key.upper()}"
            value = os.environ.get(variable)
            if value and options.get(key) is None:
                if value not in dtype_names:
                    raise ValueError(f"Invalid {variable}={value}, should be 32 or 64")
                from wgkern import dtypes as T
                options[key] = getattr(T, dtype_names[value])
        if arch is None:
            arch = os.environ.get(f"{self.env_prefix}_ARCH") or ("cpu" if not os.environ.get("WK_ARCH") else None)
        version = options.pop("require_version", None)
        if version is not None:
            from wgkern.runtime.init_options import require_version
            require_version(version)
        from wgkern.runtime.init_options import TAICHI_ACCEPTED, TAICHI_ACTING
        # the original's other keywords only tune its own compiler and runtime (block sizes, IR dumps, ...)
        return arch, {key: value for key, value in options.items() if key in TAICHI_ACTING or key in TAICHI_ACCEPTED}

    def fallback_note(self, options: dict[str, Any], asked: str, reason: str) -> None:
        """The warning line for an arch that is missing here (the program goes on on the CPU)."""
        if str(options.get("log_level", "info")).lower() in _QUIET_LEVELS:
            return
        print(f"[W] {self.caller}: Arch={asked} is not supported, falling back to CPU ({reason})", file=sys.stderr)


_current: InitConventions | None = None


def use(conventions: InitConventions | None) -> None:
    """Make `wk.init` read its arguments by `conventions` from now on (None: wgkern's own rules)."""
    global _current
    _current = conventions


def current() -> InitConventions | None:
    return _current
