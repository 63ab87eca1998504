"""The forward pipeline's results kept in the offline cache ('ir' entries), so that a warm start runs the frontend
but not the passes.

The FORWARD pipeline (typecheck, simplify, offload, simplify) is a function of the frontend's KernelIR alone: no
pass reads an option, the environment or a container's host object (autodiff, which reads `.grad` fields, runs
after it and is not cached). So its result is stored under a digest of a complete serialisation of that KernelIR
(every statement, value, dtype, source location, and every field of its container slots and argument specs but
the slots' host objects) and of wgkern's own code, and a later build whose frontend gives the same IR loads the
result instead of running the passes. The stored result refers to the slots and argument specs of the IR it was
made from by their position in that serialisation, and loads pointing at this build's own (so its slots hold this
program's fields). An IR that holds an object of any other kind (a constant of an int subclass, a slot whose dtype
is not a scalar type) is not serialised: the passes run and nothing is stored, as when `wk.init(offline_cache=False)` or WK_DUMP_IR is in
effect (WK_VERIFY_IR=1 verifies a loaded result). Entries are bounded and cleaned with the rest of the cache
(disk_cache.py)."""
from __future__ import annotations

import dataclasses
import enum
import hashlib
import io
import os
import pickle
import sys
import threading
from pathlib import Path
from operator import attrgetter
from typing import Any, Callable

import numpy as np

from wgkern import disk_cache
from wgkern import dtypes as T
from wgkern.errors import SourceLoc
from wgkern.ir import nodes as ir
from wgkern.ir.verifier import verify
from wgkern.passes import pipeline

KIND = "ir"
_SUFFIX = ".pickle"
_PROTOCOL = 4


class NotSerialisable(Exception):
    """The IR holds an object of a kind the cache does not write."""


# The IR's own mutable classes: written as their class and the values of their fields, then filled in by pickle
# after the object exists (a LoopIndex refers to the loop that holds it). ContainerSlot and ArgSpec of the
# frontend IR are written as references (_Writer.reducer_override); ones the passes made are written this way.
_FIELDS: dict[type, tuple[str, ...]] = {
    kind: tuple(f.name for f in dataclasses.fields(kind))
    for kind in (*(c for c in vars(ir).values() if isinstance(c, type) and issubclass(c, ir.Stmt)),
                 ir.Block, ir.KernelIR, ir.Task, ir.OffloadedKernel, ir.ContainerSlot, ir.ArgSpec)}


def _reader(names: tuple[str, ...]) -> Callable[[Any], tuple]:
    read = attrgetter(*names)
    return read if len(names) > 1 else lambda obj: (read(obj),)


# what the writer reads of each class it writes field by field: (field names, a reader of their values)
_STATE = {kind: (names, _reader(names)) for kind, names in _FIELDS.items()
          if kind is not ir.ContainerSlot and kind is not ir.ArgSpec}
_CANONICAL_DTYPES = {value.name: value for value in vars(T).values() if isinstance(value, T.DataType)}


def _blank(kind: type) -> Any:
    return kind.__new__(kind)


def _dtype(name: str) -> T.DataType:
    return _CANONICAL_DTYPES[name]


_loading = threading.local()       # .externals: the slots and specs the load under way refers to (_load)


def _external(number: int, *fingerprint: Any) -> Any:
    return _loading.externals[number]


def _host(number: int) -> Any:
    return _loading.hosts[number]


_BY_NAME = frozenset({SourceLoc, T.DataType, ir.HostLoop, *_FIELDS})


class _Writer(pickle.Pickler):
    """Writes IR. Numbering (no `externals` given): the frontend IR's slots and argument specs are numbered as
    met and written as their number and fingerprint; else they are written as the number `externals` gives them
    (slots that are not there, made by a pass, are written with their fields). With `hosts` (id -> number, the
    numbering of frontend/reads.py's Containers), every slot is written with its fields and its host object as
    that number, and `externals` numbers the argument specs alone."""

    def __init__(self, out: io.BytesIO, externals: dict[int, int] | None,
                 hosts: dict[int, int] | None = None) -> None:
        super().__init__(out, protocol=_PROTOCOL)
        self.numbering = externals is None
        self.externals: dict[int, int] = {} if externals is None else externals
        self.hosts = hosts
        self.kept: list[Any] = []     # the numbered objects, in order (and alive while their ids are keys)
        self.fingerprints: list[tuple] = []     # what each numbered object held when written (fingerprint)

    def reducer_override(self, obj: Any) -> Any:
        kind = type(obj)
        state = _STATE.get(kind)
        if state is not None:                 # a statement, block, task or kernel: the most frequent, first
            names, read = state
            return _blank, (kind,), (None, dict(zip(names, read(obj))))
        if kind is SourceLoc:
            return SourceLoc, (obj.filename, obj.lineno, obj.col, obj.source_line)
        if self.hosts is not None:
            number = self.hosts.get(id(obj))
            if number is not None:
                return _host, (number,)
            if kind is ir.ContainerSlot:
                return _by_fields(obj)
        if kind is ir.ContainerSlot or kind is ir.ArgSpec:
            number = self.externals.get(id(obj))
            if self.numbering:
                if number is None:
                    number = self.externals[id(obj)] = len(self.kept)
                    self.kept.append(obj)
                    self.fingerprints.append(fingerprint(obj))
                return _external, (number, *self.fingerprints[number])
            if number is not None:
                return _external, (number,)
            if kind is ir.ContainerSlot and obj.host is not None:
                raise NotSerialisable(f"container slot {obj.name!r} made by a pass holds a host object")
            return _by_fields(obj)      # a pass's
        if kind is T.DataType:
            if _CANONICAL_DTYPES.get(obj.name) is obj:
                return _dtype, (obj.name,)
            return T.DataType, (obj.name, obj.kind, obj.bits)
        if kind is ir.HostLoop:
            return ir.HostLoop, (obj.first, obj.stop, obj.counter, obj.loc)
        if isinstance(obj, type):
            by_name = obj in _BY_NAME or issubclass(obj, np.generic) or \
                (issubclass(obj, enum.Enum) and obj.__module__.startswith("wgkern."))
        else:
            by_name = isinstance(obj, (np.generic, np.dtype)) or any(obj is h for h in _HELPERS) or \
                (isinstance(obj, enum.Enum) and kind.__module__.startswith("wgkern.")) or \
                (callable(obj) and getattr(obj, "__module__", "").partition(".")[0] == "numpy")
        if by_name:
            # numpy scalars (f16/f32 constants: pickle writes them with numpy's own functions and dtypes), the
            # IR's op kinds, and the classes and functions this writer names, all written by name (and all
            # that _Reader finds)
            return NotImplemented
        raise NotSerialisable(f"the IR holds a {kind.__module__}.{kind.__qualname__}")


def _by_fields(obj: ir.ContainerSlot | ir.ArgSpec) -> tuple:
    """A slot or argument spec written as its class and every field."""
    kind = type(obj)
    return _blank, (kind,), (None, {name: getattr(obj, name) for name in _FIELDS[kind]})


_HELPERS = (_blank, _dtype, _external, _host)


def fingerprint(obj: ir.ContainerSlot | ir.ArgSpec) -> tuple:
    """Every field of a slot (but its host object) or of an argument spec, as plain data."""
    if type(obj) is ir.ArgSpec:
        # the passes only pass a kernel's argument specs on, so a template's own type (a dataclass, a struct
        # type) stands here by its name: the loaded result holds this build's specs, not the stored ones
        dtype = obj.dtype
        described = _dtype_text(dtype) if dtype is None or type(dtype) is T.DataType else \
            (_qualified(type(dtype)), _qualified(dtype) if isinstance(dtype, type) else "")
        return _plain(obj.name, obj.kind, described, obj.ndim, tuple(obj.element_shape), obj.needs_grad,
                      tuple(obj.components))
    return _plain(obj.name, obj.kind, _dtype_text(obj.dtype), obj.ndim, obj.shape, tuple(obj.element_shape),
                  obj.arg_index, obj.is_grad, _loc_text(obj.loc))


def _qualified(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


def _dtype_text(dtype: Any) -> str:
    if dtype is None or type(dtype) is T.DataType:
        return repr((dtype.name, dtype.kind, dtype.bits)) if dtype is not None else "None"
    raise NotSerialisable(f"an argument or slot of dtype {type(dtype).__qualname__}")


def _loc_text(loc: SourceLoc | None) -> tuple:
    return () if loc is None else (loc.filename, loc.lineno, loc.col, loc.source_line)


def _plain(*values: Any) -> tuple:
    """`values`, checked to be plain data (a fingerprint is written as such)."""
    for value in values:
        if not isinstance(value, (str, int, float, bool, tuple, type(None))):
            raise NotSerialisable(f"a slot or argument field holds a {type(value).__qualname__}")
    return values


class _Reader(pickle.Unpickler):
    """Reads an entry, finding only the classes and functions a _Writer names (wgkern's, numpy's, the enums')."""

    def find_class(self, module: str, name: str) -> Any:
        if module.partition(".")[0] not in ("wgkern", "numpy"):
            raise pickle.UnpicklingError(f"an IR cache entry names {module}.{name}")
        return super().find_class(module, name)


def _load(data: bytes, externals: list[Any], hosts: list[Any] | None = None) -> Any:
    _loading.externals, _loading.hosts = externals, hosts
    try:
        return _Reader(io.BytesIO(data)).load()
    finally:
        _loading.externals = _loading.hosts = None


def dump_with_hosts(value: Any, arg_specs: list[ir.ArgSpec], hosts: dict[int, int]) -> bytes:
    """`value` (IR) written with its slots' host objects as the numbers `hosts` gives them (by id) and this
    call's argument specs by position; NotSerialisable (or RecursionError) when it holds anything else."""
    out = io.BytesIO()
    _Writer(out, {id(spec): k for k, spec in enumerate(arg_specs)}, hosts).dump(value)
    return out.getvalue()


def load_with_hosts(data: bytes, arg_specs: list[ir.ArgSpec], hosts: list[Any]) -> Any:
    """What dump_with_hosts wrote, with these argument specs and host objects in place of the numbered ones."""
    return _load(data, arg_specs, hosts)


_code_digest: str | None = None


def code_version() -> str:
    """A digest of wgkern's Python sources and of the interpreter's version (pickle's classes and their layout)."""
    global _code_digest  # noqa: PLW0603 - computed once per process
    if _code_digest is None:
        digest = hashlib.sha256(sys.version.encode())
        package = Path(__file__).resolve().parent.parent
        for path in sorted(package.rglob("*.py")):
            digest.update(str(path.relative_to(package)).encode())
            digest.update(path.read_bytes())
        _code_digest = digest.hexdigest()
    return _code_digest


def enabled(offline_cache: bool) -> bool:
    """Whether to use the cache: the offline cache is on and no stage's dump is asked for (WK_DUMP_IR)."""
    return offline_cache and not os.environ.get(pipeline.DUMP_ENV)


def forward(kernel_ir: ir.KernelIR, offline_cache: bool = True) -> ir.OffloadedKernel:
    """pipeline.FORWARD's result for `kernel_ir`: from the offline cache where a build of the same IR stored it,
    else run (and stored)."""
    if not enabled(offline_cache):
        return pipeline.run_pipeline(pipeline.FORWARD, kernel_ir)
    writer_out = io.BytesIO()
    writer = _Writer(writer_out, None)
    try:
        writer.dump(kernel_ir)
    except (NotSerialisable, RecursionError):
        return pipeline.run_pipeline(pipeline.FORWARD, kernel_ir)
    stages = ",".join(stage.NAME for stage in pipeline.FORWARD)
    key = disk_cache.cache_key(hashlib.sha256(writer_out.getvalue()).hexdigest(), code_version(), stages)
    stored = disk_cache.load(KIND, key, _SUFFIX)
    if stored is not None:
        try:
            loaded = _load(stored, writer.kept)
        except Exception:               # noqa: BLE001 - an unreadable entry is a miss (compiled again, rewritten)
            loaded = None
        if isinstance(loaded, ir.OffloadedKernel):
            if os.environ.get(pipeline.VERIFY_ENV, "") not in ("", "0"):
                verify(loaded, stage="ir_cache")
            return loaded
    offloaded = pipeline.run_pipeline(pipeline.FORWARD, kernel_ir)
    if any(fingerprint(obj) != held for obj, held in zip(writer.kept, writer.fingerprints)):
        return offloaded      # a pass changed a slot of the frontend's: a loaded result would point at unchanged ones
    result_out = io.BytesIO()
    try:
        _Writer(result_out, writer.externals).dump(offloaded)
    except (NotSerialisable, RecursionError):
        return offloaded
    disk_cache.store(KIND, key, _SUFFIX, result_out.getvalue())
    return offloaded
