"""What a kernel's frontend read from Python, recorded so that a later start can check it without building.

A kernel declared `@wk.kernel(fastcache=True)` (Quadrants' promise that it depends only on its arguments and its
code) is built with a ReadLog: every function whose source the frontend parses, every name it resolves from a
function's closure, globals or builtins, and every attribute it reads from a module or a class (in kernel code, in
`wk.static(...)` expressions and in string annotations) is recorded by where it was found, not by value.
`replay` finds each again and fingerprints what it finds now; frontend_cache.py keys the build's result by those
fingerprints (with the arguments', the options' and wgkern's own), so a start whose reads all give the same
fingerprints gets the same IR the frontend would build.

That covers what the frontend can see because every other Python object it holds comes from an argument or from
one of these reads, and `fingerprint` takes an object's whole state (every field of a dataclass, every attribute
of an object and the plain attributes of its class, every element of a tuple), refusing what it cannot take
whole. Modules and classes are the exception, taken by name, which is why their attributes are recorded one by
one; functions are taken by name and their sources recorded where the frontend parses them (wgkern's own
functions are not recorded: wgkern's code is part of every key, and what one closes over is fingerprinted with
it). A `wk.static` expression that calls the program's own Python functions has what they read recorded while
they run (call_trace.py). A read of any other kind (a lambda or comprehension in a compile-time expression, a
call whose reads cannot be watched, an attribute of a plain function, a function that cannot be found again by
its module and name) makes the log `refused`: the kernel is then built on every start, as kernels that do not
opt in are. Containers are numbered in
the order met (aliasing is part of the key) and fingerprinted by their structure; the numbered list is how a
loaded result is given this program's fields."""
from __future__ import annotations

import ast
import builtins
import contextlib
import dataclasses
import enum
import hashlib
import importlib
import linecache
import sys
import threading
import types
from typing import Any, Callable, Iterator

import numpy as np

from wgkern import dtypes as T
from wgkern.lang.fields import Container
from wgkern.lang.kernel import Func, Kernel

_MAX_NODES = 200_000         # parts of one fingerprint; larger objects are refused rather than walked


class Unrecordable(Exception):
    """A value or read the log cannot take whole."""


# ---- fingerprints -----------------------------------------------------------------------------------------

class Containers:
    """The containers met while fingerprinting, numbered in order (each one's .grad and .dual right after it)."""

    def __init__(self) -> None:
        self.found: list[Any] = []
        self.numbers: dict[int, int] = {}
        self.classes: dict[int, tuple] = {}     # the classes fingerprinted so far (_class), by id

    def number(self, container: Any) -> int:
        number = self.numbers.get(id(container))
        if number is None:
            number = self.numbers[id(container)] = len(self.found)
            self.found.append(container)
            for attr in ("grad", "dual"):
                companion = getattr(container, attr, None)
                if companion is not None:
                    self.number(companion)
        return number


def _qualified(obj: Any) -> tuple[str, str]:
    return getattr(obj, "__module__", None) or "", getattr(obj, "__qualname__", None) or ""


_ALLOWED_FUNCTION_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.MethodWrapperType)


def fingerprint(value: Any, containers: Containers) -> Any:
    """`value`'s whole state as plain nested tuples (Unrecordable where that cannot be taken)."""
    budget = [_MAX_NODES]
    return _fp(value, containers, budget, set())


def _fp(value: Any, containers: Containers, budget: list[int], active: set[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise Unrecordable("an object too large to fingerprint")
    kind = type(value)
    if value is None or kind in (bool, int, str, bytes):
        return (kind.__name__, value)
    if kind is float:
        return ("float", repr(value))
    if kind is T.DataType:
        return ("dtype", value.name, value.kind, value.bits)
    if isinstance(value, enum.Enum):
        return ("enum", *_qualified(kind), value.name, _fp(value.value, containers, budget, active))
    if isinstance(value, np.generic):
        return ("np", value.dtype.str, value.tobytes())
    if isinstance(value, np.dtype):
        return ("npdtype", value.str)
    if isinstance(value, types.ModuleType):
        return ("module", value.__name__)
    if isinstance(value, Container):
        return _container(value, containers)
    if id(value) in active:
        raise Unrecordable("an object that holds itself")
    active.add(id(value))
    try:
        if kind in (tuple, list):
            return (kind.__name__, tuple(_fp(v, containers, budget, active) for v in value))
        if kind is dict:
            return ("dict", tuple((_fp(k, containers, budget, active), _fp(v, containers, budget, active))
                                  for k, v in value.items()))
        if isinstance(value, np.ndarray):
            if value.dtype.hasobject:
                raise Unrecordable("a numpy array of objects")
            return ("ndarray", value.dtype.str, value.shape, hashlib.sha256(np.ascontiguousarray(value)).hexdigest())
        if isinstance(value, type):
            found = containers.classes.get(id(value))
            if found is None:
                found = containers.classes[id(value)] = _class(value, containers, budget, active)
            return found
        if isinstance(value, _ALLOWED_FUNCTION_TYPES):
            return ("function", *_qualified(value), _closure(value, containers, budget, active))
        wrapped = _unwrapped_function(value)
        if wrapped is not None:
            return ("wgkern." + kind.__name__, *_qualified(wrapped), bool(getattr(value, "requires_top_level", False)),
                    _closure(wrapped, containers, budget, active))
        if dataclasses.is_dataclass(value):
            return ("dataclass", *_qualified(kind), _class_attributes(kind, containers, budget, active),
                    tuple((f.name, _fp(getattr(value, f.name), containers, budget, active))
                          for f in dataclasses.fields(value)))
        state = getattr(value, "__dict__", None)
        if state is None or hasattr(kind, "__slots__") and kind.__slots__:
            raise Unrecordable(f"a {kind.__module__}.{kind.__qualname__} (no __dict__ to take whole)")
        return ("object", *_qualified(kind), _class_attributes(kind, containers, budget, active),
                tuple((k, _fp(v, containers, budget, active)) for k, v in sorted(state.items())
                      if not k.startswith("__")))
    finally:
        active.discard(id(value))


def _container(container: Any, containers: Containers) -> tuple:
    if getattr(container, "_place_node", None) is not None or getattr(container, "_activity_of", None) is not None:
        raise Unrecordable(f"field {container.name!r} is placed under an SNode")
    dtype = container.dtype
    return ("container", type(container).__qualname__, containers.number(container), container.name,
            (dtype.name, dtype.kind, dtype.bits) if type(dtype) is T.DataType else repr(dtype),
            tuple(container.shape), tuple(container.element_shape), container.grad is not None,
            getattr(container, "dual", None) is not None)


def _class(cls: type, containers: Containers, budget: list[int], active: set[int]) -> tuple:
    """A class by name, with what a frontend may read of it without an attribute read: a dataclass's fields and
    their types, an enum's members."""
    parts: list[Any] = ["class", *_qualified(cls)]
    if dataclasses.is_dataclass(cls):
        parts.append(tuple((f.name, _annotation(f.type, containers, budget, active)) for f in dataclasses.fields(cls)))
    if isinstance(cls, enum.EnumMeta):
        parts.append(tuple((name, _fp(member.value, containers, budget, active))
                           for name, member in cls.__members__.items()))
    annotations = cls.__dict__.get("__annotations__")
    if annotations:
        parts.append(tuple((k, _annotation(v, containers, budget, active)) for k, v in annotations.items()))
    return tuple(parts)


def _annotation(value: Any, containers: Containers, budget: list[int], active: set[int]) -> Any:
    try:
        return _fp(value, containers, budget, active)
    except Unrecordable:
        return ("repr", repr(value))       # typing constructs (list[int], Optional[...]) print what they are


def _class_attributes(cls: type, containers: Containers, budget: list[int], active: set[int]) -> tuple:
    """The plain data a class and its bases hold (what an instance's attribute read falls back to)."""
    out = []
    for base in cls.__mro__[:-1]:
        for name, value in base.__dict__.items():
            if name.startswith("__") or callable(value) or isinstance(value, (property, classmethod, staticmethod)):
                continue
            out.append((name, _annotation(value, containers, budget, active)))
    return tuple(out)


def _wgkern_own(fn: Any) -> bool:
    """A function of wgkern itself: its code is part of every key (ir_cache.code_version), its globals are
    wgkern's, and what it closes over is fingerprinted with it wherever it is met (_closure)."""
    return (getattr(fn, "__module__", None) or "").partition(".")[0] == "wgkern"


def _closure(fn: Any, containers: Containers, budget: list[int], active: set[int]) -> tuple:
    """The values a function of wgkern closes over (a function made for an object, as a tile kind's `zeros`);
    the program's functions that the frontend reads are found by name, their closures read name by name."""
    if not _wgkern_own(fn) or not getattr(fn, "__closure__", None):
        return ()
    out = []
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
        try:
            value = cell.cell_contents
        except ValueError:
            out.append((name, ("empty",)))
            continue
        out.append((name, _fp(value, containers, budget, active)))
    return tuple(out)


def _unwrapped_function(value: Any) -> Any:
    """The Python function of a wk.func / kernel wrapper, else None."""
    return value.fn if isinstance(value, (Func, Kernel)) else None


# ---- where things are found -------------------------------------------------------------------------------

def python_name(fn: Callable[..., Any], name: str) -> tuple[bool, Any]:
    """What `name` means in `fn`'s code: its closure cell, else its global, else the builtin; (False, None) when
    none has it."""
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None)
    if code is not None and cells and name in code.co_freevars:
        try:
            return True, cells[code.co_freevars.index(name)].cell_contents
        except ValueError:             # an empty cell: Python's own lookup would fail too
            pass
    globals_ = getattr(fn, "__globals__", None)
    if globals_ is not None and name in globals_:
        return True, globals_[name]
    if hasattr(builtins, name):
        return True, getattr(builtins, name)
    return False, None


KERNEL = ("kernel",)       # the function being compiled (found by the caller of replay)


def _find_by_name(module: str, qualname: str) -> Any:
    obj: Any = sys.modules.get(module)
    if obj is None:
        obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def function_ref(fn: Any, kernel_fn: Any) -> tuple:
    if fn is kernel_fn:
        return KERNEL
    module, qualname = _qualified(fn)
    if "<" not in qualname and module:
        try:
            found = _find_by_name(module, qualname)
        except Exception:            # noqa: BLE001 - not found again: not recordable
            found = None
        if found is fn or _unwrapped_function(found) is fn:
            return ("function", module, qualname)
    raise Unrecordable(f"function {module}.{qualname} cannot be found again by its module and name")


def find_function(ref: tuple, kernel_fn: Any) -> Any:
    if ref == KERNEL:
        return kernel_fn
    found = _find_by_name(ref[1], ref[2])
    return _unwrapped_function(found) or found


def namespace_ref(obj: Any) -> tuple:
    if isinstance(obj, types.ModuleType):
        return ("module", obj.__name__)
    module, qualname = _qualified(obj)
    if isinstance(obj, type) and "<" not in qualname and module:
        try:
            if _find_by_name(module, qualname) is obj:
                return ("class", module, qualname)
        except Exception:            # noqa: BLE001
            pass
    raise Unrecordable(f"class {module}.{qualname} cannot be found again by its module and name")


def find_namespace(ref: tuple) -> Any:
    if ref[0] == "module":
        return sys.modules.get(ref[1]) or importlib.import_module(ref[1])
    return _find_by_name(ref[1], ref[2])


def is_namespace(obj: Any) -> bool:
    return isinstance(obj, (types.ModuleType, type))


# ---- the log ----------------------------------------------------------------------------------------------

# The builtins a wk.static(...) expression may call (their results depend on their arguments alone); wgkern's own
# functions may be called too (_known_callee).
PURE_BUILTINS = frozenset("abs all any bool divmod enumerate float int len list max min pow range reversed round "
                          "sorted str sum tuple zip isinstance issubclass".split())
_EXPRESSION_NODES = (ast.Expression, ast.Name, ast.Attribute, ast.Constant, ast.Compare, ast.BoolOp, ast.UnaryOp,
                     ast.BinOp, ast.Subscript, ast.Slice, ast.Tuple, ast.List, ast.IfExp, ast.Call, ast.Load,
                     ast.Starred, ast.keyword, ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop)


class ReadLog:
    """The reads of one build, in the order first made (each once); `refused` says why the build cannot be keyed
    by them (None while it can)."""

    def __init__(self, kernel_fn: Any) -> None:
        self.kernel_fn = kernel_fn
        self.records: dict[tuple, None] = {}
        self.refused: str | None = None

    def refuse(self, reason: str) -> None:
        if self.refused is None:
            self.refused = reason

    def _add(self, record: tuple) -> None:
        if record not in self.records:
            self.records[record] = None

    def source(self, fn: Any) -> None:
        """The frontend parses `fn`'s source."""
        if _wgkern_own(fn):
            return
        try:
            self._add(("source", function_ref(fn, self.kernel_fn)))
        except Unrecordable as exc:
            self.refuse(str(exc))

    def name(self, fn: Any, name: str) -> None:
        """`name` is resolved in `fn`'s closure, globals or builtins (python_name)."""
        if _wgkern_own(fn):
            return
        try:
            self._add(("name", function_ref(fn, self.kernel_fn), name))
        except Unrecordable as exc:
            self.refuse(str(exc))

    def attribute(self, base: Any, attr: str) -> None:
        """`base.attr` is read; only a module's or class's attribute needs recording (module docstring)."""
        if is_namespace(base):
            try:
                self._add(("attr", namespace_ref(base), attr))
            except Unrecordable as exc:
                self.refuse(str(exc))
        elif isinstance(base, _ALLOWED_FUNCTION_TYPES):
            self.refuse(f"an attribute of function {getattr(base, '__qualname__', base)} is read")

    def expression(self, tree: ast.AST, fn: Any, local: Callable[[str], bool], namespace: dict[str, Any]) -> bool:
        """An expression Python evaluates at compile time (wk.static, a string annotation) in `namespace`:
        its free names that are not the frontend's own (`local`) are name reads, and the attribute chains from
        them are attribute reads while the object read from is a module or class. True where it calls a Python
        function of the program, whose reads are recorded while it runs (call_trace.traced)."""
        calls_python = False
        for node in ast.walk(tree):
            if not isinstance(node, _EXPRESSION_NODES):
                self.refuse(f"a compile-time expression holds {type(node).__name__}")
                return False
            if isinstance(node, ast.Call) and not _known_callee(node.func, namespace):
                if not isinstance(_callee(node.func, namespace), types.FunctionType):
                    self.refuse(f"a compile-time expression calls {ast.unparse(node.func)}")
                    return False
                calls_python = True
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and not local(node.id):
                self.name(fn, node.id)
            elif isinstance(node, ast.Attribute):
                chain: list[str] = []
                root: ast.AST = node
                while isinstance(root, ast.Attribute):
                    chain.append(root.attr)
                    root = root.value
                if not isinstance(root, ast.Name) or root.id not in namespace:
                    continue
                obj = namespace[root.id]
                for attr in reversed(chain):
                    if not is_namespace(obj):
                        break
                    self.attribute(obj, attr)
                    try:
                        obj = getattr(obj, attr)
                    except Exception:      # noqa: BLE001 - Python's own evaluation reports it
                        break
        return calls_python


_IMMUTABLE = frozenset({int, float, complex, bool, str, bytes, tuple, frozenset})

# Modules whose functions (and numpy's ufuncs) a compile-time expression may call: numpy's top level (its
# functions and scalar types; not numpy.random) and math.
PURE_MODULES = frozenset({"numpy", "math"})


def _attribute_chain(func: ast.expr) -> tuple[str | None, list[str]]:
    """`a.b.c` as ('a', ['b', 'c']); the root is None where the chain does not start at a name."""
    chain: list[str] = []
    while isinstance(func, ast.Attribute):
        chain.append(func.attr)
        func = func.value
    return (func.id if isinstance(func, ast.Name) else None), chain[::-1]


def _callee(func: ast.expr, namespace: dict[str, Any]) -> Any:
    """What a call's callee names, found through modules and classes only (None where it goes through anything
    else: an object's attribute may be a property, which runs code)."""
    root, chain = _attribute_chain(func)
    if root not in namespace:
        return None
    obj = namespace[root]
    for attr in chain:
        if not is_namespace(obj):
            return None
        obj = getattr(obj, attr, None)
    return obj


def _known_callee(func: ast.expr, namespace: dict[str, Any]) -> bool:
    """Whether a compile-time call's callee is one of PURE_BUILTINS, of PURE_MODULES or wgkern's own (whose
    results depend on their arguments, the options and the arch, all in the key), found through modules and
    classes only, or a method of a number, string or tuple."""
    if isinstance(func, ast.Name) and func.id in PURE_BUILTINS:
        return namespace.get(func.id) is getattr(builtins, func.id)
    root, chain = _attribute_chain(func)
    if root not in namespace:
        return False
    obj = namespace[root]
    for position, attr in enumerate(chain):
        if type(obj) in _IMMUTABLE and position == len(chain) - 1:
            return callable(getattr(obj, attr, None))   # a method of a number, string or tuple: `n.bit_length()`
        if not is_namespace(obj):
            return False
        try:
            obj = getattr(obj, attr)
        except Exception:              # noqa: BLE001
            return False
    if isinstance(obj, np.ufunc):
        return True
    module = getattr(obj, "__module__", None) or ""
    return callable(obj) and (module.partition(".")[0] == "wgkern" or module in PURE_MODULES)


def replay(records: list[tuple], kernel_fn: Any, containers: Containers) -> list[Any]:
    """What each record finds now, fingerprinted (Unrecordable, or any exception finding it, means a miss)."""
    out: list[Any] = []
    for record in records:
        kind = record[0]
        if kind == "source":
            out.append(source_fingerprint(find_function(record[1], kernel_fn), containers))
        elif kind == "name":
            found, value = python_name(find_function(record[1], kernel_fn), record[2])
            out.append(fingerprint(value, containers) if found else ("missing",))
        else:
            base = find_namespace(record[1])
            out.append(fingerprint(getattr(base, record[2]), containers) if hasattr(base, record[2])
                       else ("missing",))
    return out


_FILE_DIGESTS: dict[str, tuple[list[str], str]] = {}     # file -> (linecache's lines, their digest)


def source_fingerprint(fn: Any, containers: Containers) -> tuple:
    """A function as the frontend reads it: the file its source is read from (as inspect reads it: linecache,
    checked against the file first), its first line, its defaults and annotations. The whole file stands for the
    function's lines, which it determines: reading only those (inspect.getsourcelines) costs more than a digest
    of the file, and an edit elsewhere in the file only costs a build."""
    code = getattr(fn, "__code__", None)
    if code is None:
        raise Unrecordable(f"{fn!r} has no code object")
    filename = code.co_filename
    linecache.checkcache(filename)
    lines = linecache.getlines(filename, getattr(fn, "__globals__", None))
    if not lines:
        raise Unrecordable(f"no source for {getattr(fn, '__qualname__', fn)}")
    known = _FILE_DIGESTS.get(filename)
    if known is None or known[0] is not lines:
        known = _FILE_DIGESTS[filename] = (lines, hashlib.sha256("".join(lines).encode()).hexdigest())
    annotations = getattr(fn, "__annotations__", None) or {}
    return ("source", filename, code.co_firstlineno, known[1],
            fingerprint(getattr(fn, "__defaults__", None), containers),
            fingerprint(getattr(fn, "__kwdefaults__", None), containers),
            tuple((k, _annotation(v, containers, [_MAX_NODES], set())) for k, v in annotations.items()))


_current = threading.local()


def current() -> ReadLog | None:
    """The log of the build under way on this thread, if it records."""
    return getattr(_current, "log", None)


@contextlib.contextmanager
def recording(log: ReadLog | None) -> Iterator[ReadLog | None]:
    """`log` is current() for the duration."""
    saved = current()
    _current.log = log
    try:
        yield log
    finally:
        _current.log = saved
