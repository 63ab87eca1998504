"""The libdevice functions a CUDA module calls, as LLVM IR text appended to the module.

Linking all of libdevice into every kernel module meant parsing its 460 KB of bitcode per compile (~50 ms, most
of a CUDA compile). Instead libdevice is parsed once per process and indexed: each function and global as IR
text, with its attribute groups written inline (a text fragment cannot refer to the library's `#N` groups),
metadata attachments dropped (source locations of inline assembly), the library's private string constants
renamed so they cannot clash with the module's, and the names each one references. `with_libdevice(text)`
appends the definitions the module's `__nv_*` calls reach (and the declarations they need that the module
lacks), as internal functions that O3 inlines and drops, and removes the module's own declarations of them."""
from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import dataclass

_REFERENCE = re.compile(r"@([-\w.$]+)")
_TYPE = re.compile(r"(%struct\.[\w.]+)")         # named struct types (keyed with their %)
_ATTRIBUTE_REF = re.compile(r" #(\d+)\b")
_METADATA = re.compile(r", ![\w.]+ !\d+")
_PRIVATE = re.compile(r"@(\.str[\w.]*)")
_PREFIX = "__wk_libdevice"
_HEADER = re.compile(r"^(define|declare)\s", re.M)
_LINKAGE = re.compile(r"^define (?:(?:internal|private|linkonce_odr|linkonce|weak_odr|weak|available_externally) )?")


@dataclass(slots=True)
class _Part:
    text: str              # a definition (`define internal ...`), a declaration or a global
    references: set[str]   # names of the library's functions and globals it refers to
    kind: str              # 'definition', 'declaration', 'global' or 'type'


_lock = threading.Lock()
_index: dict[str, _Part] | None = None


def _inline_attributes(text: str, groups: dict[str, str]) -> str:
    return _ATTRIBUTE_REF.sub(lambda m: " " + groups[m.group(1)], text)


def _build_index(bitcode: bytes) -> dict[str, _Part]:
    """Split the library's module text (printed once: printing each function alone costs ten times more)
    into its globals, declarations and definitions."""
    import llvmlite.binding as llvm
    from .jit import host_jit
    jit = host_jit()
    with jit.lock:                   # llvmlite shares LLVM's global context: one parse at a time
        full = str(llvm.parse_bitcode(bitcode))
    groups: dict[str, str] = {}
    index: dict[str, _Part] = {}
    lines = full.splitlines()
    k = 0
    while k < len(lines):
        line = lines[k]
        if line.startswith("attributes #"):
            number, body = line[len("attributes #"):].split(" = ", 1)
            groups[number] = body.strip()[1:-1].strip()
        elif line.startswith("@"):
            name = _REFERENCE.match(line).group(1)
            index[_renamed(name)] = _Part(line, set(), "global")
        elif line.startswith("%") and " = type " in line:
            index[_TYPE.match(line).group(1)] = _Part(line, set(), "type")
        elif line.startswith("declare "):
            index[_REFERENCE.search(line).group(1)] = _Part(line, set(), "declaration")
        elif line.startswith("define "):
            end = k
            while lines[end] != "}":
                end += 1
            index[_REFERENCE.search(line).group(1)] = _Part("\n".join(lines[k:end + 1]), set(), "definition")
            k = end
        k += 1
    for name, part in index.items():
        text = _PRIVATE.sub(rf"@{_PREFIX}\1", _METADATA.sub("", _inline_attributes(part.text, groups)))
        if part.kind == "definition":
            text = _LINKAGE.sub("define internal ", text, count=1)
        part.text = text
        found = _REFERENCE.findall(text) + _TYPE.findall(text)
        part.references = {ref for ref in found if ref in index and ref != name}
    return index


def _renamed(name: str) -> str:
    return _PREFIX + name if name.startswith(".str") else name


def _library_index(use_cache: bool) -> dict[str, _Part]:
    """The index, built once per process (~170 ms), or read from the offline cache (`cuda/`)."""
    global _index  # noqa: PLW0603 - built once per process from the one libdevice
    with _lock:
        if _index is None:
            import json

            import llvmlite

            from wgkern import disk_cache

            from .ptx import libdevice_bitcode
            bitcode = libdevice_bitcode()
            key = disk_cache.cache_key("libdevice index 1", hashlib.sha256(bitcode).hexdigest(),
                                       llvmlite.__version__)
            stored = disk_cache.load("cuda", key, ".json") if use_cache else None
            if stored is not None:
                _index = {name: _Part(text, set(refs), kind) for name, (text, refs, kind)
                          in json.loads(stored).items()}
            else:
                _index = _build_index(bitcode)
                if use_cache:
                    disk_cache.store("cuda", key, ".json", json.dumps(
                        {name: (p.text, sorted(p.references), p.kind) for name, p in _index.items()}).encode())
        return _index


def _declared_or_defined(text: str) -> set[str]:
    names = set()
    for line in text.splitlines():
        if _HEADER.match(line):
            found = _REFERENCE.search(line)
            if found:
                names.add(found.group(1))
    return names


def with_libdevice(text: str, use_cache: bool = False) -> str:
    """`text` with the libdevice functions it calls (and what they reach) defined in it (the index from the
    offline cache with `use_cache`)."""
    index = _library_index(use_cache)
    wanted = [name for name in dict.fromkeys(_REFERENCE.findall(text)) if name.startswith("__nv_") and name in index]
    needed: list[str] = []
    seen: set[str] = set()
    while wanted:
        name = wanted.pop()
        if name in seen:
            continue
        seen.add(name)
        needed.append(name)
        wanted.extend(index[name].references - seen)
    provided = {name for name in needed if index[name].kind == "definition"}
    kept = [line for line in text.splitlines()
            if not (line.startswith("declare") and (m := _REFERENCE.search(line)) and m.group(1) in provided)]
    present = _declared_or_defined("\n".join(kept))
    order = {"type": 0, "global": 1, "declaration": 2, "definition": 3}      # types before their uses
    extra = [index[name].text for name in sorted(needed, key=lambda n: order[index[n].kind])
             if index[name].kind != "declaration" or name not in present]
    return "\n".join(kept) + "\n\n; libdevice (libdevice.py)\n" + "\n\n".join(extra) + "\n"
