"""A kernel's frontend and forward passes, skipped on a warm start when nothing they read has changed ('front'
entries of the offline cache).

For kernels declared `@wk.kernel(fastcache=True)` (or `pure=True`, `@wk.pure`), the offline cache keeps the
forward pipeline's result under what the frontend read (frontend/reads.py): a first key made of the kernel's
module, name and source, its argument specialisation (every argument spec, and every template value taken
whole), `wk.init`'s options, the arch, the default dtypes and wgkern's code, naming a list of the reads builds of it made;
and for each such list, an entry under the digest of what those reads found. A start replays each list (finding
every function, name and attribute again and fingerprinting what it finds) and loads the entry whose digest
matches; its container slots get this program's containers (numbered as the replay met them), its argument specs
this call's. Anything the log could not take whole makes the build uncached; a loaded entry is checked against
its containers' shapes and dtypes, and verified under WK_VERIFY_IR=1. Other kernels run the frontend on every
start (the passes' result is still cached by the IR it gives: passes/ir_cache.py)."""
from __future__ import annotations

import ast
import hashlib
import os
from typing import Any, Callable, NamedTuple

from wgkern import disk_cache
from wgkern import dtypes as T
from wgkern.frontend import reads
from wgkern.ir import nodes as ir
from wgkern.ir.verifier import verify
from wgkern.passes import ir_cache, pipeline

KIND = "front"
_LISTS = ".reads"          # a first key's read lists (Python literals)
_ENTRY = ".pickle"         # one result
_KEPT_LISTS = 8            # read lists kept per first key (the most recent first)


def opted_in(kernel: Any) -> bool:
    return bool(getattr(kernel, "fastcache", False))


class Forward(NamedTuple):
    kernel_ir: ir.KernelIR
    offloaded: ir.OffloadedKernel
    origin: str | None         # the entry's key (it determines both), where the result has one


def forward(kernel: Any, spec: Any, program: Any, build: Callable[[], ir.KernelIR]) -> Forward:
    """The frontend's KernelIR for `kernel` specialised by `spec` (`build` runs the frontend) and pipeline.FORWARD's
    result for it: loaded when a build of an opted-in kernel stored them and every read it made finds the same now.
    The KernelIR of a loaded result has its arguments, containers and returns but an empty body (nothing after the
    forward pipeline reads the body). `origin` is the key of the entry the result was loaded from or stored as:
    backends key the code they generate from it by that (backends/code_records.py)."""
    options = program.options
    offline_cache = options.offline_cache
    if not (opted_in(kernel) and ir_cache.enabled(offline_cache)):
        kernel_ir = build()
        return Forward(kernel_ir, ir_cache.forward(kernel_ir, offline_cache), None)
    try:
        first_key, containers = _first_key(kernel, spec, program)
    except Exception:                 # noqa: BLE001 - not keyable (reads.Unrecordable, no source): built
        first_key = None
    if first_key is not None:
        loaded = _load(first_key, containers, kernel, spec)
        if loaded is not None:
            return loaded
    log = reads.ReadLog(kernel.fn)
    with reads.recording(log):
        kernel_ir = build()
    offloaded = ir_cache.forward(kernel_ir, offline_cache)
    origin = None
    if first_key is not None and log.refused is None:
        origin = _store(first_key, containers, list(log.records), kernel, spec, kernel_ir, offloaded)
    return Forward(kernel_ir, offloaded, origin)


def _digest(value: Any) -> str:
    return hashlib.sha256(repr(value).encode()).hexdigest()


def _first_key(kernel: Any, spec: Any, program: Any) -> tuple[str, reads.Containers]:
    """The first key, and the containers its template values hold (numbered)."""
    containers = reads.Containers()
    fn = kernel.fn
    parts = (getattr(fn, "__module__", ""), getattr(fn, "__qualname__", ""),
             reads.source_fingerprint(fn, containers),
             tuple(ir_cache.fingerprint(arg_spec) for arg_spec in spec.arg_specs),
             tuple((index, reads.fingerprint(value, containers))
                   for index, value in sorted(spec.template_values.items())),
             reads.fingerprint(program.options, containers), str(program.arch),
             reads.fingerprint((T.DEFAULT_FLOAT, T.DEFAULT_INT), containers))
    return disk_cache.cache_key(_digest(parts), ir_cache.code_version(), KIND), containers


def _copy(containers: reads.Containers) -> reads.Containers:
    out = reads.Containers()
    out.found, out.numbers, out.classes = list(containers.found), dict(containers.numbers), dict(containers.classes)
    return out


def _lists(first_key: str) -> list[tuple[tuple, str]]:
    stored = disk_cache.load(KIND, first_key, _LISTS)
    if stored is None:
        return []
    try:
        lists = ast.literal_eval(stored.decode())
    except (ValueError, SyntaxError, UnicodeDecodeError, MemoryError, RecursionError):
        return []
    return lists if isinstance(lists, list) else []


def _entry_key(first_key: str, reads_digest: str) -> str:
    return disk_cache.cache_key(first_key, reads_digest)


def _load(first_key: str, base: reads.Containers, kernel: Any, spec: Any) -> Forward | None:
    for records, reads_digest in _lists(first_key):
        containers = _copy(base)
        try:
            found = reads.replay(list(records), kernel.fn, containers)
        except Exception:             # noqa: BLE001 - a read that fails now (a name gone): not this list
            continue
        if _digest(found) != reads_digest:
            continue
        entry_key = _entry_key(first_key, reads_digest)
        data = disk_cache.load(KIND, entry_key, _ENTRY)
        if data is None:
            return None
        try:
            loaded = ir_cache.load_with_hosts(data, list(spec.arg_specs), containers.found)
        except Exception:             # noqa: BLE001 - an unreadable entry is a miss (built again, rewritten)
            return None
        if not (isinstance(loaded, tuple) and len(loaded) == 2 and isinstance(loaded[0], ir.KernelIR)
                and isinstance(loaded[1], ir.OffloadedKernel) and _hosts_agree(loaded[0])):
            return None
        if os.environ.get(pipeline.VERIFY_ENV, "") not in ("", "0"):
            verify(loaded[1], stage="frontend_cache")
        return Forward(loaded[0], loaded[1], entry_key)
    return None


def _hosts_agree(kernel_ir: ir.KernelIR) -> bool:
    """Each field slot's container still has the slot's shape and dtype (made ready, as the frontend does)."""
    for slot in kernel_ir.containers:
        if slot.kind != "field":
            continue
        host = slot.host
        getattr(host, "_materialize", lambda: None)()
        if tuple(host.shape) + tuple(host.element_shape) != tuple(slot.shape) or host.dtype != slot.dtype:
            return False
    return True


def _store(first_key: str, base: reads.Containers, records: list[tuple], kernel: Any, spec: Any,
           kernel_ir: ir.KernelIR, offloaded: ir.OffloadedKernel) -> str | None:
    """Store the result under what the reads find now; its entry's key (None: the reads cannot be made again)."""
    containers = _copy(base)
    try:
        found = reads.replay(records, kernel.fn, containers)
    except Exception:                 # noqa: BLE001 - a read that cannot be made again: not stored
        return None
    reads_digest = _digest(found)
    entry_key = _entry_key(first_key, reads_digest)
    shell = ir.KernelIR(kernel_ir.name, kernel_ir.args, kernel_ir.containers, ir.Block(), kernel_ir.loc,
                        kernel_ir.returns)
    try:
        data = ir_cache.dump_with_hosts((shell, offloaded), spec.arg_specs, containers.numbers)
    except (ir_cache.NotSerialisable, RecursionError):
        return entry_key              # not stored, but what determines the result all the same
    disk_cache.store(KIND, entry_key, _ENTRY, data)
    lists = [(tuple(records), reads_digest)]
    lists += [item for item in _lists(first_key) if item[1] != reads_digest][:_KEPT_LISTS - 1]
    disk_cache.store(KIND, first_key, _LISTS, repr(lists).encode())
    return entry_key
