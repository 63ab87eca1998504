"""What Python code a compile-time expression calls reads, recorded into a kernel's ReadLog (reads.py).

A `wk.static(...)` expression may call the program's own Python functions (`wk.static(caps(first, last))`). The
frontend cannot know beforehand what such a call reads, so while a recording build evaluates the expression,
`traced` watches it with Python's profiling hook: every Python function it enters must be found again by its
module and qualified name (or be made by one that was: a comprehension, a lambda), and is recorded by its source
and by what its code loads by name: each global or builtin it names, and the attributes it reads from a module
or class so named (the attribute chain that follows the name). Every C function it calls must be one whose
result depends only on its arguments: a builtin of reads.PURE_BUILTINS, a method of a number, string, tuple,
list, dict or set, numpy's top level or math. Frames of wgkern and numpy (not numpy.random) are taken as the
expression's own calls to them are (reads.py). Anything else leaves the log `refused` (the kernel is then built
at each start): code that stores a global or an attribute or imports, a property or other Python code that
cannot be found by name, a class of the program used other than through its attributes, another profiler in
use. A function's locals and arguments need no record: they are computed from recorded reads, from the frontend's
own values, or by the code itself."""
from __future__ import annotations

import builtins
import contextlib
import dis
import enum
import sys
import types
from typing import Any, Iterator

import numpy as np

from wgkern.frontend import reads

_STORES = frozenset({"STORE_GLOBAL", "DELETE_GLOBAL", "STORE_ATTR", "DELETE_ATTR", "IMPORT_NAME", "IMPORT_FROM",
                     "IMPORT_STAR", "STORE_NAME", "DELETE_NAME"})
_NAME_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME"})
_ATTRIBUTE_LOADS = frozenset({"LOAD_ATTR", "LOAD_METHOD"})
# methods of these types' objects depend on the object and their arguments alone (a list's append changes only
# the list, which the code made or which came from a recorded read)
_PLAIN_TYPES = frozenset({int, float, complex, bool, str, bytes, tuple, frozenset, list, dict, set, range})
_TRUSTED_PACKAGES = frozenset({"wgkern", "numpy"})


def _trusted(module: str) -> bool:
    return module.partition(".")[0] in _TRUSTED_PACKAGES and not module.startswith("numpy.random")


def _pure_c_function(function: Any) -> bool:
    owner = getattr(function, "__self__", None)
    if isinstance(owner, types.ModuleType):
        if owner.__name__ == "builtins":
            return function.__name__ in reads.PURE_BUILTINS
        return owner.__name__ in reads.PURE_MODULES
    if type(owner) in _PLAIN_TYPES:
        return True
    module = getattr(function, "__module__", None) or ""
    return owner is None and module in reads.PURE_MODULES


def _pure_callable(value: Any) -> bool:
    """A callable that is not Python code whose result depends on its arguments alone (as far as known): a
    builtin of reads.PURE_BUILTINS, a numpy ufunc, a function of math or of numpy's top level, wgkern's own."""
    if any(value is getattr(builtins, name, None) for name in reads.PURE_BUILTINS) or isinstance(value, np.ufunc):
        return True
    module = getattr(value, "__module__", None) or ""
    return _trusted(module) or module in reads.PURE_MODULES


def _usable_as_value(namespace: Any) -> bool:
    """A module or class the code holds as a value (not only reads attributes of): one whose fingerprint is all
    a holder can read of it (builtins, enums, numpy's and wgkern's own)."""
    if isinstance(namespace, types.ModuleType):
        return _trusted(namespace.__name__) or namespace.__name__ in reads.PURE_MODULES
    module = getattr(namespace, "__module__", "") or ""
    return module == "builtins" or _trusted(module) or isinstance(namespace, enum.EnumMeta)


class CallTrace:
    """The profiling hook of one evaluation: accepts or refuses each call, recording into `log`."""

    def __init__(self, log: reads.ReadLog, top: types.CodeType) -> None:
        self.log = log
        self.top = top
        self.accepted: dict[int, types.CodeType] = {id(top): top}    # by identity: code compares by value
        self.nested: dict[int, types.CodeType] = {}
        self.done = False               # the expression returned: what follows is the hook's removal

    def refuse(self, reason: str) -> None:
        self.log.refuse(f"a compile-time call {reason}")

    def __call__(self, frame: types.FrameType, event: str, arg: Any) -> None:
        if self.done or self.log.refused is not None:
            return
        try:
            self._event(frame, event, arg)
        except Exception as exc:        # noqa: BLE001 - the hook must not break the program's own evaluation
            self.refuse(f"could not be watched ({type(exc).__name__}: {exc})")

    def _event(self, frame: types.FrameType, event: str, arg: Any) -> None:
        if event == "return" and frame.f_code is self.top:
            self.done = True
            return
        if event == "c_call":
            # the hook sees the eval that runs the expression, and the call that removes it
            if arg is not sys.setprofile and arg is not builtins.eval and not _pure_c_function(arg):
                self.refuse(f"calls {getattr(arg, '__qualname__', arg)!r}, which may read more than its arguments")
        elif event == "call":
            code = frame.f_code
            if id(code) not in self.accepted:
                self._enter(frame, code)

    def _enter(self, frame: types.FrameType, code: types.CodeType) -> None:
        module = frame.f_globals.get("__name__", "") or ""
        if _trusted(module):
            self.accepted[id(code)] = code
            return
        if id(code) in self.nested:           # a comprehension, lambda or local function of accepted code
            self.accepted[id(code)] = code
            return
        qualname = getattr(code, "co_qualname", None) or code.co_name
        function = None
        if "<" not in qualname:
            try:
                function = reads.find_function(("function", module, qualname), None)
            except Exception:                 # noqa: BLE001 - not found again by name: refused below
                function = None
        if getattr(function, "__code__", None) is not code:
            self.refuse(f"runs {module}.{qualname}, which cannot be found again by its module and name")
            return
        self.log.source(function)
        for name in code.co_freevars:
            self.log.name(function, name)
        self._scan(function, code)
        self.accepted[id(code)] = code

    def _scan(self, function: Any, code: types.CodeType) -> None:
        """Record what `code` (and the code nested in it) loads by name from `function`'s globals and builtins."""
        instructions = list(dis.get_instructions(code))
        for index, instruction in enumerate(instructions):
            if instruction.opname in _STORES:
                self.refuse(f"runs {code.co_qualname if hasattr(code, 'co_qualname') else code.co_name}, which "
                            f"changes state outside itself ({instruction.opname} {instruction.argval})")
                return
            if instruction.opname in _NAME_LOADS:
                self._load(function, instruction.argval, instructions, index + 1)
        for constant in code.co_consts:
            if isinstance(constant, types.CodeType):
                self.nested[id(constant)] = constant
                self._scan(function, constant)

    def _load(self, function: Any, name: str, instructions: list[dis.Instruction], following: int) -> None:
        self.log.name(function, name)
        found, value = reads.python_name(function, name)
        if not found:
            return
        while reads.is_namespace(value) and following < len(instructions) \
                and instructions[following].opname in _ATTRIBUTE_LOADS:
            attribute = instructions[following].argval
            self.log.attribute(value, attribute)
            value = getattr(value, attribute, None)
            following += 1
        if reads.is_namespace(value):
            if not _usable_as_value(value):
                self.refuse(f"holds {getattr(value, '__qualname__', value)!r} as a value, whose attributes it "
                            "could read unrecorded")
        elif callable(value) and not isinstance(value, types.FunctionType) and not _pure_callable(value):
            # a Python function is watched when it runs; compiled code (C, Cython) may run unseen
            self.refuse(f"names {getattr(value, '__qualname__', value)!r}, compiled code whose reads cannot be "
                        "watched")


@contextlib.contextmanager
def traced(log: reads.ReadLog, code: types.CodeType) -> Iterator[None]:
    """Evaluate `code` (the compiled expression) with what the Python code it calls reads recorded into `log`."""
    if sys.getprofile() is not None:
        log.refuse("a compile-time call is made while a profiler is in use (its reads cannot be watched)")
        yield
        return
    sys.setprofile(CallTrace(log, code))
    try:
        yield
    finally:
        sys.setprofile(None)
